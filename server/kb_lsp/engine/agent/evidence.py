"""Evidence first: the given passages' own best sentences, before anything a model says.

In grounded and fallback modes (issue 29 point 2) an answer opens with what the notes
say: the one or two sentences of the passages (in grounded mode those of the largest
context, whatever the model's: `grounded.quoted`) most similar to the question, by the
knowledge base's own embedder (the candidates embedded as documents — a few dozen at
most — and the question as a query), the share of the question's stemmed terms they hold
(as the grounding check counts them) adding up to `TERM_WEIGHT` to break ties and
near-ties, and deciding alone when the embedder fails. Each is quoted
as plain text (its Markdown and HTML rendered away: `snippets.inline_text`) with
`[path:lines]`, the file and the sentence's own lines, which the clients link.

A quote must state the answer (issue 35, point 3). Each sentence is read with what it
needs (`prose.py`: the command it introduces, the list it introduces or belongs to, the
sentence before a "This…"), and scored by what it holds: besides the similarity and the
shared terms, the question's names and numbers it contains (`ENTITY_WEIGHT`) and the kind
of answer the question asks for — a time, a number, a command, a name (`answer_kind.py`,
`KIND_WEIGHT`); both measured on `bench/queries/answers.json` (`python -m bench quotes`).
A later step of a sequence ("Then wrap the app…", "You can then deploy that image…")
reads as the answer only after the step it leaves out: it competes `SEQUEL_PENALTY` below.

A quote must be worth reading on its own: fragments ("Now instead of returning:",
"...this response will return:", "because it…"), very short sentences, code without the
sentence that says what it does, filler ("Let's start with an example…") and sentences
sharing no term with the question are never candidates; a full sentence that introduces
a code block or a list it cannot carry ("…raise an exception with a status code of
404:") competes at `INTRO_PENALTY` below the rest, its colon made " …" (the link opens
what follows); a second
quote is kept only when it is about as good as the first.

The lead is known before the model is called, so it streams first; the grounding check
never sees it (it judges the model's text only).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from kb_lsp.engine.agent import answer_kind, citations, grounding, prose
from kb_lsp.engine.terms import FILE_WORDS

log = logging.getLogger(__name__)

MAX_QUOTES = 2
MAX_CANDIDATES = 40  # sentences embedded at most, those sharing most terms first
MAX_CHARS = 300  # a longer "sentence" is a paragraph or a table, not a quote
MIN_CHARS = 25
MIN_WORDS = 5
SECOND_WITHIN = 0.1  # a second quote scoring this close to the first, or none
# Score: cosine + TERM_WEIGHT × the share of the question's terms the sentence has: the
# terms break ties and near-ties (a small embedder blurs "Mexico" and "Brazil").
TERM_WEIGHT = 0.3  # 0.2 until issue 35: a similar-sounding sentence beat the one with the terms
# ... plus this × the share of the asked kinds of answer it holds (a time for "when"…),
KIND_WEIGHT = 0.2
# ... and this × the share of the question's names and numbers it has ("Mexico", "SEPA").
ENTITY_WEIGHT = 0.1
# ... minus this for a sentence introducing what the passage leaves out ("…a status code
# of 404 …"): it is quoted when it answers clearly better, not as a last resort only.
INTRO_PENALTY = 0.05
# ... minus this for a later step of a sequence ("Then wrap the app…", "You can then deploy
# that image…"): it reads as the answer only after the step it follows, which it leaves out.
SEQUEL_PENALTY = 0.2
CODE_SHARE = 0.08  # of a sentence's characters in `_CODE_CHARS`: code, not prose
LEAD = "From your notes:"
# A sentence of at least this many words that ends with ":" (it introduces a code block or
# a list) is quoted only when nothing else is quotable, its colon made `ELLIPSIS`.
INTRO_WORDS = 8
ELLIPSIS = " …"

_FRAGMENT_END = (":", ",", ";", "-", "–", "—", "(", "/")
_FRAGMENT_START = ("...", "…")
# Sentences that lead somewhere else: "Let's start with…", "Now that X, let's build…",
# "In the next chapter you'll see…" ("Let's say you have…" sets a scene: kept).
_FILLER = re.compile(
    r"^(?:(?:now|so|next|then|first|finally|and)\b[^.]{0,60}?,?\s+)?"
    r"(?:let['’]s (?!say|imagine|assume|suppose)|let us )|"
    r"^(?:in (?:this|the next|the previous) (?:section|chapter|tutorial|page|example)|"
    r"we['’]ll (?:see|start|learn)|you['’]ll (?:see|learn)|you will (?:see|learn)|"
    r"here['’]s|as you can see)\b",
    re.I,
)
# A sentence that opens in lower case continues something the quote leaves out
# ("because the value was…", "which returns…"); one opening with code or a link does not.
_CONTINUATION = re.compile(r"^[a-zà-ÿ]")
# "Then…", "And then…", "After that…", "Next,", "You can then…", "We then…".
_SEQUEL = re.compile(
    r"^(?:and\s+)?(?:then\b|after that\b|afterwards\b|next,)|^(?:you|we)\s+(?:can\s+)?then\b",
    re.I,
)
_CODE_CHARS = frozenset("{}[]()=;<>$\\|`")
_NAMED = re.compile(r"\b(?:[A-Z][\w.-]*|\d[\d,.:%]*|\w+[_.]\w+)")


class Given(Protocol):
    """A passage: `text` is the file's lines from `start` (0-based) on (`grounded.Passage`)."""

    @property
    def path(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def text(self) -> str: ...


class Embeds(Protocol):
    """The knowledge base's embedder (`engine.embed.embeddings.Embedder`)."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


@dataclass(frozen=True)
class Excerpt:
    """A passage that is not a model's: a search hit's lines (fallback mode)."""

    path: str
    start: int
    text: str


@dataclass(frozen=True)
class Quote:
    path: str
    start: int  # 0-based, the sentence's first line
    end: int  # 0-based, its last line
    text: str  # the sentence as plain text, on one line

    @property
    def citation(self) -> str:
        """`[path:12]` or `[path:12-14]` (1-based): what the clients turn into a link."""
        lines = f"{self.start + 1}" + (f"-{self.end + 1}" if self.end > self.start else "")
        return f"[{self.path}:{lines}]"


@dataclass(frozen=True)
class _Candidate:
    quote: Quote
    shared: float  # the share of the question's stemmed terms the sentence has
    rank: int  # the passage's rank
    position: int  # the sentence's place in its passage
    intro: bool = False  # a sentence introducing what the passage leaves out
    holds: float = 0.0  # the share of the asked kinds of answer it holds
    names: float = 0.0  # the share of the question's names and numbers it has
    sequel: bool = False  # a later step of a sequence ("Then wrap the app…")


def quotable(text: str, markdown: str = "", *, command: bool = False) -> bool:
    """Whether a sentence (as plain `text`, and as written) reads well on its own (see
    the module docstring); a `command` piece is judged by its sentence, the code span
    it ends with aside."""
    if not MIN_CHARS <= len(text) <= MAX_CHARS or len(text.split()) < MIN_WORDS:
        return False
    if command:  # "List all stashes: `git stash list`": its sentence is judged alone
        text = text[: text.find("`")].rstrip() or text
    if len(text.split()) < 2:
        return False
    if _CONTINUATION.match(text) and not markdown.lstrip().startswith(("`", "[", "*", "_")):
        return False
    if text.endswith(_FRAGMENT_END[1:] if command else _FRAGMENT_END):
        return False  # a command's sentence ends with the ":" that introduces it
    if text.startswith(_FRAGMENT_START) or _FILLER.match(text):
        return False
    if citations.NUMBER_CITATION.search(text):
        return False  # a "[2]" of the note's own would read as a link to passage 2
    if text.count(")") > text.count("("):
        return False  # "Flask) app with the middleware.": the rest of a sentence
    return sum(char in _CODE_CHARS for char in text) / len(text) < CODE_SHARE


def names(text: str) -> set[str]:
    """The names and numbers of `text`, lower-cased: capitalised words after its first
    ("I" aside), all-caps words, numbers, identifiers (`pain.001`, `exclude_unset`)."""
    words = _NAMED.findall(text)
    # "I" is capitalised but names nothing, and as a prefix it is in almost every text.
    named = {w.lower().strip(".,") for i, w in enumerate(words) if i or not w.istitle()}
    return named - {"i"}


def filed(text: str) -> set[str]:
    """The words for files of `text` ("files" → "file"), which the index drops (a file is
    how people refer to a note: `terms.FILE_WORDS`) but which say what a command acts on:
    "a gzipped archive of some files" is "…and write it to a file", not "…from a
    directory" (bench quotes, tldr-22)."""
    return {w.rstrip("s") for w in re.findall(r"[a-z]+", text.lower()) if w in FILE_WORDS}


def sequel(text: str) -> bool:
    """Whether `text` is a later step of a sequence: it opens with "Then", "After that",
    "You can then"… ."""
    return bool(_SEQUEL.match(text))


def candidates(passages: Sequence[Given], question: str) -> list[_Candidate]:
    """The quotable sentences of `passages` sharing a term with `question`, those sharing
    most first, at most `MAX_CANDIDATES`."""
    asked = set(grounding.terms(question)) | filed(question)
    if not asked:
        return []
    kinds = answer_kind.asked(question)
    named = names(question)
    out: list[_Candidate] = []
    seen: set[str] = set()
    for rank, passage in enumerate(passages):
        for piece in prose.pieces(passage.text, passage.start, MAX_CHARS):
            text = piece.text
            intro = piece.intro and len(text.split()) >= INTRO_WORDS
            if intro:  # "…raise an exception with a status code of 404:"
                text = text[:-1].rstrip() + ELLIPSIS
            shared = len(asked & (set(grounding.terms(text)) | filed(text))) / len(asked)
            readable = quotable(text, piece.markdown, command=piece.command)
            if not shared or text in seen or not readable:
                continue
            seen.add(text)
            # A sentence of the Germany page is about Germany: its path counts.
            lowered = f"{text} {passage.path}".lower()
            has = sum(1 for n in named if n[:5] in lowered) / len(named) if named else 0.0
            quote = Quote(passage.path, piece.first, piece.last, text)
            fit = answer_kind.fit(kinds, text, piece.markdown)
            out.append(
                _Candidate(quote, shared, rank, piece.position, intro, fit, has, sequel(text))
            )
    out.sort(key=lambda c: (-c.shared, c.rank, c.position))
    return out[:MAX_CANDIDATES]


def similarities(texts: list[str], question: str, embedder: Embeds | None) -> list[float]:
    """Cosine of each text with the question; all 0 without an embedder or when it fails
    (the shared terms then decide)."""
    if embedder is None or not texts:
        return [0.0] * len(texts)
    try:
        docs = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
        query = np.asarray(embedder.embed_query(question), dtype=np.float32)
    except Exception:  # an embedder that cannot run now: the terms still choose
        log.warning("evidence: the embedder failed; quotes chosen by shared terms", exc_info=True)
        return [0.0] * len(texts)
    norms = np.linalg.norm(docs, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    return [float(s) for s in (docs @ query) / np.maximum(norms, 1e-12)]


def select(
    passages: Sequence[Given],
    question: str,
    embedder: Embeds | None = None,
    limit: int = MAX_QUOTES,
) -> list[Quote]:
    """The `limit` sentences of `passages` best for `question`, best first: by similarity
    with `embedder`, then shared terms, the better-ranked passage, the earlier sentence.
    A second quote only when about as similar as the first. None quotable → []."""
    found = candidates(passages, question)
    similar = similarities([c.quote.text for c in found], question, embedder)
    scores = [
        s
        + TERM_WEIGHT * c.shared
        + KIND_WEIGHT * c.holds
        + ENTITY_WEIGHT * c.names
        - INTRO_PENALTY * c.intro
        - SEQUEL_PENALTY * c.sequel
        for s, c in zip(similar, found, strict=True)
    ]
    ranked = sorted(
        zip(scores, found, strict=True),
        key=lambda sc: (-round(sc[0], 3), -sc[1].shared, sc[1].rank, sc[1].position),
    )
    if not ranked or limit < 1:
        return []
    best = ranked[0][0]
    return [c.quote for score, c in ranked[:limit] if score >= best - SECOND_WITHIN]


def render(quotes: Sequence[Quote]) -> str:
    """The quotes under `LEAD`, one list item each, or "" without quotes."""
    if not quotes:
        return ""
    return "\n".join([LEAD, *(f"- “{q.text}” {q.citation}" for q in quotes)])


def lead(passages: Sequence[Given], question: str, embedder: Embeds | None) -> str:
    """The rendered lead for `question` from `passages` ("" when nothing is quotable)."""
    return render(select(passages, question, embedder))
