"""Related notes: the files nearest to one file by meaning, from the vectors already stored.

Nothing is embedded. A file is represented by the mean of its chunks' stored vectors (its
*centroid*, normalised). The nearest chunks to that centroid in every root's Chroma
collection name the candidate files cheaply; each candidate is then scored exactly, by the
cosine between its own centroid and the file's, so a file that is about the same thing
throughout beats one with a single similar paragraph. The file itself is never listed,
nor (on request) the files it already links to.

The list is numbered like a search (`label` "related"), its snippet is the candidate's
passage closest to the file, and its range that passage's lines, so a client opens a
related note the way it opens a search result.
"""

from __future__ import annotations

import posixpath
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import numpy as np
from markdown_it import MarkdownIt

from kb_lsp.engine.metadata.links import wiki_links
from kb_lsp.engine.records import StoredChunk
from kb_lsp.engine.search import SearchSource, make_snippet
from kb_lsp.engine.snippet_blocks import parse_blocks
from kb_lsp.engine.store.store_reader import StoreReader
from kb_lsp.errors import InvalidInput
from kb_lsp.protocol import Range, SearchHit

# How many nearest chunks name the candidates, per result asked for (at least `MIN_POOL`).
POOL_PER_RESULT = 8
MIN_POOL = 60
# Centroid cosines below this mean "not about the same thing" (all-MiniLM-L6-v2 puts
# unrelated notes around 0.0–0.15).
MIN_SIMILARITY = 0.2
# Files whose centroid is kept, per store (384 floats each: 1.5 kB).
CENTROID_CACHE = 20_000

_parser = MarkdownIt("commonmark")


class NotIndexed(InvalidInput, LookupError):
    """The file is not in the knowledge base (outside the include globs, skipped, new)."""


@dataclass
class _Candidate:
    source: SearchSource
    path: str
    closest_id: str = ""
    score: float = 0.0
    sha256: str | None = None


def centroid(vectors: Iterable[np.ndarray]) -> np.ndarray | None:
    stacked = [v for v in vectors if v.size]
    if not stacked:
        return None
    mean = np.mean(np.stack(stacked), axis=0)
    norm = float(np.linalg.norm(mean))
    return None if norm == 0.0 else (mean / norm).astype(np.float32)


class _Centroids:
    """Each file's centroid, computed once per version of the file (its sha256) and store:
    the panel asks for related notes at every switch of editor, and the same neighbours
    come back for many files. Only complete centroids are kept (every chunk has its
    vector), so a file still waiting for vectors is looked at again next time."""

    def __init__(self, size: int = CENTROID_CACHE) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._by_store: weakref.WeakKeyDictionary[StoreReader, OrderedDict[str, _Entry]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, store: StoreReader, path: str, sha256: str) -> np.ndarray | None:
        with self._lock:
            entries = self._by_store.get(store)
            entry = entries.get(path) if entries is not None else None
            if entries is None or entry is None or entry[0] != sha256:
                return None
            entries.move_to_end(path)
            return entry[1]

    def put(self, store: StoreReader, path: str, sha256: str, center: np.ndarray) -> None:
        with self._lock:
            entries = self._by_store.setdefault(store, OrderedDict())
            entries[path] = (sha256, center)
            entries.move_to_end(path)
            while len(entries) > self._size:
                entries.popitem(last=False)


_Entry = tuple[str, np.ndarray]
_centroids = _Centroids()


def related_files(
    sources: Sequence[SearchSource],
    source: SearchSource,
    path: str,
    *,
    limit: int = 10,
    exclude: frozenset[tuple[str, str]] = frozenset(),
) -> list[SearchHit]:
    """The files nearest to `path` (relative to `source`'s root), best first, numbered.

    `exclude` holds (root, path) pairs to leave out besides the file itself. Empty when the
    file has no stored vectors yet (it is still being indexed). Raises `NotIndexed`."""
    chunks = source.reader.chunks_of(path)
    if not chunks:
        raise NotIndexed(f"{source.display(path)} is not in the knowledge base")
    vectors = source.reader.vectors_of(c.text_hash for c in chunks)
    center = centroid(vectors[c.text_hash] for c in chunks if c.text_hash in vectors)
    if center is None:
        return []
    skip = exclude | {(source.root, path)}
    pool = max(MIN_POOL, limit * POOL_PER_RESULT)
    candidates: dict[tuple[str, str], _Candidate] = {}
    for other in sources:
        for hit in other.reader.vector_search(center, pool):
            key = (other.root, hit.path)
            if key not in skip and key not in candidates:
                # The pool is nearest first: this is the file's passage closest to ours.
                candidates[key] = _Candidate(other, hit.path, closest_id=hit.chunk_id)
    for other in sources:
        _score(other, [c for c in candidates.values() if c.source is other], center)
    ranked = sorted(
        (c for c in candidates.values() if c.score >= MIN_SIMILARITY),
        key=lambda c: (-c.score, c.source.display(c.path)),
    )
    top = ranked[:limit]
    closest: dict[str, StoredChunk] = {}
    for other in sources:
        closest |= other.reader.chunks_by_id(c.closest_id for c in top if c.source is other)
    hits: list[SearchHit] = []
    for cand in top:
        # A passage gone since the vector query (the file changed): look at the file's own.
        best = closest.get(cand.closest_id) or _closest_chunk(cand, center)
        if best is not None and best.path == cand.path:
            hits.append(_hit(len(hits) + 1, cand, best))
    return hits


