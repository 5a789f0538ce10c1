"""Logging, configured once per process.

kb_lsp's records (and the warnings of the libraries underneath) go to a log file in the
storage folder, rotated at 1 MiB; in a language server they also go to the client
(`lsp/logs.py` adds that one handler). `kb.log.level`
sets the level of the `kb_lsp` loggers and may change at any time. Nothing is ever
written to stdout (in a language server it is the JSON-RPC channel).

Every record is bounded (`BoundedFormatter`, used by every handler): its message is cut
at `MAX_MESSAGE_CHARS` and a traceback (logged for internal errors only) at
`MAX_TRACEBACK_CHARS`, so a 10 MB query cannot make a 10 MB line, and the rotation
bounds the files: at most (`LOG_BACKUPS` + 1) × `LOG_BYTES`, about 3 MiB.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

LOG_FILE = "kb-lsp.log"
LOG_BYTES = 1024 * 1024
LOG_BACKUPS = 2
MAX_MESSAGE_CHARS = 2_000
MAX_TRACEBACK_CHARS = 8_000
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text)} characters in all]"


class BoundedFormatter(logging.Formatter):
    """A formatter whose records have a bounded size (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if len(message) > MAX_MESSAGE_CHARS or record.exc_info or record.exc_text:
            record = logging.makeLogRecord(record.__dict__)
            record.msg, record.args = _cut(message, MAX_MESSAGE_CHARS), None
            if record.exc_info and not record.exc_text:
                record.exc_text = self.formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = _cut(record.exc_text, MAX_TRACEBACK_CHARS)
            record.exc_info = None  # exc_text, cut, is what gets written
        return super().format(record)


_lock = threading.Lock()
_file_handler: logging.Handler | None = None
_file_path: Path | None = None


def set_level(level: str) -> None:
    """The level of every `kb_lsp` logger (`debug`, `info`, `warning`, `error`)."""
    value = LEVELS.get(level.lower(), logging.INFO)
    package = logging.getLogger("kb_lsp")
    if package.level != value:
        package.setLevel(value)
        package.info("log level: %s", logging.getLevelName(value).lower())


def log_to_file(folder: Path) -> Path | None:
    """Write logs to `<folder>/kb-lsp.log` too (the one file handler of this process:
    a new folder replaces the previous one); None when impossible."""
    global _file_handler, _file_path
    path = folder / LOG_FILE
    with _lock:
        if _file_path == path:
            return path
        import logging.handlers  # a long-lived process's only: `kb status` goes without

        try:
            folder.mkdir(parents=True, exist_ok=True)
            handler = logging.handlers.RotatingFileHandler(
                path, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
            )
        except OSError:
            logging.getLogger(__name__).warning("cannot write a log file in %s", folder)
            return None
        handler.setFormatter(BoundedFormatter(FORMAT))
        # On the root logger, so that warnings of the libraries underneath (pygls, Chroma)
        # are in the file too; their chatter below warnings is not (root stays at WARNING).
        root = logging.getLogger()
        if _file_handler is not None:
            root.removeHandler(_file_handler)
            _file_handler.close()
        root.addHandler(handler)
        _file_handler, _file_path = handler, path
        return path
