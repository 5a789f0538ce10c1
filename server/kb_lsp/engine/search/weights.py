"""How search weighs its signals (`Fusion`) and the thresholds it applies. The weights and
the default threshold were chosen with `python -m bench quality` (docs/search.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fusion:
    """How the signals combine into one score in [0, 1] (see the module docstring)."""

    kind: str = "linear"  # "linear": weighted absolute signals; "rrf": reciprocal rank fusion
    cosine: float = 0.6
    coverage: float = 0.3
    rank: float = 0.1
    name: float = 0.25
    # Query words found across the file's matching chunks but not in its best one: a
    # file that covers the whole question in two sections beats one that mentions half.
    file_coverage: float = 0.15
    # A query that holds a word few chunks contain (an identifier, an error code, a name):
    # a chunk with all of the query exactly beats chunks that only look alike to the
    # embedder (`burstword5x` vs `addedword5x`, which share most of their subword tokens).
    # "Few" is counted in FTS5's own vocabulary (`terms.py`): 1% of the chunks was chosen
    # while most ordinary words missed that lookup, and with every word counted it let
    # words like "domain" or "template" in; 0.2% keeps it to names and codes.
    rare: float = 0.3
    rare_share: float = 0.002  # "few": at most this share of all chunks…
    rare_min: int = 5  # …or this many, on a small index
    rrf_k: int = 60
    # Cosine similarities of MiniLM below `cosine_floor` mean "unrelated"; the range
    # above it is stretched to [0, 1] so the weights act on a comparable scale.
    cosine_floor: float = 0.1
    cosine_ceiling: float = 0.7
    # Note-level evidence (`metadata/cards.py`). A note's card — its title, aliases and
    # front-matter description, embedded on their own — is scored like a chunk standing
    # at the page's start, times `description` (0 leaves cards out). `anchors`: weight of
    # the share of the query found in the texts of links pointing at the note (distinct
    # texts, each linking note once, so a hub page gains no more than any other page).
    description: float = 1.0
    anchors: float = 0.15
    # The topic page: the share of the query, each word weighted by how rare it is in the
    # index (idf), that the file's title, name, aliases or description hold. "how do I add
    # CORS" is about CORS, not about adding: the CORS page beats pages that mention both.
    # It orders files, but is not relevance: the threshold compares scores without it.
    topic: float = 0.15
    # A file matched by name or by its card shows its page start, unless a passage beats
    # the start by this much.
    page_start_margin: float = 0.1
    # Candidate generation that stays bounded as the index grows (`candidates.
    # keyword_queries`). FTS5's BM25 reads every posting of every word it is asked for,
    # so a word in a third of a 100k-chunk index costs tens of milliseconds whatever the
    # limit. Above `bounded_from` chunks, a word in more than `common_chunks` chunks is
    # left out of the keyword query when the query has a rarer word (it still counts in
    # each candidate's score); a query of such words only asks for chunks holding all of
    # them first. Below it (both quality sets) a query is the OR of its words, as before.
    bounded_from: int = 20_000
    common_chunks: int = 2_000


DEFAULT_FUSION = Fusion()

# `_path_share` at or above this labels a file `filename match`.
FILENAME_MATCH = 0.5
# A query word in more than this share of all chunks is not highlighted in snippets.
COMMON_SHARE = 0.2
# Notes that their aliases, description or incoming anchor text match, joining the
# candidates of a query.
CARD_CANDIDATES = 20