def _score(source: SearchSource, candidates: list[_Candidate], center: np.ndarray) -> None:
    """Each candidate's centroid cosine (from the cache where the file has not changed)."""
    if not candidates:
        return
    manifest = source.reader.manifest()
    missing: list[_Candidate] = []
    for cand in candidates:
        record = manifest.get(cand.path)
        cand.sha256 = record.sha256 if record else None
        cached = _centroids.get(source.reader, cand.path, cand.sha256) if cand.sha256 else None
        if cached is None:
            missing.append(cand)
        else:
            cand.score = float(np.dot(center, cached))
    if not missing:
        return
    chunks = {c.path: source.reader.chunks_of(c.path) for c in missing}
    vectors = source.reader.vectors_of(
        chunk.text_hash for file_chunks in chunks.values() for chunk in file_chunks
    )
    for cand in missing:
        own = [vectors[c.text_hash] for c in chunks[cand.path] if c.text_hash in vectors]
        other = centroid(own)
        if other is None:
            continue
        cand.score = float(np.dot(center, other))
        if cand.sha256 and len(own) == len(chunks[cand.path]):
            _centroids.put(source.reader, cand.path, cand.sha256, other)


def _closest_chunk(cand: _Candidate, center: np.ndarray) -> StoredChunk | None:
    """The candidate's passage closest to the file (its snippet and range)."""
    chunks = cand.source.reader.chunks_of(cand.path)
    vectors = cand.source.reader.vectors_of(c.text_hash for c in chunks)
    own = [(c, vectors[c.text_hash]) for c in chunks if c.text_hash in vectors]
    if not own:
        return None
    return max(own, key=lambda item: float(np.dot(center, item[1])))[0]


@lru_cache(maxsize=4096)
def _snippet(text: str, blocks: str | None) -> str:
    """A passage's snippet without query words: its first real sentence on. Cached: the
    panel asks again at every switch of editor, and neighbours recur across files."""
    return make_snippet(text, (), None, blocks=None if blocks is None else parse_blocks(blocks))


def _hit(n: int, cand: _Candidate, chunk: StoredChunk) -> SearchHit:
    record = cand.source.reader.file(cand.path)
    return SearchHit(
        n=n,
        uri=(Path(cand.source.root) / cand.path).as_uri(),
        path=cand.source.display(cand.path),
        root=cand.source.root,
        title=record.title if record else PurePosixPath(cand.path).stem,
        label="related",
        score=round(max(0.0, min(1.0, cand.score)), 4),
        snippet=_snippet(chunk.text, chunk.blocks),
        heading=chunk.heading,
        range=Range.of_lines(chunk.start_line, chunk.end_line),
    )


# --- links ----------------------------------------------------------------------------------


def outgoing_links(text: str, path: str, known: Iterable[str]) -> set[str]:
    """The files of `known` (root-relative paths) that Markdown text at `path` links to:
    relative links (`[x](../runbooks/close.md#steps)`, reference links too) and wiki links
    (`[[close]]`, `[[runbooks/close|the close]]`)."""
    known_set = set(known)
    by_stem: dict[str, list[str]] = {}
    for candidate in known_set:
        by_stem.setdefault(PurePosixPath(candidate).stem.lower(), []).append(candidate)
    folder = posixpath.dirname(path)
    found: set[str] = set()
    for href in _hrefs(text):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path:
            continue
        target = unquote(parts.path)
        resolved = posixpath.normpath(
            target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
        )
        if resolved in known_set:
            found.add(resolved)
    for match in (m for line in text.splitlines() for m in wiki_links(line) if m.target):
        name = match.target
        exact = [p for p in (name, f"{name}.md", f"{name}.markdown") if p in known_set]
        found.update(exact or by_stem.get(PurePosixPath(name).name.lower(), []))
    found.discard(path)
    return found


def _hrefs(text: str) -> list[str]:
    hrefs: list[str] = []
    for token in _parser.parse(text):
        for child in token.children or []:
            if child.type == "link_open":
                href = child.attrGet("href")
                if isinstance(href, str):
                    hrefs.append(href)
    return hrefs
