""" "Did you mean": the query with each word the index does not know replaced by a word it
does know, offered only when a search for the corrected query lists something.

A word is unknown when none of its terms is in any root's full-text vocabulary
(`chunks_vocab`, an `fts5vocab` table). Its corrections are words the index holds, as
written: first the words of the files' titles and names (`incidnet` -> "incident" of
`incident-response.md`), then the forms passages write for the terms nearest to its own
(a stem such as `respons` is never shown: the word of a passage that stems to it is,
"response"). Near is the edit distance (optimal string alignment: a swapped pair of
letters is one edit, the commonest typo) within `max_edits`, same first letter; a tie goes
to a title or file name, then to the word more files hold. Each unknown word keeps its
best few corrections; the corrected queries are tried best first, and the first that
finds files (`finds`: the same search, filter and mode) is the suggestion — so "Did you
mean" never proposes a query that lists nothing again.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kb_lsp.engine.terms import WORD, query_words, terms_of

# The shortest word worth a suggestion: a 3-letter word is one edit from dozens of others.
MIN_WORD = 4
# Passages read to find the surface form of a suggested term.
SURFACE_TEXTS = 8
# Corrections kept per unknown word, and corrected queries searched at most: each try
# is a search, and past the first few the corrections are guesses.
OPTIONS_PER_WORD = 3
MAX_TRIES = 4
# Endings that make a word of a stem (`respons` + "e"), to find the passages holding the
# stem: FTS5 stems a MATCH string again, and a stem is often not its own stem.
_ENDINGS = ("", "e", "s", "es", "ed", "ing", "ion", "ent", "ence", "al", "y", "ate", "er", "ment")


class Vocabulary(Protocol):
    """What a suggestion reads of one root's full-text index (`store.reader.TextReader`)."""

    def term_counts(self, terms: Sequence[str]) -> dict[str, int]: ...

    def terms_between(self, low: str, high: str) -> list[tuple[str, int]]: ...

    def texts_with(self, term: str, limit: int) -> list[str]: ...

    def name_words(self) -> dict[str, int]: ...


@dataclass(frozen=True, order=True)
class Correction:
    """One word the index holds, for one typed word; the smaller the better."""

    distance: int
    source: int  # 0: a word of a title or a file name; 1: a word of a passage
    rarity: int  # minus how many files (or chunks) hold it
    word: str


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


def closest_terms(
    term: str, vocabularies: Sequence[Vocabulary], n: int, word: str | None = None
) -> list[str]:
    """The vocabulary's `n` terms nearest to `term` (same first letter, within
    `max_edits`), the most frequent first on a tie. With the typed `word`, a term near
    its beginning counts too: a typo in a suffix (`deploymnet`) leaves the word's stem far
    from the right one (`deploy`), and the passage's form of it is checked against the
    whole word afterwards (`corrections`)."""
    limit = max_edits(len(term))
    first = term[0]
    shortest = max(3, len(word) - 5) if word else len(term) - limit
    counts: dict[str, int] = {}
    for vocabulary in vocabularies:
        # A range on the term: the vocabulary is read from the first letter's terms only.
        for candidate, docs in vocabulary.terms_between(first, first + "\U0010ffff"):
            if shortest <= len(candidate) <= len(term) + limit:
                counts[candidate] = counts.get(candidate, 0) + docs
    ranked: list[tuple[int, int, str]] = []
    for candidate, docs in counts.items():
        distance = edit_distance(term, candidate, limit)
        if word and len(candidate) < len(word):
            distance = min(distance, edit_distance(word[: len(candidate)], candidate, limit))
        if distance <= limit and candidate != term:
            ranked.append((distance, -docs, candidate))
    return [candidate for _, _, candidate in sorted(ranked)[:n]]


def closest_term(term: str, vocabularies: Sequence[Vocabulary]) -> str | None:
    """The vocabulary's term nearest to `term`, or None when none is near."""
    near = closest_terms(term, vocabularies, 1)
    return near[0] if near else None


