"""Logging, configured once per process.

kb_lsp's records (and the warnings of the libraries underneath) go to a log file in the
storage folder, rotated at 1 MiB; in a language server they also go to the client
(`lsp/logs.py` adds that one handler). `kb.log.level`
sets the level of the `kb_lsp` loggers and may change at any time. Nothing is ever
written to stdout (in a language server it is the JSON-RPC channel).
"""

from __future__ import annotations

import logging
import logging.handlers
import threading
from pathlib import Path

LOG_FILE = "kb-lsp.log"
LOG_BYTES = 1024 * 1024
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

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
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handler = logging.handlers.RotatingFileHandler(
                path, maxBytes=LOG_BYTES, backupCount=2, encoding="utf-8"
            )
        except OSError:
            logging.getLogger(__name__).warning("cannot write a log file in %s", folder)
            return None
        handler.setFormatter(logging.Formatter(FORMAT))
        # On the root logger, so that warnings of the libraries underneath (pygls, Chroma)
        # are in the file too; their chatter below warnings is not (root stays at WARNING).
        root = logging.getLogger()
        if _file_handler is not None:
            root.removeHandler(_file_handler)
            _file_handler.close()
        root.addHandler(handler)
        _file_handler, _file_path = handler, path
        return path
