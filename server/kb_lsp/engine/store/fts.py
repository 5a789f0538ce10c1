"""Keyword search over one store: FTS5 BM25 over each chunk's path, title, heading and
text, FTS5's snippets, and its vocabularies (how many chunks hold a term; the words of
the files' titles and names, as written)."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kb_lsp.engine.store.chunks import Chunks
from kb_lsp.engine.store.db import Database

log = logging.getLogger("kb_lsp.engine.store")

# BM25 column weights for (path, title, heading, text): a hit in a file's name or title
# says more about the file than one word in a long passage.
BM25_WEIGHTS = (0.0, 4.0, 3.0, 2.0, 1.0)

# A restriction to files holding at least this share of the chunks is applied after an
# unrestricted query deep enough for it (here and in `chroma.py`).
OVERFETCH_SHARE = 0.1

# A word of a title or a file name: `incident-response.md` holds "incident", "response".
_NAME_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def overfetch_depth(k: int, share: float) -> int:
    """How deep an unrestricted query goes to hold `k` hits of files that are `share` of
    the index."""
    return max(4 * k, int(k / share * 1.5) + 1)


@dataclass(frozen=True)
class KeywordHit:
    chunk_id: str
    path: str
    bm25: float  # positive, larger is better
    rowid: int  # its FTS row: `Fts.snippets` asks for these rows alone


class Fts:
    def __init__(self, db: Database, chunks: Chunks, file_count: Callable[[], int]) -> None:
        self._db = db
        self._chunks = chunks
        self._file_count = file_count

    def search(self, match: str, k: int, paths: list[str] | None = None) -> list[KeywordHit]:
        """FTS5 BM25 over path, title, heading and text. `match` is an FTS5 query.

        With `paths`, the best `k` among those files' chunks: for files holding a large
        share of the index, an unrestricted query deep enough for that share, kept to
        them (cheaper than naming thousands of paths), else the restriction in SQL.
        """
        if not match:
            return []
        if paths is not None:
            if not paths:
                return []
            wanted = set(paths)
            share = min(1.0, len(wanted) / max(1, self._file_count()))
            if share >= OVERFETCH_SHARE:
                depth = overfetch_depth(k, share)
                hits = self.query(match, depth, None)
                kept = [h for h in hits if h.path in wanted]
                if len(kept) >= k or len(hits) < depth:
                    return kept[:k]
        return self.query(match, k, paths)

    def query(self, match: str, k: int, paths: list[str] | None) -> list[KeywordHit]:
        """One FTS5 query for the best `k`, restricted to `paths` (if given) in SQL."""
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        # No `snippet()` here: it cost as much as the query for all k rows, and a hit
        # needs FTS's snippet only when its chunk has no readable text (`snippets`).
        # Only the rowid and the score: a column FTS5 holds no copy of (`text_format`)
        # would be read from the chunks for every match before the sort.
        sql = (
            f"SELECT rowid, bm25(chunks_fts, {weights}) AS score "
            "FROM chunks_fts WHERE chunks_fts MATCH ?"
        )
        args: list[Any] = [match]
        if paths is not None:
            sql += (
                " AND rowid IN (SELECT rid FROM chunks"
                " WHERE path IN (SELECT value FROM json_each(?)))"
            )
            args.append(json.dumps(paths))
        sql += " ORDER BY score LIMIT ?"
        args.append(k)
        try:
            rows = self._db.reader().execute(sql, args).fetchall()
        except sqlite3.OperationalError as err:
            log.debug("FTS query %r failed: %s", match, err)
            return []
        chunk_of = self._chunks.of_rows(int(row[0]) for row in rows)
        return [
            KeywordHit(*chunk_of[int(rowid)], -float(score), int(rowid))
            for rowid, score in rows
            if int(rowid) in chunk_of
        ]

    def snippets(self, match: str, rowids: Iterable[int]) -> dict[int, str]:
        """rowid -> FTS5's snippet of that `search` hit's text for `match` (one query); a
        row a sync replaced since is left out."""
        wanted = sorted(set(rowids))
        if not wanted:
            return {}
        try:
            rows = self._db.reader().execute(
                "SELECT rowid, snippet(chunks_fts, 4, '', '', '…', 24) FROM chunks_fts "
                "WHERE chunks_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))",
                (match, json.dumps(wanted)),
            )
            return {int(rowid): str(text) for rowid, text in rows}
        except sqlite3.OperationalError as err:
            log.debug("FTS snippet %r failed: %s", match, err)
            return {}

    def terms_between(self, low: str, high: str) -> list[tuple[str, int]]:
        """The vocabulary's terms from `low` (inclusive) to `high` (exclusive), with how
        many chunks hold each: a range FTS5 reads without scanning the rest."""
        try:
            rows = self._db.reader().execute(
                "SELECT term, doc FROM chunks_vocab WHERE term >= ? AND term < ?", (low, high)
            )
            return [(str(term), int(doc)) for term, doc in rows]
        except sqlite3.OperationalError:  # an index made before the vocabulary table
            return []

    def texts_with(self, word: str, limit: int) -> list[str]:
        """The text of up to `limit` chunks holding `word`'s terms (FTS5 stems it as it
        stemmed the text)."""
        try:
            rows = self._db.reader().execute(
                "SELECT c.text FROM chunks_fts f JOIN chunks c ON c.rid = f.rowid "
                "WHERE chunks_fts MATCH ? LIMIT ?",
                ('"' + word.replace('"', '""') + '"', limit),
            )
            return [str(text) for (text,) in rows]
        except sqlite3.OperationalError as err:
            log.debug("FTS texts for %r failed: %s", word, err)
            return []

    def term_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each term (FTS5's own, stemmed, vocabulary). FTS5
        counts a term's chunks by reading its whole posting list (3 ms for a word in half
        of 85k chunks), so the counts are kept until something is committed."""
        known: dict[str, int] = self._db.current("term_counts", dict)
        missing = list(dict.fromkeys(t for t in terms if t not in known))
        if missing:
            marks = ",".join("?" * len(missing))
            try:
                rows = self._db.reader().execute(
                    f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", missing
                )
                found = {str(term): int(doc) for term, doc in rows}
            except sqlite3.OperationalError:  # an index made before the vocabulary table
                return {}
            for term in missing:
                known[term] = found.get(term, 0)
        return {term: known[term] for term in terms if known[term]}

    def name_words(self) -> dict[str, int]:
        """Every word of the indexed files' titles and names (lower-cased, as written, not
        stemmed), with how many files hold it; kept until something is committed."""
        return self._db.current("name_words", self._read_name_words)

    def _read_name_words(self) -> dict[str, int]:
        try:
            rows = self._db.reader().execute("SELECT path, title FROM files").fetchall()
        except sqlite3.OperationalError:
            return {}
        counts: dict[str, int] = {}
        for path, title in rows:
            name = str(path).rsplit("/", 1)[-1].rsplit(".", 1)[0]
            for word in set(_NAME_WORD.findall(f"{name} {title}".lower())):
                counts[word] = counts.get(word, 0) + 1
        return counts