def surface_form(word: str, term: str, vocabularies: Sequence[Vocabulary]) -> str | None:
    """The word passages write for `term`, the closest to the typed `word`; None when no
    passage shows one (a stem alone is not a word to offer)."""
    probe = _word_for(term)
    if probe is None:
        return None
    forms: dict[str, int] = {}
    for vocabulary in vocabularies:
        for text in vocabulary.texts_with(probe, SURFACE_TEXTS):
            for found in WORD.findall(text.lower()):
                forms[found] = forms.get(found, 0) + 1
    stems = terms_of(list(forms))
    matching = [form for form in forms if stems.get(form) == (term,)]
    if not matching:
        return None
    limit = len(word) + len(term)
    return min(matching, key=lambda form: (edit_distance(word, form, limit), -forms[form]))


def _word_for(term: str) -> str | None:
    """A word FTS5 stems to `term` (the term itself when it is its own stem), to MATCH
    the passages that hold it."""
    tries = [term + ending for ending in _ENDINGS]
    if term.endswith("i"):  # `deploi` is how "deploy" stems
        tries.append(term[:-1] + "y")
    stems = terms_of(tries)
    return next((word for word in tries if stems[word] == (term,)), None)


def corrections(word: str, term: str, vocabularies: Sequence[Vocabulary]) -> list[str]:
    """The best few words the index holds for the unknown `word` (whose one term is
    `term`): titles' and file names' words first, then passages' (module docstring)."""
    limit = max_edits(len(word))
    found: dict[str, Correction] = {}

    def offer(candidate: Correction) -> None:
        if candidate.word != word and candidate.distance <= limit:
            held = found.get(candidate.word)
            found[candidate.word] = min(held, candidate) if held else candidate

    for name, files in _name_words(vocabularies).items():
        if name[:1] == word[:1] and abs(len(name) - len(word)) <= limit:
            offer(Correction(edit_distance(word, name, limit), 0, -files, name))
    for near in closest_terms(term, vocabularies, OPTIONS_PER_WORD, word):
        surface = surface_form(word, near, vocabularies)
        if surface is not None:
            offer(Correction(edit_distance(word, surface, limit), 1, 0, surface))
    return [c.word for c in sorted(found.values())[:OPTIONS_PER_WORD]]


def did_you_mean(
    query: str,
    text: str,
    vocabularies: Sequence[Vocabulary],
    finds: Callable[[str], bool] = lambda _: True,
) -> str | None:
    """`query` with each unknown word of `text` (its words, the filter taken out) replaced
    by a correction, the first such query for which `finds` holds; None when every word
    is known, none has a correction, or no corrected query finds anything."""
    if not vocabularies:
        return None
    words = [w for w in query_words(text) if len(w) >= MIN_WORD and not w.isdigit()]
    if not words:
        return None
    terms = terms_of(words)
    single = {word: terms[word][0] for word in words if len(terms[word]) == 1 and terms[word][0]}
    known = _known(single.values(), vocabularies)
    options = {
        word: fixes
        for word, term in single.items()
        if term not in known and (fixes := corrections(word, term, vocabularies))
    }
    if not options:
        return None
    for choice in _ranked(options)[:MAX_TRIES]:
        suggested = _replace(query, choice)
        if suggested != query and finds(suggested):
            return suggested
    return None


def _ranked(options: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every way to correct the words, the best corrections first (by the sum of each
    word's place in its list)."""
    words = list(options)
    # Past a few words, each keeps its best correction only: the tries stay few.
    options = {w: fixes if i < 4 else fixes[:1] for i, (w, fixes) in enumerate(options.items())}
    picks = itertools.product(*(range(len(options[w])) for w in words))
    ordered = sorted(picks, key=lambda pick: (sum(pick), pick))
    return [{w: options[w][i] for w, i in zip(words, pick, strict=True)} for pick in ordered]


def _name_words(vocabularies: Sequence[Vocabulary]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for vocabulary in vocabularies:
        for name, files in vocabulary.name_words().items():
            counts[name] = counts.get(name, 0) + files
    return counts


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
