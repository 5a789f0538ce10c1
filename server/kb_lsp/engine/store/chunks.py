"""The chunks of one store: writing a file's chunks with their FTS rows and metadata (phase
1 of a sync), removing files, and reading chunks back by file, by id or a page at a time.

Beside its text a chunk row keeps what is made from it once rather than at every search:
its stems (`terms.stems_text`: what scoring compares query words with) and its readable
blocks (`snippets.blocks_text`, stored as `snippet_blocks.py` says: what its snippet is
cut from). Each is named by a version in `meta`; a store whose values were made by
another version, or before the column existed, drops them on opening, and the next sync
makes them again from the stored text (`fill_derived`: no file is read again, no vector
made); search makes what a row lacks itself meanwhile."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_lsp.engine.metadata import tables as metadata_tables
from kb_lsp.engine.records import StoredChunk
from kb_lsp.engine.snippet_blocks import BLOCKS_VERSION
from kb_lsp.engine.store.catalog import FileRecord
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.text_format import ADD_FILE, REMOVE_FILE, path_words
from kb_lsp.engine.terms import STEMS_VERSION, stems_text

if TYPE_CHECKING:
    # Only a type: keyword search reads chunks without loading extraction's parsers.
    from kb_lsp.engine.metadata.extract import FileMetadata
    from kb_lsp.engine.store.chunk_rows import IndexedChunk, NewChunk

_COLUMNS = "path, idx, text, heading, start_line, end_line, text_hash"


def _blocks(heading: str, text: str) -> str:
    # Only a writer makes blocks: a reader of the store never compiles the rules.
    from kb_lsp.engine.snippets import blocks_text

    return blocks_text(text)  # the heading is shown apart from the snippet


# Derived column -> (its version, what makes it from a chunk's heading and text).
_DERIVED: dict[str, tuple[str, Callable[[str, str], str]]] = {
    "stems": (STEMS_VERSION, stems_text),
    "blocks": (BLOCKS_VERSION, _blocks),
}


def chunk_id(path: str, index: int) -> str:
    return f"{hashlib.sha1(path.encode('utf-8')).hexdigest()[:16]}:{index}"


class Chunks:
    def __init__(self, db: Database, root: Path) -> None:
        self._db = db
        self._root = str(root)
        self._missing: set[str] = set()  # derived columns some rows lack (module doc)
        self._read: str | None = None  # `_columns`

    # --- writing -------------------------------------------------------------------------

    def write(
        self,
        files: Sequence[tuple[FileRecord, Iterable[NewChunk]]],
        metadata: dict[str, FileMetadata] | None = None,
        cards: dict[str, tuple[str, str]] | None = None,
    ) -> list[str]:
        """Replace the chunks, FTS rows and metadata of `files` in one transaction, each
        file left `pending`; returns the chunk ids the new versions no longer have."""
        now = time.time()
        stale_ids: list[str] = []
        with self._db.writer() as db:
            for record, chunks in files:
                stale_ids.extend(self._write_file(db, record, chunks, now))
                if metadata is not None and record.path in metadata:
                    card = (cards or {}).get(record.path)
                    metadata_tables.write(db, record.path, metadata[record.path], card)
        return stale_ids

    def _write_file(
        self, db: sqlite3.Connection, record: FileRecord, chunks: Iterable[NewChunk], now: float
    ) -> set[str]:
        old_ids = {
            row[0] for row in db.execute("SELECT id FROM chunks WHERE path = ?", (record.path,))
        }
        if old_ids:
            _delete_rows(db, record.path)  # while its file's row is the one indexed
        count = 0
        for chunk in chunks:
            cid = chunk_id(record.path, chunk.index)
            old_ids.discard(cid)
            count += 1
            stems = (
                chunk.stems if chunk.stems is not None else stems_text(chunk.heading, chunk.text)
            )
            blocks = chunk.blocks if chunk.blocks is not None else _blocks("", chunk.text)
            db.execute(
                "INSERT INTO chunks(id, path, idx, text_hash, heading, start_line, "
                "end_line, text, stems, blocks) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    cid,
                    record.path,
                    chunk.index,
                    chunk.text_hash,
                    chunk.heading,
                    chunk.start_line,
                    chunk.end_line,
                    chunk.text,
                    stems,
                    blocks,
                ),
            )
        db.execute(
            "INSERT OR REPLACE INTO files(path, size, mtime_ns, sha256, title, "
            "chunk_count, state, indexed_at, words) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
            (
                record.path,
                record.size,
                record.mtime_ns,
                record.sha256,
                record.title,
                count,
                now,
                path_words(record.path),
            ),
        )
        db.execute(ADD_FILE, (record.path,))  # FTS5 reads the rows just written
        return old_ids

    def delete(self, paths: Sequence[str]) -> list[str]:
        """Remove files with their chunks, FTS rows and metadata; returns the chunk ids."""
        ids: list[str] = []
        with self._db.writer() as db:
            for path in paths:
                ids.extend(
                    row[0] for row in db.execute("SELECT id FROM chunks WHERE path = ?", (path,))
                )
                _delete_rows(db, path)
                metadata_tables.delete(db, path)
                db.execute("DELETE FROM files WHERE path = ?", (path,))
                db.execute("DELETE FROM skipped WHERE path = ?", (path,))
        return ids

    # --- what is made from the text (module doc) ------------------------------------------

    def check_derived(self) -> None:
        """Values made by another version than this code's (or none: a store made before
        their column) are dropped; `fill_derived` (the next sync runs it) makes them
        again, and search makes a row's itself meanwhile."""
        stale = [
            column
            for column, (version, _) in _DERIVED.items()
            if self._db.get_meta(column) != version
        ]
        if not stale:
            return
        with self._db.writer() as db:
            columns = {str(row[1]) for row in db.execute("PRAGMA table_info(chunks)")}
            for column in stale:
                if column not in columns:
                    db.execute(f"ALTER TABLE chunks ADD COLUMN {column} TEXT")
                else:
                    db.execute(f"UPDATE chunks SET {column} = NULL")
                self._db.set_meta(db, column, _DERIVED[column][0])
        self._missing.update(stale)
        self._read = None

    def fill_derived(self, batch: int = 500) -> int:
        """Make the values rows lack (see `check_derived`); returns how many were made."""
        filled = 0
        for column in sorted(self._missing):
            make = _DERIVED[column][1]
            while column in self._missing:
                rows = (
                    self._db.reader()
                    .execute(
                        f"SELECT id, heading, text FROM chunks WHERE {column} IS NULL LIMIT ?",
                        (batch,),
                    )
                    .fetchall()
                )
                values = [(make(heading, text), cid) for cid, heading, text in rows]
                with self._db.writer() as db:
                    db.executemany(f"UPDATE chunks SET {column} = ? WHERE id = ?", values)
                filled += len(rows)
                if len(rows) < batch:
                    self._missing.discard(column)
        return filled

    # --- reading -------------------------------------------------------------------------

    def _columns(self) -> str:
        """The columns a chunk is read from. A store that only its writer upgrades may
        lack a derived column while another process, on older code, writes it: its rows
        are read as without the values then."""
        if self._read is None:
            present = {
                str(row[1]) for row in self._db.reader().execute("PRAGMA table_info(chunks)")
            }
            derived = (c if c in present else f"NULL AS {c}" for c in _DERIVED)
            self._read = ", ".join((_COLUMNS, *derived))
        return self._read

    def _chunk(self, row: Sequence[Any]) -> StoredChunk:
        path, index, text, heading, start, end, digest, stems, blocks = row
        return StoredChunk(
            path, self._root, index, text, heading, start, end, digest, stems, blocks
        )

    def chunks_of(self, path: str) -> list[StoredChunk]:
        rows = self._db.reader().execute(
            f"SELECT {self._columns()} FROM chunks WHERE path = ? ORDER BY idx", (path,)
        )
        return [self._chunk(row) for row in rows]

    def first_chunks(self, paths: Iterable[str]) -> dict[str, StoredChunk]:
        """path -> its first chunk, for those of `paths` that have one (one query)."""
        rows = self._db.select_in(
            f"SELECT {self._columns()} FROM chunks c WHERE path IN ({{marks}}) "
            "AND idx = (SELECT min(idx) FROM chunks WHERE path = c.path)",
            paths,
        )
        return {str(row[0]): self._chunk(row) for row in rows}

    def chunks_by_id(self, ids: Iterable[str]) -> dict[str, StoredChunk]:
        rows = self._db.select_in(
            f"SELECT id, {self._columns()} FROM chunks WHERE id IN ({{marks}})", ids
        )
        return {row[0]: self._chunk(row[1:]) for row in rows}

    def of_rows(self, rids: Iterable[int]) -> dict[int, tuple[str, str]]:
        """FTS row (`chunks.rid`) -> (chunk id, path), for the rows SQLite holds."""
        rows = self._db.select_in("SELECT rid, id, path FROM chunks WHERE rid IN ({marks})", rids)
        return {int(rid): (str(cid), str(path)) for rid, cid, path in rows}

    def indexed(self, ids: Iterable[str] | None = None) -> dict[str, IndexedChunk]:
        """chunk id -> its path, text hash and whether its file is complete: of `ids`, or
        of every chunk (None)."""
        sql = (
            "SELECT c.id, c.path, c.text_hash, f.state FROM chunks c "
            "LEFT JOIN files f ON f.path = c.path"
        )
        from kb_lsp.engine.store.chunk_rows import IndexedChunk  # the vector side's

        if ids is None:
            rows: Iterable[tuple[Any, ...]] = self._db.reader().execute(sql)
        else:
            rows = self._db.select_in(sql + " WHERE c.id IN ({marks})", ids)
        return {
            str(cid): IndexedChunk(str(path), str(digest), state == "ok")
            for cid, path, digest, state in rows
        }

    def chunk_page(self, path: str, start: int, limit: int) -> list[tuple[str, str, str, str]]:
        """(id, text_hash, heading, text) of a file's chunks with index >= `start`, in
        order, at most `limit`: phase 2 reads a big file a page at a time."""
        rows = self._db.reader().execute(
            "SELECT id, text_hash, heading, text FROM chunks WHERE path = ? AND idx >= ? "
            "ORDER BY idx LIMIT ?",
            (path, start, limit),
        )
        return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]


def _delete_rows(db: sqlite3.Connection, path: str) -> None:
    """A file's FTS rows, then its chunks: FTS5 is told what it indexed (`text_format`)."""
    db.execute(REMOVE_FILE, (path,))
    db.execute("DELETE FROM chunks WHERE path = ?", (path,))
