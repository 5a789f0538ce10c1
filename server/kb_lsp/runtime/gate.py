"""The reader/writer gate around the open knowledge base of one process.

Reads (search, status, hover, the agent) share the knowledge base; closing or reopening
it (new settings, shutdown, taking over from another process) waits until the reads in
flight are done and holds new ones back until it is open again. Indexing is not a
"writer" here: the store lets readers see what is committed while a sync runs.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class Gate:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._exclusive = False

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            self._exclusive = True
            while self._readers:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
