"""An index that every code base under test only reads.

A store belongs to the embedder that made it: a process that opens it as the writer
with another embedder (an older commit's int8 recipe, say) drops every vector and
re-embeds (`Store._check_embedder`). Benchmarks that point two code bases at one index
therefore hold its writer lock while they run: both open it read-only and search the same
vectors, and neither rewrites it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

from kb_lsp.engine.storage import WRITER_LOCK, store_dir_for


@contextmanager
def read_only_index(storage: Path, root: Path) -> Iterator[None]:
    """Hold the writer lock of `root`'s store under `storage` for the block."""
    lock = FileLock(str(store_dir_for(storage, root.resolve()) / WRITER_LOCK))
    with lock.acquire(timeout=30):
        yield
