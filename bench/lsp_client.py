"""A minimal LSP client for benchmarks: the real server (`python -m kb_lsp`) over stdio.

Plain JSON-RPC with Content-Length framing and a reader thread, so a benchmark can time
a request the way an editor would see it (write, server works, read the reply) with a
blocking `request()`, without an event loop between the stopwatch and the pipe. It
answers the server's own requests (progress tokens, registrations) and records the
notifications a benchmark needs (`window/logMessage`, `kb/indexChanged`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

# What a client advertises: enough for the server to report progress, nothing that makes
# it wait on the client (no workspace/configuration: settings come as init options).
CAPABILITIES = {
    "window": {"workDoneProgress": True},
    "workspace": {"workspaceFolders": True},
    "general": {"positionEncodings": ["utf-16"]},
}

# The indexing worker logs one line per sync: "indexer: <summary> in 1.23s (<job>)".
_SYNC_LINE = re.compile(r"indexer: (?P<summary>.*) in (?P<seconds>[\d.]+)s \((?P<job>.*)\)")
_EMBEDDED = re.compile(r"(\d+) chunks embedded")


class LspError(RuntimeError):
    pass


class LspClient:
    def __init__(
        self,
        folders: list[Path],
        storage: Path,
        options: dict[str, Any] | None = None,
        *,
        env: dict[str, str] | None = None,
        server: Path | None = None,
        embedder_factory: str | None = None,
    ) -> None:
        """`server`: the folder holding the `kb_lsp` package to run (default: this
        checkout's `server/`; another commit's to compare against it).
        `embedder_factory`: `module:callable` of an embedder to use instead of the real
        one (importable from this checkout, e.g. the test suite's hashing embedder)."""
        self.folders = folders
        self.server = server or REPO / "server"
        self.storage = storage
        self.options = options or {}
        self._env = env
        self._embedder_factory = embedder_factory
        self._next_id = 0
        self._pending: dict[int, Future[Any]] = {}
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self.logs: list[tuple[float, str]] = []
        self.index_changes: list[tuple[float, dict[str, Any]]] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> LspClient:
        env = dict(os.environ if self._env is None else self._env)
        paths = [str(self.server), env.get("PYTHONPATH", "")]
        env["XDG_CACHE_HOME"] = str(self.storage / "xdg-cache")
        env.pop("KB_EMBEDDER_FACTORY", None)  # the real embedder unless told otherwise
        if self._embedder_factory:
            paths.append(str(REPO))
            env["KB_EMBEDDER_FACTORY"] = self._embedder_factory
            env["KB_TEST_EMBEDDER"] = self._embedder_factory  # its name in older commits
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kb_lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=self.storage,
        )
        threading.Thread(target=self._read, name="lsp-reader", daemon=True).start()
        self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": self.folders[0].as_uri() if self.folders else None,
                "capabilities": CAPABILITIES,
                "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in self.folders],
                "initializationOptions": {"storage": str(self.storage), **self.options},
            },
            timeout=120,
        )
        self.notify("initialized", {})
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None, timeout=60)
                self.notify("exit", None)
                self.proc.wait(timeout=30)
        except (LspError, TimeoutError, OSError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> LspClient:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    # --- messages --------------------------------------------------------------------------

    def request(self, method: str, params: Any = None, timeout: float = 120.0) -> Any:
        with self._lock:
            self._next_id += 1
            msg_id = self._next_id
            future: Future[Any] = Future()
            self._pending[msg_id] = future
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return future.result(timeout=timeout)
        except TimeoutError as err:
            raise TimeoutError(f"{method}: no answer in {timeout} s") from err

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def search(self, query: str, **extra: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.request("kb/search", {"query": query, **extra})
        return result

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("kb/status", {})
        return result

    def wait_ready(self, timeout: float = 3600.0, poll: float = 0.05) -> dict[str, Any]:
        """Poll kb/status until the index is ready with nothing pending."""
        end = time.perf_counter() + timeout
        while True:
            status = self.status()
            if status["state"] == "ready" and status["pending"] == 0:
                return status
            if status["state"] == "error":
                raise LspError(f"index error: {status.get('message')}")
            if time.perf_counter() > end:
                raise TimeoutError(f"index not ready after {timeout} s: {status}")
            time.sleep(poll)

    def syncs(self, since: float = 0.0) -> list[dict[str, Any]]:
        """The indexing worker's syncs logged after `since` (perf_counter): summary,
        seconds and chunks embedded."""
        out = []
        for when, line in list(self.logs):
            match = _SYNC_LINE.search(line)
            if when >= since and match:
                embedded = _EMBEDDED.search(match["summary"])
                out.append(
                    {
                        "at": when,
                        "summary": match["summary"],
                        "seconds": float(match["seconds"]),
                        "job": match["job"],
                        "embedded": int(embedded[1]) if embedded else 0,
                    }
                )
        return out

    def rss_mib(self) -> float:
        """Resident memory of the server process, in MiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    # --- wire ------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        body = json.dumps(message).encode("utf-8")
        with self._write_lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self._fail_all("the server closed its output")
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if length is None:
                continue
            message = json.loads(stream.read(length))
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        now = time.perf_counter()
        if "id" in message and "method" in message:
            # A request from the server: progress tokens and registrations need only an
            # empty answer; anything else gets null too, which servers treat as "no".
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return
        if "id" in message:
            future = self._pending.pop(message["id"], None)
            if future is None:
                return
            if "error" in message:
                error = message["error"]
                future.set_exception(LspError(f"{error.get('code')}: {error.get('message')}"))
            else:
                future.set_result(message.get("result"))
            return
        method = message.get("method")
        params = message.get("params") or {}
        if method == "window/logMessage":
            self.logs.append((now, str(params.get("message", ""))))
        elif method == "kb/indexChanged":
            self.index_changes.append((now, params))

    def _fail_all(self, why: str) -> None:
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(LspError(why))
        self._pending.clear()
