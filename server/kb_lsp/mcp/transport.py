"""How `kb mcp` is reached: stdio (the default: the client starts the process), or
Streamable HTTP on a host and port (`--http HOST:PORT`), one runtime for every session.

HTTP listens on loopback only unless `allow_remote` is given; then a bearer token is
required (`KB_MCP_TOKEN`), compared in constant time, and every request without it gets
401. A token set on loopback is required too.

DNS rebinding (a web page whose name is re-pointed at 127.0.0.1, so the browser sends its
requests here) is refused by the SDK's transport security, on for every address: the Host
header must name the socket actually bound (`127.0.0.2:8799`, `[::1]:8799`, and
`localhost:PORT` on loopback) or a name given with `--allow-host`, and an Origin, when a
browser sends one, must be `http://` one of those (or one given with `--allow-origin`).
The SDK would turn the check on only for the exact spellings `127.0.0.1`, `localhost`
and `::1`; `LOCALHOST`, `127.0.0.2` and `0:0:0:0:0:0:0:1` are loopback too, and so is a
remote bind, where a token alone does not stop a page from using a browser that holds it.

When the server is listening it says so on stderr — `kb mcp: listening on
http://127.0.0.1:PORT/mcp` — so a port of 0 (any free port) can be used and read back.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.server.transport_security import TransportSecuritySettings

from kb_lsp.config import Settings
from kb_lsp.mcp import sessions

log = logging.getLogger(__name__)

TOKEN_VARIABLE = "KB_MCP_TOKEN"
MCP_PATH = "/mcp"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]


class TransportError(ValueError):
    """A transport option the user can fix; the message says how."""


@dataclass(frozen=True)
class HttpOptions:
    host: str
    port: int
    allow_remote: bool = False
    # More Host names (`name` or `name:port`) and Origins (`https://name`) to accept.
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_sessions: int = sessions.DEFAULT_MAX_SESSIONS
    session_idle: float = sessions.DEFAULT_IDLE_SECONDS


def parse_address(
    text: str,
    *,
    allow_remote: bool = False,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    max_sessions: int = sessions.DEFAULT_MAX_SESSIONS,
    session_idle: float = sessions.DEFAULT_IDLE_SECONDS,
) -> HttpOptions:
    """`HOST:PORT`, `[::1]:PORT` or `:PORT` (host 127.0.0.1)."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise TransportError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    for name in allowed_hosts:
        unbracketed_ipv6 = name.count(":") > 1 and not name.startswith("[")
        if not name or unbracketed_ipv6 or any(c in name for c in "/ *"):
            raise TransportError(
                f"--allow-host wants a host name or NAME:PORT ([::1]:PORT), got {name!r}"
            )
    for origin in allowed_origins:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
            raise TransportError(
                f"--allow-origin wants SCHEME://HOST[:PORT] (e.g. https://tools.example), "
                f"got {origin!r}"
            )
    if max_sessions < 1:
        raise TransportError(f"--max-sessions wants at least 1, got {max_sessions}")
    if not 0 < session_idle < float("inf"):
        raise TransportError(
            f"--session-idle wants a number of seconds above 0, got {session_idle}"
        )
    return HttpOptions(
        host=host,
        port=int(port),
        allow_remote=allow_remote,
        allowed_hosts=tuple(allowed_hosts),
        allowed_origins=tuple(origin.rstrip("/") for origin in allowed_origins),
        max_sessions=max_sessions,
        session_idle=session_idle,
    )


def _unspecified(host: str) -> bool:
    """`0.0.0.0`, `::` and their other spellings: every address of the machine."""
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_unspecified
    except ValueError:
        return False


def _needs_allowed_host(options: HttpOptions) -> TransportError:
    return TransportError(
        f"listening on every address ({options.host}) needs --allow-host NAME for each "
        "name clients use to reach this machine: requests naming any other host are "
        "refused (DNS-rebinding protection)"
    )


