"""The local socket through which a `kb` command asks the server that holds an index
(`listener.py`) instead of opening it itself: the same runtime, no second model load.

Where: `kb.sock` in the store folder of the workspace (mode 0600), or, when that path is
too long for a Unix socket's address, `<XDG_RUNTIME_DIR or the temp folder>/kb-lsp-<uid>/
<hash of the store folder>.sock` in a folder only the user can enter. Platforms without
Unix sockets have neither: the command opens the index itself, as it always could.

Wire: JSON-RPC 2.0, one message per line (UTF-8 JSON; JSON text never holds a raw line
break). The methods are the `kb/*` requests of `protocol.py`, with its params and
results, and `kb/hello` first: `{"root": folder}` → `{"version", "protocol", "roots"}`,
so that a command meets only a server of its own version that indexes exactly its
folder; anything else, and a socket nobody listens on any more (a server that died), is
answered by the command itself.

The client trusts only what its user made: before connecting, the socket's folder must be
the user's and closed to everyone else (0700, not a link) and the socket the user's;
after connecting, the listening process must run as the user (`SO_PEERCRED`, where the
platform has it). Otherwise another local user who made `/tmp/kb-lsp-<uid>` first could
answer `kb search` with results of their choosing and read the query: the command
answers from the index itself instead, and says why in one line (`NotThisServer`).

This side (the client) is the standard library only: `kb` tries the socket before it
imports pydantic, Chroma or onnxruntime.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_lsp import __version__

if TYPE_CHECKING:
    import socket

SOCKET_NAME = "kb.sock"
HELLO = "kb/hello"
# Bumped when the socket's own conventions change (kb/hello, the framing).
PROTOCOL = 1
# The numbered list a command's searches make, whichever process runs them (kept on
# disk, so `kb ask "file 1"` finds it in a later process).
CLI_CLIENT = "cli"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# sun_path holds 108 bytes on Linux, 104 on macOS (with the terminating NUL).
_MAX_ADDRESS = 100


def _supported() -> bool:
    """Whether this platform has Unix sockets (every POSIX one does). `socket` loads when
    a connection is made: a one-shot command with no server running never needs it."""
    if os.name == "posix":
        return True
    import socket

    return hasattr(socket, "AF_UNIX")


def __getattr__(name: str) -> Any:
    if name == "SUPPORTED":
        return _supported()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def socket_path(store: Path) -> Path:
    """Where the server of the store folder `store` listens."""
    path = store / SOCKET_NAME
    if len(os.fsencode(path)) <= _MAX_ADDRESS:
        return path
    digest = hashlib.sha256(os.fsencode(store)).hexdigest()[:16]
    return private_folder() / f"{digest}.sock"


def private_folder() -> Path:
    import tempfile

    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"kb-lsp-{os.getuid()}"


class ServerError(Exception):
    """The server answered the request with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class NotThisServer(Exception):
    """A server listens, but not one this command should use (another version, other
    workspace folders); the message says why, for the log or the user."""


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class Client:
    """One connection to a server's socket; requests one at a time."""

    def __init__(self, path: Path, timeout: float) -> None:
        import socket

        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.settimeout(timeout)
        try:
            self._socket.connect(str(path))
        except OSError:
            self._socket.close()
            raise
        self._reader = self._socket.makefile("rb")
        self._next_id = 0

    def request(self, method: str, params: dict[str, Any]) -> Any:
        """The result of `method`; `ServerError` for an error answer, `OSError` (a
        timeout included) or `ValueError` when the connection fails or garbles."""
        self._next_id += 1
        request_id = self._next_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        # A busy server says why and closes at once: its line may be waiting all the same.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._socket.sendall(encode(message))
        line = self._reader.readline(MAX_MESSAGE_BYTES + 1)
        if not line.endswith(b"\n"):
            raise ValueError("the server closed the connection or sent too much")
        answer = json.loads(line)
        if not isinstance(answer, dict):
            raise ValueError(f"not an answer to request {request_id}: {line[:200]!r}")
        error = answer.get("error")
        # `id: null` with an error: the server refused the connection (busy) or the line.
        if answer.get("id") != request_id and not (answer.get("id") is None and error):
            raise ValueError(f"not an answer to request {request_id}: {line[:200]!r}")
        if isinstance(error, dict):
            raise ServerError(int(error.get("code", 0)), str(error.get("message", "")))
        return answer.get("result")

    def peer_uid(self) -> int | None:
        return peer_uid(self._socket)

    def close(self) -> None:
        self._reader.close()
        self._socket.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def folder_refusal(folder: Path) -> str | None:
    """Why the socket's folder is not private to this user, or None (a missing folder
    too): the client checks it before connecting, the server before listening there."""
    uid = os.getuid()
    try:
        held = os.lstat(folder)
    except OSError:
        return None
    if stat.S_ISLNK(held.st_mode) or not stat.S_ISDIR(held.st_mode):
        return f"{folder} is not a folder"
    if held.st_uid != uid:
        return f"{folder} belongs to user {held.st_uid}, not to you ({uid})"
    if stat.S_IMODE(held.st_mode) & 0o077:
        return f"{folder} is open to other users (mode {stat.S_IMODE(held.st_mode):o}, not 700)"
    return None


def _refusal(path: Path) -> str | None:
    """Why the socket at `path` is not to be trusted, or None. A missing socket is not
    refused here: connecting says there is no server."""
    uid = os.getuid()
    refused = folder_refusal(path.parent)
    if refused is not None:
        return refused
    try:
        made = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISSOCK(made.st_mode):
        return f"{path} is not a socket"
    if made.st_uid != uid:
        return f"{path} belongs to user {made.st_uid}, not to you ({uid})"
    return None


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end, where the platform says (Linux)."""
    import socket
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    credentials = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", credentials)
    return int(uid)


def connect(store: Path, root: Path, *, timeout: float = 60.0) -> Client | None:
    """A connection to the server that holds `root`'s index in the store folder `store`,
    greeted; None when none listens (no socket, or a stale one: connection refused).
    `NotThisServer` when one listens that this command should not use."""
    if not _supported():
        return None
    path = socket_path(store)
    refused = _refusal(path)
    if refused is not None:
        raise NotThisServer(f"not using the kb-lsp socket: {refused}")
    if not os.path.lexists(path):
        return None  # as connecting would say, without loading `socket`
    try:
        client = Client(path, timeout)
    except OSError:  # no such file, or nobody listens any more (the server died)
        return None
    uid = client.peer_uid()
    if uid is not None and uid != os.getuid():
        client.close()
        raise NotThisServer(
            f"not using the kb-lsp socket: the process at {path} runs as user {uid}, not as "
            f"you ({os.getuid()})"
        )
    try:
        hello = client.request(HELLO, {"root": str(root)})
        if not isinstance(hello, dict):
            raise ValueError(f"kb/hello answered {hello!r}")
        version, protocol = hello.get("version"), hello.get("protocol")
        if version != __version__ or protocol != PROTOCOL:
            raise NotThisServer(
                f"the running kb-lsp server is version {version} (socket protocol "
                f"{protocol}), this kb is {__version__} ({PROTOCOL})"
            )
        if hello.get("roots") != [str(root)]:
            raise NotThisServer(f"the running server indexes {hello.get('roots')}, not only {root}")
    except (ServerError, OSError, ValueError) as err:
        client.close()
        raise NotThisServer(f"the running kb-lsp server did not greet: {err}") from err
    except NotThisServer:
        client.close()
        raise
    return client
