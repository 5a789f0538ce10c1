"""The server's side of the local socket (`local_socket.py` has the picture): a process
that writes an index listens in its store folder, and a `kb` command asks it
`kb/search`, `kb/status` or `kb/schema` instead of loading a second engine and model.

One thread accepts; each connection has a thread of its own and its requests run on the
runtime as the editor's do (the runtime is thread-safe). A bad message gets its JSON-RPC
error and the connection goes on (bodies read within `json_bounds`' limits: a request
too deep or with too large a number is answered under its id); a line longer than the
limit ends that connection. At most `MAX_CONNECTIONS` at once: one more is answered
with an error line (the command then answers alone, at once) and closed, and a
connection that sends nothing for `IDLE_SECONDS` is closed, so idle connections cannot
keep the commands out.
Every listener stops, and removes its socket, when the index is closed; a socket left by
a process that died is removed by the next writer, which alone may listen there.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_lsp import __version__, protocol
from kb_lsp.contract.operations import Call
from kb_lsp.contract.params import parse_params
from kb_lsp.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    InvalidInput,
    KbError,
    Unavailable,
)
from kb_lsp.json_bounds import MessageError, parse_json
from kb_lsp.json_bounds import request_id as find_request_id
from kb_lsp.runtime import deadline, dispatch, registry
from kb_lsp.runtime.local_socket import (
    CLI_CLIENT,
    HELLO,
    MAX_MESSAGE_BYTES,
    PROTOCOL,
    SUPPORTED,
    encode,
    folder_refusal,
    private_folder,
    socket_path,
)
from kb_lsp.runtime.registry import Bound

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 32
IDLE_SECONDS = 15.0  # a command sends its next request at once; an idle one holds a slot


class Listener:
    """The socket of one store folder, served from `runtime`."""

    def __init__(self, runtime: Runtime, store: Path) -> None:
        self.runtime = runtime
        self.path = socket_path(store)
        self._server: socket.socket | None = None
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.read_timeout = deadline.READ_TIMEOUT
        # The table's `local` rows, on the reads pool with the read deadline (`_serve`).
        self._methods: dict[str, Callable[[Any], Any]] = {HELLO: self._hello}
        for bound in registry.served():
            if bound.op.local:
                self._methods[bound.op.method] = functools.partial(self._operation, bound)

    # --- life cycle ------------------------------------------------------------------------

    def start(self) -> bool:
        """Listen (False, logged, when it cannot: the command line then opens the index
        itself, as it would without a server)."""
        try:
            self._server = self._bind()
        except OSError as err:
            log.warning("kb-lsp: no local socket for the command line at %s: %s", self.path, err)
            return False
        threading.Thread(target=self._accept, name="kb-socket", daemon=True).start()
        log.info("kb-lsp: the command line can ask this server at %s", self.path)
        return True

    def _bind(self) -> socket.socket:
        if self.path.parent == private_folder():  # the short address: a private folder
            self.path.parent.mkdir(mode=0o700, exist_ok=True)
            refused = folder_refusal(self.path.parent)  # the check its clients make
            if refused is not None:
                raise OSError(refused)
        # Whatever is there was left by a writer that died: only the writer listens.
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        # Bound under a temporary name, made private, then moved into place: nobody can
        # connect before its mode is 0600.
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(str(temporary))
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
            server.listen(MAX_CONNECTIONS)
        except OSError:
            server.close()
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise
        return server

    def stop(self) -> None:
        with self._lock:
            self._closed = True
            server, self._server = self._server, None
            connections = list(self._connections)
        if server is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            server.shutdown(socket.SHUT_RDWR)
        server.close()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    # --- serving ---------------------------------------------------------------------------

    def _accept(self) -> None:
        server = self._server
        while server is not None:
            try:
                connection, _ = server.accept()
            except OSError:
                return  # stopped
            with self._lock:
                closed, full = self._closed, len(self._connections) >= MAX_CONNECTIONS
                if not (closed or full):
                    self._connections.add(connection)
            if closed or full:
                self._refuse(connection, closed)
                continue
            threading.Thread(
                target=self._serve, args=(connection,), name="kb-socket-client", daemon=True
            ).start()

    @staticmethod
    def _refuse(connection: socket.socket, closed: bool) -> None:
        why = "the index is closing" if closed else f"{MAX_CONNECTIONS} connections are open"
        with connection, contextlib.suppress(OSError):
            connection.settimeout(1.0)  # a few bytes into an empty buffer; never waits long
            connection.sendall(encode(_error(None, Unavailable.code, f"server busy: {why}")))

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(IDLE_SECONDS)
        try:
            with connection, connection.makefile("rb") as reader:
                while True:
                    line = reader.readline(MAX_MESSAGE_BYTES + 1)
                    if not line:
                        return
                    if len(line) > MAX_MESSAGE_BYTES:
                        message = f"a message is at most {MAX_MESSAGE_BYTES} bytes"
                        connection.sendall(encode(_error(None, PARSE_ERROR, message)))
                        return  # the rest of that line cannot be told from a next message
                    answer = self.answer(line)
                    if answer is not None:
                        connection.sendall(encode(answer))
        except OSError as err:
            log.debug("local socket connection ended: %s", err)
        finally:
            with self._lock:
                self._connections.discard(connection)

    def answer(self, line: bytes) -> dict[str, Any] | None:
        """The answer to one line (None for a notification: JSON-RPC answers none)."""
        try:
            message = parse_json(line)
        except MessageError as err:
            if err.code != PARSE_ERROR:
                found_id, method = find_request_id(line)
                if found_id is not None and method is not None:
                    return _error(found_id, err.code, f"{method}: {err}")
            return _error(None, PARSE_ERROR, str(err))
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "a request is a JSON object (no batches)")
        request_id = message.get("id")
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _error(
                request_id, INVALID_REQUEST, 'a request has "jsonrpc": "2.0" and a method'
            )
        if "id" not in message:
            return None
        handler = self._methods.get(method)
        if handler is None:
            return _error(request_id, METHOD_NOT_FOUND, f"no method {method!r} on this socket")
        try:
            # An operation runs on its pool with the read deadline (`dispatch.py`): a disk
            # that stops answering costs this request an error, not its thread for ever.
            result = handler(message.get("params"))
        except KbError as err:  # bad params or filter, an index not open: its kind's code
            return _error(request_id, err.code, str(err))
        except RecursionError:  # params within the depth limit that still recurse too far
            return _error(request_id, InvalidInput.code, f"{method}: params nested too deep")
        except Exception as err:
            log.exception("local socket: %s failed", method)
            return _error(request_id, INTERNAL_ERROR, f"{type(err).__name__}: {err}")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _hello(self, _: Any) -> dict[str, Any]:
        return {
            "version": __version__,
            "protocol": PROTOCOL,
            "roots": [str(root.resolve()) for root in self.runtime.session.roots],
        }

    def _operation(self, bound: Bound[Any, Any], raw: Any) -> dict[str, Any]:
        """One operation, run by the dispatcher (its pool, the read deadline)."""
        params = parse_params(bound.op.params, raw, bound.op.method)
        call = Call(CLI_CLIENT)
        return protocol.dump(dispatch.waited(self.runtime, bound, params, call, self.read_timeout))


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class Listeners:
    """A listener for each store folder the runtime writes, following its changes."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._lock = threading.Lock()
        self._by_store: dict[Path, Listener] = {}

    def follow(self, stores: list[Path]) -> None:
        """Listen in exactly `stores`."""
        if not SUPPORTED:
            return
        with self._lock:
            for store in set(self._by_store) - set(stores):
                self._by_store.pop(store).stop()
            for store in stores:
                if store not in self._by_store:
                    listener = Listener(self.runtime, store)
                    if listener.start():
                        self._by_store[store] = listener

    def listening(self) -> list[Listener]:
        """The listeners serving now, one per store folder."""
        with self._lock:
            return list(self._by_store.values())

    def stop(self) -> None:
        self.follow([])
