"""Evidence first: the passages' own best sentences, before an answer that is not verified.

When a model's grounded answer fails the grounding check (issue 24 point 3, issue 29
point 2), the user should first see what the notes say, not what the model made of them:
the one or two sentences of the given passages that share most terms with the question
(the index's own stems, as the grounding check counts them), each quoted as written (its
line breaks made spaces) with its passage's number `[n]`, so the client links it to the
lines it came from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kb_lsp.engine.agent import citations, grounding

MAX_QUOTES = 2
MAX_CHARS = 300  # a longer "sentence" is a paragraph or a table, not a quote
LEAD = "From your notes:"

# Markdown that starts a line but is no part of the sentence (list item, block quote).
_MARKER = re.compile(r"^\s*(?:[-*+>]\s+|\d{1,3}[.)]\s+)+")
# Lines that are structure, not prose: headings, tables, rules.
_STRUCTURE = re.compile(r"^\s*(?:#|\||---|===|\*\*\*|<)")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
# A sentence ends at . ! ? before a capital or a digit: "S.A. de C.V." is not three.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(\[]?[A-Z0-9À-Þ])")


@dataclass(frozen=True)
class Quote:
    n: int  # the passage's number among the answer's sources
    text: str  # a sentence of the passage's text, its whitespace made single spaces


def _paragraphs(text: str) -> list[str]:
    """The prose of `text`, one string per paragraph or list item, lines joined: front
    matter, headings, tables and code left out."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        closing = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[closing + 1 :]
    out: list[list[str]] = [[]]
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            out.append([])
        elif fenced or not line.strip() or _STRUCTURE.match(line):
            out.append([])
        elif _MARKER.match(line):
            out.append([_MARKER.sub("", line)])
        else:
            out[-1].append(line)
    return [" ".join(" ".join(block).split()) for block in out if block]


def _candidates(text: str) -> list[str]:
    out: list[str] = []
    for paragraph in _paragraphs(text):
        for sentence in _SENTENCE_END.split(paragraph):
            sentence = sentence.strip()
            if not sentence or len(sentence) > MAX_CHARS:
                continue
            if citations.NUMBER_CITATION.search(sentence):
                continue  # a "[2]" of the note's own would read as a link to passage 2
            out.append(sentence)
    return out


def select(
    passages: Sequence[grounding.Cited], question: str, limit: int = MAX_QUOTES
) -> list[Quote]:
    """The `limit` sentences of `passages` sharing most terms with `question`, best first
    (ties: the better-ranked passage, then the earlier sentence); none share a term → []."""
    asked = set(grounding.terms(question))
    if not asked:
        return []
    scored: list[tuple[int, int, int, Quote]] = []
    for rank, passage in enumerate(passages):
        for position, sentence in enumerate(_candidates(passage.text)):
            shared = len(asked & set(grounding.terms(sentence)))
            if shared:
                scored.append((-shared, rank, position, Quote(passage.n, sentence)))
    scored.sort(key=lambda item: item[:3])
    return [item[3] for item in scored[:limit]]


def render(quotes: Sequence[Quote]) -> str:
    """The quotes under `LEAD`, one list item each, or "" without quotes."""
    if not quotes:
        return ""
    return "\n".join([LEAD, *(f"- “{q.text}” [{q.n}]" for q in quotes)])
