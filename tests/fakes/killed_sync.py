"""A sync that kills itself with SIGKILL at a chosen point: `kill -9` at any moment.

    python -m tests.fakes.killed_sync WORKSPACE STORAGE CLASS.METHOD WHEN N

Runs `KnowledgeBase.sync()` with the hashing embedder and sends itself SIGKILL right
`before` or `after` the N-th call of `CLASS.METHOD` (a part of the store: `StoreWriter`,
`Catalog`, `VectorCache`, `ChromaIndex`), so a test can check that the next
sync repairs whatever that left. Phase 2's batches are shrunk so that a small workspace
needs several of them. Exits 3 when the point was never reached.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.index import indexer, vector_pass
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.store.cache import VectorCache
from kb_lsp.engine.store.catalog import Catalog
from kb_lsp.engine.store.chroma import ChromaIndex
from kb_lsp.engine.store.writer import StoreWriter

PARTS: dict[str, type] = {
    "StoreWriter": StoreWriter,
    "Catalog": Catalog,
    "VectorCache": VectorCache,
    "ChromaIndex": ChromaIndex,
}


def main(workspace: str, storage: str, target: str, when: str, nth: str) -> int:
    vector_pass.EMBED_BATCH = 4
    vector_pass.UPSERT_BATCH = 8
    indexer.BATCH_FILES = 2
    part, method = target.split(".")
    owner = PARTS[part]
    original = getattr(owner, method)
    calls = 0

    def killing(self: object, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == int(nth) and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        result = original(self, *args, **kwargs)
        if calls == int(nth) and when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    setattr(owner, method, killing)
    settings = load_settings({"chunkSize": 200, "chunkOverlap": 0}).settings
    kb = KnowledgeBase(
        [Path(workspace)], settings, embedder=HashingEmbedder(), storage=Path(storage)
    )
    kb.sync()
    kb.close()
    return 3


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
