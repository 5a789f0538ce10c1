"""`kb mcp --http`: addresses, the loopback rule, the bearer token (in-process)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request

from kb_lsp.mcp.transport import (
    BearerToken,
    HttpOptions,
    TransportError,
    http_token,
    is_loopback,
    parse_address,
    security_settings,
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
    # Every address: the names clients use are needed for the Host check, before opening.
    with pytest.raises(TransportError, match="--allow-host"):
        http_token(allowed, {"KB_MCP_TOKEN": "s3cret"})
    named = HttpOptions("0.0.0.0", 8765, allow_remote=True, allowed_hosts=("kb.internal",))
    assert http_token(named, {"KB_MCP_TOKEN": "s3cret"}) == "s3cret"
    assert http_token(HttpOptions("10.0.0.5", 1, True), {"KB_MCP_TOKEN": "s3cret"}) == "s3cret"
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


# --- DNS rebinding: the allow-list comes from the socket actually bound ---------------------


async def _verdict(settings: TransportSecuritySettings, headers: dict[str, str]) -> int:
    """The SDK's own check: 200 when it lets the request through, else its status."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    refused = await TransportSecurityMiddleware(settings).validate_request(
        Request(scope), is_post=True
    )
    return 200 if refused is None else refused.status_code


@pytest.mark.parametrize(
    ("typed", "bound", "good_host"),
    [
        ("127.0.0.1", "127.0.0.1", "127.0.0.1:8799"),
        ("127.0.0.2", "127.0.0.2", "127.0.0.2:8799"),
        ("LOCALHOST", "127.0.0.1", "localhost:8799"),
        ("localhost", "127.0.0.1", "127.0.0.1:8799"),
        ("0:0:0:0:0:0:0:1", "::1", "[::1]:8799"),
        ("127.200.3.4", "127.200.3.4", "127.200.3.4:8799"),
    ],
)
async def test_every_loopback_spelling_refuses_a_rebound_host_and_origin(
    typed: str, bound: str, good_host: str
) -> None:
    settings = security_settings(parse_address(f"[{typed}]:8799"), (bound, 8799))
    json_body = {"content-type": "application/json"}
    assert await _verdict(settings, {**json_body, "host": good_host}) == 200
    origin = f"http://{good_host}"
    assert await _verdict(settings, {**json_body, "host": good_host, "origin": origin}) == 200
    assert await _verdict(settings, {**json_body, "host": "evil.example"}) == 421
    assert await _verdict(settings, {**json_body, "host": "evil.example:8799"}) == 421
    hostile_origin = {**json_body, "host": good_host, "origin": "http://evil.example"}
    assert await _verdict(settings, hostile_origin) == 403
    # The right host at another port is another server (another origin).
    other_port = good_host.rpartition(":")[0] + ":8800"
    assert await _verdict(settings, {**json_body, "host": other_port}) == 421


async def test_a_remote_bind_takes_its_allow_list_and_refuses_the_rest() -> None:
    options = parse_address(
        "0.0.0.0:8799",
        allow_remote=True,
        allowed_hosts=["kb.internal", "proxy.example:443"],
        allowed_origins=["https://tools.example"],
    )
    settings = security_settings(options, ("0.0.0.0", 8799))
    ok = {"content-type": "application/json"}
    assert await _verdict(settings, {**ok, "host": "kb.internal:8799"}) == 200
    assert await _verdict(settings, {**ok, "host": "proxy.example:443"}) == 200
    with_origin = {**ok, "host": "kb.internal:8799", "origin": "https://tools.example"}
    assert await _verdict(settings, with_origin) == 200
    assert await _verdict(settings, {**ok, "host": "evil.example:8799"}) == 421
    with_bad_origin = {**ok, "host": "kb.internal:8799", "origin": "https://evil.example"}
    assert await _verdict(settings, with_bad_origin) == 403
    # A wildcard bind with no name to accept says what to pass.
    with pytest.raises(TransportError, match="--allow-host"):
        security_settings(parse_address("0.0.0.0:8799", allow_remote=True), ("0.0.0.0", 8799))


@pytest.mark.parametrize("name", ["", "a/b", "*.example", "::1"])
def test_bad_allowed_hosts_say_what_is_wanted(name: str) -> None:
    with pytest.raises(TransportError, match="--allow-host"):
        parse_address("127.0.0.1:1", allowed_hosts=[name])


@pytest.mark.parametrize("origin", ["tools.example", "ftp://x", "https://x/path"])
def test_bad_allowed_origins_say_what_is_wanted(origin: str) -> None:
    with pytest.raises(TransportError, match="--allow-origin"):
        parse_address("127.0.0.1:1", allowed_origins=[origin])
