"""End-to-end harness: the real server (`python -m kb_lsp`) as a subprocess over stdio,
driven by pytest-lsp's client with VS Code's capabilities.

`KB_EMBEDDER_FACTORY` (the runtime's seam for another embedder, see
`kb_lsp/runtime/embedders.py`) gives the server the deterministic hashing embedder, so
most tests do not load the real model; `real_embedder=True` keeps the default.
Tests wait on notifications or poll with a deadline; nothing sleeps a fixed time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features
from tests.conftest import prepare_int8_model

from kb_lsp.lsp.jsonrpc import plain_converter

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 90.0  # seconds: generous for slow CI machines; never asserted as a speed
HASHING_EMBEDDER = "tests.fakes.embedder:HashingEmbedder"
GATED_EMBEDDER = "tests.fakes.embedder:GatedEmbedder"

T = TypeVar("T")


class KbClient:
    """A pytest-lsp client plus what this server sends besides the standard messages."""

    def __init__(self, client: LanguageClient) -> None:
        self.lsp = client
        self.index_changes: list[dict[str, Any]] = []

        @client.feature("kb/indexChanged")
        def _index_changed(params: Any) -> None:
            self.index_changes.append(_plain(params))

        self.ask_events: list[dict[str, Any]] = []

        @client.feature("kb/askEvent")
        def _ask_event(params: Any) -> None:
            self.ask_events.append(_plain(params))

        self.list_changes: list[dict[str, Any]] = []

        @client.feature("kb/listChanged")
        def _list_changed(params: Any) -> None:
            self.list_changes.append(_plain(params))

    @property
    def process(self) -> asyncio.subprocess.Process:
        server = self.lsp._server
        assert server is not None
        return server

    async def request(self, method: str, params: Any = None) -> Any:
        result = await asyncio.wait_for(
            self.lsp.protocol.send_request_async(method, params), DEADLINE
        )
        return _plain(result)

    def send_raw(self, method: str, params: Any = None, msg_id: str | None = None) -> Any:
        """Send a request as raw JSON right now (no client-side checks or typing), and
        return an awaitable for its result; errors raise `JsonRpcException`."""
        msg_id = msg_id or f"raw-{uuid.uuid4().hex[:8]}"
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.lsp.protocol._request_futures[msg_id] = future
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.lsp.protocol._send_data(message)
        return asyncio.wait_for(asyncio.wrap_future(future), DEADLINE)

    async def search(self, query: str, **extra: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("kb/search", {"query": query, **extra})
        return result

    async def status(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("kb/status", {})
        return result

    def ended_progress(self) -> list[list[Any]]:
        """Every progress token's reports, for tokens that have ended."""
        return [
            reports
            for reports in self.lsp.progress_reports.values()
            if reports and isinstance(reports[-1], types.WorkDoneProgressEnd)
        ]

    def shown(self) -> list[str]:
        return [message.message for message in self.lsp.messages]

    async def wait_until_ready(self) -> dict[str, Any]:
        async def ready() -> dict[str, Any] | None:
            status = await self.status()
            return status if status["state"] == "ready" and status["pending"] == 0 else None

        return await wait_for(ready, "the index to be ready")

    async def wait_for_hit(self, query: str, path: str) -> dict[str, Any]:
        """Poll kb/search until `path` is among the results; returns that result."""

        async def found() -> dict[str, Any] | None:
            response = await self.search(query)
            return next((hit for hit in response["results"] if hit["path"] == path), None)

        return await wait_for(found, f"{path} in the results for {query!r}")

    async def wait_for_no_hit(self, query: str, path: str) -> None:
        async def gone() -> bool:
            response = await self.search(query)
            return all(hit["path"] != path for hit in response["results"])

        await wait_for(gone, f"{path} gone from the results for {query!r}")


def _plain(value: Any) -> Any:
    """Custom payloads arrive as JSON (see `plain_converter`); copy them to be safe."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


async def wait_for(
    probe: Callable[[], Awaitable[T | bool | None]], what: str, deadline: float = DEADLINE
) -> T:
    """Poll `probe` until it returns something truthy, or fail after `deadline` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while True:
        value = await probe()
        if value:
            return value  # type: ignore[return-value]
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def server_env(
    storage: Path, *, real_embedder: bool = False, embedder: str = HASHING_EMBEDDER
) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(REPO / "server"), env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    env["XDG_CACHE_HOME"] = str(storage / "xdg-cache")
    env.pop("KB_STORAGE", None)
    if real_embedder:
        env.pop("KB_EMBEDDER_FACTORY", None)
    else:
        env["KB_EMBEDDER_FACTORY"] = embedder
    return env


@asynccontextmanager
async def running_server(
    folders: list[Path],
    storage: Path,
    *,
    options: dict[str, Any] | None = None,
    real_embedder: bool = False,
    initialize: bool = True,
    wait_ready: bool = True,
    embedder: str = HASHING_EMBEDDER,
    env: dict[str, str] | None = None,
) -> AsyncIterator[KbClient]:
    """Start `python -m kb_lsp`, initialize it like VS Code would, and stop it after.
    `embedder`: the `KB_EMBEDDER_FACTORY` of the server; `env`: more variables for it."""
    if real_embedder:
        # The int8 copy of the model is made once per session (tests/conftest.py), here
        # rather than inside the server's first start, which a test waits on with a deadline.
        await asyncio.to_thread(prepare_int8_model)
    client = LanguageClient(converter_factory=plain_converter)
    register_lsp_features(client)
    kb = KbClient(client)
    environ = server_env(storage, real_embedder=real_embedder, embedder=embedder)
    await client.start_io(sys.executable, "-m", "kb_lsp", env={**environ, **(env or {})})
    try:
        if initialize:
            await initialize_like_vscode(kb, folders, storage, options)
            if wait_ready:
                await kb.wait_until_ready()
        yield kb
        if kb.lsp.capabilities is not None and kb.process.returncode is None:
            await asyncio.wait_for(kb.lsp.shutdown_session(), DEADLINE)
    finally:
        if kb.lsp._server is not None and kb.process.returncode is None:
            kb.process.kill()
        await client.stop()


async def initialize_like_vscode(
    kb: KbClient, folders: list[Path], storage: Path, options: dict[str, Any] | None = None
) -> types.InitializeResult:
    capabilities = client_capabilities("visual-studio-code")
    params = types.InitializeParams(
        capabilities=capabilities,
        workspace_folders=[
            types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name) for folder in folders
        ],
        root_uri=folders[0].as_uri() if folders else None,
        initialization_options={"storage": str(storage), "debounceMs": 100, **(options or {})},
    )
    return await asyncio.wait_for(kb.lsp.initialize_session(params), DEADLINE)


@pytest.fixture
async def kb(workspace: Path, storage: Path) -> AsyncIterator[KbClient]:
    """A server on a private copy of examples/workspace, with the first index done."""
    async with running_server([workspace], storage) as client:
        yield client
