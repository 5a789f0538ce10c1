"""The query-embedding threads belong to the session that searches: made at its first
search by meaning, gone once its runtime is closed (seen by thread names)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from tests.helpers.cli import HASHING
from tests.helpers.runtime import editor_runtime

from kb_lsp.config import load_settings
from kb_lsp.contract.operations import SEARCH, Call
from kb_lsp.engine.search.query_pool import QUERY_THREADS
from kb_lsp.protocol import SearchParams
from kb_lsp.runtime.dispatch import answer


def query_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(QUERY_THREADS)]


def test_a_closed_runtime_leaves_no_query_embedding_thread(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    before = set(query_threads())
    runtime = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
    try:
        runtime.open([workspace], load_settings({"storage": str(storage)}).settings).result()
        runtime.reindex().result()
        keyword = SearchParams(query="Mexico payments SPEI", mode="keyword")
        assert answer(runtime, SEARCH, keyword, Call("a")).results
        assert set(query_threads()) == before, "a keyword search embeds nothing"
        hybrid = SearchParams(query="Mexico payments SPEI", mode="hybrid")
        response = answer(runtime, SEARCH, hybrid, Call("a"))
        assert response.results[0].path == "payments/mexico-payments.md"
        assert set(query_threads()) - before, "the query was embedded on the session's pool"
    finally:
        runtime.close()
    assert set(query_threads()) - before == set()
