"""A grounded answer put together: the model's text checked, its sources, what to trust.

The model's text loses the citations of passages it was not given (`citations.check`),
is judged by the grounding check (`grounding.judge`), and is labelled unverified when the
check fails, with the reasons; every passage it was given follows as its numbered
sources. An answer that fails the check comes after the passages' own best sentences
(`evidence`): what the notes say first, the model's unverified text second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kb_lsp.engine.agent import citations, evidence, grounding
from kb_lsp.engine.agent.grounded import Passage


@dataclass
class Composed:
    body: str  # the model's text without the dropped citations
    tail: str  # the sources paragraph
    verdict: grounding.Verdict
    note: str = ""  # "> Unverified: …" when the check fails
    dropped: list[str] = field(default_factory=list)
    evidence: str = ""  # the passages' best sentences, quoted, when the check fails

    @property
    def grounded(self) -> bool:
        return self.verdict.grounded

    @property
    def lead(self) -> str:
        """The answer before its sources: the text a client streams as pending."""
        if self.evidence:
            return _joined(self.evidence, self.note, self.body)
        return self.body

    def text(self, *extra: str) -> str:
        """The answer: the body, then `extra` paragraphs (a cut-off note), the note and
        the sources; evidence first and the note before the body when the check fails."""
        if self.evidence:
            return _joined(self.lead, *extra, self.tail)
        return _joined(self.body, *extra, self.note, self.tail)


def _joined(*parts: str) -> str:
    return "\n\n".join(part for part in parts if part).strip()


def compose(content: str, passages: Sequence[Passage], question: str) -> Composed:
    verdict = grounding.judge(content, passages, question=question)
    checked = citations.check(content.strip(), passages)
    listing = "; ".join(f"[{p.n}] `{p.path}` lines {p.start + 1}–{p.end + 1}" for p in passages)
    if checked.cited:
        tail = f"Sources: {listing}"
    else:
        tail = f"Passages the model was given (its answer cites none of them): {listing}"
    note = ""
    quoted = ""
    if verdict.label == "ungrounded":
        quoted = evidence.render(evidence.select(passages, question))
    if verdict.label == "ungrounded" and checked.answer:
        note = f"> Unverified: {'; '.join(verdict.reasons)}. Check it against the passages below."
    return Composed(checked.answer, tail, verdict, note, checked.dropped, quoted)
