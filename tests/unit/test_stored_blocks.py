"""A chunk's readable blocks are made once, when it is indexed, and its snippets are cut
from the stored ones: the same snippet and marks as rendering its text at query time, for
every hit — on a real docs corpus, on rows a store written before left without them, and
on rows whose blocks another version of the rules made."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import REPO
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.snippet_blocks import BLOCKS_VERSION, Block, encode_blocks, parse_blocks
from kb_lsp.engine.snippets import blocks_text, readable_blocks
from kb_lsp.engine.storage import DATABASE
from kb_lsp.engine.store.reader import open_text_reader

SETTINGS = load_settings({"search": {"threshold": 0.0}}).settings
# The corpora the benchmarks read (`bench/corpora.py`); where they are not, the
# repository's own Markdown is the real text.
CORPORA = Path(os.environ.get("KB_BENCH_CORPORA", REPO.parent / "shared" / "corpora"))
FILES = 24


def _corpus_files() -> list[tuple[Path, Path]]:
    """(file, its path in the copy) of the first `FILES` pages, sorted."""
    docs = CORPORA / "fastapi-docs" / "docs"
    if docs.is_dir():
        return [(p, p.relative_to(docs)) for p in sorted(docs.rglob("*.md"))[:FILES]]
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    pages += sorted((REPO / "bench" / "data").rglob("*.md"))
    return [(p, p.relative_to(REPO)) for p in pages[:FILES]]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    workspace = tmp_path / "corpus"
    for source, rel in _corpus_files():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, workspace / rel)
    return workspace


def _open(workspace: Path, storage: Path) -> KnowledgeBase:
    return KnowledgeBase([workspace], SETTINGS, embedder=HashingEmbedder(), storage=storage)


def _database(kb: KnowledgeBase) -> Path:
    ((folder, _),) = kb.store_folders().items()
    return folder / DATABASE


def _rows(database: Path) -> list[tuple[str, str | None]]:
    with closing(sqlite3.connect(database)) as db:
        return [
            (str(text), blocks) for text, blocks in db.execute("SELECT text, blocks FROM chunks")
        ]


def _queries(rows: list[tuple[str, str | None]]) -> Iterator[str]:
    """Searches made of the corpus's own words: two long words of every fifth chunk."""
    for text, _ in rows[::5]:
        words = [w.strip(".,:;()[]`*_\"'") for w in text.split()]
        long = [w for w in words if len(w) > 5 and w.isalpha()]
        if len(long) >= 2:
            yield f"{long[0]} {long[-1]}"


def _hits(kb: KnowledgeBase, queries: list[str]) -> list[tuple[str, str, str, list[str]]]:
    return [
        (query, hit.path, hit.snippet, hit.marks)
        for query in queries
        for hit in kb.search(query, mode="keyword", limit=10)
    ]


def test_stored_blocks_give_the_snippets_rendering_gives(corpus: Path, storage: Path) -> None:
    kb = _open(corpus, storage)
    kb.sync()
    database = _database(kb)
    rows = _rows(database)
    assert len(rows) >= 200  # a few hundred real chunks
    # Every chunk's stored blocks are what rendering its text gives.
    for text, stored in rows:
        assert stored is not None
        assert parse_blocks(stored) == readable_blocks(text), text
    queries = list(_queries(rows))
    assert len(queries) >= 20
    stored_hits = _hits(kb, queries)
    assert len(stored_hits) > 100
    kb.close()

    # A store written before: no column, no version. It answers at once, rendering each
    # hit's text, with the same snippets; the next sync fills the rows from their text
    # without embedding anything, and the snippets stay the same.
    with closing(sqlite3.connect(database)) as db, db:
        db.execute("ALTER TABLE chunks DROP COLUMN blocks")
        db.execute("DELETE FROM meta WHERE key = 'blocks'")
    reader = open_text_reader(database.parent, root=corpus)
    (first, _) = next(iter(reader.manifest().items()))
    assert [c.blocks for c in reader.chunks_of(first)] == [None] * len(reader.chunks_of(first))
    assert not reader.current()  # a one-shot search leaves such a store to the full path
    reader.close()
    kb = _open(corpus, storage)
    assert {stored for _, stored in _rows(database)} == {None}
    assert _hits(kb, queries) == stored_hits
    assert kb.sync().chunks_embedded == 0
    assert all(stored == blocks_text(text) for text, stored in _rows(database))
    assert _hits(kb, queries) == stored_hits
    kb.close()


def test_blocks_made_by_other_rules_are_made_again(corpus: Path, storage: Path) -> None:
    kb = _open(corpus, storage)
    kb.sync()
    database = _database(kb)
    queries = list(_queries(_rows(database)))
    before = _hits(kb, queries)
    kb.close()
    # Another version's blocks, which would cut other snippets: dropped on opening.
    with closing(sqlite3.connect(database)) as db, db:
        db.execute("UPDATE chunks SET blocks = 'pnot what this version renders'")
        db.execute("UPDATE meta SET value = 'an older version' WHERE key = 'blocks'")
    kb = _open(corpus, storage)
    assert _hits(kb, queries) == before
    kb.sync()
    assert all(stored == blocks_text(text) for text, stored in _rows(database))
    with closing(sqlite3.connect(database)) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'blocks'").fetchone() == (
            BLOCKS_VERSION,
        )
    kb.close()


# Text with the separators and escapes of the stored form, line ends of every kind and
# the flag characters themselves.
_TEXT = st.text(
    st.one_of(st.sampled_from("\n\\pcn\r\x0b\u2028 "), st.characters(codec="utf-8")), max_size=40
)


@given(st.lists(st.builds(Block, _TEXT, st.booleans()), max_size=12))
def test_stored_blocks_read_back_as_written(blocks: list[Block]) -> None:
    stored = encode_blocks(blocks)
    assert parse_blocks(stored) == blocks
    assert stored == "" or len(stored.split("\n")) == len(blocks)  # one line a block
