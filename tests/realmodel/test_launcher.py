"""`kb_lsp.devtools.llama` with the real model: one thread, a port of its own choosing, and
a clean stop however it is asked to stop (its parent letting go, Ctrl-C)."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest

from kb_lsp.devtools import llama

from .conftest import LlamaServer, require_real_model

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(900)]
SMALL_CONTEXT = 512  # these servers answer nothing but /health


def test_the_shared_server_runs_one_thread(llama_server: LlamaServer) -> None:
    # llama-server's `-t 1`: llama.cpp says how many threads its pool got when it loads.
    log = llama_server.log.read_text(encoding="utf-8", errors="replace")
    assert "threadpool init, n_threads = 1\n" in log
    assert f"serving {llama.SMOLLM2_ALIAS} " in log and "with 1 thread(s)" in log


def test_it_stops_cleanly_when_its_parent_lets_go(tmp_path: Path) -> None:
    require_real_model()
    with llama.running(tmp_path / "server.log", context=SMALL_CONTEXT) as server:
        assert httpx.get(server.root + "/health", timeout=30).json() == {"status": "ok"}
        assert server.process.returncode is None
    # Leaving the block closed its stdin: it ended llama.cpp's loop and exited by itself.
    assert server.process.returncode == 0
    log = server.log.read_text(encoding="utf-8", errors="replace")
    assert "[kb-lsp llama] stopping (SIGTERM)" in log
    assert log.rstrip().endswith("[kb-lsp llama] stopped")
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.root + "/health", timeout=30)


def test_ctrl_c_stops_it_cleanly(tmp_path: Path) -> None:
    require_real_model()
    with llama.running(tmp_path / "server.log", context=SMALL_CONTEXT) as server:
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=llama.STOP_DEADLINE) == 0
    log = server.log.read_text(encoding="utf-8", errors="replace")
    assert "[kb-lsp llama] stopping (SIGINT)" in log
    assert log.rstrip().endswith("[kb-lsp llama] stopped")
