"""A store of the example workspace, indexed with the hashing embedder, and opened again."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import copy_example_workspace
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.search import SearchSource
from kb_lsp.engine.storage import DATABASE, store_dir_for
from kb_lsp.engine.store import Store
from kb_lsp.engine.store.chroma import LIVE_COLLECTION


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


def chroma_collection(directory: Path) -> Any:
    """The live Chroma collection of the store in `directory`, opened with chromadb's own
    client: the one its `meta` names, else the first one (`kb_<folder>`)."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    with closing(sqlite3.connect(directory / DATABASE)) as db:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (LIVE_COLLECTION,)).fetchone()
    name = row[0] if row else f"kb_{directory.name}"
    # The same settings as the store's own client: chromadb shares one system per folder.
    settings = ChromaSettings(anonymized_telemetry=False)
    client = chromadb.PersistentClient(path=str(directory / "chroma"), settings=settings)
    return client.get_collection(name, embedding_function=None)


@contextmanager
def store_of(workspace: Path, storage: Path, *, exact: bool = False) -> Iterator[Store]:
    """The store of `workspace` in `storage` (hashing embedder) opened on its own, as
    another window opens it: read-only while a knowledge base writes it, else the writer."""
    store = open_store(workspace.resolve(), storage, exact=exact)
    try:
        yield store
    finally:
        store.close()


@dataclass
class Indexed:
    """A knowledge base of one folder, synced, and that folder's store opened beside it:
    what search reads, seen without reaching into the knowledge base."""

    kb: KnowledgeBase
    store: Store
    root: Path

    @property
    def source(self) -> SearchSource:
        return SearchSource(self.store.reader, str(self.root), "")


@contextmanager
def indexed_folder(workspace: Path, storage: Path, *, exact: bool = False) -> Iterator[Indexed]:
    """`workspace` indexed with the hashing embedder; the store beside the knowledge base
    searches its vectors exactly (`exact`) or in Chroma."""
    kb = hashed_knowledge(workspace, storage)
    try:
        kb.sync()
        with store_of(workspace, storage, exact=exact) as store:
            yield Indexed(kb, store, workspace.resolve())
    finally:
        kb.close()


def pending_paths(directory: Path) -> list[str]:
    """The files of the store in `directory` whose vectors are not all in the index yet,
    read with sqlite3's own connection."""
    with closing(sqlite3.connect(directory / DATABASE)) as db:
        return sorted(row[0] for row in db.execute("SELECT path FROM files WHERE state != 'ok'"))


@contextmanager
def store_beside(kb: KnowledgeBase) -> Iterator[Store]:
    """The store of open `kb`'s one workspace folder (hashing embedder), opened again
    beside it as another window opens it: read-only."""
    ((folder, _),) = kb.store_folders().items()
    (root,) = kb.roots
    embedder = HashingEmbedder()
    store = Store(
        folder, root=root, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    try:
        yield store
    finally:
        store.close()
