"""Logging: kb_lsp's records go to the client as `window/logMessage` and to a log file in
the storage folder. Nothing is ever written to stdout (the JSON-RPC channel)."""

from __future__ import annotations

import logging
import logging.handlers
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types

LOG_FILE = "kb-lsp.log"
_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"

_LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
}


class ClientLogHandler(logging.Handler):
    """Forwards records to `window/logMessage` through `send` (thread-safe)."""

    def __init__(self, send: Callable[[types.LogMessageParams], None]) -> None:
        super().__init__(level=logging.INFO)
        self._send = send
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self._busy = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._busy:  # a log record raised while sending one: do not recurse
            return
        self._busy = True
        try:
            level = next(
                (kind for floor, kind in _LEVELS.items() if record.levelno >= floor),
                types.MessageType.Log,
            )
            self._send(types.LogMessageParams(type=level, message=self.format(record)))
        except Exception:
            self.handleError(record)
        finally:
            self._busy = False


def setup(send: Callable[[types.LogMessageParams], None]) -> ClientLogHandler:
    """Route `kb_lsp.*` to the client; pygls' own chatter stays at warnings."""
    package = logging.getLogger("kb_lsp")
    package.setLevel(logging.INFO)
    handler = ClientLogHandler(send)
    package.addHandler(handler)
    logging.getLogger("pygls").setLevel(logging.WARNING)
    return handler


_file_handler: logging.Handler | None = None


def log_to_file(folder: Path) -> Path | None:
    """Also write logs to `<folder>/kb-lsp.log` (rotated at 1 MiB); None when impossible."""
    global _file_handler
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LOG_FILE
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=1024 * 1024, backupCount=2, encoding="utf-8"
        )
    except OSError:
        logging.getLogger(__name__).warning("cannot write a log file in %s", folder)
        return None
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.setLevel(logging.INFO)
    root = logging.getLogger()
    if _file_handler is not None:
        root.removeHandler(_file_handler)
        _file_handler.close()
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.WARNING, logging.INFO))
    _file_handler = handler
    return path
