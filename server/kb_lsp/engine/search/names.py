"""How strongly a query names a file: by its path (file and folder names), its title, its
aliases; and a chunk's stems."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from pathlib import PurePosixPath

from kb_lsp.engine.records import StoredChunk
from kb_lsp.engine.terms import name_stems, parse_stems
from kb_lsp.engine.terms import word_stems as _word_stems


@lru_cache(maxsize=16384)
def path_names(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """The stems of a path's file name and of its folder names (cached: the same paths
    come back in every query, and parsing them was a tenth of a search)."""
    parsed = PurePosixPath(path)
    return name_stems(parsed.stem), name_stems(" ".join(parsed.parent.parts))


def name_share(terms: Sequence[str], title: str, path: str) -> float:
    """How strongly the query names the file (0..1) from its name and title: a ranking
    signal (the label asks `path_share`)."""
    file_name, folders = path_names(path)
    return share(terms, file_name | name_stems(title) | folders)


def path_share(terms: Sequence[str], path: str) -> float:
    """How strongly the query names the file's path: its file and folder names."""
    file_name, folders = path_names(path)
    return share(terms, file_name | folders)


def share(terms: Sequence[str], names: AbstractSet[str]) -> float:
    """All of the query's words among `names` is a full match; at least two words and half
    of them is a good one; a single shared word of a longer query ("payment system" vs
    "Deploy checklist: payments service") says little and counts a third."""
    if not terms:
        return 0.0
    matched = sum(term in names for term in terms)
    share = matched / len(terms)
    if share >= 1.0 or (matched >= 2 and share >= 0.5):
        return share
    return share / 3.0


def alias_share(terms: Sequence[str], aliases: Sequence[str]) -> float:
    """How strongly the query names a note by one of its aliases (as `name_share`)."""
    return max((name_share(terms, alias, "") for alias in aliases), default=0.0)


@lru_cache(maxsize=16384)
def file_uri(root: str, path: str) -> str:
    from pathlib import Path

    return Path(PurePosixPath(root) / path).as_uri()


def chunk_stems(chunk: StoredChunk) -> frozenset[str]:
    """The stems of a chunk's heading path and text: stored at index time; computed here
    only for a chunk stored before they were kept (until the next sync fills them)."""
    if chunk.stems is not None:
        return parse_stems(chunk.stems)
    return frozenset(_word_stems(f"{chunk.heading}\n{chunk.text}"))
