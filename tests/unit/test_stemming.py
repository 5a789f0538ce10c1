"""One stemmer on both sides: a query's terms are FTS5's terms for its words, so every
word FTS5 indexed is counted (`fts5vocab`) and found by keyword search."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.cli import REPO
from tests.helpers.store import store_beside

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.storage import DATABASE
from kb_lsp.engine.terms import TOKENIZE, query_terms, word_stems

# The nine ordinary words the light stemmer missed, and forms in -ated, -ing, -ies, -ed
# (and the rules where Snowball's "porter" and SQLite's differ: -bly, -logy).
WORDS = [
    "deploying",
    "deployed",
    "policy",
    "query",
    "running",
    "summaries",
    "reconciliation",
    "terminated",
    "validated",
    "operated",
    "generated",
    "migrated",
    "activated",
    "caching",
    "indexing",
    "scheduling",
    "retries",
    "dependencies",
    "libraries",
    "policies",
    "queries",
    "agreed",
    "configured",
    "renamed",
    "stopped",
    "possibly",
    "technology",
    "assembly",
    "generalization",
    "happily",
]


def _fts5_terms(text: str) -> list[str]:
    """What an FTS5 table with the store's tokenizer indexes for `text`."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{TOKENIZE}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.execute("INSERT INTO t(x) VALUES (?)", (text,))
    return [str(term) for (term,) in db.execute("SELECT term FROM v ORDER BY offset")]


@pytest.mark.parametrize("word", WORDS)
def test_a_words_terms_are_fts5s_terms(word: str) -> None:
    assert query_terms(word) == _fts5_terms(word)
    assert word_stems(f"We {word} it.") >= set(_fts5_terms(word))


def test_every_word_is_counted_in_fts5vocab_and_found_by_keyword_search(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "notes"
    workspace.mkdir()
    for n, word in enumerate(WORDS):
        (workspace / f"note-{n:02d}.md").write_text(
            f"# Note {n}\n\nYesterday the job was {word} by the night shift.\n"
        )
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    kb = KnowledgeBase(
        [workspace], settings, embedder=HashingEmbedder(), storage=tmp_path / "storage"
    )
    kb.sync()
    # Every full-text table of the store tokenises as `terms` does.
    (folder,) = kb.store_folders()
    with sqlite3.connect(folder / DATABASE) as db:
        tables = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE sql LIKE '%fts5(%'"))
    assert set(tables) == {"chunks_fts", "notes_fts"}
    assert all(f"tokenize = '{TOKENIZE}'" in sql for sql in tables.values())
    for n, word in enumerate(WORDS):
        terms = query_terms(word)
        with store_beside(kb) as store:
            counts = store.fts.term_counts(terms)
        assert set(counts) == set(terms), f"{word}: {terms} not in the index's vocabulary"
        assert all(count >= 1 for count in counts.values())
        # Forms of one stem (deploying, deployed) find each other's notes too.
        hits = {hit.path: hit for hit in kb.search(word, mode="keyword", limit=5)}
        mine = hits.get(f"note-{n:02d}.md")
        assert mine is not None, (word, list(hits))
        assert word in [mark.lower() for mark in mine.marks]
    kb.close()


def test_each_texts_stems_in_one_batch_are_each_texts_own() -> None:
    # A snippet ranks its sentences with one batch of the tokenizer. Two fresh processes
    # (the word cache empty in each): one batch for all texts, and one call per text.
    rng = random.Random(7)
    pieces = ["deploying", "snake_case", "camelCase", "HTTPServer", "é1", "`x`", "__", "-", "."]
    texts = [" ".join(rng.choice(pieces) for _ in range(rng.randrange(6))) for _ in range(300)]
    texts += (REPO / "README.md").read_text(encoding="utf-8").split(". ")[:300]
    probe = (
        "import json, sys\n"
        "from kb_lsp.engine.terms import each_word_stems, word_stems\n"
        "texts = json.load(sys.stdin)\n"
        "batch = sys.argv[1] == 'batch'\n"
        "out = each_word_stems(texts) if batch else [word_stems(t) for t in texts]\n"
        "print(json.dumps([sorted(s) for s in out]))\n"
    )
    answers = [
        subprocess.run(
            [sys.executable, "-c", probe, how], input=json.dumps(texts), capture_output=True,
            text=True, check=True, timeout=300,
        ).stdout
        for how in ("batch", "each")
    ]  # fmt: skip
    assert answers[0] == answers[1]
    assert any(json.loads(answers[0]))  # texts with words, not only punctuation
