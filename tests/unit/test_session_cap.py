"""`SessionCap` counts a session idle from the moment its answer has been sent, not from
when the SDK's app returns: the SDK's streaming response tears down after its last
bytes, and a client that has read them may already be asking for a new session. Under
load that gap once answered a valid `initialize` 503 at the cap (CI, stop 43)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kb_lsp.mcp.sessions import SessionCap

ACCEPT = (b"accept", b"application/json, text/event-stream")
JSON = (b"content-type", b"application/json")
INITIALIZE = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
).encode()


class FakeSdk:
    """The SDK's contract as SessionCap sees it: a cap of its own (503), a session id in
    the answer's header, DELETE ends a session; a session's answer returns only after
    `teardown` is set, as a streaming response does."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: set[str] = set()
        self.deleted: list[str] = []
        self.teardown = asyncio.Event()
        self.answered = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        session = headers.get(b"mcp-session-id", b"").decode()
        if scope["method"] == "DELETE":
            self.open.discard(session)
            self.deleted.append(session)
            await _answer(send, 200, [])
        elif session:
            await _answer(send, 200 if session in self.open else 404, [])
            self.answered.set()
            await self.teardown.wait()
        elif len(self.open) >= self.cap:
            await _answer(send, 503, [])
        else:
            new = f"s{len(self.open) + len(self.deleted)}"
            self.open.add(new)
            await _answer(send, 200, [(b"mcp-session-id", new.encode())])


async def _answer(send: Any, status: int, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"{}", "more_body": False})


async def _post(app: SessionCap, headers: list[tuple[bytes, bytes]], body: bytes) -> dict:
    sent: list[dict] = []
    delivered = False

    async def receive() -> dict:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "headers": headers, "query_string": b""}
    await app(scope, receive, send)
    start = sent[0]
    return {"status": start["status"], "headers": dict(start["headers"])}


async def test_a_session_whose_answer_was_sent_makes_room_while_its_stream_tears_down() -> None:
    sdk = FakeSdk(cap=1)
    app = SessionCap(sdk, max_sessions=1, idle_seconds=3600)
    opened = await _post(app, [ACCEPT, JSON], INITIALIZE)
    first = opened["headers"][b"mcp-session-id"]
    ping = asyncio.create_task(_post(app, [ACCEPT, JSON, (b"mcp-session-id", first)], b"{}"))
    await sdk.answered.wait()  # the client has its answer; the SDK has not returned
    again = await _post(app, [ACCEPT, JSON], INITIALIZE)
    sdk.teardown.set()
    assert (await ping)["status"] == 200
    assert sdk.deleted == [first.decode()]
    assert again["status"] == 200
    assert again["headers"][b"mcp-session-id"] != first


async def test_a_session_still_answering_is_not_closed() -> None:
    sdk = FakeSdk(cap=1)
    app = SessionCap(sdk, max_sessions=1, idle_seconds=3600)
    first = (await _post(app, [ACCEPT, JSON], INITIALIZE))["headers"][b"mcp-session-id"]
    gate = asyncio.Event()

    async def slow(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{", "more_body": True})
        sdk.answered.set()
        await gate.wait()
        await send({"type": "http.response.body", "body": b"}", "more_body": False})

    app.app = lambda scope, receive, send: (
        slow(scope, receive, send) if dict(scope["headers"]).get(b"mcp-session-id") and
        scope["method"] == "POST" else sdk(scope, receive, send)
    )  # fmt: skip
    streaming = asyncio.create_task(_post(app, [ACCEPT, JSON, (b"mcp-session-id", first)], b"{}"))
    await sdk.answered.wait()
    refused = await _post(app, [ACCEPT, JSON], INITIALIZE)
    gate.set()
    await streaming
    assert refused["status"] == 503
    assert sdk.deleted == []
