"""Keyword mode never embeds the query, so a one-shot keyword search never loads the
model: an embedder that fails when asked for a query's vector answers keyword searches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder, QueryRefusingEmbedder
from tests.helpers.cli import HASHED, REPO, run

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase

REFUSING = {
    "KB_EMBEDDER_FACTORY": "tests.fakes.embedder:QueryRefusingEmbedder",
    "PYTHONPATH": str(REPO),
}
SETTINGS = load_settings({"search": {"threshold": 0.0}}).settings


def test_keyword_search_never_embeds_the_query(workspace: Path, storage: Path) -> None:
    first = KnowledgeBase([workspace], SETTINGS, embedder=HashingEmbedder(), storage=storage)
    first.sync()
    first.close()
    kb = KnowledgeBase([workspace], SETTINGS, embedder=QueryRefusingEmbedder(), storage=storage)
    hits = kb.search("Mexico payments SPEI", mode="keyword")
    assert hits and hits[0].path == "payments/mexico-payments.md"
    assert kb.search("SPEI folder:payments", mode="keyword")
    # The other modes do ask for it: the embedder above is the one searching.
    for mode in ("hybrid", "semantic"):
        with pytest.raises(AssertionError, match="was embedded"):
            kb.search("Mexico payments SPEI", mode=mode)  # type: ignore[arg-type]
    kb.close()


def test_a_one_shot_keyword_search_on_the_command_line_embeds_nothing(
    workspace: Path, storage: Path
) -> None:
    assert run("index", str(workspace), storage=storage, **HASHED).returncode == 0
    args = ("search", "Mexico payments SPEI", "-w", str(workspace))
    keyword = run(*args, "--mode", "keyword", storage=storage, **REFUSING)
    assert keyword.returncode == 0, keyword.stderr
    assert keyword.stdout.startswith("1, payments/mexico-payments.md")
    hybrid = run(*args, storage=storage, **REFUSING)
    assert hybrid.returncode != 0
    assert "was embedded" in hybrid.stderr


def test_one_shot_keyword_search_status_and_schema_load_no_numpy_pydantic_onnx_chroma_or_yaml(
    workspace: Path, storage: Path
) -> None:
    # The default embedder (MiniLM on onnxruntime), as a user's `kb` has it: on a current
    # index a keyword search, a status and the schema answer from SQLite (`runtime/quick_search.py`,
    # `runtime/quick.py`) and pay none of these imports. YAML is the indexer's: reading the
    # store's schema and its stored values must not load it (`metadata/values.py`).
    assert run("index", str(workspace), storage=storage).returncode == 0
    # And, lighter but each a tenth of a cold keyword search: the writer's lock library
    # (`store/writer_lock.py` flocks), the Markdown parser (an unchanged workspace parses
    # nothing, and a snippet is cut from the readable blocks the sync stored: neither
    # markdown-it nor its URL helper loads, nor the chunker, nor the rules that make
    # blocks), the socket module (no server listens); the filter language's parser (only
    # a query or a filter that uses it), the model's claims (no extracted values).
    filters, claims = "kb_lsp.engine.metadata.filters", "kb_lsp.engine.metadata.claims"
    heavy = (
        "onnxruntime", "tokenizers", "chromadb", "numpy", "pydantic", "yaml", "filelock",
        "markdown_it", "mdurl", "mdit_py_plugins", "kb_lsp.engine.markdown.document",
        "kb_lsp.engine.snippets", "socket", filters, claims,
    )  # fmt: skip
    # The first hit's passages have inline markup (emphasis) that rendering from the text
    # would need markdown-it for.
    assert "**third business day**" in (workspace / "payments/mexico-payments.md").read_text()
    where = ["-w", str(workspace)]
    for argv, first, allowed in [
        (["search", "Mexico payments SPEI", "--mode", "keyword", *where], "1, payments/mexico",
         set()),
        (["search", "tag:runbook", "--mode", "keyword", "--json", *where], "{", {filters}),
        (["status", *where], "workspace:", set()),
        (["schema", *where], "14 files; metadata fields", {claims}),  # it counts them
    ]:  # fmt: skip
        probe = (
            "import json, sys\n"
            "from kb_lsp.cli import main\n"
            f"code = main({argv!r})\n"
            f"print('loaded:', json.dumps([m for m in {heavy!r} if m in sys.modules]))\n"
            "raise SystemExit(code)\n"
        )
        env = {**os.environ, "KB_STORAGE": str(storage), "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(first), done.stdout
        loaded = json.loads(done.stdout.rpartition("loaded: ")[2])
        assert set(loaded) <= allowed, (argv, loaded)
