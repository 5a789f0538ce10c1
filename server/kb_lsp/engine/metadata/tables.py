"""Metadata in the store's SQLite database: tables, writes, and the reads filters,
the schema and hits need.

* `file_fields(path, field, kind, value, key, number, source)`: one row per value (a list
  gives one row per element); `key` is the lower-cased value that `field:value` compares,
  `number` is set for numbers; dates are ISO text, which orders like the dates; `source`
  is `""` for what the author wrote and the model's identity for a value a model
  extracted (`store/extractions.py`), so filters read both alike.
* `file_extraction(path, content_hash, schema_hash, model, dropped)`: which extraction
  a file's extracted rows come from (the third phase compares it with the file's hash).
* `extracted_values(path, field, value, model, kept, valid, reason, evidence, span)`:
  every value a model gave for a file — kept (also a `file_fields` row; `span`: the
  note's words it was read from, as JSON) or rejected (`reason`; `evidence`: what the
  model quoted) — for hits, `kb schema`'s counts and `kb schema --extracted`.
* `file_problems(path, line, message)`: what `kb status` lists (malformed front matter).
* `file_links(path, kind, target, text, heading, line)`: outgoing links as written;
  where they resolve, and the names they and the file go by: `anchors.py`.

The store writes these rows in the same transaction as the file's chunks (`Store.
write_files`), so metadata never disagrees with the text it came from.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kb_lsp.engine.metadata import anchor_tables, cards

if TYPE_CHECKING:
    # Only a type here: the store's schema must not load extraction's parsers.
    from kb_lsp.engine.metadata.extract import FileMetadata

# Bump when extraction changes what it stores: files indexed before are re-read (their
# vectors come from the cache, so this costs no embedding).
METADATA_VERSION = "7"

DDL = (
    """
