"""Note cards: what a note says about itself and what other notes call it.

A card per file holds its front-matter description (`description`, `summary`, `excerpt`,
or Dendron's `desc`), its aliases, and the anchor texts of the links pointing at it
(`links.rank_anchors`). Search reads cards as note-level evidence beside the chunks:

* `note_cards(path, description, aliases, anchors, card_hash, card_text)`: `aliases` and
  `anchors` one per line; `card_hash` names the vector of the card's text (title, aliases
  and description: `card_text`) in the store's `vectors` table, when the note has a
  description or aliases — written with the file's text in phase 1 of a sync, embedded in
  phase 2 (`missing_vectors`);
* `notes_fts`: FTS5 over aliases, description and anchors, so a note that only its
  description or its incoming links name is still a candidate.

A note with front matter and no body (a redirect stub, a property-only note) has no
chunk of its own: it gets a card chunk (`card_chunk_text`: its title, description,
aliases and fields) so that its name, its title, its fields and filters find it.

A file's own fields are written with its chunks; anchors are refreshed after each sync
that changed files (`metadata/anchors.py`), and only the cards whose anchor texts changed
are rewritten (`set_anchors`) — a change in file A updates the evidence of the files A
links to, and a file that appears, disappears or is renamed re-targets the links that
name it.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_lsp.engine.terms import TOKENIZE

if TYPE_CHECKING:
    # The store's schema (`db.py`) reads this module: YAML and markdown-it stay out of
    # its imports, so a one-shot keyword search does not load them.
    from kb_lsp.engine.metadata.values import Value

    FieldValues = Mapping[str, Sequence[Value]]

# The front-matter keys a note card reads (`extract.py` reads the same).
DESCRIPTION_KEYS = ("description", "summary", "excerpt", "desc")
ALIAS_KEYS = ("aliases", "alias")

DDL = f"""
CREATE TABLE IF NOT EXISTS note_cards (
    path TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    aliases TEXT NOT NULL,
    anchors TEXT NOT NULL,
    card_hash TEXT,
    card_text TEXT
);
CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(
    path UNINDEXED, aliases, description, anchors,
    tokenize = '{TOKENIZE}'
);
"""

# BM25 weights for notes_fts (path, aliases, description, anchors).
NOTES_BM25 = (0.0, 3.0, 2.0, 1.0)


@dataclass(frozen=True)
class Card:
    path: str
    description: str
    aliases: tuple[str, ...]
    anchors: tuple[str, ...]
    card_hash: str | None


def card_text(title: str, description: str | None, aliases: Iterable[str]) -> str | None:
    """What is embedded for a note's card; None when it has nothing beyond its title."""
    names = [a for a in aliases if a]
    if not description and not names:
        return None
    parts = [title]
    if names:
        parts.append("Also called: " + ", ".join(names))
    if description:
        parts.append(description)
    return "\n".join(parts)


# Fields every file has, or that the card says apart: not repeated among a card's fields.
_NOT_CARD_FIELDS = frozenset(["folder", "words", *DESCRIPTION_KEYS, *ALIAS_KEYS])


def card_chunk_text(
    title: str, description: str | None, aliases: Iterable[str], fields: FieldValues, limit: int
) -> str:
    """The text of the chunk that stands for a note without a body: its title, its
    description, its aliases and its front-matter fields (`name: value, value`), one a
    line, cut to `limit` characters."""
    lines = [title]
    if description:
        lines.append(description)
    names = [a for a in aliases if a]
    if names:
        lines.append("Also called: " + ", ".join(names))
    for name, values in fields.items():
        if name not in _NOT_CARD_FIELDS and values:
            lines.append(f"{name}: " + ", ".join(value.text for value in values))
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: max(1, limit - 1)].rstrip() + "…"


def card_hash(text: str) -> str:
    return hashlib.sha256(("card\n" + text).encode("utf-8")).hexdigest()[:32]


