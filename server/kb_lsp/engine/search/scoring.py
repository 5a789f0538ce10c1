"""Scores: each candidate chunk's fused score (`Fusion`), note-level evidence from cards,
the topic share, which words are rare or worth marking, and which passage a file shows."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from kb_lsp.engine.search.candidates import (
    Candidate,
    FileScore,
    SearchSource,
    TermStats,
    fill_cosines,
    first_chunks,
)
from kb_lsp.engine.search.names import alias_share, chunk_stems, name_share, path_names
from kb_lsp.engine.search.weights import COMMON_SHARE, FILENAME_MATCH, Fusion
from kb_lsp.engine.terms import name_stems
from kb_lsp.engine.terms import word_stems as _word_stems

if TYPE_CHECKING:  # numpy with the vector side only (`candidates.py`)
    import numpy as np

    from kb_lsp.protocol import SearchMode


def chunk_score(
    fusion: Fusion,
    cand: Candidate,
    terms: Sequence[str],
    title: str,
    path: str,
    mode: SearchMode,
    rare: frozenset[str] = frozenset(),
) -> float:
    f = fusion
    # Plain floats: np.clip on one number costs more than the rest of this line.
    stretched = (cand.cosine - f.cosine_floor) / (f.cosine_ceiling - f.cosine_floor)
    cosine = min(1.0, max(0.0, float(stretched)))
    if mode == "semantic":
        return cosine if cand.has_vector else 0.0
    stems, title_stems, name = chunk_stems(cand.chunk), name_stems(title), path_names(path)[0]
    cand.matched = frozenset(
        term for term in terms if term in stems or term in title_stems or term in name
    )
    coverage = len(cand.matched) / len(terms) if terms else 0.0
    if mode == "keyword":
        # Coverage says whether a chunk is about the query; BM25's rank orders the
        # many chunks that all contain a rare word.
        keyword_rank = cand.keyword_rank if cand.keyword_rank is not None else 10**6
        return 0.7 * coverage + 0.3 / (1.0 + keyword_rank / 5.0)
    if f.kind == "rrf":
        rrf = sum(
            1.0 / (f.rrf_k + r + 1) for r in (cand.vector_rank, cand.keyword_rank) if r is not None
        )
        return rrf / (2.0 / (f.rrf_k + 1))
    if not cand.has_vector:
        # Its vector is still being computed: the share of the query's words it holds
        # stands in for the cosine, so a file is not ranked down for waiting.
        cosine = coverage
    best_rank = min(r for r in (cand.vector_rank, cand.keyword_rank, 10**6) if r is not None)
    rank_score = 1.0 / (1.0 + best_rank / 5.0)
    # Only a chunk with every word of the query, one of them rare, earns the bonus: one
    # rare word of an otherwise unanswered question ("file my taxes") must not.
    exact_rare = coverage == 1.0 and bool(cand.matched & rare)
    return f.cosine * cosine + f.coverage * coverage + f.rank * rank_score + f.rare * exact_rare


def score_cards(
    fusion: Fusion,
    sources: Sequence[SearchSource],
    files: dict[tuple[str, str], FileScore],
    terms: Sequence[str],
    vector: np.ndarray | None,
    card_ranks: dict[tuple[str, str], int],
    mode: SearchMode,
) -> None:
    f = fusion
    if f.description <= 0 and f.anchors <= 0:
        return
    for source in sources:
        mine = [file for (root, _), file in files.items() if root == source.root]
        cards = source.reader.cards(file.path for file in mine)
        hashes = [c.card_hash for c in cards.values() if c.card_hash]
        vectors = source.reader.vectors_of(hashes) if vector is not None else {}
        for file in mine:
            card = cards.get(file.path)
            if card is None:
                continue
            file.card = card
            if card.aliases:
                file.name_share = max(file.name_share, alias_share(terms, card.aliases))
            if f.anchors > 0 and card.anchors:
                found = _word_stems(" ".join(card.anchors))
                file.anchor_share = sum(t in found for t in terms) / len(terms)
            if f.description <= 0 or not (card.description or card.aliases):
                continue
            haystack = _word_stems(f"{file.title}\n{' '.join(card.aliases)}\n{card.description}")
            file.card_matched = frozenset(t for t in terms if t in haystack)
            coverage = len(file.card_matched) / len(terms)
            rank = card_ranks.get((source.root, file.path))
            rank_score = 1.0 / (1.0 + rank / 5.0) if rank is not None else 0.0
            if vector is None:
                score = 0.7 * coverage + 0.3 * rank_score
            else:
                import numpy as np

                stored = vectors.get(card.card_hash or "")
                cosine = float(np.dot(stored, vector)) if stored is not None else 0.0
                stretched = float(
                    np.clip((cosine - f.cosine_floor) / (f.cosine_ceiling - f.cosine_floor), 0, 1)
                )
                score = f.cosine * stretched + f.coverage * coverage + f.rank * rank_score
            file.card_score = f.description * score


def choose_shown(
    fusion: Fusion,
    files: Sequence[FileScore],
    terms: Sequence[str],
    vector: np.ndarray | None,
    mode: SearchMode,
    rare: frozenset[str],
) -> None:
    """The topic page first: a file matched by its name (or by most of the query's
    weight, `topic_share`) or by its card shows (and jumps to) its start, unless a
    passage beats the start by `page_start_margin`. The starts that are not among
    the candidates are read together (one query and one vector read per root)."""
    topical = [
        f
        for f in files
        if f.card_score > f.best.score
        or f.name_share >= FILENAME_MATCH
        or f.topic_share >= FILENAME_MATCH
    ]
    firsts = {
        id(f): first
        for f in topical
        if (first := next((c for c in f.chunks if c.chunk.index == 0), None)) is not None
    }
    unread = [f for f in topical if id(f) not in firsts]
    read = first_chunks((f.source, f.path) for f in unread)
    fresh: dict[str, list[Candidate]] = {}
    for file in unread:
        chunk = read.get((file.source.root, file.path))
        if chunk is not None:
            firsts[id(file)] = Candidate(file.source, chunk)
            fresh.setdefault(file.source.root, []).append(firsts[id(file)])
    if vector is not None:
        for cands in fresh.values():
            fill_cosines(cands[0].source, cands, vector)
    for file in unread:
        if id(file) in firsts:
            first = firsts[id(file)]
            first.score = chunk_score(fusion, first, terms, file.title, file.path, mode, rare)
    for file in topical:
        first = firsts.get(id(file))
        if first is None or first is file.best:
            continue
        card_won = file.card_score > file.best.score
        if card_won or file.best.score <= first.score + fusion.page_start_margin:
            file.shown = first


def topic_shares(
    fusion: Fusion, stats: TermStats, files: Iterable[FileScore], terms: Sequence[str]
) -> None:
    """Each file's idf-weighted share of the query held by its names (`Fusion.topic`)."""
    chunks, found = stats.chunks, stats.counts
    weights = {t: math.log((chunks + 1) / (found.get(t, 0) + 1)) + 1.0 for t in terms}
    total = sum(weights.values())
    if total <= 0:
        return
    for file in files:
        card = file.card
        names = path_names(file.path)[0] | name_stems(file.title)
        if card is not None:
            names |= _word_stems(" ".join(card.aliases)) | _word_stems(card.description)
        file.topic_share = sum(w for t, w in weights.items() if t in names) / total