CREATE TABLE IF NOT EXISTS file_fields (
    path TEXT NOT NULL,
    field TEXT NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    key TEXT NOT NULL,
    number REAL,
    source TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS file_fields_path ON file_fields(path, field);
CREATE INDEX IF NOT EXISTS file_fields_key ON file_fields(field, key);
CREATE TABLE IF NOT EXISTS file_problems (
    path TEXT NOT NULL,
    line INTEGER NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS file_problems_path ON file_problems(path);
CREATE TABLE IF NOT EXISTS file_links (
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    text TEXT NOT NULL,
    heading TEXT NOT NULL,
    line INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS file_links_path ON file_links(path);
CREATE TABLE IF NOT EXISTS file_extraction (
    path TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    schema_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    dropped TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS extracted_values (
    path TEXT NOT NULL,
    field TEXT NOT NULL,
    value TEXT NOT NULL,
    model TEXT NOT NULL,
    kept INTEGER NOT NULL,
    valid INTEGER NOT NULL,
    reason TEXT NOT NULL,
    evidence TEXT NOT NULL,
    span TEXT
);
CREATE INDEX IF NOT EXISTS extracted_values_path ON extracted_values(path);
"""
    + cards.DDL
    + anchor_tables.DDL
)

_TABLES = ("file_fields", "file_problems", "file_links", "file_extraction", "extracted_values")


def write(
    db: sqlite3.Connection, path: str, meta: FileMetadata, card: tuple[str, str] | None = None
) -> None:
    """Replace the metadata rows of `path` (inside the caller's transaction); its card
    keeps the anchor texts other files give it."""
    # The link resolver loads with a write: a reader of the store never needs it.
    from kb_lsp.engine.metadata import anchors
    from kb_lsp.engine.metadata.links import StoredLink

    for table in _TABLES:
        db.execute(f"DELETE FROM {table} WHERE path = ?", (path,))
    anchors.forget(db, path)
    anchors.remember(
        db, path, (StoredLink(path, k.kind, k.target, k.text) for k in meta.links), meta.aliases
    )
    cards.write_card(db, path, meta.description, meta.aliases, card)
    db.executemany(
        "INSERT INTO file_fields(path, field, kind, value, key, number) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (path, name, value.kind, value.text, value.text.lower(), value.number)
            for name, values in meta.fields.items()
            for value in values
        ],
    )
    db.executemany(
        "INSERT INTO file_problems(path, line, message) VALUES (?, ?, ?)",
        [(path, p.line, p.message) for p in meta.problems],
    )
    db.executemany(
        "INSERT INTO file_links(path, kind, target, text, heading, line) VALUES (?, ?, ?, ?, ?, ?)",
        [(path, k.kind, k.target, k.text, k.heading, k.line) for k in meta.links],
    )


def recreate(db: sqlite3.Connection) -> None:
    """Drop and create every metadata table (derived data: a new `METADATA_VERSION`
    may change their columns), inside the caller's transaction."""
    for table in (*_TABLES, "note_cards", "notes_fts", *anchor_tables.TABLES):
        db.execute(f"DROP TABLE IF EXISTS {table}")
    for statement in DDL.split(";"):
        if statement.strip():
            db.execute(statement)


def delete(db: sqlite3.Connection, path: str) -> None:
    from kb_lsp.engine.metadata import anchors

    for table in _TABLES:
        db.execute(f"DELETE FROM {table} WHERE path = ?", (path,))
    anchors.forget(db, path)
    cards.delete_card(db, path)


def clear(db: sqlite3.Connection) -> None:
    for table in (*_TABLES, *anchor_tables.TABLES):
        db.execute(f"DELETE FROM {table}")
    cards.clear(db)


# --- reads ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredProblem:
    path: str
    line: int
    message: str


def problems(db: sqlite3.Connection) -> list[StoredProblem]:
    rows = db.execute("SELECT path, line, message FROM file_problems ORDER BY path, line")
    return [StoredProblem(str(p), int(line), str(m)) for p, line, m in rows]


def field_names(db: sqlite3.Connection) -> set[str]:
    return {str(row[0]) for row in db.execute("SELECT DISTINCT field FROM file_fields")}


def values_of(
    db: sqlite3.Connection, paths: Sequence[str], fields: Sequence[str]
) -> dict[str, dict[str, list[str]]]:
    """path -> field -> values (as written), for the given paths and fields."""
    out: dict[str, dict[str, list[str]]] = {}
    if not paths or not fields:
        return out
    field_marks = ",".join("?" * len(fields))
    for start in range(0, len(paths), 400):
        part = list(paths[start : start + 400])
        marks = ",".join("?" * len(part))
        rows = db.execute(
            f"SELECT path, field, value FROM file_fields WHERE path IN ({marks}) "
            f"AND field IN ({field_marks}) ORDER BY rowid",
            [*part, *fields],
        )
        for path, name, value in rows:
            out.setdefault(str(path), {}).setdefault(str(name), []).append(str(value))
    return out


def values_containing(
    db: sqlite3.Connection, field: str, fragment: str, limit: int
) -> list[tuple[str, int]]:
    """The values of `field` (as written) whose key holds `fragment` (lower-case), with
    how many files have each, the most common first."""
    pattern = "%" + fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = db.execute(
        "SELECT min(value), count(DISTINCT path) AS files FROM file_fields "
        "WHERE field = ? AND key LIKE ? ESCAPE '\\' GROUP BY key ORDER BY files DESC, key "
        "LIMIT ?",
        (field, pattern, limit),
    )
    return [(str(value), int(files)) for value, files in rows]


@dataclass(frozen=True)
class FieldSummary:
    name: str
    kinds: dict[str, int]  # kind -> files having a value of that kind
    files: int
    top: list[tuple[str, int]]  # (value as written, files)
    extracted: int = 0  # files whose value a model extracted (the rest: written)
    # model -> (values kept, values rejected) of this field
    models: dict[str, tuple[int, int]] = field(default_factory=dict)


def summarise(db: sqlite3.Connection, top: int) -> list[FieldSummary]:
    """Every field: its kinds, how many files have it, its most frequent values."""
    counts = {
        str(name): int(files)
        for name, files in db.execute(
            "SELECT field, count(DISTINCT path) FROM file_fields GROUP BY field"
        )
    }
    extracted = {
        str(name): int(files)
        for name, files in db.execute(
            "SELECT field, count(DISTINCT path) FROM file_fields WHERE source != '' GROUP BY field"
        )
    }
    kinds: dict[str, dict[str, int]] = {}
    for name, kind, files in db.execute(
        "SELECT field, kind, count(DISTINCT path) FROM file_fields GROUP BY field, kind"
    ):
        kinds.setdefault(str(name), {})[str(kind)] = int(files)
    tops: dict[str, list[tuple[str, int]]] = {}
    # Most frequent values per field (ties by value), the most common spelling shown.
    rows = db.execute(
        """
        SELECT field, key, count(DISTINCT path) AS files, min(value)
        FROM file_fields GROUP BY field, key
        """
    )
    for name, _key, files, value in rows:
        tops.setdefault(str(name), []).append((str(value), int(files)))
    models = _extracted_counts(db)
    out = []
    for name in sorted(set(counts) | set(models)):
        values = sorted(tops.get(name, []), key=lambda item: (-item[1], item[0]))
        out.append(
            FieldSummary(
                name,
                kinds.get(name, {}),
                counts.get(name, 0),
                values[:top],
                extracted.get(name, 0),
                models.get(name, {}),
            )
        )
    return out


def _extracted_counts(db: sqlite3.Connection) -> dict[str, dict[str, tuple[int, int]]]:
    """field -> model -> (values kept, values rejected)."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for name, model, kept, rejected in db.execute(
        "SELECT field, model, sum(kept), sum(1 - kept) FROM extracted_values GROUP BY field, model"
    ):
        out.setdefault(str(name), {})[str(model)] = (int(kept), int(rejected))
    return out
