"""The real `kb mcp` as a subprocess, driven by the official MCP Python client
(`mcp.ClientSession`) over stdio or over Streamable HTTP.

`KB_TEST_EMBEDDER=hashing` / `KB_EMBEDDER_FACTORY` give the server the deterministic test
embedder; the model host defaults to a closed port (no model) unless a test passes the
scripted Ollama stand-in's URL. Nothing sleeps a fixed time: readiness is a polled
condition with a generous deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from .conftest import DEADLINE, server_env, wait_for

NO_MODEL = "http://127.0.0.1:9"  # nothing listens there: "no model reachable"


def mcp_env(
    storage: Path, *, ollama: str = NO_MODEL, extra: dict[str, str] | None = None
) -> dict[str, str]:
    env = server_env(storage)
    env["KB_EMBEDDER_FACTORY"] = "tests.fakes.embedder:HashingEmbedder"
    env["KB_OLLAMA_HOST"] = ollama
    env.pop("OLLAMA_HOST", None)
    env.pop("KB_MCP_TOKEN", None)
    env.update(extra or {})
    return env


def mcp_args(folders: list[Path], storage: Path, *extra: str) -> list[str]:
    args = ["-m", "kb_lsp.cli", "mcp", "--storage", str(storage)]
    for folder in folders:
        args += ["--workspace", str(folder)]
    return [*args, *extra]


class Kb:
    """A connected MCP session, with the calls the tests make."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, **arguments: Any) -> CallToolResult:
        return await asyncio.wait_for(self.session.call_tool(tool, arguments), DEADLINE)

    async def ok(self, tool: str, **arguments: Any) -> CallToolResult:
        """A call that must succeed, with both a text and a structured result."""
        result = await self.call(tool, **arguments)
        assert not result.is_error, text_of(result)
        assert result.structured_content is not None
        return result

    async def error(self, tool: str, **arguments: Any) -> str:
        """A call that must fail as a tool error; its message."""
        result = await self.call(tool, **arguments)
        assert result.is_error, f"{tool}({arguments}) did not fail: {text_of(result)}"
        return text_of(result)

    async def status(self) -> dict[str, Any]:
        return structured(await self.ok("status"))

    async def wait_ready(self) -> dict[str, Any]:
        async def ready() -> dict[str, Any] | None:
            status = await self.status()
            done = status["state"] == "ready" and status["pending"] == 0 and status["files"]
            return status if done else None

        return await wait_for(ready, "the index to be ready")


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return dict(result.structured_content)


@contextlib.asynccontextmanager
async def stdio_kb(
    folders: list[Path], storage: Path, env: dict[str, str] | None = None, args: Sequence[str] = ()
) -> AsyncIterator[Kb]:
    params = StdioServerParameters(
        command=sys.executable,
        args=mcp_args(folders, storage, *args),
        env=env or mcp_env(storage),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await asyncio.wait_for(session.initialize(), DEADLINE)
        yield Kb(session)


class HttpServer:
    """`kb mcp --http 127.0.0.1:0` as a process; `url` once it listens."""

    def __init__(self, process: asyncio.subprocess.Process, url: str) -> None:
        self.process = process
        self.url = url
        self.stderr: list[str] = []


@contextlib.asynccontextmanager
async def http_server(
    folders: list[Path], storage: Path, *, env: dict[str, str] | None = None,
    address: str = "127.0.0.1:0", args: Sequence[str] = (),
) -> AsyncIterator[HttpServer]:  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *mcp_args(folders, storage, "--http", address, *args),
        env=env or mcp_env(storage),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    lines: list[str] = []
    url = ""
    drain: asyncio.Task[None] | None = None
    try:
        async with asyncio.timeout(DEADLINE):
            while not url:
                raw = await process.stderr.readline()
                if not raw:
                    raise AssertionError("kb mcp --http exited:\n" + "".join(lines))
                line = raw.decode(errors="replace")
                lines.append(line)
                if "listening on " in line:
                    url = line.split("listening on ", 1)[1].strip()
        server = HttpServer(process, url)
        server.stderr = lines
        drain = asyncio.create_task(_drain(process.stderr, lines))
        yield server
    finally:
        if process.returncode is None:
            process.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), DEADLINE)
            if process.returncode is None:
                process.kill()
                await process.wait()
        if drain is not None:
            drain.cancel()


async def _drain(stream: asyncio.StreamReader, lines: list[str]) -> None:
    while raw := await stream.readline():
        lines.append(raw.decode(errors="replace"))


@contextlib.asynccontextmanager
async def http_kb(url: str, *, token: str | None = None) -> AsyncIterator[Kb]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        httpx2.AsyncClient(headers=headers, timeout=DEADLINE) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await asyncio.wait_for(session.initialize(), DEADLINE)
        yield Kb(session)


@contextlib.asynccontextmanager
async def connect(
    transport: str,
    folders: list[Path],
    storage: Path,
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
) -> AsyncIterator[Kb]:
    """A session with a fresh `kb mcp` on `transport` ("stdio" or "http")."""
    if transport == "stdio":
        async with stdio_kb(folders, storage, env, args) as kb:
            yield kb
    else:
        async with (
            http_server(folders, storage, env=env, args=args) as server,
            http_kb(server.url) as kb,
        ):
            yield kb


class Background:
    """A session kept open by a task of its own, so that a module-scoped fixture can
    share it: the transports' task groups must be entered and left by one task."""

    def __init__(self, transport: str, folders: list[Path], storage: Path) -> None:
        self._args = (transport, folders, storage)
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._kb: Kb | None = None

    async def start(self) -> Kb:
        self._task = asyncio.create_task(self._main())
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if self._kb is None:
            ready.cancel()
            await self._task  # raises what went wrong
            raise AssertionError("the MCP session ended before it was ready")
        return self._kb

    async def _main(self) -> None:
        async with connect(*self._args) as kb:
            self._kb = kb
            self._ready.set()
            await self._stop.wait()

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.wait_for(self._task, DEADLINE)
