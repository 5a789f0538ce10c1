"""`kb status` without pydantic (`runtime/quick.py`): the same settings and the same
`kb/status` payload as the full path, from the same definitions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.cli import HASHING
from tests.helpers.runtime import runtime_status

from kb_lsp.config import env_settings, load_settings
from kb_lsp.engine.llm.config import LlmConfig
from kb_lsp.engine.storage import default_storage
from kb_lsp.protocol import dump
from kb_lsp.runtime.quick import quick_settings, quick_status, wire
from kb_lsp.runtime.stored_status import read_status

ENVIRONMENTS = [
    {},
    {"OLLAMA_HOST": "gpu-box:11434/"},
    {"OLLAMA_HOST": "http://a:1", "KB_OLLAMA_HOST": " http://b:2/ ", "KB_OLLAMA_MODEL": "llama3"},
    {"KB_LLM_PROVIDER": "openai"},
    {"KB_LLM_PROVIDER": "openai", "KB_LLM_BASE_URL": "127.0.0.1:8081/v1/", "KB_LLM_MODEL": " m "},
    {"KB_LLM_PROVIDER": "ollama", "KB_LLM_BASE_URL": "   ", "KB_LLM_MODEL": "   "},
    {"KB_STORAGE": "~/somewhere", "KB_SEARCH_THRESHOLD": "0.5"},
    {"KB_STORAGE": ""},
]


@pytest.mark.parametrize("environ", ENVIRONMENTS)
def test_quick_settings_read_what_the_full_settings_read(environ: dict[str, str]) -> None:
    full = load_settings(env_settings(environ), {"llm.model": "from-the-cli"}).settings
    quick = quick_settings({"llm.model": "from-the-cli"}, environ)
    assert quick is not None
    assert default_storage(quick) == default_storage(full)
    assert LlmConfig.from_settings(quick, environ) == LlmConfig.from_settings(full, environ)
    without = load_settings(env_settings(environ)).settings
    assert LlmConfig.from_settings(quick_settings(None, environ) or full, environ) == (
        LlmConfig.from_settings(without, environ)
    )


@pytest.mark.parametrize(
    "environ",
    [{"KB_LLM_PROVIDER": "bard"}, {"KB_OLLAMA_HOST": " / "}],
)
def test_a_value_the_full_settings_refuse_sends_status_the_full_way(
    environ: dict[str, str],
) -> None:
    # The full settings drop it with a message naming the setting and what is used instead.
    assert load_settings(env_settings(environ)).message
    assert quick_settings(None, environ) is None


def test_wire_fills_defaults_in_order_and_refuses_what_the_model_lacks() -> None:
    llm = wire("LlmStatus", {"model": "m", "host": "h"})
    assert list(llm) == ["host", "model", "reachable", "provider", "message", "tools"]
    assert llm["provider"] == "ollama" and llm["reachable"] is None
    with pytest.raises(KeyError, match="required"):
        wire("LlmStatus", {"model": "m"})
    with pytest.raises(KeyError, match="no field"):
        wire("LlmStatus", {"model": "m", "host": "h", "colour": "red"})


def test_quick_status_is_the_full_status_on_the_wire(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    (workspace / "blob.md").write_bytes(b"\x00\x01binary")
    (workspace / "bad.md").write_text("---\ntags: [unclosed\n---\n# Bad\n\ntext\n")
    environ = {"KB_LLM_PROVIDER": "openai", "KB_LLM_BASE_URL": "localhost:9/v1"}
    full_settings = load_settings(env_settings(environ), {"storage": str(storage)}).settings
    quick = quick_settings({"storage": str(storage)}, environ)
    assert quick is not None
    assert quick_status(workspace, quick) is None  # no index yet
    runtime_status(workspace, storage)

    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    full = read_status(workspace, full_settings)
    assert full is not None and full.skipped and full.problems
    got = quick_status(workspace, quick)
    assert got == dump(full)
    assert got["llm"]["provider"] == "openai" and got["llm"]["model"] == "(the server's model)"

    # And the command prints it (`--json`: the kb/status payload) in a process of its own.
    env = {**os.environ, **environ, "KB_STORAGE": str(storage), "KB_EMBEDDER_FACTORY": HASHING}
    done = subprocess.run(
        [sys.executable, "-m", "kb_lsp.cli", "status", "-w", str(workspace), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == dump(full)


@pytest.mark.parametrize("command", [["ask", "q"], ["mcp"]])
def test_model_flag_sets_the_same_setting_for_ask_and_mcp(command: list[str]) -> None:
    from kb_lsp import cli
    from kb_lsp.cli.common import model_setting

    args = cli.build_parser().parse_args([*command, "--model", "llama3:8b"])
    overrides = model_setting(args.model)
    assert overrides == {"llm.model": "llama3:8b"}
    settings = load_settings(overrides).settings
    for provider in ("ollama", "openai"):
        config = LlmConfig.from_settings(
            settings.model_copy(
                update={"llm": settings.llm.model_copy(update={"provider": provider})}
            ),
            {},
        )
        assert config.model == "llama3:8b"


def test_a_refused_setting_is_said_once_and_status_still_answers(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    runtime_status(workspace, storage)
    env = {
        **os.environ,
        "KB_STORAGE": str(storage),
        "KB_EMBEDDER_FACTORY": HASHING,
        "KB_LLM_PROVIDER": "bard",
    }
    done = subprocess.run(
        [sys.executable, "-m", "kb_lsp.cli", "status", "-w", str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # Once, in the terminal's words: the setting with the variable that set it.
    assert done.stderr.count("kb.llm.provider (KB_LLM_PROVIDER) = 'bard'") == 1, done.stderr
    assert done.stderr.startswith("kb: some settings are invalid"), done.stderr
    assert "(ollama)" in done.stdout  # what is used instead


def test_held_elsewhere_sees_the_writers_lock(tmp_path: Path) -> None:
    import multiprocessing

    from filelock import FileLock

    from kb_lsp.runtime.stored_status import held_elsewhere

    lock_path = tmp_path / "writer.lock"
    assert held_elsewhere(lock_path) is False
    context = multiprocessing.get_context("spawn")
    holding, release = context.Event(), context.Event()
    writer = context.Process(target=_hold, args=(str(lock_path), holding, release))
    writer.start()
    try:
        assert holding.wait(120), "the other process did not take the lock"
        assert held_elsewhere(lock_path) is True
    finally:
        release.set()
        writer.join(120)
    assert held_elsewhere(lock_path) is False
    with FileLock(str(lock_path), timeout=0):  # and this check never kept it
        pass


def _hold(path: str, holding: Any, release: Any) -> None:
    from filelock import FileLock

    with FileLock(path):
        holding.set()
        release.wait(120)
