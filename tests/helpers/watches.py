"""The folders a watcher watches, as its log tells them (`WATCHING`, `NOT_WATCHING`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kb_lsp.engine.workspace import watcher

LOGGER = logging.getLogger(watcher.__name__)


class WatchLog(logging.Handler):
    """Each folder watched now and whether its watch is recursive, from the records."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.folders: dict[Path, bool] = {}

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg == watcher.WATCHING:
            folder, recursive = args
            self.folders[Path(str(folder))] = bool(recursive)
        elif record.msg == watcher.NOT_WATCHING:
            self.folders.pop(Path(str(args[0])), None)


@contextmanager
def watch_log() -> Iterator[WatchLog]:
    """A `WatchLog` that hears every watcher from now until the block ends."""
    handler = WatchLog()
    level = LOGGER.level
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)
