"""A grounded answer put together: evidence first, the model's text checked, what to trust.

The answer opens with the passages' own best sentences (`evidence`, known before the
model is called: it streams first), then the model's text without the citations of
passages it was not given (`citations.check`), judged by the grounding check
(`grounding.judge`: the model's text only, never the lead) and, when the check fails,
labelled unverified after it, with the reasons; every passage it was given follows as its
numbered sources. In that order the whole answer streams as appends: lead, model text,
label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kb_lsp.engine.agent import citations, grounding
from kb_lsp.engine.agent.grounded import Passage


@dataclass
class Composed:
    body: str  # the model's text without the dropped citations
    tail: str  # the sources paragraph
    verdict: grounding.Verdict
    note: str = ""  # "> Unverified: …" when the check fails
    dropped: list[str] = field(default_factory=list)
    evidence: str = ""  # the passages' best sentences, quoted (`evidence.lead`)

    @property
    def grounded(self) -> bool:
        return self.verdict.grounded

    def pending(self, *extra: str) -> str:
        """The answer before its sources, as a client streams it: the evidence, the
        model's text, `extra` paragraphs (a cut-off note), the unverified note."""
        return _joined(self.evidence, self.body, *extra, self.note)

    def text(self, *extra: str) -> str:
        """The whole answer: what `pending` says, then the sources."""
        return _joined(self.pending(*extra), self.tail)


def _joined(*parts: str) -> str:
    return "\n\n".join(part for part in parts if part).strip()


def compose(
    content: str, passages: Sequence[Passage], question: str, evidence: str = ""
) -> Composed:
    """The answer to `question` from the model's `content`, after `evidence` (the lead:
    no part of what the check judges)."""
    verdict = grounding.judge(content, passages, question=question)
    checked = citations.check(content.strip(), passages)
    listing = "; ".join(f"[{p.n}] `{p.path}` lines {p.start + 1}–{p.end + 1}" for p in passages)
    if checked.cited:
        tail = f"Sources: {listing}"
    else:
        tail = f"Passages the model was given (its answer cites none of them): {listing}"
    note = ""
    if verdict.label == "ungrounded" and checked.answer:
        note = f"> Unverified: {'; '.join(verdict.reasons)}. Check it against the passages below."
    return Composed(checked.answer, tail, verdict, note, checked.dropped, evidence)
