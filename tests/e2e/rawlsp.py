"""A raw JSON-RPC client for the real server over stdio: it writes exactly the bytes a
test gives (bad framing included) and reads what comes back frame by frame, strictly.

The server is started without client capabilities, so it never sends requests of its
own (no `workspace/configuration`, no progress bars) that this client would have to
answer; its notifications are collected in `notifications`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from .conftest import DEADLINE, server_env

Message = dict[str, Any]


def frame(body: bytes | str | Message) -> bytes:
    """A well-framed message."""
    if isinstance(body, dict):
        body = json.dumps(body)
    data = body.encode("utf-8") if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


class RawServer:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.notifications: list[Message] = []
        self._next_id = 0

    # --- writing -------------------------------------------------------------------------

    async def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def send(self, message: Message | str | bytes) -> None:
        await self.send_bytes(frame(message))

    def new_id(self) -> str:
        self._next_id += 1
        return f"t{self._next_id}"

    async def request(self, method: str, params: Any = None) -> Message:
        """Send a well-formed request and return its response (result or error)."""
        msg_id = self.new_id()
        message: Message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.response(msg_id)

    # --- reading -------------------------------------------------------------------------

    async def read_message(self, timeout: float = DEADLINE) -> Message:
        """The next message from the server, read strictly by its Content-Length."""
        return await asyncio.wait_for(self._read(), timeout)

    async def _read(self) -> Message:
        stdout = self.process.stdout
        assert stdout is not None
        length = None
        while True:
            line = await stdout.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value.strip())
        assert length is not None, "the server sent a header block without Content-Length"
        body = await stdout.readexactly(length)
        message: Message = json.loads(body)
        return message

    async def next_reply(self) -> Message:
        """The next response (notifications go to `notifications`)."""
        while True:
            message = await self.read_message()
            if "method" not in message:
                return message
            self.notifications.append(message)

    async def replies(self, until_id: str) -> list[Message]:
        """Every response (with an id, or `id: null`) up to and including the response
        to `until_id`; notifications go to `notifications`."""
        out: list[Message] = []
        while True:
            message = await self.read_message()
            if "method" in message:
                self.notifications.append(message)
                continue
            out.append(message)
            if message.get("id") == until_id:
                return out

    async def response(self, msg_id: str) -> Message:
        replies = await self.replies(msg_id)
        extra = [r for r in replies if r.get("id") != msg_id]
        assert not extra, f"unexpected replies before {msg_id}: {extra}"
        return replies[-1]

    async def ready(self) -> Message:
        """Poll kb/status until the first index is done."""
        loop = asyncio.get_running_loop()
        end = loop.time() + DEADLINE
        while True:
            status = (await self.request("kb/status", {}))["result"]
            if status["state"] == "ready" and status["pending"] == 0:
                return status
            assert loop.time() < end, "timed out waiting for the index"
            await asyncio.sleep(0.05)


@asynccontextmanager
async def raw_server(
    workspace: Path, storage: Path, *args: str, initialize: bool = True
) -> AsyncIterator[RawServer]:
    """`python -m kb_lsp ARGS` on `workspace`, initialized (no client capabilities) and
    indexed; stderr goes to `storage/stderr.txt`."""
    with open(storage / "stderr.txt", "wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kb_lsp",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=server_env(storage),
            limit=256 * 1024 * 1024,
        )
    server = RawServer(process)
    try:
        if initialize:
            params = {
                "processId": None,
                "rootUri": workspace.as_uri(),
                "capabilities": {},
                "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}],
                "initializationOptions": {"storage": str(storage)},
            }
            assert "result" in await server.request("initialize", params)
            await server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            await server.ready()
        yield server
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
