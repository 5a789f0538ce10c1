"""Is a grounded answer supported by the passages it cites? An honest check.

"Contains a `[n]`" is no check: a small model copies the prompt's source header
(`[1] docs/x.md (lines 74-82)`), or writes filler with a `[1]` in it. Here an answer is
judged sentence by sentence against the passages it cites, by word overlap (the index's
own stems, without stopwords): a sentence is supported when most of its content words,
and some of their pairs, are in the passages it cites (its own citations, else those of
the whole answer), and every number it states is there too.

Verdicts (`Verdict.label`):

* `grounded` — it cites passages it was given and its sentences are supported;
* `ungrounded` — anything else a model wrote: sentences the cited passages do not hold,
  no citation, citations of passages it was not given, the prompt copied back;
* `declined` — it says the notes do not answer (honest, but no answer);
* `fallback` — no model wrote it (the best passages instead): its own category, never
  counted as a grounded model answer.

The same check runs in the product (the answer's `grounded` flag) and in `python -m bench
ask`; `tests/unit/data/grounding_cases.json` is the hand-labelled set it must get right.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from kb_lsp.engine.agent import citations, prompts
from kb_lsp.engine.terms import STOPWORDS, WORD, terms_of

Label = Literal["grounded", "ungrounded", "declined", "fallback"]

# A sentence is supported when this share of its content terms is in its passages...
TERM_SUPPORT = 0.6
# ...and this share of its adjacent term pairs (word order: not just a bag of words).
PAIR_SUPPORT = 0.25
# The share of an answer's sentences that must be supported.
ANSWER_SUPPORT = 0.75
# Of a sentence's term triples, the share found in the prompt's own words that makes it
# a copy of the instructions.
COPIED_INSTRUCTIONS = 0.5

_HEADER = re.compile(r"\[\s*\d+\s*\]\s*`?[\w./-]+\.(?:md|markdown)`?\s*\(lines?\s*\d+", re.I)
_TAGS = re.compile(r"</?\s*(?:passage|sources?|document|question)\b[^>]*>", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_DECLINED = re.compile(
    r"\b(?:notes?|sources?|passages?|documents?)\b[^.]{0,40}\b(?:do(?:es)?\s*n[o’']t|do(?:es)? not|"
    r"never)\s+(?:say|mention|contain|cover|answer|include)|\bno information\b|"
    r"\b(?:cannot|can't|can’t) (?:find|answer)\b",
    re.I,
)
_INSTRUCTIONS = " ".join(
    [prompts.GROUNDED_SYSTEM, prompts.GROUNDED_USER, prompts.GROUNDED_FOCUS, prompts.SYSTEM]
)


class Cited(Protocol):
    """A passage as the model saw it (`grounded.Passage`)."""

    @property
    def n(self) -> int: ...

    @property
    def path(self) -> str: ...

    @property
    def text(self) -> str: ...


@dataclass
class Verdict:
    label: Label
    reasons: list[str] = field(default_factory=list)
    sentences: int = 0  # sentences judged (with content words)
    supported: int = 0
    cited: list[int] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def grounded(self) -> bool:
        return self.label == "grounded"


def terms(text: str) -> list[str]:
    """The content terms of `text` in order: stemmed as the index stems, no stopwords."""
    words = [w.lower() for w in WORD.findall(text) if w.strip("_")]
    stems = terms_of(words)
    return [t for w in words if w not in STOPWORDS for t in stems[w] if len(t) > 1 or t.isdigit()]


def _pairs(seq: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(seq[i : i + 2]) for i in range(len(seq) - 1)}


def _triples(seq: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(seq[i : i + 3]) for i in range(len(seq) - 2)}


def sentences(answer: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(answer) if s and s.strip()]


def copied_prompt(answer: str) -> bool:
    """The answer repeats the prompt: a source header, its tags, or its instructions."""
    if _HEADER.search(answer) or _TAGS.search(answer):
        return True
    said = _triples(terms(_INSTRUCTIONS))
    for sentence in sentences(answer):
        own = _triples(terms(sentence))
        if len(own) >= 2 and len(own & said) / len(own) >= COPIED_INSTRUCTIONS:
            return True
    return False


def supported(sentence: str, passages: Sequence[Cited]) -> bool:
    """Whether the passages hold what `sentence` says (see the module docstring)."""
    own = terms(sentence)
    if not own:
        return True
    held: list[str] = []
    for passage in passages:
        held += terms(passage.text)
    have = set(held)
    share = sum(1 for t in own if t in have) / len(own)
    numbers = {t for t in own if t.isdigit()}
    if share < TERM_SUPPORT or not numbers <= have:
        return False
    pairs = _pairs(own)
    if len(pairs) < 3:
        return True
    return len(pairs & _pairs(held)) / len(pairs) >= PAIR_SUPPORT


def judge(
    answer: str, passages: Sequence[Cited], *, question: str = "", fallback: bool = False
) -> Verdict:
    """The verdict on a model's `answer` (as it wrote it) given `passages` for
    `question` (a sentence that only says the question back is not supported)."""
    if fallback:
        return Verdict("fallback", ["no model wrote this answer"])
    text = answer.strip()
    if not text:
        return Verdict("ungrounded", ["empty"])
    checked = citations.check(text, passages)
    verdict = Verdict("ungrounded", cited=checked.cited, dropped=checked.dropped)
    if copied_prompt(text):
        verdict.reasons.append("copies the prompt")
    if checked.dropped:
        verdict.reasons.append("cites passages it was not given: " + ", ".join(checked.dropped))
    by_number = {p.n: p for p in passages}
    everywhere = [by_number[n] for n in checked.cited]
    asked = set(terms(question))
    for sentence in sentences(checked.answer):
        plain = citations.PATH_CITATION.sub(" ", citations.NUMBER_CITATION.sub(" ", sentence))
        if len(terms(plain)) < 2:
            continue  # "Yes.", "Here it is:" say nothing to check
        own = citations.check(sentence, passages).cited
        verdict.sentences += 1
        if set(terms(plain)) <= asked:
            continue  # the question said back
        verdict.supported += supported(plain, [by_number[n] for n in own] or everywhere)
    if not verdict.reasons and _DECLINED.search(text) and not checked.cited:
        return Verdict("declined", ["says the notes do not answer"], verdict.sentences)
    if not checked.cited:
        verdict.reasons.append("cites no passage")
    elif verdict.sentences and verdict.supported / verdict.sentences < ANSWER_SUPPORT:
        verdict.reasons.append(
            f"{verdict.sentences - verdict.supported} of {verdict.sentences} sentences "
            "are not in the passages they cite"
        )
    if not verdict.reasons and asked and not asked & set(terms(checked.answer)):
        verdict.reasons.append("shares no word with the question: it answers something else")
    if not verdict.reasons:
        verdict.label = "grounded"
    return verdict


@dataclass(frozen=True)
class _Whole:
    """A whole file as the one passage a summary is checked against."""

    n: int
    path: str
    text: str


def summary_supported(summary: str, path: str, text: str) -> bool:
    """Whether the file's `text` holds what a summary of it says: `ANSWER_SUPPORT` of its
    sentences supported (a summary cites nothing: the file is its one source)."""
    whole = [_Whole(1, path, text)]
    judged = [s for s in sentences(summary) if len(terms(s)) >= 2]
    if not judged:
        return False
    held = sum(supported(sentence, whole) for sentence in judged)
    return held / len(judged) >= ANSWER_SUPPORT
