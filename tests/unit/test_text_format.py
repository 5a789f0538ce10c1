"""The chunks' text kept once (issue 26): FTS5 reads it from the chunks (external content).
Whatever files are written, rewritten and removed, the index matches the chunks (FTS5's
own check, Hypothesis), and a store made before is moved over once with the same search
results, a smaller file, and edits that still reach the index."""

from __future__ import annotations

import sqlite3
import tempfile
import zlib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import copy_example_workspace
from tests.helpers.store import hashed_knowledge

from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.storage import DATABASE, store_dir_for
from kb_lsp.engine.store import FileRecord, NewChunk
from kb_lsp.engine.store.chunks import Chunks
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.fts import Fts

CHECK = "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)"

words = st.sampled_from(["alpha", "beta", "gamma", "delta", "Ärger", "naïve", "x", "42", "é"])
texts = st.lists(words, min_size=0, max_size=6).map(" ".join)
paths = st.sampled_from(["a.md", "notes/b.md", "deep/er/CamelCase_c.md", "d e.md"])
writes = st.tuples(st.just("write"), paths, texts, st.lists(texts, min_size=0, max_size=4))
deletes = st.tuples(st.just("delete"), paths, st.just(""), st.just([]))


def _record(path: str, title: str, count: int) -> FileRecord:
    return FileRecord(path, 1, 1, "sha", title, count, "pending")


def _chunks(path: str, bodies: list[str]) -> list[NewChunk]:
    # A marker per chunk: a query for it must find that chunk and no other.
    return [
        NewChunk(i, f"{body} mark{zlib.crc32(path.encode())}x{i}", f"h{i}", "Heading", 1, 2)
        for i, body in enumerate(bodies)
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(writes, deletes), min_size=1, max_size=12))
def test_the_index_matches_the_chunks_whatever_is_written_and_removed(ops: list) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Database(Path(folder))
        chunks = Chunks(db, Path(folder))
        fts = Fts(db, chunks, lambda: 1)
        for op, path, title, bodies in ops:
            if op == "write":
                chunks.write([(_record(path, title, len(bodies)), _chunks(path, bodies))])
            else:
                chunks.delete([path])
        with db.writer() as wdb:
            wdb.execute(CHECK)
        reader = db.reader()
        held = {str(r[0]): str(r[1]) for r in reader.execute("SELECT id, text FROM chunks")}
        indexed = reader.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
        assert indexed == len(held)
        for cid, text in held.items():
            marker = text.split()[-1]
            assert [h.chunk_id for h in fts.search(marker, 5)] == [cid]
        db.close()


OLD_LAYOUT = """
DROP VIEW chunk_texts;
DROP TABLE chunks_vocab;
DROP TABLE chunks_fts;
ALTER TABLE chunks RENAME TO chunks_new;
DROP INDEX chunks_path;
DROP INDEX chunks_hash;
CREATE TABLE chunks (
    id TEXT PRIMARY KEY, path TEXT NOT NULL, idx INTEGER NOT NULL, text_hash TEXT NOT NULL,
    heading TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    text TEXT NOT NULL, stems TEXT
);
INSERT INTO chunks SELECT id, path, idx, text_hash, heading, start_line, end_line, text, stems
    FROM chunks_new;
DROP TABLE chunks_new;
CREATE INDEX chunks_path ON chunks(path, idx);
CREATE INDEX chunks_hash ON chunks(text_hash);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    chunk_id UNINDEXED, path, title, heading, text,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO chunks_fts(chunk_id, path, title, heading, text)
    SELECT c.id, f.words, f.title, c.heading, c.text FROM chunks c JOIN files f ON f.path = c.path;
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
ALTER TABLE files DROP COLUMN words;
VACUUM;
"""

QUERIES = ["Mexico payments cut-off", "incident", "glossary", "first week", "deploy"]


def _found(kb: KnowledgeBase) -> dict[str, list[tuple[str, str]]]:
    return {
        q: [(h.path, h.snippet) for h in kb.search(q, mode="keyword", limit=10)] for q in QUERIES
    }


def test_a_store_made_before_is_moved_over_once_and_searches_alike(tmp_path: Path) -> None:
    workspace = copy_example_workspace(tmp_path / "workspace")
    storage = tmp_path / "store"
    kb = hashed_knowledge(workspace, storage)
    kb.sync()
    before = _found(kb)
    kb.close()
    assert all(before.values())

    # The layout of a store made before: chunks keyed by their text id, FTS5 with its own
    # copy of the text.
    database = store_dir_for(storage, workspace) / DATABASE
    old = sqlite3.connect(database, isolation_level=None)
    old.executescript(OLD_LAYOUT)
    old.close()
    old_size = database.stat().st_size

    kb = hashed_knowledge(workspace, storage)  # the writer's opening moves it over
    assert _found(kb) == before
    db = sqlite3.connect(database, isolation_level=None)
    db.execute(CHECK)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    columns = {r[1] for r in db.execute("PRAGMA table_info(chunks)")}
    db.close()
    assert "rid" in columns
    assert "chunks_fts_content" not in tables  # no second copy of the text
    assert database.stat().st_size < old_size

    # An edit after the move reaches the index: the new word is found, the old is gone.
    note = workspace / "glossary.md"
    note.write_text("# Glossary\n\nA zanzibar quokka lives here now.\n", encoding="utf-8")
    kb.sync()
    assert [h.path for h in kb.search("zanzibar quokka", mode="keyword")] == ["glossary.md"]
    assert "glossary.md" not in {h.path for h in kb.search("Short definitions", mode="keyword")}
    kb.close()

    # Opened again: nothing to move; the index still matches the chunks.
    kb = hashed_knowledge(workspace, storage)
    assert [h.path for h in kb.search("zanzibar quokka", mode="keyword")] == ["glossary.md"]
    kb.close()
    db = sqlite3.connect(database, isolation_level=None)
    db.execute(CHECK)
    db.close()
