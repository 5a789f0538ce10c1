"""`SilentServer`: a TCP server on 127.0.0.1 that accepts connections, reads what is sent,
and never answers — a model server that hangs. `accepted` is set at the first connection,
so a test can wait for it instead of sleeping."""

from __future__ import annotations

import socket
import threading


class SilentServer:
    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(8)
        self._socket.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._closed = threading.Event()
        self._connections: list[socket.socket] = []
        self.accepted = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="silent-server", daemon=True)

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._connections.append(connection)  # kept open, never written to
            self.accepted.set()

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        self._thread.join(timeout=5)
        for connection in self._connections:
            connection.close()
        self._socket.close()