def write_card(
    db: sqlite3.Connection,
    path: str,
    description: str | None,
    aliases: tuple[str, ...],
    card: tuple[str, str] | None,
) -> None:
    """Replace `path`'s own fields and its card's (hash, text), keeping the anchor texts
    other files give it."""
    row = db.execute("SELECT anchors FROM note_cards WHERE path = ?", (path,)).fetchone()
    anchors = str(row[0]) if row else ""
    db.execute(
        "INSERT OR REPLACE INTO note_cards(path, description, aliases, anchors, card_hash, "
        "card_text) VALUES (?, ?, ?, ?, ?, ?)",
        (
            path,
            description or "",
            "\n".join(aliases),
            anchors,
            card[0] if card else None,
            card[1] if card else None,
        ),
    )
    _index(db, path, "\n".join(aliases), description or "", anchors)


def delete_card(db: sqlite3.Connection, path: str) -> None:
    db.execute("DELETE FROM note_cards WHERE path = ?", (path,))
    db.execute("DELETE FROM notes_fts WHERE path = ?", (path,))


def clear(db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM note_cards")
    db.execute("DELETE FROM notes_fts")


def _index(db: sqlite3.Connection, path: str, aliases: str, description: str, anchors: str) -> None:
    db.execute("DELETE FROM notes_fts WHERE path = ?", (path,))
    if aliases or description or anchors:
        db.execute(
            "INSERT INTO notes_fts(path, aliases, description, anchors) VALUES (?, ?, ?, ?)",
            (path, aliases, description, anchors),
        )


def set_anchors(db: sqlite3.Connection, path: str, anchors: str, old: str | None) -> bool:
    """Give `path`'s card the anchor texts `anchors` (one per line) when they are not
    `old` (None: it has no card); whether the card changed."""
    if old is None:
        if not anchors:
            return False
        db.execute(
            "INSERT INTO note_cards(path, description, aliases, anchors, card_hash) "
            "VALUES (?, '', '', ?, NULL)",
            (path, anchors),
        )
        _index(db, path, "", "", anchors)
        return True
    if old == anchors:
        return False
    db.execute("UPDATE note_cards SET anchors = ? WHERE path = ?", (anchors, path))
    row = db.execute(
        "SELECT aliases, description FROM note_cards WHERE path = ?", (path,)
    ).fetchone()
    _index(db, path, str(row[0]), str(row[1]), anchors)
    return True


def missing_vectors(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(hash, text) of the cards whose vector is not in `vectors` yet."""
    rows = db.execute(
        "SELECT DISTINCT card_hash, card_text FROM note_cards WHERE card_hash IS NOT NULL "
        "AND card_text IS NOT NULL AND card_hash NOT IN (SELECT text_hash FROM vectors)"
    )
    return [(str(h), str(t)) for h, t in rows]


def cards_of(db: sqlite3.Connection, paths: Iterable[str]) -> dict[str, Card]:
    out: dict[str, Card] = {}
    unique = list(dict.fromkeys(paths))
    for start in range(0, len(unique), 400):
        part = unique[start : start + 400]
        marks = ",".join("?" * len(part))
        for path, description, aliases, anchors, hash_ in db.execute(
            "SELECT path, description, aliases, anchors, card_hash FROM note_cards "
            f"WHERE path IN ({marks})",
            part,
        ):
            out[str(path)] = Card(
                str(path),
                str(description),
                tuple(a for a in str(aliases).split("\n") if a),
                tuple(a for a in str(anchors).split("\n") if a),
                str(hash_) if hash_ else None,
            )
    return out


def matching_notes(
    db: sqlite3.Connection, match: str, k: int, allowed: list[str] | None
) -> list[str]:
    """Paths whose aliases, description or anchor texts match an FTS5 query, best first."""
    weights = ", ".join(str(w) for w in NOTES_BM25)
    sql = (
        "SELECT path FROM notes_fts WHERE notes_fts MATCH ? "
        f"ORDER BY bm25(notes_fts, {weights}) LIMIT ?"
    )
    depth = k if allowed is None else k * 50
    try:
        rows = [str(row[0]) for row in db.execute(sql, (match, depth))]
    except sqlite3.OperationalError:
        return []
    if allowed is not None:
        keep = set(allowed)
        rows = [p for p in rows if p in keep]
    return rows[:k]
