"""A grounded answer put together: evidence first, the model's text checked, what to trust.

The answer opens with the passages' own best sentences (`evidence`, known before the
model is called: it streams first), then the model's text without the citations of
passages it was not given (`citations.check`), judged by the grounding check
(`grounding.judge`: the model's text only, never the lead); every passage it was given
follows, numbered as the model saw them ("Passages the model was given: …").

When the check fails, the model's text is followed by "> Not supported by your notes:
<why>", and clients that can fold it do (`AskResponse.folded`: the panel shows the quotes,
the verdict, then "The model's answer is not supported by your notes — show it"). In
that order the whole answer streams as appends — lead, model text, verdict — so a
terminal, which cannot take text back, prints each once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kb_lsp.engine.agent import citations, grounding
from kb_lsp.engine.agent.grounded import Passage

GIVEN = "Passages the model was given"
UNSUPPORTED = "> Not supported by your notes"


@dataclass
class Composed:
    body: str  # the model's text without the dropped citations
    tail: str  # the sources paragraph
    verdict: grounding.Verdict
    note: str = ""  # "> Not supported by your notes: …" when the check fails
    dropped: list[str] = field(default_factory=list)
    evidence: str = ""  # the passages' best sentences, quoted (`evidence.lead`)

    @property
    def grounded(self) -> bool:
        return self.verdict.grounded

    @property
    def folded(self) -> str | None:
        """The model's text a client folds (the check failed), else None."""
        return self.body if self.note and self.body else None

    def pending(self, *extra: str) -> str:
        """The answer before its sources, as a client streams it: the evidence, the
        model's text, `extra` paragraphs (a cut-off note), the note when the check
        failed."""
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
    # One wording whether it cites them or not: the verdict says that, once.
    tail = f"{GIVEN}: {listing}"
    note = ""
    if not verdict.grounded and checked.answer:
        why = "; ".join(verdict.reasons) or "it says the notes do not answer"
        note = f"{UNSUPPORTED}: {why}. Check the model's answer above against the passages."
    return Composed(checked.answer, tail, verdict, note, checked.dropped, evidence)
