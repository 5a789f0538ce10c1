"""The store's own failures at its boundary, as the contract's kinds: SQLite that cannot
answer (locked past its timeout, a disk that fails, a file that went away or is not a
database) and a vector index that cannot be reached are `Unavailable` — the request was
fine and may work later — worded with what the person can do. A bug (a `ProgrammingError`,
an `IntegrityError`) is none of these and stays what it is."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from kb_lsp.errors import Unavailable


class StoreUnavailable(Unavailable):
    """The index's database or vector index cannot answer now."""


def is_outage(err: BaseException) -> bool:
    """Whether `err` is SQLite failing to serve: an `OperationalError` (locked, disk I/O,
    no such table in a store being rebuilt) or a file that is not (or no longer) a
    database — not a statement the code got wrong."""
    return isinstance(err, sqlite3.OperationalError) or type(err) is sqlite3.DatabaseError


@contextmanager
def store_outages() -> Iterator[None]:
    """Run a read of the store; SQLite's outages become `StoreUnavailable`."""
    try:
        yield
    except sqlite3.Error as err:
        if not is_outage(err):
            raise
        raise StoreUnavailable(
            f"The index cannot be read now ({err}). If it persists, check the disk and "
            "run `kb index --full` (or the Rebuild command) to make it again."
        ) from err


__all__ = ["StoreUnavailable", "is_outage", "store_outages"]
