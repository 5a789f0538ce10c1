"""`kb status` from the store's SQLite alone: the same status the runtime gives, without
loading the engine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.cli import HASHING
from tests.helpers.runtime import runtime_status

from kb_lsp.config import load_settings
from kb_lsp.runtime.stored_status import read_status


def test_the_same_status_as_the_runtime(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    (workspace / "blob.md").write_bytes(b"\x00\x01binary")
    settings = load_settings({"storage": str(storage)}).settings
    assert read_status(workspace, settings) is None  # no index yet: the runtime makes one

    expected = runtime_status(workspace, storage)
    got = read_status(workspace, settings)
    assert got is not None
    assert got.files > 0 and got.chunks > got.files
    assert got == expected


def test_status_loads_neither_the_engine_nor_pydantic_nor_the_llm_client(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    runtime_status(workspace, storage)
    probe = (
        "import sys\n"
        "from kb_lsp.cli import main\n"
        f"code = main(['status', '-w', {str(workspace)!r}, '--storage', {str(storage)!r}])\n"
        "heavy = sorted(m for m in ('chromadb', 'onnxruntime', 'kb_lsp.engine.knowledge', "
        "'kb_lsp.runtime.runtime', 'kb_lsp.engine.agent.facade', 'pydantic', 'ollama', 'httpx', "
        "'kb_lsp.engine.llm.ollama_chat', 'kb_lsp.engine.llm.openai_chat', 'asyncio') "
        "if m in sys.modules)\n"
        "print('loaded:', heavy)\n"
        "raise SystemExit(code)\n"
    )
    env = {**os.environ, "KB_EMBEDDER_FACTORY": HASHING}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "indexed:" in done.stdout
    assert "loaded: []" in done.stdout
