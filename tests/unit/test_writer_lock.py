"""The writer's lock taken with one `flock` call (a one-shot process) and with filelock (a
`Store`) is the same lock: each excludes the other, and letting go frees it."""

from __future__ import annotations

from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from kb_lsp.engine.storage import WRITER_LOCK
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.writer_lock import take

pytest.importorskip("fcntl")  # where flock is missing, filelock decides alone


def test_a_one_shot_lock_and_filelock_exclude_each_other(tmp_path: Path) -> None:
    path = tmp_path / WRITER_LOCK
    held = take(path, flock=True)
    assert held is not None
    with pytest.raises(Timeout):
        FileLock(str(path)).acquire(timeout=0)
    held.release()
    with FileLock(str(path), timeout=0):
        # A flock is one open file's: this process's own filelock holds it off too.
        assert take(path, flock=True) is None
    again = take(path, flock=True)
    assert again is not None
    again.release()


def test_a_one_shot_database_opens_read_only_while_a_writer_holds_the_store(
    tmp_path: Path,
) -> None:
    Database(tmp_path).close()  # the store made, its lock let go
    with FileLock(str(tmp_path / WRITER_LOCK), timeout=0):
        reader = Database(tmp_path, one_shot=True)
        assert reader.read_only
        reader.close()
    writer = Database(tmp_path, one_shot=True)
    assert not writer.read_only
    writer.close()
    with FileLock(str(tmp_path / WRITER_LOCK), timeout=0):  # and closing let go of it
        pass