def rare_terms(fusion: Fusion, stats: TermStats) -> frozenset[str]:
    limit = max(fusion.rare_min, fusion.rare_share * stats.chunks)
    return frozenset(term for term, count in stats.counts.items() if 0 < count <= limit)


def marked_terms(stats: TermStats, terms: Sequence[str]) -> list[str]:
    """The query terms worth highlighting in snippets: not the ones most passages
    contain ("add" and "use" in a programming manual mark half of every snippet), unless
    every term is that common (then the query is about them)."""
    common = {t for t, count in stats.counts.items() if count > COMMON_SHARE * stats.chunks}
    distinctive = [term for term in terms if term not in common]
    return distinctive or list(terms)


def group_files(
    fusion: Fusion,
    sources: Sequence[SearchSource],
    candidates: dict[tuple[str, str], Candidate],
    terms: Sequence[str],
    mode: SearchMode,
    rare: frozenset[str],
) -> dict[tuple[str, str], FileScore]:
    """Each candidate's score, grouped by file (the titles read in one query per root):
    a file's best chunk, its chunks, how strongly the query names it."""
    files: dict[tuple[str, str], FileScore] = {}
    titles: dict[tuple[str, str], str] = {}
    for source in sources:
        paths_here = {c.chunk.path for (root, _), c in candidates.items() if root == source.root}
        for path, title in source.reader.titles(paths_here).items():
            titles[(source.root, path)] = title
    for cand in candidates.values():
        key = (cand.source.root, cand.chunk.path)
        stored_title = titles.get(key)
        title = PurePosixPath(cand.chunk.path).stem if stored_title is None else stored_title
        cand.score = chunk_score(fusion, cand, terms, title, cand.chunk.path, mode, rare)
        current = files.get(key)
        if current is None:
            named = name_share(terms, title, cand.chunk.path)
            files[key] = FileScore(cand.source, cand.chunk.path, title, cand, 0.0, named, [cand])
        else:
            current.chunks.append(cand)
            if cand.score > current.best.score:
                current.best = cand
    return files


def score_files(
    fusion: Fusion, files: Iterable[FileScore], terms: Sequence[str], mode: SearchMode
) -> None:
    """Each file's score: its best evidence (a chunk or its card) plus how the query
    names it, what its other chunks add and its anchors; `raw` adds the topic share."""
    for file in files:
        if mode == "semantic":
            file.score = file.best.score
            continue
        spread = frozenset().union(file.card_matched, *(c.matched for c in file.chunks))
        evidence = max(file.best.score, file.card_score)
        matched = file.best.matched if file.best.score >= file.card_score else file.card_matched
        extra = (len(spread) - len(matched)) / len(terms)
        # Ordered by the raw sum; shown (and thresholded) capped at 1, so files that all
        # reach the cap on a one-word query still come in order of evidence. The topic
        # share orders (which page is *the* page for the query) but adds no relevance:
        # the threshold does not let a title word alone through.
        relevance = (
            evidence
            + fusion.name * file.name_share
            + fusion.file_coverage * extra
            + fusion.anchors * file.anchor_share
        )
        file.raw = relevance + fusion.topic * file.topic_share
        file.score = min(1.0, relevance)
