"""`Once`: a value made on first use, once, whatever the threads asking for it (the
embedding model's load, `minilm.MiniLMEmbedder`)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from kb_lsp.engine.once import Once


class ArrivalLock:
    """A lock that counts the threads that came to take it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrived = 0
        self.changed = threading.Condition()

    def __enter__(self) -> ArrivalLock:
        with self.changed:
            self.arrived += 1
            self.changed.notify_all()
        self.lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_once_makes_its_value_once_for_threads_that_ask_together() -> None:
    threads = 4
    lock = ArrivalLock()
    made: list[str] = []

    def make() -> str:
        made.append(threading.current_thread().name)
        # The first maker holds on until every thread found the value missing and came for
        # the lock: each of them would make it again if the check under the lock were
        # missing.
        with lock.changed:
            lock.changed.wait_for(lambda: lock.arrived >= threads, timeout=60)
        return "value"

    once = Once(make, lock)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        values = list(pool.map(lambda _: once.get(), range(threads)))
    assert lock.arrived == threads
    assert len(made) == 1 and values == ["value"] * threads
    assert once.get() == "value" and lock.arrived == threads  # made: no lock taken


def test_once_tries_again_after_a_failure() -> None:
    attempts: list[int] = []

    def make() -> int:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("not yet")
        return len(attempts)

    once = Once(make)
    with pytest.raises(OSError, match="not yet"):
        once.get()
    assert once.get() == 2 and once.get() == 2
