"""MCP over HTTP: a cap on open sessions, the least recently used idle one closed first.

The SDK keeps a session until its client deletes it or it has been idle for
`session_idle_timeout` (`--session-idle`), and at `max_sessions` it answers a new one
503. Clients that never close their sessions (400 of them once took the server from 261
to 300 MiB and growing) would then lock every new client out until the oldest expire.
`SessionCap` sits in front of the SDK's app and, when a new session is asked for at the
cap, first closes the idle session (no request in flight, no open stream) that was used
least recently — through the SDK itself, as that session's client would with `DELETE`.
When every session is busy the SDK's 503 stands.

Only a request that would open a valid session makes room (`opens_a_session`): a POST
that accepts JSON and event streams, sends JSON, and whose body (read here first, up to
`MAX_PEEK` bytes, and handed on as it came) is a JSON-RPC `initialize` request. A
malformed POST without a session id once closed an idle session all the same. The
DELETE carries the Host, Origin and Authorization of the request that asked for the new
session, so a request the SDK would refuse (a rebound Host, a foreign Origin) closes
nothing either.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from kb_lsp.json_bounds import JsonRefused, load_json

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]

SESSION_HEADER = b"mcp-session-id"
DEFAULT_MAX_SESSIONS = 64
DEFAULT_IDLE_SECONDS = 30 * 60.0
_CARRIED = (b"host", b"origin", b"authorization")
MAX_PEEK = 1024 * 1024  # an `initialize` request is a few hundred bytes


@dataclass
class _Session:
    last_used: float
    in_flight: int = 0


class SessionCap:
    """ASGI middleware over the SDK's Streamable HTTP app (module docstring)."""

    def __init__(self, app: Asgi, max_sessions: int, idle_seconds: float) -> None:
        self.app = app
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self.sessions: dict[str, _Session] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        session_id = headers.get(SESSION_HEADER, b"").decode("latin-1")
        if not session_id:
            await self._open(scope, receive, send, headers)
            return
        session = self.sessions.get(session_id)
        if session is not None:
            session.in_flight += 1
            session.last_used = time.monotonic()
        status = [0]
        done = [False]

        def finish() -> None:
            # Once per request: at its last body message, or when the app returns
            # without one. The SDK's streaming response returns only after its
            # teardown, and a client that has read the whole answer may already
            # be asking for a new session: that session counts as idle from here.
            if session is not None and not done[0]:
                done[0] = True
                session.in_flight -= 1
                session.last_used = time.monotonic()

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                finish()

        try:
            await self.app(scope, receive, noting)
        finally:
            finish()
            ended = status[0] == 404 or (scope.get("method") == "DELETE" and status[0] < 300)
            if ended:
                self.sessions.pop(session_id, None)

    async def _open(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> None:
        """A request without a session: room made first when at the cap, and the
        session the SDK opens (its id in the response's header) noted."""
        self._forget_expired()
        if scope.get("method") == "POST" and len(self.sessions) >= self.max_sessions:
            body, receive = await _peek(receive)
            if opens_a_session(headers, body):
                await self._close_least_recently_used(scope, headers)

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start" and int(message["status"]) < 300:
                for name, value in message.get("headers") or []:
                    if name.lower() == SESSION_HEADER:
                        self.sessions[value.decode("latin-1")] = _Session(time.monotonic())
            await send(message)

        await self.app(scope, receive, noting)

    def _forget_expired(self) -> None:
        """Sessions the SDK has closed for idleness meanwhile."""
        cutoff = time.monotonic() - self.idle_seconds
        for session_id, session in list(self.sessions.items()):
            if not session.in_flight and session.last_used < cutoff:
                del self.sessions[session_id]

    async def _close_least_recently_used(self, scope: Scope, headers: dict[bytes, bytes]) -> None:
        idle = [(s.last_used, sid) for sid, s in self.sessions.items() if not s.in_flight]
        if not idle:
            return  # every session is busy: the SDK answers 503
        _, session_id = min(idle)
        carried = [(name, value) for name, value in headers.items() if name in _CARRIED]
        delete = {
            **scope,
            "method": "DELETE",
            "query_string": b"",
            "headers": [*carried, (SESSION_HEADER, session_id.encode("latin-1"))],
        }
        sent = False
        status = [0]

        async def empty_body() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def note(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])

        await self.app(delete, empty_body, note)
        if status[0] < 300 or status[0] == 404:
            self.sessions.pop(session_id, None)
        if status[0] < 300:
            log.info(
                "closed the MCP session %s (idle, used least recently) to make room for a "
                "new one: at most %d sessions",
                session_id[:8],
                self.max_sessions,
            )


async def _peek(receive: Receive) -> tuple[bytes | None, Receive]:
    """The request's body (None when it is over `MAX_PEEK` or the client left), and a
    `receive` that hands the app every message as it came."""
    taken: list[Message] = []
    size = 0
    body: bytes | None = b""
    while True:
        message = await receive()
        taken.append(message)
        if message["type"] != "http.request":
            body = None
            break
        size += len(message.get("body", b""))
        if size > MAX_PEEK:
            body = None
            break
        if not message.get("more_body", False):
            break
    if body is not None:
        body = b"".join(m.get("body", b"") for m in taken)

    async def replay() -> Message:
        return taken.pop(0) if taken else await receive()

    return body, replay


def opens_a_session(headers: dict[bytes, bytes], body: bytes | None) -> bool:
    """Whether a POST without a session id would open one: it accepts what the SDK
    answers, sends JSON, and is one JSON-RPC `initialize` request."""
    accept = headers.get(b"accept", b"").decode("latin-1").lower()
    content_type = headers.get(b"content-type", b"").decode("latin-1").lower()
    if "application/json" not in accept or "text/event-stream" not in accept:
        return False
    if not content_type.startswith("application/json") or body is None:
        return False
    try:
        message = load_json(body, "a request", max_bytes=MAX_PEEK)
    except JsonRefused:
        return False
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == "initialize"
        and type(message.get("id")) in (int, str)
        and isinstance(message.get("params"), dict)
    )
