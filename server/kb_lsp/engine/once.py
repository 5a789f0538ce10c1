"""A value made on first use, once, however many threads ask for it at the same time
(the embedding model: reading and verifying it takes seconds and hundreds of MB)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Once(Generic[T]):
    """`get()` returns what `make()` made (never None); the first callers wait for it
    under `lock` (default: a new `threading.Lock`), later ones do not take the lock at
    all. When `make` raises, nothing is kept and the next `get()` tries again."""

    def __init__(
        self, make: Callable[[], T], lock: AbstractContextManager[Any] | None = None
    ) -> None:
        self._make = make
        self._lock = lock if lock is not None else threading.Lock()
        self._value: T | None = None

    @property
    def done(self) -> bool:
        """Whether the value is made (no waiting)."""
        return self._value is not None

    def get(self) -> T:
        value = self._value
        if value is not None:
            return value
        with self._lock:
            # Checked again under the lock: the threads that waited for it find it made.
            if self._value is None:
                self._value = self._make()
            return self._value
