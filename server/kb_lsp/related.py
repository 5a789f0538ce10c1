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
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import numpy as np
from markdown_it import MarkdownIt

from kb_lsp.protocol import Range, SearchHit
from kb_lsp.records import StoredChunk
from kb_lsp.search import SearchSource, make_snippet

# How many nearest chunks name the candidates, per result asked for (at least `MIN_POOL`).
POOL_PER_RESULT = 8
MIN_POOL = 60
# Centroid cosines below this mean "not about the same thing" (all-MiniLM-L6-v2 puts
# unrelated notes around 0.0–0.15).
MIN_SIMILARITY = 0.2

_parser = MarkdownIt("commonmark")
_WIKI_LINK = re.compile(r"\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]")


class NotIndexed(LookupError):
    """The file is not in the knowledge base (outside the include globs, skipped, new)."""


@dataclass
class _Candidate:
    source: SearchSource
    path: str
    score: float = 0.0
    best: StoredChunk | None = None


def centroid(vectors: Iterable[np.ndarray]) -> np.ndarray | None:
    stacked = [v for v in vectors if v.size]
    if not stacked:
        return None
    mean = np.mean(np.stack(stacked), axis=0)
    norm = float(np.linalg.norm(mean))
    return None if norm == 0.0 else (mean / norm).astype(np.float32)


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
    chunks = source.store.chunks_of(path)
    if not chunks:
        raise NotIndexed(f"{source.display(path)} is not in the knowledge base")
    vectors = source.store.cached_vectors(c.text_hash for c in chunks)
    center = centroid(vectors[c.text_hash] for c in chunks if c.text_hash in vectors)
    if center is None:
        return []
    skip = exclude | {(source.root, path)}
    pool = max(MIN_POOL, limit * POOL_PER_RESULT)
    candidates: dict[tuple[str, str], _Candidate] = {}
    for other in sources:
        for hit in other.store.vector_search(center, pool):
            key = (other.root, hit.path)
            if key not in skip and key not in candidates:
                candidates[key] = _Candidate(other, hit.path)
    for other in sources:
        _score(other, [c for c in candidates.values() if c.source is other], center)
    ranked = sorted(
        (c for c in candidates.values() if c.best is not None and c.score >= MIN_SIMILARITY),
        key=lambda c: (-c.score, c.source.display(c.path)),
    )
    return [_hit(n, c) for n, c in enumerate(ranked[:limit], start=1)]


def _score(source: SearchSource, candidates: list[_Candidate], center: np.ndarray) -> None:
    """Each candidate's centroid cosine, and its chunk closest to the file."""
    if not candidates:
        return
    chunks = {c.path: source.store.chunks_of(c.path) for c in candidates}
    vectors = source.store.cached_vectors(
        chunk.text_hash for file_chunks in chunks.values() for chunk in file_chunks
    )
    for cand in candidates:
        own = [(c, vectors[c.text_hash]) for c in chunks[cand.path] if c.text_hash in vectors]
        other = centroid(vector for _, vector in own)
        if other is None:
            continue
        cand.score = float(np.dot(center, other))
        cand.best = max(own, key=lambda item: float(np.dot(center, item[1])))[0]


def _hit(n: int, cand: _Candidate) -> SearchHit:
    chunk = cand.best
    assert chunk is not None
    record = cand.source.store.file(cand.path)
    return SearchHit(
        n=n,
        uri=(Path(cand.source.root) / cand.path).as_uri(),
        path=cand.source.display(cand.path),
        root=cand.source.root,
        title=record.title if record else PurePosixPath(cand.path).stem,
        label="related",
        score=round(max(0.0, min(1.0, cand.score)), 4),
        snippet=make_snippet(chunk.text, (), None),
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
    for match in _WIKI_LINK.finditer(text):
        name = match.group(1).strip()
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
