"""The SQL statements a store runs, as its log tells them (`store.db.statements`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kb_lsp.engine.store.db import statements


class Statements(logging.Handler):
    """Every statement run on the store in `directory` while attached, in order."""

    def __init__(self, directory: Path) -> None:
        super().__init__(logging.DEBUG)
        self.directory = directory
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "store", None) == self.directory:
            self.seen.append(record.getMessage())


@contextmanager
def statements_of(directory: Path) -> Iterator[list[str]]:
    """The list that every SQL statement the store in `directory` runs in the block is
    appended to."""
    handler = Statements(directory)
    level = statements.level
    statements.addHandler(handler)
    statements.setLevel(logging.DEBUG)
    try:
        yield handler.seen
    finally:
        statements.removeHandler(handler)
        statements.setLevel(level)
