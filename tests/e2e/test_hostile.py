"""Hostile messages against the real server (the fuzz covers them by the hundred; these
are the cases the hardening issue names, one by one), a named pipe under hover, and the
log staying small under a 10 MB query."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tests.conftest import copy_example_workspace

from .rawlsp import RawServer, raw_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RawServer]:
    base = tmp_path_factory.mktemp("hostile")
    workspace = copy_example_workspace(base / "workspace")
    os.mkfifo(workspace / "pipe.md")
    (base / "outside").mkdir()
    (base / "outside" / "secret.md").write_text("# Secret\n")
    (workspace / "linked-out").symlink_to(base / "outside")
    storage = base / "storage"
    storage.mkdir()
    async with raw_server(workspace, storage) as running:
        running.workspace = workspace  # type: ignore[attr-defined]
        running.storage = storage  # type: ignore[attr-defined]
        yield running


async def raw(server: RawServer, message: dict[str, Any]) -> dict[str, Any]:
    """Send `message` (its id, if any, is the one answered) and return the one reply."""
    await server.send(message)
    reply = await server.next_reply()
    assert "data" not in reply.get("error", {}), reply
    return reply


async def test_a_bad_glob_is_invalid_params(server: RawServer) -> None:
    reply = await server.request("kb/search", {"query": "x", "paths": ["!"]})
    assert reply["error"]["code"] == -32602
    assert "paths.0" in reply["error"]["message"] and "'!'" in reply["error"]["message"]


@pytest.mark.parametrize(
    ("params", "field"),
    [({"query": "x", "limit": True}, "limit"), ({"query": "x", "limit": 10**18}, "limit")],
)
async def test_strict_numbers(server: RawServer, params: dict[str, Any], field: str) -> None:
    reply = await server.request("kb/search", params)
    assert reply["error"]["code"] == -32602 and f"{field}:" in reply["error"]["message"]


async def test_ask_with_a_huge_n(server: RawServer) -> None:
    reply = await server.request("kb/ask", {"question": "why?", "n": 10**18})
    assert reply["error"]["code"] == -32602 and "n:" in reply["error"]["message"]


async def test_a_method_that_is_not_a_string(server: RawServer) -> None:
    reply = await raw(server, {"jsonrpc": "2.0", "id": "m", "method": 123})
    assert reply["id"] == "m" and reply["error"]["code"] == -32600


async def test_an_object_as_id(server: RawServer) -> None:
    reply = await raw(server, {"jsonrpc": "2.0", "id": {"x": 1}, "method": "kb/status"})
    assert reply["id"] is None and reply["error"]["code"] == -32600


async def test_exit_with_an_id_is_refused_and_not_run(server: RawServer) -> None:
    reply = await raw(server, {"jsonrpc": "2.0", "id": "bye", "method": "exit"})
    assert reply["id"] == "bye" and reply["error"]["code"] == -32600
    assert "notification" in reply["error"]["message"]
    assert "result" in await server.request("kb/status", {})


async def test_a_batch(server: RawServer) -> None:
    await server.send(json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "kb/status"}]))
    reply = await server.next_reply()
    assert reply["id"] is None and reply["error"]["code"] == -32600
    assert "batch" in reply["error"]["message"]


async def test_skipped_files_say_why(server: RawServer) -> None:
    status = (await server.request("kb/status", {}))["result"]
    reasons = {item["path"]: item["reason"] for item in status["skipped"]}
    assert reasons["pipe.md"] == "not a regular file (a named pipe)"
    assert reasons["linked-out/"] == "symbolic link to a folder outside the workspace"


@pytest.mark.timeout(300)
async def test_hover_on_a_named_pipe_holds_nothing_up(server: RawServer) -> None:
    """The pipe has no writer: reading it the ordinary way would block for ever, and on
    the event loop it would block every request."""
    workspace: Path = server.workspace  # type: ignore[attr-defined]
    uri = (workspace / "pipe.md").as_uri()
    hover = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
    await server.send(
        {"jsonrpc": "2.0", "id": "hover", "method": "textDocument/hover", "params": hover}
    )
    search = {"query": "Mexico payments"}
    await server.send({"jsonrpc": "2.0", "id": "search", "method": "kb/search", "params": search})
    replies = {}
    while len(replies) < 2:
        reply = await server.next_reply()
        replies[reply["id"]] = reply
    assert replies["hover"] == {"jsonrpc": "2.0", "id": "hover", "result": None}
    assert replies["search"]["result"]["results"]


async def test_a_10_mb_query_is_refused_and_logged_in_one_short_line(
    server: RawServer,
) -> None:
    storage: Path = server.storage  # type: ignore[attr-defined]
    for _ in range(3):
        reply = await server.request("kb/search", {"query": "x" * 10_000_000})
        assert reply["error"]["code"] == -32602
        assert "at most 2000 characters (got 10000000 characters)" in reply["error"]["message"]
    logs = list(storage.glob("kb-lsp.log*"))
    assert logs and sum(path.stat().st_size for path in logs) < 1024 * 1024
    text = (storage / "kb-lsp.log").read_text()
    lines = [
        line
        for line in text.splitlines()
        if "rejected kb/search" in line and "(got 10000000 characters)" in line
    ]
    assert len(lines) == 3 and all(len(line) < 1000 for line in lines)
    assert "Traceback" not in text
