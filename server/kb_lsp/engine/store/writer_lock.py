"""The store's writer lock (`writer.lock`): the process that holds it is the only writer.

A `Store` takes it with filelock (its fallbacks where a filesystem has no `flock`, one
lock per path within a process). On Unix that library makes one call, a non-blocking
exclusive `flock` on the file; a one-shot process that only needs to know whether it may
write (a keyword search, a status) makes that call itself instead: the same lock, so
each excludes the other, without importing the library (a tenth of a one-shot keyword
search's time). Where `flock` is missing or refused, filelock decides after all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol


class Held(Protocol):
    """A lock this process holds."""

    def release(self) -> None: ...


class _Flock:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    def release(self) -> None:
        os.close(self._fd)  # closing lets go of the flock


def take(path: Path, *, flock: bool = False) -> Held | None:
    """The writer's lock at `path`, held by this process; None when another holds it.
    `flock`: a one-shot process's (see the module's docstring)."""
    if flock:
        answered, held = _take_flock(path)
        if answered:
            return held
    from filelock import FileLock, Timeout

    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock


def held_elsewhere(path: Path) -> bool:
    """Whether another process holds the writer's lock at `path` (taken and let go at
    once: a writer starting meanwhile waits for it, never longer than this check)."""
    held = take(path, flock=True)
    if held is None:
        return True
    held.release()
    return False


def _take_flock(path: Path) -> tuple[bool, Held | None]:
    """(True, the lock or None when held elsewhere), or (False, None): `flock` cannot
    answer here, filelock decides."""
    try:
        import fcntl
    except ImportError:  # no flock on this platform
        return False, None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return False, None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return True, None
    except OSError:
        os.close(fd)
        return False, None
    return True, _Flock(fd)
