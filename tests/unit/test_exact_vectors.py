"""A one-shot process's vector search (`exact_vectors`): the vectors SQLite caches, without
Chroma. Its nearest chunks are Chroma's on a small index, it follows the writer's
commits, it leaves out chunks whose vector is not there yet, and a sync that writes
opens (and first repairs) Chroma only then."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.store import hashed_knowledge, indexed_example, open_store

from kb_lsp.engine.storage import DATABASE, store_dir_for

QUERIES = [
    "Mexico payments cut-off",
    "what to do when production is down",
    "glossary of terms",
    "new starter first week",
]


def test_the_nearest_chunks_are_chromas(tmp_path: Path) -> None:
    workspace, storage = indexed_example(tmp_path)
    embedder = HashingEmbedder()
    chroma = open_store(workspace, storage, exact=False)
    answers = {q: chroma.vector_search(embedder.embed_query(q), 8) for q in QUERIES}
    some_paths = sorted({hit.path for hit in answers[QUERIES[0]]})[:2]
    within = chroma.vector_search(embedder.embed_query(QUERIES[0]), 3, some_paths)
    chroma.close()

    exact = open_store(workspace, storage, exact=True)
    for query, expected in answers.items():
        got = exact.vector_search(embedder.embed_query(query), 8)
        assert expected, query
        assert [h.chunk_id for h in got] == [h.chunk_id for h in expected], query
        for mine, theirs in zip(got, expected, strict=True):
            assert mine.path == theirs.path and mine.text_hash == theirs.text_hash
            # Within int8 rounding: SQLite keeps int8, Chroma float32 (`vector_codec.py`).
            assert abs(mine.similarity - theirs.similarity) < 3e-3
    restricted = exact.vector_search(embedder.embed_query(QUERIES[0]), 3, some_paths)
    assert [h.chunk_id for h in restricted] == [h.chunk_id for h in within]
    assert {h.path for h in restricted} <= set(some_paths)
    assert exact.vector_search(embedder.embed_query(QUERIES[0]), 3, []) == []
    assert exact.vector_search(np.zeros(embedder.dimension), 3) == []
    assert not exact.vectors.opened()  # Chroma never opened
    exact.close()


def test_it_follows_the_writers_commits_and_skips_chunks_without_a_vector(
    tmp_path: Path,
) -> None:
    workspace, storage = indexed_example(tmp_path)
    embedder = HashingEmbedder()
    store = open_store(workspace, storage, exact=True)
    query = embedder.embed_query("zanzibar quokka migration")
    before = store.vector_search(query, 5)
    assert before and "notes/quokka.md" not in {h.path for h in before}

    # Another knowledge base on the same store writes a new note; this one, read-only
    # beside it, finds it once the writer committed its vectors.
    note = workspace / "notes" / "quokka.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("# Quokka\n\nThe zanzibar quokka migration plan.\n", encoding="utf-8")
    store.close()
    writer = hashed_knowledge(workspace, storage)
    reader = open_store(workspace, storage, exact=True)
    assert reader.read_only
    writer.sync()
    after = reader.vector_search(query, 5)
    assert after[0].path == "notes/quokka.md"

    # A chunk whose text has no vector (its file waits for phase 2) is left out.
    with sqlite3.connect(store_dir_for(storage, workspace) / DATABASE) as db:
        db.execute(
            "DELETE FROM vectors WHERE text_hash IN "
            "(SELECT text_hash FROM chunks WHERE path = 'notes/quokka.md')"
        )
    assert "notes/quokka.md" not in {h.path for h in reader.vector_search(query, 5)}
    reader.close()
    writer.close()


def test_a_one_shot_sync_opens_chroma_only_to_write(tmp_path: Path) -> None:
    workspace, storage = indexed_example(tmp_path)
    # In processes of their own: this one has imported chromadb long ago, and Chroma's
    # client in a process does not see what another process wrote after it opened.
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from tests.fakes.embedder import HashingEmbedder
        from kb_lsp.config import load_settings
        from kb_lsp.engine.knowledge import KnowledgeBase
        from tests.helpers.store import open_store

        workspace, storage, mode, query = Path(sys.argv[1]), Path(sys.argv[2]), *sys.argv[3:]
        embedder = HashingEmbedder()
        kb = KnowledgeBase([workspace], load_settings().settings, embedder=embedder,
                           storage=storage, exact_vectors=mode == "exact")
        if mode == "exact":
            report = kb.sync()
            hits = kb.search(query)
            print(report.chunks_embedded, hits[0].path if hits else None,
                  "chromadb" in sys.modules)
        else:  # what Chroma holds, for a long-lived process
            kb.close()
            store = open_store(workspace, storage, exact=False)
            print(store.vector_search(embedder.embed_query(query), 1)[0].path)
            store.close()
        kb.close()
        """
    )

    def run(mode: str, query: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", script, str(workspace), str(storage), mode, query],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert run("exact", "Mexico payments cut-off") == ["0", "payments/mexico-payments.md", "False"]

    (workspace / "lagoon.md").write_text(
        "# Lagoon\n\nThe turquoise lagoon ferry timetable.\n", encoding="utf-8"
    )
    assert run("exact", "turquoise lagoon ferry") == ["1", "lagoon.md", "True"]
    # What it wrote went to Chroma too.
    assert run("chroma", "turquoise lagoon ferry") == ["lagoon.md"]
