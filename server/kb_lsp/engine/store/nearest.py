"""Vector search as the store answers it: the index's neighbours, restricted to some files
when asked, each with its file's path and the text its vector was made from."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kb_lsp.engine.store.chunks import Chunks
from kb_lsp.engine.store.fts import OVERFETCH_SHARE, overfetch_depth
from kb_lsp.engine.store.vectors import Neighbour, VectorHit, VectorIndex


def nearest_chunks(
    index: VectorIndex,
    chunks: Chunks,
    file_count: Callable[[], int],
    vector: Sequence[float] | np.ndarray,
    k: int,
    paths: list[str] | None = None,
) -> list[VectorHit]:
    """The `k` chunks nearest to `vector`, among the chunks of `paths` when given.

    With `paths` (a path glob or a metadata filter), the restriction runs inside the
    vector query, so a selective filter still yields `k` candidates: the index's own
    restriction when the files are a small share of the index (or the index restricts
    cheaply); otherwise an unrestricted query deep enough to hold `k` of them, kept to
    those files, falling back to the restriction when it holds fewer. Either way the
    result is the `k` nearest among those files.
    """
    if k <= 0 or (paths is not None and not paths):
        return []
    query = np.asarray(vector, dtype=np.float32)
    if paths is None or index.filters_cheaply:
        return _resolve(index, chunks, index.nearest(query, k, paths))
    wanted = set(paths)
    share = min(1.0, len(wanted) / max(1, file_count()))
    if share >= OVERFETCH_SHARE and len(wanted) > 1:
        depth = overfetch_depth(k, share)
        found = _resolve(index, chunks, index.nearest(query, depth, None))
        hits = [h for h in found if h.path in wanted]
        if len(hits) >= k or len(found) < depth:
            return hits[:k]
    return _resolve(index, chunks, index.nearest(query, k, paths))


def _resolve(index: VectorIndex, chunks: Chunks, found: list[Neighbour]) -> list[VectorHit]:
    """Each neighbour with its chunk's path; an id SQLite does not hold (a file deleted
    or rewritten meanwhile) is left out. A file in state 'ok' has every vector of its
    current text; only for a file still pending is the index asked which text its
    vectors were made from (a vector of a chunk's previous text is never used)."""
    rows = chunks.indexed(n.chunk_id for n in found)
    pending = [
        n.chunk_id
        for n in found
        if n.text_hash is None and n.chunk_id in rows and not rows[n.chunk_id].complete
    ]
    made_from = index.made_from(pending) if pending else {}
    hits = []
    for n in found:
        row = rows.get(n.chunk_id)
        if row is None:
            continue
        if n.text_hash is not None:
            made = n.text_hash
        else:
            made = row.text_hash if row.complete else made_from.get(n.chunk_id, "")
        hits.append(VectorHit(n.chunk_id, row.path, n.similarity, made))
    return hits
