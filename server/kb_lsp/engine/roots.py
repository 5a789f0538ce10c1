"""The workspace folders of a knowledge base: one `RootIndex` each (its file rules, its
store under `<storage>/<sha of root>/`, its indexer), and the workspace paths that name
their files.

Paths: with one root, a file's path is relative to it (`payments/mexico.md`); with
several roots it is prefixed with the root folder's name (`wiki/payments/mexico.md`), as
VS Code shows multi-root paths. `locate` accepts either form.

Threading: the list of roots changes under a lock; readers take a `snapshot` once per
operation and read those roots' stores without it.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kb_lsp.config import Settings
from kb_lsp.engine.embed.embeddings import Embedder
from kb_lsp.engine.index.indexer import Indexer
from kb_lsp.engine.search import SearchSource
from kb_lsp.engine.storage import store_dir_for
from kb_lsp.engine.store import Store
from kb_lsp.engine.workspace.files import PathOutsideWorkspace, WorkspaceRoot


class RootIndex:
    """One workspace folder: its file rules, its store and its indexer."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedder: Embedder,
        storage: Path,
        prefix: str,
        *,
        exact_vectors: bool = False,
    ) -> None:
        self.root = root.resolve()
        self.prefix = prefix
        self.workspace = WorkspaceRoot(self.root, settings)
        self.store = Store(
            store_dir_for(storage, self.root),
            root=self.root,
            embedder_identity=embedder.identity,
            dimension=embedder.dimension,
            chroma=settings.chroma,
            exact_vectors=exact_vectors,
        )
        self.indexer = Indexer(self.workspace, self.store, embedder, settings)
        self.source = SearchSource(self.store.reader, str(self.root), prefix)


class Roots:
    """Every workspace folder of one knowledge base, and where a workspace path lies."""

    def __init__(
        self, settings: Settings, embedder: Embedder, storage: Path, *, exact_vectors: bool
    ) -> None:
        self.settings = settings  # a root added later takes the settings of then
        self._embedder = embedder
        self._storage = storage
        self._exact_vectors = exact_vectors
        self._roots: list[RootIndex] = []
        self._lock = threading.Lock()  # guards the list, not the stores

    def snapshot(self) -> list[RootIndex]:
        with self._lock:
            return list(self._roots)

    def add(self, root: Path) -> None:
        root = root.resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"workspace folder {root} does not exist")
        with self._lock:
            if any(index.root == root for index in self._roots):
                return
            index = RootIndex(
                root,
                self.settings,
                self._embedder,
                self._storage,
                "",
                exact_vectors=self._exact_vectors,
            )
            self._roots.append(index)
            self._reprefix()

    def remove(self, root: Path) -> None:
        root = root.resolve()
        with self._lock:
            for index in [i for i in self._roots if i.root == root]:
                index.store.close()
                self._roots.remove(index)
            self._reprefix()

    def _reprefix(self) -> None:
        prefixes = root_prefixes([index.root for index in self._roots])
        for index in self._roots:
            index.prefix = prefixes[index.root]
            index.source = SearchSource(index.store.reader, str(index.root), index.prefix)

    def locate(self, path: str) -> tuple[RootIndex, str]:
        """The root a workspace path belongs to, and the path relative to that root."""
        roots = self.snapshot()
        if not roots:
            raise PathOutsideWorkspace(f"{path!r}: no workspace folder is open")
        cleaned = path.replace("\\", "/").strip()
        if cleaned.startswith("./"):
            cleaned = cleaned[2:]
        for index in roots:
            if index.prefix and cleaned.startswith(index.prefix):
                return index, cleaned[len(index.prefix) :]
        return roots[0], cleaned

    def display_path(self, absolute: Path) -> str | None:
        """The workspace path of an absolute path, or None when it is outside every root."""
        for index in self.snapshot():
            relative = index.workspace.relative(absolute)
            if relative is not None:
                return index.prefix + relative
        return None

    def close(self) -> None:
        """Release each store's writer lock and close it."""
        with self._lock:
            for index in self._roots:
                index.store.close()
            self._roots.clear()


def root_prefixes(roots: list[Path]) -> dict[Path, str]:
    """ "" for a single root; the folder name (made unique) for several."""
    if len(roots) <= 1:
        return {root: "" for root in roots}
    out: dict[Path, str] = {}
    seen: dict[str, int] = {}
    for root in roots:
        name = root.name or "root"
        seen[name] = seen.get(name, 0) + 1
        out[root] = f"{name}/" if seen[name] == 1 else f"{name}-{seen[name]}/"
    return out
