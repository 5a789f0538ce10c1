"""The metadata phase on the runtime's indexing worker: its progress in `kb/status`,
a save while the model is slow is indexed at once (the phase gives way), pause and
resume, and search meanwhile. In-process, with the scripted model."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer, stall
from tests.helpers.runtime import editor_runtime

from kb_lsp.config import load_settings
from kb_lsp.contract.operations import INDEX_CONTROL, SEARCH
from kb_lsp.protocol import IndexControlParams, IndexStatus, SearchParams
from kb_lsp.runtime import Runtime
from kb_lsp.runtime.dispatch import answer as run_operation

HASHING = "tests.fakes.embedder:HashingEmbedder"
DEADLINE = 60.0
SCHEMA = {"properties": {"counterparty": {"type": "string", "description": "who is paid"}}}


def reply(body: dict[str, Any]) -> Turn:
    text = body["messages"][-1]["content"]
    title = text.split("Note title: ", 1)[1].split("\n", 1)[0]
    value = f"{title} Ltd"
    return answer(
        json.dumps({"counterparty": {"evidence": f"Payments to {value}", "value": value}})
    )


def wait_for(runtime: Runtime, ok: Callable[[IndexStatus], bool], what: str) -> IndexStatus:
    """Poll the status until `ok(status)` holds (a deadline, never a fixed sleep)."""
    end = time.monotonic() + DEADLINE
    while True:
        status = runtime.status()
        if ok(status):
            return status
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}: {status}")
        time.sleep(0.02)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    (root / ".kb").mkdir(parents=True)
    (root / ".kb" / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    for name in ("acme", "globex", "initech"):
        (root / f"{name}.md").write_text(f"# {name.title()}\n\nPayments to {name.title()} Ltd.\n")
    return root


def test_a_save_while_the_model_is_slow_is_indexed_at_once(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    with ScriptedOllama([stall()], default=reply) as model:
        settings = load_settings(
            {"storage": str(tmp_path / "storage"), "ollama": {"host": model.url}}
        ).settings
        runtime = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
        try:
            runtime.open([workspace], settings, index=False).result()
            first = runtime.reindex()
            assert model.stalled.wait(DEADLINE)
            status = runtime.status()
            assert status.progress is not None and status.progress.phase == "metadata"
            assert (status.progress.files_done, status.progress.files_total) == (0, 3)
            assert status.keyword_complete  # keyword search is not waiting for the model
            assert status.pending == 0  # notes the model reads are not files to index
            hits = run_operation(runtime, SEARCH, SearchParams(query="payments globex")).results
            assert "globex.md" in {hit.path for hit in hits}

            # A save while the model is silent: indexed without waiting for it.
            (workspace / "umbrella.md").write_text("# Umbrella\n\nPayments to Umbrella Ltd.\n")
            runtime.session.notify_changed([workspace / "umbrella.md"])
            first.result(DEADLINE)
            wait_for(
                runtime,
                lambda s: (
                    "umbrella.md"
                    in {
                        h.path
                        for h in run_operation(
                            runtime, SEARCH, SearchParams(query="umbrella")
                        ).results
                    }
                ),
                "the saved note in search",
            )
            model.release()
            done = wait_for(
                runtime,
                lambda s: s.metadata is not None and s.metadata.extracted == 4,
                "every note extracted",
            )
            assert done.metadata is not None and done.metadata.total == 4
            hits = run_operation(runtime, SEARCH, SearchParams(query='counterparty:"umbrella ltd"'))
            assert [hit.path for hit in hits.results] == ["umbrella.md"]
            assert hits.results[0].meta is not None
            (value,) = hits.results[0].meta.extracted["counterparty"]
            assert (value.value, value.evidence) == ("Umbrella Ltd", "Payments to Umbrella Ltd")
            assert (value.range.start.line, value.start) == (2, len("# Umbrella\n\n"))
            assert hits.results[0].meta.extracted_by == "ollama/qwen2.5:7b"
            assert model.errors == []
        finally:
            runtime.close()


def test_pause_stops_the_phase_and_resume_finishes_it(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    with ScriptedOllama([stall()], default=reply) as model:
        settings = load_settings(
            {"storage": str(tmp_path / "storage"), "ollama": {"host": model.url}}
        ).settings
        runtime = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
        try:
            runtime.open([workspace], settings, index=False).result()
            first = runtime.reindex()
            assert model.stalled.wait(DEADLINE)
            run_operation(runtime, INDEX_CONTROL, IndexControlParams(action="pause"))
            assert first.result(DEADLINE).cancelled
            status = wait_for(runtime, lambda s: s.paused and s.progress is None, "paused")
            assert status.metadata is not None and status.metadata.extracted == 0
            model.release()
            run_operation(runtime, INDEX_CONTROL, IndexControlParams(action="resume"))
            wait_for(
                runtime,
                lambda s: s.metadata is not None and s.metadata.extracted == 3,
                "resumed extraction",
            )
        finally:
            runtime.close()
