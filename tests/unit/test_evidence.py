"""Evidence first: which sentences of the given passages an unverified answer quotes."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from kb_lsp.engine.agent import evidence
from kb_lsp.engine.agent.grounded_answer import compose


@dataclass(frozen=True)
class P:
    n: int
    path: str
    text: str
    start: int = 0
    end: int = 0


MEXICO = P(
    1,
    "payments/mexico.md",
    "# Mexico payments\n\nSPEI is used for local transfers. Payments must be released "
    "before the 14:30 cut-off, Mexico City time.\n- Weekends are not business days.",
)
PERU = P(2, "payments/peru.md", "Peru uses CCE. The Peru cut-off is 16:00 Lima time.")


def test_the_sentences_sharing_most_terms_with_the_question_come_first() -> None:
    quotes = evidence.select([MEXICO, PERU], "What is the cut-off for Mexico payments?")
    assert quotes == [
        evidence.Quote(1, "Payments must be released before the 14:30 cut-off, Mexico City time."),
        evidence.Quote(2, "The Peru cut-off is 16:00 Lima time."),
    ]
    assert evidence.render(quotes).splitlines() == [
        "From your notes:",
        "- “Payments must be released before the 14:30 cut-off, Mexico City time.” [1]",
        "- “The Peru cut-off is 16:00 Lima time.” [2]",
    ]


def test_wrapped_lines_join_and_abbreviations_do_not_end_a_sentence() -> None:
    text = (
        "---\ntags: [mexico]\n---\n# Mexico payments\n\nPayments to Acme S.A. de C.V. are\n"
        "sent by SPEI before the 14:30 Mexico\ncut-off. Late ones wait.\n```\nmexico cut-off\n```"
    )
    assert evidence.select([P(3, "m.md", text)], "mexico cut-off", 5) == [
        evidence.Quote(
            3, "Payments to Acme S.A. de C.V. are sent by SPEI before the 14:30 Mexico cut-off."
        )
    ]


def test_headings_list_markers_and_unrelated_sentences_are_not_quoted() -> None:
    assert evidence.select([MEXICO], "weekend business days") == [
        evidence.Quote(1, "Weekends are not business days.")
    ]
    assert evidence.select([MEXICO, PERU], "kubernetes ingress") == []
    assert evidence.select([MEXICO], "the of and") == []  # stopwords only
    assert evidence.render([]) == ""


def test_a_failing_answer_gets_evidence_first_and_a_passing_one_is_untouched() -> None:
    failing = compose("The cut-off is at noon.", [MEXICO, PERU], "Mexico payments cut-off?")
    assert not failing.grounded
    paragraphs = failing.text().split("\n\n")
    assert paragraphs[0].startswith("From your notes:\n- “Payments must be released")
    assert paragraphs[1].startswith("> Unverified: cites no passage")
    assert paragraphs[2] == "The cut-off is at noon."
    assert failing.lead == "\n\n".join(paragraphs[:3])

    model = "Payments must be released before the 14:30 cut-off, Mexico City time [1]."
    passing = compose(model, [MEXICO, PERU], "Mexico payments cut-off?")
    assert passing.grounded and passing.evidence == ""
    assert passing.lead == model
    assert passing.text().startswith(model + "\n\nSources: [1]")


_TEXT = st.text(
    alphabet=st.sampled_from(list("abc xyz14:30.!?-#|*>[]`\n\t“”éß")), max_size=200
) | st.text(max_size=200)


@given(
    texts=st.lists(_TEXT, max_size=5),
    question=_TEXT,
    limit=st.integers(min_value=0, max_value=4),
)
def test_selection_never_raises_and_only_quotes_the_passages(
    texts: list[str], question: str, limit: int
) -> None:
    passages = [P(i + 1, f"f{i}.md", text) for i, text in enumerate(texts)]
    quotes = evidence.select(passages, question, limit)
    assert len(quotes) <= limit
    by_n = {p.n: p for p in passages}
    for quote in quotes:
        # As written, only its line breaks and runs of spaces made single spaces.
        assert quote.text.strip() and quote.text in " ".join(by_n[quote.n].text.split())
    evidence.render(quotes)
