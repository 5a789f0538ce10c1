"""Where a workspace's index lives: names only, no I/O and no heavy imports, so that
`kb status` can find a store without loading the engine (`index_status.py`)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb_lsp.config import Settings

WRITER_LOCK = "writer.lock"  # in the store folder: held by the one process that writes
DATABASE = "kb.sqlite3"  # in the store folder: manifest, chunks, FTS5, metadata
WRITER_STATE = "writer-state.json"  # in the store folder: what the writer is doing


def default_storage(settings: Settings) -> Path:
    """`settings.storage`, else `$XDG_CACHE_HOME/kb-lsp` (`~/.cache/kb-lsp`)."""
    if settings.storage:
        return Path(settings.storage).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kb-lsp"


def store_dir_for(storage: Path, root: Path) -> Path:
    """`<storage>/<sha of root>/`: one store per workspace root, outside the workspace."""
    digest = hashlib.sha256(str(root.resolve()).encode("utf-8")).hexdigest()[:16]
    return storage / digest
