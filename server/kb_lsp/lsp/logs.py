"""kb_lsp's log records to the client, as `window/logMessage` (the file log and the level
are the runtime's: `runtime/logs.py`).

One handler per process, installed once: a new server in the same process (tests, TCP
reconnects) points it at its own connection instead of adding another.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from lsprotocol import types

from kb_lsp.runtime.logs import BoundedFormatter

_LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
}

Send = Callable[[types.LogMessageParams], None]


class ClientLogHandler(logging.Handler):
    """Forwards records to `window/logMessage` through `send` (thread-safe)."""

    def __init__(self, send: Send) -> None:
        super().__init__()
        self.send = send
        self.setFormatter(BoundedFormatter("%(name)s: %(message)s"))
        self._busy = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._busy, "on", False):  # a record raised while sending one
            return
        self._busy.on = True
        try:
            level = next(
                (kind for floor, kind in _LEVELS.items() if record.levelno >= floor),
                types.MessageType.Log,
            )
            self.send(types.LogMessageParams(type=level, message=self.format(record)))
        except Exception:
            self.handleError(record)
        finally:
            self._busy.on = False


_lock = threading.Lock()
_handler: ClientLogHandler | None = None


def to_client(send: Send) -> ClientLogHandler:
    """Route `kb_lsp.*` records to `send` (this process's one client handler); pygls'
    own chatter stays at warnings."""
    global _handler
    with _lock:
        if _handler is None:
            _handler = ClientLogHandler(send)
            logging.getLogger("kb_lsp").addHandler(_handler)
        else:
            _handler.send = send
    logging.getLogger("pygls").setLevel(logging.WARNING)
    return _handler
