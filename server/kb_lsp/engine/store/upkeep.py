"""Keeping a store's vector index true to SQLite: what a crash left behind, a rebuild
from the cache, a new embedder. The store decides; the index only stores (`vectors.py`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from kb_lsp.engine.store.cache import VectorCache
from kb_lsp.engine.store.catalog import Catalog
from kb_lsp.engine.store.chunks import Chunks
from kb_lsp.engine.store.db import SCHEMA_VERSION, Database
from kb_lsp.engine.store.vectors import ReconciledIndex, VectorEntry

log = logging.getLogger("kb_lsp.engine.store")

_REBUILD_BATCH = 1000


def repair(index: ReconciledIndex, chunks: Chunks, cache: VectorCache, catalog: Catalog) -> int:
    """Make the index hold no id SQLite does not know and every id of a complete file;
    returns ids fixed. Ids of pending files are phase 2's business (it upserts all of a
    file's ids); a complete file whose vector is lost goes back to pending."""
    known = chunks.indexed()
    complete = [cid for cid, row in known.items() if row.complete]
    count = index.count()
    if count == len(known) == len(complete) and _all_there(index, complete):
        return 0
    # Pending files partly in the index are fine, unless a complete file lost an id.
    partly = len(complete) <= count <= len(known) and len(complete) < len(known)
    if partly and _all_there(index, complete):
        return 0
    present = index.ids()
    extra = sorted(present - set(known))
    missing = [cid for cid in complete if cid not in present]
    index.delete(extra)
    vectors = cache.get(known[cid].text_hash for cid in missing)
    restore: list[VectorEntry] = []
    lost: set[str] = set()
    for cid in missing:
        row = known[cid]
        vector = vectors.get(row.text_hash)
        if vector is None:
            lost.add(row.path)  # re-embedded by phase 2
        else:
            restore.append(VectorEntry(cid, row.path, row.text_hash, vector))
    index.upsert(restore)
    catalog.mark_pending(lost)
    if extra or missing:
        log.info(
            "Repaired the vector index: %d removed, %d restored, %d files to re-embed",
            len(extra),
            len(restore),
            len(lost),
        )
    return len(extra) + len(missing)


def _all_there(index: ReconciledIndex, ids: list[str]) -> bool:
    # A cheap spot check: counts can match while ids differ after a crash.
    sample = ids[:: max(1, len(ids) // 50)][:50]
    return index.holds_all(sample)


def rebuild(index: ReconciledIndex, chunks: Chunks, cache: VectorCache, catalog: Catalog) -> int:
    """A new index from what SQLite holds (every chunk's id and its cached vector); a
    chunk whose vector is not cached leaves its file pending, so the next sync embeds it.
    Returns the number of vectors in the new index."""
    rows = list(chunks.indexed().items())
    uncached: set[str] = set()

    def batches() -> Iterator[list[VectorEntry]]:
        for start in range(0, len(rows), _REBUILD_BATCH):
            part = rows[start : start + _REBUILD_BATCH]
            vectors = cache.get(row.text_hash for _, row in part)
            entries = []
            for cid, row in part:
                vector = vectors.get(row.text_hash)
                if vector is None:
                    uncached.add(row.path)
                else:
                    entries.append(VectorEntry(cid, row.path, row.text_hash, vector))
            yield entries
        catalog.mark_pending(uncached)  # before the new index becomes the live one

    return index.rebuild(batches())


def check_embedder(
    db: Database, index: ReconciledIndex, identity: str, dimension: int, root: str
) -> None:
    """A different embedder (or dimension) than the one that made the vectors: start the
    index empty, drop the cache, and send every file back to phase 2."""
    known = db.get_meta("embedder")
    if known == identity:
        return
    if known is not None:
        log.info(
            "Embedder changed (%s -> %s): the vectors of %s will be rebuilt.",
            known,
            identity,
            root,
        )
        index.reset()
        with db.writer() as wdb:
            wdb.execute("DELETE FROM vectors")
            wdb.execute("UPDATE files SET state = 'pending'")
    with db.writer() as wdb:
        db.set_meta(wdb, "embedder", identity)
        db.set_meta(wdb, "dimension", str(dimension))
        db.set_meta(wdb, "schema", str(SCHEMA_VERSION))
        db.set_meta(wdb, "root", root)
