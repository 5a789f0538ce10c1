""" "Did you mean": a query word the index does not know, replaced by the closest word it
does know.

The vocabulary is the index's own: FTS5's terms (`chunks_vocab`, an `fts5vocab` table
over the full-text index), so a suggestion is a word some passage holds and a search
for it finds something. A word is unknown when none of its terms is in any root's
vocabulary; its closest term is the one at the smallest edit distance (optimal string
alignment: a swapped pair of letters is one edit, the commonest typo), among the terms
that start with the same letter and are about as long, the most frequent on a tie. The
term is a stem (`payment` for "payments"), so the word shown is the form of it that
passages holding it use, the closest to what was typed ("paymnets" -> "payments").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol

from kb_lsp.engine.terms import WORD, query_words, terms_of

# The shortest word worth a suggestion: a 3-letter word is one edit from dozens of others.
MIN_WORD = 4
# Passages read to find the surface form of a suggested term.
SURFACE_TEXTS = 8


class Vocabulary(Protocol):
    """What a suggestion reads of one root's full-text index (`store.fts.Fts`)."""

    def term_counts(self, terms: Sequence[str]) -> dict[str, int]: ...

    def terms_between(self, low: str, high: str) -> list[tuple[str, int]]: ...

    def texts_with(self, term: str, limit: int) -> list[str]: ...


def max_edits(length: int) -> int:
    """How far a word of `length` letters may be from its suggestion."""
    return 1 if length <= 5 else 2


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance of `a` and `b` (insert, delete, substitute, swap
    two neighbours), or `limit + 1` as soon as it is known to exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, before[j - 2] + 1)
            current[j] = best
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return min(previous[-1], limit + 1)


def closest_term(term: str, vocabularies: Sequence[Vocabulary]) -> str | None:
    """The vocabulary's term nearest to `term` (same first letter, within `max_edits`),
    the most frequent on a tie; None when none is near."""
    limit = max_edits(len(term))
    first = term[0]
    counts: dict[str, int] = {}
    for vocabulary in vocabularies:
        # A range on the term: the vocabulary is read from the first letter's terms only.
        for candidate, docs in vocabulary.terms_between(first, first + "\U0010ffff"):
            if abs(len(candidate) - len(term)) <= limit:
                counts[candidate] = counts.get(candidate, 0) + docs
    best: tuple[int, int, str] | None = None
    for candidate, docs in counts.items():
        distance = edit_distance(term, candidate, limit)
        if distance > limit or candidate == term:
            continue
        key = (distance, -docs, candidate)
        if best is None or key < best:
            best = key
    return best[2] if best is not None else None


def surface_form(word: str, term: str, vocabularies: Sequence[Vocabulary]) -> str:
    """The word passages write for `term`, the closest to the typed `word`; the term
    itself when no passage shows one."""
    forms: dict[str, int] = {}
    for vocabulary in vocabularies:
        for text in vocabulary.texts_with(term, SURFACE_TEXTS):
            for found in WORD.findall(text.lower()):
                forms[found] = forms.get(found, 0) + 1
    if not forms:
        return term
    stems = terms_of(list(forms))
    matching = [form for form in forms if stems.get(form) == (term,)]
    if not matching:
        return term
    limit = len(word) + len(term)
    return min(matching, key=lambda form: (edit_distance(word, form, limit), -forms[form]))


def did_you_mean(query: str, text: str, vocabularies: Sequence[Vocabulary]) -> str | None:
    """`query` with each unknown word of `text` (its words, the filter taken out)
    replaced by its suggestion, or None when every word is known or none has one."""
    if not vocabularies:
        return None
    words = [w for w in query_words(text) if len(w) >= MIN_WORD and not w.isdigit()]
    if not words:
        return None
    terms = terms_of(words)
    single = {word: terms[word][0] for word in words if len(terms[word]) == 1}
    known = _known(single.values(), vocabularies)
    replacements: dict[str, str] = {}
    for word, term in single.items():
        if term in known or not term:
            continue
        near = closest_term(term, vocabularies)
        if near is not None:
            replacements[word] = surface_form(word, near, vocabularies)
    if not replacements:
        return None
    suggested = _replace(query, replacements)
    return suggested if suggested != query else None


def _known(terms: Iterable[str], vocabularies: Sequence[Vocabulary]) -> set[str]:
    wanted = sorted(set(terms))
    known: set[str] = set()
    for vocabulary in vocabularies:
        known.update(term for term, docs in vocabulary.term_counts(wanted).items() if docs > 0)
    return known


def _replace(query: str, replacements: dict[str, str]) -> str:
    """Each word of `replacements` replaced where it stands as a word of its own (not a
    filter's field or value: `tag:x`), keeping a capital first letter."""
    pattern = re.compile(
        r"(?<![\w:<>=])(" + "|".join(re.escape(w) for w in replacements) + r")(?![\w:<>=])",
        re.IGNORECASE,
    )

    def swap(match: re.Match[str]) -> str:
        typed = match.group(0)
        new = replacements.get(typed.lower())
        if new is None:  # matched only by case folding the dictionary's keys did not do
            return typed
        return new[:1].upper() + new[1:] if typed[:1].isupper() else new

    return pattern.sub(swap, query)
