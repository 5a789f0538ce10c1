"""The chunks' text kept once: FTS5 indexes it from `chunks` (external content) instead of
holding a second copy (issue 26: store size), and a file's FTS rows are found by rowid.

`chunks_fts` reads its columns through the view `chunk_texts` — a chunk's id, its file's
path as words and title (from `files`), its heading and text — by `chunks.rid`, an
INTEGER PRIMARY KEY (a VACUUM keeps it) that is never reused (AUTOINCREMENT: an FTS row
can never be taken for a later chunk's). With external content FTS5 must be told what a
deleted row held, so a file's rows are written and deleted only through the view, while
the chunks and the file's row are still the ones indexed (`chunks.py`); the
`integrity-check` command checks the index against the view
(`tests/unit/test_text_format.py`). Removing a file's rows is a lookup by rowid, where a
delete by chunk id scanned the whole FTS table (0.4 ms per 1,000 chunks on every edit).

A store made before (chunks without `rid`, FTS5 with its own copy) is moved over once, in
one transaction, when its writer opens it; the database is compacted after.
"""

from __future__ import annotations

import logging
import sqlite3

from kb_lsp.engine.terms import TOKENIZE

log = logging.getLogger("kb_lsp.engine.store")

CHUNKS = """
CREATE TABLE IF NOT EXISTS chunks (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    idx INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    heading TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL,
    stems TEXT,
    blocks TEXT
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path, idx);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(text_hash);
"""

FTS = f"""
CREATE VIEW IF NOT EXISTS chunk_texts AS
    SELECT c.rid AS rid, c.id AS chunk_id, f.words AS path, f.title AS title,
           c.heading AS heading, c.text AS text, c.path AS file
    FROM chunks c JOIN files f ON f.path = c.path;
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    chunk_id UNINDEXED, path, title, heading, text,
    content = 'chunk_texts', content_rowid = 'rid',
    tokenize = '{TOKENIZE}'
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'row');
"""

_COLUMNS = "chunk_id, path, title, heading, text"
ADD_FILE = (
    f"INSERT INTO chunks_fts(rowid, {_COLUMNS}) SELECT rid, {_COLUMNS} FROM chunk_texts "
    "WHERE file = ?"
)
REMOVE_FILE = (
    f"INSERT INTO chunks_fts(chunks_fts, rowid, {_COLUMNS}) "
    f"SELECT 'delete', rid, {_COLUMNS} FROM chunk_texts WHERE file = ?"
)

_KEPT = "id, path, idx, text_hash, heading, start_line, end_line, text"


def path_words(path: str) -> str:
    """A path as words for FTS: `payments/mexico-payments.md` -> `payments mexico payments md`.

    unicode61 already splits on `/`, `-` and `.`, but not on camelCase or `_` inside
    words in every build, so split explicitly.
    """
    out: list[str] = []
    word: list[str] = []
    for char in path:
        if char.isalnum():
            if word and char.isupper() and word[-1].islower():
                out.append("".join(word))
                word = []
            word.append(char)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return " ".join(out)


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def ensure(db: sqlite3.Connection) -> bool:
    """Make the text tables of a new store, or move an older store's over (the writer's
    connection, outside a transaction). True when a store was moved: compact it then."""
    if "rid" in _columns(db, "chunks"):
        for statement in _statements(FTS):
            db.execute(statement)
        return False
    log.info(
        "Moving the index to FTS5 over the chunks' own text (once; about 15 s for 128k chunks)"
    )
    db.execute("BEGIN IMMEDIATE")
    try:
        chunks = _move(db)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    log.info("Moved the index's %d chunks to FTS5 over their own text (once)", chunks)
    return True


def _move(db: sqlite3.Connection) -> int:
    if "words" not in _columns(db, "files"):
        db.execute("ALTER TABLE files ADD COLUMN words TEXT NOT NULL DEFAULT ''")
    paths = [str(row[0]) for row in db.execute("SELECT path FROM files")]
    db.executemany("UPDATE files SET words = ? WHERE path = ?", ((path_words(p), p) for p in paths))
    stems = "stems" if "stems" in _columns(db, "chunks") else "NULL"
    db.execute("DROP TABLE IF EXISTS chunks_vocab")
    db.execute("DROP TABLE IF EXISTS chunks_fts")
    db.execute("ALTER TABLE chunks RENAME TO chunks_before")
    db.execute("DROP INDEX IF EXISTS chunks_path")
    db.execute("DROP INDEX IF EXISTS chunks_hash")
    for statement in _statements(CHUNKS):
        db.execute(statement)
    db.execute(
        f"INSERT INTO chunks({_KEPT}, stems) SELECT {_KEPT}, {stems} FROM chunks_before "
        "ORDER BY path, idx"
    )
    db.execute("DROP TABLE chunks_before")
    for statement in _statements(FTS):
        db.execute(statement)
    db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    return int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])


__all__ = ["ADD_FILE", "CHUNKS", "FTS", "REMOVE_FILE", "ensure", "path_words"]
