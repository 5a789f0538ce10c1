"""Words and their stems: what a query and a chunk are compared by.

One module for the tokenising and stemming that search does at query time and the
indexer does at index time (`Store` keeps each chunk's stems, so a query does not
re-stem its candidates). `STEMS_VERSION` names this stemmer: a store whose stems were
made by another version computes them again.

The stems are FTS5's own: a word's terms are what the `porter unicode61
remove_diacritics 2` tokenizer of the store's full-text tables makes of it, read from an
in-memory FTS5 table of the same tokenizer (`fts5vocab`). So a query term is a term of
the index's vocabulary (`Store.term_chunk_counts`), and what the query and a chunk share
is what FTS5 matches. A stemmer package is not close enough: Snowball's "porter" (PyStemmer,
snowballstemmer) is the 1980 algorithm, while SQLite follows Porter's later C version
(`possibly` -> `possibl`, `technology` -> `technolog`), and a light suffix stripper missed
most words (`terminated` -> `terminat`, which FTS5 stems to itself, not to `termin`).
FTS5's porter is not idempotent either, so a MATCH is made of the words as typed
(`fts_query(query_words(...))`), never of their stems.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from functools import lru_cache

# The tokenizer of every FTS5 table of the store (`store/db.py`, `metadata/cards.py`).
TOKENIZE = "porter unicode61 remove_diacritics 2"

# Bump when the stems, `word_stems` or the word pattern change: stored stems are redone.
STEMS_VERSION = "2"

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


_NAME_PARTS = re.compile(r"_|(?<=[a-z])(?=[A-Z])")
# Words whose terms are known; cleared when full (a workspace repeats a few thousand
# words, and tokenising each occurrence anew would be most of a query's scoring time).
_TERMS: dict[str, tuple[str, ...]] = {}
_TERMS_LIMIT = 1 << 17
_local = threading.local()


def _tokenizer() -> sqlite3.Connection:
    """This thread's in-memory FTS5 table with the store's tokenizer."""
    db: sqlite3.Connection | None = getattr(_local, "db", None)
    if db is None:
        db = sqlite3.connect(":memory:", isolation_level=None)
        db.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize = '{TOKENIZE}')")
        db.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(words, 'instance')")
        _local.db = db
    return db


def terms_of(words: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """FTS5's terms of each word, in order (`snake_case` has two, `__` none)."""
    out: dict[str, tuple[str, ...]] = {}
    missing: list[str] = []
    for word in words:
        known = _TERMS.get(word)
        if known is not None:
            out[word] = known
        elif word not in out:
            out[word] = ()
            missing.append(word)
    if not missing:
        return out
    found: list[list[tuple[int, str]]] = [[] for _ in missing]
    db = _tokenizer()
    # Written and read in one transaction that is rolled back: the table stays empty.
    db.execute("BEGIN")
    try:
        db.executemany("INSERT INTO words(rowid, word) VALUES (?, ?)", enumerate(missing, 1))
        for term, doc, offset in db.execute("SELECT term, doc, offset FROM terms"):
            found[int(doc) - 1].append((int(offset), str(term)))
    finally:
        db.execute("ROLLBACK")
    if len(_TERMS) + len(missing) > _TERMS_LIMIT:
        _TERMS.clear()
    for word, terms in zip(missing, found, strict=True):
        out[word] = _TERMS[word] = tuple(term for _, term in sorted(terms))
    return out


def word_terms(word: str) -> tuple[str, ...]:
    """FTS5's terms of one word: `deploying` -> ("deploi",)."""
    return terms_of([word])[word]


@lru_cache(maxsize=1)
def _stopword_terms() -> frozenset[str]:
    return frozenset(term for terms in terms_of(STOPWORDS).values() for term in terms)


def _content_words(query: str) -> list[str]:
    """The query's content words, lower-cased, in order, without duplicates. A word whose
    terms are all stopwords' terms is one too: the index cannot tell it from them (`one`
    is `on`, `used` is `us`, `getting` is `get`)."""
    words = [w.lower() for w in WORD.findall(query) if w.strip("_")]
    terms = terms_of(words)
    stop = _stopword_terms()
    content = [
        w
        for w in words
        if w not in STOPWORDS and len(w) > 1 and not (terms[w] and set(terms[w]) <= stop)
    ]
    return list(dict.fromkeys(content or [w for w in words if len(w) > 1] or words))


def query_words(query: str) -> list[str]:
    """The words of the query that `query_terms` stems, as typed (lower-cased): what an
    FTS5 MATCH is made of (`fts_query`)."""
    return _content_words(query)


def query_terms(query: str) -> list[str]:
    """The query's content words as FTS5's terms, in order, without duplicates."""
    words = _content_words(query)
    terms = terms_of(words)
    return list(dict.fromkeys(term for word in words for term in terms[word]))


def _stemmed_words(text: str) -> set[str]:
    """The words of `text` whose terms `word_stems` unites: each word, and a camelCase or
    snake_case name's parts."""
    words: set[str] = set()
    for word in set(WORD.findall(text)):
        words.add(word)
        if "_" in word or not (word.islower() or word.isupper()):
            words.update(part for part in _NAME_PARTS.split(word) if part)
    return words


def word_stems(text: str) -> set[str]:
    """The terms of every word of `text`; camelCase and snake_case names also count as
    their parts."""
    return each_word_stems([text])[0]


def each_word_stems(texts: Sequence[str]) -> list[set[str]]:
    """`word_stems` of each text, the words new to this process tokenised in one batch
    (a snippet ranks every sentence of a chunk: one SQLite round trip each was a tenth of
    a one-shot keyword search)."""
    words = [_stemmed_words(text) for text in texts]
    known = terms_of(set().union(*words))
    return [{term for word in group for term in known[word]} for group in words]


def fts_query(words: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the words (`query_words`), each a quoted string
    (no syntax) that FTS5 tokenises and stems as it did the text."""
    return " OR ".join(_quoted(word) for word in words)


def all_of(words: Sequence[str]) -> str:
    """An FTS5 MATCH expression: all of the words, each a quoted string (`fts_query`)."""
    return " AND ".join(_quoted(word) for word in words)


def _quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


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
