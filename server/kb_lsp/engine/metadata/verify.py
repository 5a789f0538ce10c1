"""A model's claims checked against the note they are about: a value is kept only when
the words the model says it read it from are the note's, and say it.

For each claim (`claims.py`: a field's values and their evidence):

1. **The evidence is in the note.** Both folded (`folding.py`: case, spacing, quotes,
   dashes, `*` and backticks aside), the evidence must occur in the note's text; that
   occurrence is the value's span. For a date or a number the note may write it another
   way than the model copies it ("March 3rd, 2026" and "2026-03-03"; "48,000" and
   "48000"): every date and number in both is read as its value (`mentions.py`), and the
   evidence is found when it then occurs as it is, or when the note's words around a
   mention of the claimed value are at least `FUZZY_RATIO` alike (difflib's ratio) to
   it — the span is then those words of the note.
2. **The evidence says the value**, in the note's own words of the span: a text is
   there as whole words (a list: item by item); a date or a number is a mention there
   with the same value (and, for a number whose schema lists `x-units`, one of them just
   before or after it); an enum's option, or one of its `x-synonyms`, is there as a word
   (a plural too).
3. **A text value is a value, not a passage**: at most `MAX_VALUE_WORDS` words (a name,
   a system, a short phrase — what a filter matches), and not the whole evidence when
   that is more than `MAX_COPIED_WORDS` words (the words copied twice, nothing read
   from them: what a small model does when it cannot find the value).

No evidence, evidence that is too long (`MAX_EVIDENCE`), not in the note or not saying
the value: the value is rejected with that reason, and not stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from difflib import SequenceMatcher
from functools import cached_property

from kb_lsp.engine.metadata import mentions
from kb_lsp.engine.metadata.claims import Claim, Extraction, Kept, Rejected, Reply, Span
from kb_lsp.engine.metadata.folding import find_words, fold, folded
from kb_lsp.engine.metadata.user_schema import MAX_EVIDENCE, FieldSpec, UserSchema
from kb_lsp.engine.metadata.values import Value

# How alike the note's words around a date or number must be to the evidence copied for
# it, when they differ in more than how the date or number is written.
FUZZY_RATIO = 0.85
MAX_VALUE_WORDS = 8
MAX_COPIED_WORDS = 4
_SHOWN = 80
_MARK = "\x00"  # stands around a date or number read as its value
_SLACK = 24


@dataclass(frozen=True)
class _Canon:
    """Text with each date and number replaced by its value, mapped back to the text."""

    text: str
    origin: tuple[int, ...]  # per character: the offset in the folded text
    ends: tuple[int, ...]  # per character: the end offset in the folded text
    tokens: tuple[tuple[int, int, tuple[object, ...]], ...]  # (start, end, values)


class Note:
    """One note's text, folded once, with its dates and numbers read once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = fold(text)

    @cached_property
    def dates(self) -> list[mentions.Mention]:
        return mentions.dates(self.folded.text)

    @cached_property
    def numbers(self) -> list[mentions.Mention]:
        return mentions.numbers(self.folded.text)

    @cached_property
    def canon(self) -> _Canon:
        return _canon(self.folded.text, self.dates, self.numbers)

    def locate(self, evidence: str) -> tuple[int, int] | None:
        """The folded span where `evidence` occurs, or None."""
        wanted = folded(evidence)
        start = self.folded.text.find(wanted) if wanted else -1
        return (start, start + len(wanted)) if start >= 0 else None

    def near(self, evidence: str, values: tuple[Value, ...]) -> tuple[int, int] | None:
        """The folded span of the note's words that say `evidence` with its dates and
        numbers written another way (see the module's step 1), or None."""
        text = folded(evidence)
        ev = _canon(text, mentions.dates(text), mentions.numbers(text))
        note = self.canon
        start = note.text.find(ev.text) if ev.text else -1
        if start >= 0:
            return note.origin[start], note.ends[start + len(ev.text) - 1]
        wanted = {_token_value(v) for v in values}
        best: tuple[float, int, int] | None = None
        for ev_start, _, ev_values in ev.tokens:
            if not wanted & set(ev_values):
                continue
            for note_start, _, note_values in note.tokens:
                if wanted & set(note_values):
                    found = _aligned(note.text, note_start - ev_start, ev.text)
                    if found[0] >= FUZZY_RATIO and (best is None or found[0] > best[0]):
                        best = found
        if best is None:
            return None
        start, end = _whole_words(self.folded.text, note.origin[best[1]], note.ends[best[2] - 1])
        return start, end

    def says(self, spec: FieldSpec, value: Value, span: tuple[int, int]) -> tuple[int, int] | None:
        """The span (widened to a date or number it cuts) when the note's words there
        say `value`, else None."""
        start, end = span
        words = self.folded.text[start:end]
        if spec.kind in ("string", "list"):
            return span if find_words(words, folded(value.text)) >= 0 else None
        if spec.kind == "enum":
            found = (find_words(words, folded(w), plural=True) for w in spec.words_for(value.text))
            return span if any(at >= 0 for at in found) else None
        for mention in self.dates if spec.kind == "date" else self.numbers:
            if mention.start < end and start < mention.end and _equal(mention.value, value):
                if spec.units and not self._with_unit(mention, spec.units):
                    continue
                return min(start, mention.start), max(end, mention.end)
        return None

    def _with_unit(self, mention: mentions.Mention, units: tuple[str, ...]) -> bool:
        """Whether one of `units` stands just before or after `mention` ("EUR 48,000",
        "48,000 EUR", "$48,000")."""
        text = self.folded.text
        before = text[max(0, mention.start - 12) : mention.start].rstrip()
        after = text[mention.end : mention.end + 12].lstrip()
        for unit in (folded(u) for u in units):
            if before.endswith(unit) and find_words(before[-len(unit) - 1 :], unit) >= 0:
                return True
            if after.startswith(unit) and find_words(after[: len(unit) + 1], unit) >= 0:
                return True
            if not unit[-1].isalnum() and before.endswith(unit):  # "$", "€"
                return True
        return False


