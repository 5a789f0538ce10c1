"""The knowledge store of one workspace root: SQLite for the text, Chroma for the vectors.

Layout, under `<storage>/<sha of root>/`:

* `kb.sqlite3` (WAL, `db.py`) — `files` (the manifest, `catalog.py`), `chunks` and
  `chunks_fts` (FTS5 over path, title, heading and text, read from the chunks themselves:
  `text_format.py`, `chunks.py`, `fts.py`),
  `vectors` (every embedding by text hash, int8: `cache.py`, `vector_codec.py`), the metadata tables
  (`notes.py`), `skipped`, `summaries` and `meta` (schema, embedder identity, the live
  collection).
* `chroma/` — the vector index (`vectors.py` is its port, `chroma.py` and `exact.py` the
  two implementations): chunk vectors under stable ids (`<sha1(path)[:16]>:<index>`).
* `writer.lock` — an OS file lock: the process holding it is the only writer; a second
  process opens the store read-only and says so.

Outside this package, readers read through `Store.reader` (`store_reader.py`, over the text
side of `reader.py`) and the indexer writes through `Store.writer` (`writer.py`); the parts
below are the package's own.

With `kb.chroma.url` and `kb.chroma.collection` the store is a member of a team index:
its vectors go to a collection on that server, by text hash, shared with every
workstation that has the same notes (`team.py`, `shared.py`); everything else stays here.

Crash safety and the two phases of a sync (`indexer.py`): phase 1 writes a file's chunks
and FTS rows with `state = 'pending'` in one SQLite transaction (keyword search sees the
file from then on); phase 2 embeds pending chunks in batches across files, caches each
new vector by text hash in SQLite first, then upserts the file's chunk ids into the
index, and only when all of a file's ids are in marks it `state = 'ok'`. A crash anywhere
leaves files pending, and the next sync finishes them (cached vectors cost no embedding);
`upkeep.repair` removes ids SQLite does not know and restores (or sends back to pending)
complete files that lost one. Until phase 2 reaches a changed file, the index may still
hold the vector of a chunk id's previous text; each vector carries the text hash it was
made from, and search ignores one that no longer matches the chunk (`nearest.py`).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb_lsp.engine.storage import store_dir_for
    from kb_lsp.engine.store.catalog import FileRecord
    from kb_lsp.engine.store.chunk_rows import NewChunk
    from kb_lsp.engine.store.chunks import chunk_id
    from kb_lsp.engine.store.figures import StoreFigures
    from kb_lsp.engine.store.fts import KeywordHit
    from kb_lsp.engine.store.shared import TEAM_MEANWHILE, TeamUnavailable
    from kb_lsp.engine.store.store import Store
    from kb_lsp.engine.store.vectors import Neighbour, VectorEntry, VectorIndex

# Each name loads its part on first use: importing one part (`writer_lock.py` for `kb
# status`, `reader.py` for a one-shot keyword search) loads this package first, and the
# facade and the vector side load numpy, the settings (pydantic) and the team index's
# client, the metadata parts their regular expressions.
_LATER = {
    "FileRecord": "kb_lsp.engine.store.catalog",
    "KeywordHit": "kb_lsp.engine.store.fts",
    "NewChunk": "kb_lsp.engine.store.chunk_rows",
    "StoreFigures": "kb_lsp.engine.store.figures",
    "TEAM_MEANWHILE": "kb_lsp.engine.store.shared",
    "TeamUnavailable": "kb_lsp.engine.store.shared",
    "Store": "kb_lsp.engine.store.store",
    "Neighbour": "kb_lsp.engine.store.vectors",
    "VectorEntry": "kb_lsp.engine.store.vectors",
    "VectorIndex": "kb_lsp.engine.store.vectors",
    "chunk_id": "kb_lsp.engine.store.chunks",
    "store_dir_for": "kb_lsp.engine.storage",
}


def __getattr__(name: str) -> Any:
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "TEAM_MEANWHILE",
    "FileRecord",
    "KeywordHit",
    "Neighbour",
    "NewChunk",
    "Store",
    "StoreFigures",
    "TeamUnavailable",
    "VectorEntry",
    "VectorIndex",
    "chunk_id",
    "store_dir_for",
]
