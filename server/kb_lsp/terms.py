"""Words and their stems: what a query and a chunk are compared by.

One module for the tokenising and stemming that search does at query time and the
indexer does at index time (`Store` keeps each chunk's stems, so a query does not
re-stem its candidates). `STEMS_VERSION` names this stemmer: a store whose stems were
made by another version computes them again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

# Bump when `stem`, `word_stems` or the word pattern change: stored stems are redone.
STEMS_VERSION = "1"

WORD = re.compile(r"\w+", re.UNICODE)

# Words that say nothing about which file is meant; "file", "doc", "note" are how people
# refer to files ("the mexico payment files"), not what the files are about.
FILE_WORDS = frozenset(
    ["file", "files", "doc", "docs", "document", "documents", "note", "notes", "page", "pages"]
)
STOPWORDS = FILE_WORDS | frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "md",
        "markdown",
        "find",
        "show",
        "tell",
        "give",
        "get",
        "want",
        "need",
        "please",
        "using",
        "use",
    ]
)


def stem(word: str) -> str:
    """A light suffix stripper: enough to match `payments` with `payment` and `deploying`
    with `deploy` across a query and a file name, without a stemming dependency."""
    word = word.lower().removesuffix("'s")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    return word


def query_terms(query: str) -> list[str]:
    """The query's content words, stemmed, in order, without duplicates."""
    words = [w.lower() for w in WORD.findall(query) if w.strip("_")]
    content = [w for w in words if w not in STOPWORDS and len(w) > 1]
    chosen = content or [w for w in words if len(w) > 1] or words
    return list(dict.fromkeys(stem(w) for w in chosen))


def word_stems(text: str) -> set[str]:
    """The stems of every word of `text`; camelCase and snake_case names also count as
    their parts."""
    out: set[str] = set()
    for word in set(WORD.findall(text)):
        out.update(_stems_of_word(word))
    return out


_NAME_PARTS = re.compile(r"_|(?<=[a-z])(?=[A-Z])")


@lru_cache(maxsize=1 << 16)
def _stems_of_word(word: str) -> tuple[str, ...]:
    # Cached: a workspace repeats a few thousand words; stemming each occurrence anew was
    # most of the time a query spent scoring its candidates.
    if "_" in word or not (word.islower() or word.isupper()):
        return tuple({stem(part) for part in [word, *_NAME_PARTS.split(word)] if part})
    return (stem(word),)


def fts_query(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the terms, each a quoted string (no syntax)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


@lru_cache(maxsize=16384)
def name_stems(text: str) -> frozenset[str]:
    """`word_stems` of a short text that recurs across queries (a title, a path, a
    heading), cached."""
    return frozenset(word_stems(text))


def stems_text(heading: str, text: str) -> str:
    """What the store keeps for a chunk: the stems of its heading path and text, one
    space-separated string (`parse_stems` reads it back)."""
    return " ".join(sorted(word_stems(f"{heading}\n{text}")))


def parse_stems(stored: str) -> frozenset[str]:
    return frozenset(stored.split())