def _in_host_header(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _with_port(name: str, port: int) -> str:
    """`name` as a Host header: at the bound port unless it names one (behind a proxy
    the port clients use may differ)."""
    host, sep, given = name.rpartition(":")
    if sep and given.isdigit() and (":" not in host or host.endswith("]")):
        return name
    return f"{name}:{port}"


def security_settings(options: HttpOptions, bound: tuple[str, int]) -> TransportSecuritySettings:
    """The SDK's Host/Origin allow-list for a socket bound at `bound` (address, port):
    the bound address and the host as typed (and `localhost` on loopback), at the bound
    port, plus `--allow-host`/`--allow-origin`. `TransportError` when no name is left
    (a wildcard bind without `--allow-host`)."""
    address, port = bound
    names: list[str] = []
    if not _unspecified(address):
        names.append(address)
    if is_loopback(address):
        names.append("localhost")
    typed = options.host.lower()
    if not _unspecified(typed) and typed not in names:
        names.append(typed)
    hosts = [f"{_in_host_header(name)}:{port}" for name in dict.fromkeys(names)]
    hosts += [_with_port(extra.lower(), port) for extra in options.allowed_hosts]
    if not hosts:
        raise _needs_allowed_host(options)
    origins = [f"http://{host}" for host in hosts] + list(options.allowed_origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(hosts)),
        allowed_origins=list(dict.fromkeys(origins)),
    )


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def http_token(options: HttpOptions, environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer token HTTP clients must send, or None; `TransportError` when a
    non-loopback host is asked for without `allow_remote` or without a token."""
    environ = os.environ if environ is None else environ
    token = environ.get(TOKEN_VARIABLE, "").strip() or None
    if is_loopback(options.host):
        return token
    if not options.allow_remote:
        raise TransportError(
            f"refusing to listen on {options.host}: it is not a loopback address, so other "
            "machines could reach the knowledge base. Use 127.0.0.1, or pass "
            f"--allow-remote and set {TOKEN_VARIABLE} to a secret token."
        )
    if token is None:
        raise TransportError(
            f"--allow-remote needs a bearer token: set {TOKEN_VARIABLE} to a long random "
            "secret; clients send it as 'Authorization: Bearer <token>'."
        )
    if _unspecified(options.host) and not options.allowed_hosts:
        raise _needs_allowed_host(options)
    return token


class BearerToken:
    """ASGI middleware: HTTP requests must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: Asgi, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = json.dumps(
                    {"error": "unauthorized", "error_description": (
                        f"send the token of {TOKEN_VARIABLE} as 'Authorization: Bearer <token>'"
                    )}
                ).encode()  # fmt: skip
                await send({
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="kb-lsp"'),
                    ],
                })  # fmt: skip
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _listen(options: HttpOptions) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            options.host, options.port, type=socket.SOCK_STREAM
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as err:
        raise TransportError(f"cannot listen on {options.host}:{options.port}: {err}") from err
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def _serve_http(app: Asgi, sock: socket.socket) -> None:
    import uvicorn

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    # Not a log line: clients (and tests, with port 0) read the address from here.
    sys.stderr.write(f"kb mcp: listening on http://{shown}:{port}{MCP_PATH}\n")
    sys.stderr.flush()
    config = uvicorn.Config(app, log_level="warning", lifespan="on", log_config=None)
    await uvicorn.Server(config).serve(sockets=[sock])


def run(roots: list[Path], settings: Settings, http: HttpOptions | None = None) -> None:
    """Open the runtime on `roots` and serve until the client goes (stdio) or the
    process is stopped (HTTP). `TransportError` before anything is opened."""
    from kb_lsp.listener import Listeners
    from kb_lsp.mcp.server import KbMcpServer
    from kb_lsp.runtime import Runtime

    token = http_token(http) if http is not None else None
    # `listen`: `kb search` / `kb status` ask this server too while it writes the index.
    runtime = Runtime.editor()
    runtime.session.follow_writes(Listeners(runtime).follow)
    runtime.open(roots, settings)
    server = KbMcpServer(runtime)
    try:
        if http is None:
            anyio.run(server.run_stdio_async)
            return
        sock = _listen(http)
        try:
            security = security_settings(http, sock.getsockname()[:2])
            app: Asgi = server.streamable_http_app(
                streamable_http_path=MCP_PATH,
                transport_security=security,
                max_sessions=http.max_sessions,
                session_idle_timeout=http.session_idle,
            )
            app = sessions.SessionCap(app, http.max_sessions, http.session_idle)
            if token is not None:
                app = BearerToken(app, token)
            anyio.run(_serve_http, app, sock)
        finally:
            sock.close()
    finally:
        runtime.close()