def verify(reply: Reply, text: str, schema: UserSchema) -> Extraction:
    """The values of `reply` that `text` (the note the model read) supports, each with
    its span; the others rejected with the reason."""
    note = Note(text)
    kept: dict[str, list[Kept]] = {}
    rejected = list(reply.rejected)
    for claim in reply.claims:
        spec = schema.field(claim.field)
        if spec is None:  # read_reply makes claims of the schema's fields only
            continue
        found, missed = check(note, spec, claim)
        if found:
            kept.setdefault(spec.name, []).extend(found)
        rejected.extend(missed)
    return Extraction(kept, tuple(rejected), reply.dropped, reply.failed)


def check(note: Note, spec: FieldSpec, claim: Claim) -> tuple[list[Kept], list[Rejected]]:
    """One claim's values: those the note supports, and the others with the reason."""
    evidence = claim.evidence or ""
    span = None
    if not evidence.strip():
        reason = "no evidence: the reply did not say which words of the note it is read from"
    elif len(evidence) > MAX_EVIDENCE:
        reason = f"the evidence is {len(evidence)} characters long; at most {MAX_EVIDENCE}"
    else:
        span = note.locate(evidence)
        if span is None and spec.kind in ("date", "number"):
            span = note.near(evidence, claim.values)
        reason = f"the evidence is not in the note: {_shown(evidence)}"
    if span is None:
        return [], [Rejected(spec.name, v.text, reason, evidence) for v in claim.values]
    kept: list[Kept] = []
    rejected: list[Rejected] = []
    for value in claim.values:
        said = note.says(spec, value, span)
        passage = _passage(spec, value, evidence)
        if said is None or passage:
            words = note.text[slice(*note.folded.span(*span))]
            reason = passage or f"the evidence does not say it: {_shown(words)}"
            rejected.append(Rejected(spec.name, value.text, reason, evidence))
        else:
            kept.append(Kept(value, Span.of(note.text, *note.folded.span(*said))))
    return kept, rejected


def _passage(spec: FieldSpec, value: Value, evidence: str) -> str | None:
    """Why a text value is a passage rather than a value (step 3), or None."""
    if spec.kind not in ("string", "list"):
        return None
    words = len(value.text.split())
    if words > MAX_VALUE_WORDS:
        return f"{words} words: a passage, not a value (at most {MAX_VALUE_WORDS})"
    if words > MAX_COPIED_WORDS and folded(value.text).strip(" .;,") == folded(evidence).strip(
        " .;,"
    ):
        return "the value is the whole evidence: copied, not read from it"
    return None


def _aligned(text: str, at: int, evidence: str) -> tuple[float, int, int]:
    """How alike `evidence` is to the words of `text` it lines up with when it is put at
    `at` (give or take `_SLACK` characters: the two may differ in length before the
    mention), and their span in `text`: (difflib's ratio, start, end)."""
    first = max(0, at - _SLACK)
    window = text[first : at + len(evidence) + _SLACK]
    blocks = [
        b
        for b in SequenceMatcher(None, window, evidence, autojunk=False).get_matching_blocks()
        if b.size
    ]
    if not blocks:
        return 0.0, first, first + 1
    start, end = blocks[0].a, blocks[-1].a + blocks[-1].size
    matched = sum(b.size for b in blocks)
    return 2.0 * matched / (len(evidence) + end - start), first + start, first + end


def _whole_words(text: str, start: int, end: int) -> tuple[int, int]:
    """`[start, end)` widened to the whole words it cuts."""
    while start > 0 and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum() and text[end - 1].isalnum():
        end += 1
    return start, end


def _equal(found: date | float, value: Value) -> bool:
    if isinstance(found, date):
        return value.kind == "date" and found.isoformat() == value.text
    return value.number is not None and mentions.same_number(found, value.number)


def _token_value(value: Value) -> object:
    if value.kind == "date":
        return value.text
    return _number_key(value.number if value.number is not None else float("nan"))


def _number_key(number: float) -> str:
    return str(int(number)) if number.is_integer() else repr(number)


def _canon(text: str, dates: list[mentions.Mention], numbers: list[mentions.Mention]) -> _Canon:
    """`text` with each mention replaced by a token of its values (a date read two ways
    has both)."""
    by_place: dict[tuple[int, int], list[object]] = {}
    for mention in (*dates, *numbers):
        found = mention.value
        key = found.isoformat() if isinstance(found, date) else _number_key(found)
        by_place.setdefault((mention.start, mention.end), []).append(key)
    out: list[str] = []
    origin: list[int] = []
    ends: list[int] = []
    tokens: list[tuple[int, int, tuple[object, ...]]] = []
    at = 0
    for (start, end), values in sorted(by_place.items()):
        if start < at:
            continue
        for index in range(at, start):
            out.append(text[index])
            origin.append(index)
            ends.append(index + 1)
        token = _MARK + "|".join(sorted(str(v) for v in values)) + _MARK
        tokens.append((len(out), len(out) + len(token), tuple(values)))
        out.extend(token)
        origin.extend([start] * len(token))
        ends.extend([end] * len(token))
        at = end
    for index in range(at, len(text)):
        out.append(text[index])
        origin.append(index)
        ends.append(index + 1)
    return _Canon("".join(out), tuple(origin), tuple(ends), tuple(tokens))


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return f"“{flat if len(flat) <= _SHOWN else flat[: _SHOWN - 1] + '…'}”"
