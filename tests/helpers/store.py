"""A store of the example workspace, indexed with the hashing embedder, and opened again."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import copy_example_workspace
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.storage import store_dir_for
from kb_lsp.engine.store import Store


def hashed_knowledge(workspace: Path, storage: Path) -> KnowledgeBase:
    """A knowledge base of `workspace` with the hashing embedder (not synced)."""
    return KnowledgeBase(
        [workspace], load_settings().settings, embedder=HashingEmbedder(), storage=storage
    )


def indexed_example(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the example workspace under `tmp_path`, synced and closed: (workspace,
    storage)."""
    workspace = copy_example_workspace(tmp_path / "workspace")
    storage = tmp_path / "store"
    kb = hashed_knowledge(workspace, storage)
    kb.sync()
    kb.close()
    return workspace, storage


def open_store(workspace: Path, storage: Path, *, exact: bool) -> Store:
    """The store of `workspace` on its own, as the hashing embedder made it."""
    embedder = HashingEmbedder()
    return Store(
        store_dir_for(storage, workspace),
        root=workspace,
        embedder_identity=embedder.identity,
        dimension=embedder.dimension,
        exact_vectors=exact,
    )
