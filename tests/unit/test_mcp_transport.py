"""`kb mcp --http`: addresses, the loopback rule, the bearer token (in-process)."""

from __future__ import annotations

from typing import Any

import pytest

from kb_lsp.mcp_server.transport import (
    BearerToken,
    HttpOptions,
    TransportError,
    http_token,
    is_loopback,
    parse_address,
)


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("127.0.0.1:8765", "127.0.0.1", 8765),
        (":8765", "127.0.0.1", 8765),
        ("[::1]:0", "::1", 0),
        ("localhost:80", "localhost", 80),
        ("0.0.0.0:9000", "0.0.0.0", 9000),
    ],
)
def test_addresses(text: str, host: str, port: int) -> None:
    assert parse_address(text) == HttpOptions(host, port)


@pytest.mark.parametrize("text", ["8765", "localhost", "host:port", "127.0.0.1:70000", ""])
def test_bad_addresses_say_what_is_wanted(text: str) -> None:
    with pytest.raises(TransportError, match="HOST:PORT"):
        parse_address(text)


def test_loopback() -> None:
    assert all(is_loopback(h) for h in ["127.0.0.1", "127.8.9.10", "::1", "localhost", "LOCALHOST"])
    assert not any(is_loopback(h) for h in ["0.0.0.0", "192.168.1.5", "::", "example.org"])


def test_a_remote_host_needs_allow_remote_and_a_token() -> None:
    remote = HttpOptions("0.0.0.0", 8765)
    with pytest.raises(TransportError, match=r"not a loopback address.*--allow-remote"):
        http_token(remote, {"KB_MCP_TOKEN": "t"})
    allowed = HttpOptions("0.0.0.0", 8765, allow_remote=True)
    with pytest.raises(TransportError, match="KB_MCP_TOKEN"):
        http_token(allowed, {})
    with pytest.raises(TransportError, match="KB_MCP_TOKEN"):
        http_token(allowed, {"KB_MCP_TOKEN": "   "})
    assert http_token(allowed, {"KB_MCP_TOKEN": "s3cret"}) == "s3cret"
    # On loopback a token is optional, and required when set.
    assert http_token(HttpOptions("127.0.0.1", 1), {}) is None
    assert http_token(HttpOptions("127.0.0.1", 1), {"KB_MCP_TOKEN": "s3cret"}) == "s3cret"


async def _call(app: Any, headers: list[tuple[bytes, bytes]]) -> tuple[int, list[Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "headers": headers}, receive, send)
    return sent[0]["status"], sent


async def test_the_bearer_token_guards_every_request() -> None:
    reached: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])
        await send({"type": "http.response.start", "status": 200, "headers": []})

    app = BearerToken(inner, "s3cret")
    for headers in (
        [],
        [(b"authorization", b"Bearer wrong")],
        [(b"authorization", b"s3cret")],
        [(b"authorization", b"Bearer s3cret ")],
    ):
        status, sent = await _call(app, headers)
        assert status == 401
        assert b"KB_MCP_TOKEN" in sent[1]["body"]
        assert (b"www-authenticate", b'Bearer realm="kb-lsp"') in sent[0]["headers"]
    assert reached == []
    status, _ = await _call(app, [(b"authorization", b"Bearer s3cret")])
    assert status == 200 and reached == ["http"]
