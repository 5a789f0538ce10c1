"""`kb mcp --http` at its session cap makes room only for a request that would open a
valid session (`mcp/sessions.py`): a malformed POST without a session id once closed an
idle session all the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from .conftest import DEADLINE
from .mcp_harness import http_server

pytestmark = pytest.mark.timeout(240)

ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "1"},
    },
}
# POSTs without a session id that open none: each must leave the idle session alone.
MALFORMED: dict[str, dict[str, Any]] = {
    "not JSON": {
        "content": b"{initialize",
        "headers": {**ACCEPT, "Content-Type": "application/json"},
    },
    "a ping": {"json": {"jsonrpc": "2.0", "id": 2, "method": "ping"}, "headers": ACCEPT},
    "no Accept": {"json": INITIALIZE, "headers": {}},
    "a batch": {"json": [INITIALIZE], "headers": ACCEPT},
    "no params": {"json": {**INITIALIZE, "params": None}, "headers": ACCEPT},
    "a huge id": {
        "content": b'{"jsonrpc": "2.0", "id": 1' + b"0" * 5000 + b', "method": "initialize"}',
        "headers": {**ACCEPT, "Content-Type": "application/json"},
    },
}


async def open_session(client: httpx2.AsyncClient, url: str) -> str:
    response = await client.post(url, json=INITIALIZE, headers=ACCEPT)
    assert response.status_code == 200, response.text
    return str(response.headers["mcp-session-id"])


async def ping(client: httpx2.AsyncClient, url: str, session: str) -> int:
    body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    headers = {**ACCEPT, "mcp-session-id": session}
    return int((await client.post(url, json=body, headers=headers)).status_code)


async def test_only_a_request_that_opens_a_session_closes_an_idle_one(
    workspace: Path, storage: Path
) -> None:
    async with (
        http_server([workspace], storage, args=["--max-sessions", "1"]) as server,
        httpx2.AsyncClient(timeout=DEADLINE) as client,
    ):
        idle = await open_session(client, server.url)
        for case, request in MALFORMED.items():
            answered = await client.post(server.url, **request)
            assert answered.status_code >= 400, (case, answered.status_code)
            assert await ping(client, server.url, idle) == 200, case
        new = await open_session(client, server.url)  # a real one: room is made
        assert await ping(client, server.url, idle) == 404
        assert await ping(client, server.url, new) == 200
