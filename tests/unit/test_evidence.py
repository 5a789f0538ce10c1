"""Evidence first: which sentences of the given passages every grounded and fallback
answer opens with, how they are quoted, and that the check never judges them."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.engine.agent import evidence
from kb_lsp.engine.agent.conversations import for_history
from kb_lsp.engine.agent.grounded_answer import compose
from kb_lsp.engine.snippets import inline_text


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
    "before the 14:30 cut-off, Mexico City time.\n- Weekends are not business days in Mexico.",
    start=6,
    end=9,
)
PERU = P(2, "payments/peru.md", "Peru uses CCE. The Peru cut-off is 16:00 Lima time.", 3, 3)


class Chosen:
    """An embedder whose similarities the test sets: each text's vector is its `scores`
    entry (by a word it contains) on the first axis; the question is that axis."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.documents += texts
        out = []
        for text in texts:
            score = next((s for word, s in self.scores.items() if word in text), 0.0)
            out.append([score, math.sqrt(max(0.0, 1 - score * score))])
        return out

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


class Broken:
    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        raise RuntimeError("the embedder cannot run now")

    def embed_query(self, text: str) -> list[float]:
        raise RuntimeError("the embedder cannot run now")


def test_the_sentence_most_similar_to_the_question_comes_first_with_its_own_lines() -> None:
    question = "What is the cut-off for Mexico payments?"
    embedder = Chosen({"Peru cut-off": 0.95, "14:30": 0.93})
    quotes = evidence.select([MEXICO, PERU], question, embedder)
    # Close in similarity, the sentence that names what the question names (Mexico) and
    # shares more of its terms comes first, with its own lines.
    mexico = evidence.Quote(
        "payments/mexico.md",
        8,
        8,
        "Payments must be released before the 14:30 cut-off, Mexico City time.",
    )
    peru = evidence.Quote("payments/peru.md", 3, 3, "The Peru cut-off is 16:00 Lima time.")
    assert quotes[0] == mexico
    # Far apart in similarity, similarity decides.
    far = evidence.select([MEXICO, PERU], question, Chosen({"Peru cut-off": 0.95, "14:30": 0.5}))
    assert far[0].path == "payments/peru.md"
    assert evidence.render([mexico, peru]).splitlines() == [
        "From your notes:",
        "- “Payments must be released before the 14:30 cut-off, Mexico City time.” "
        "[payments/mexico.md:9]",
        "- “The Peru cut-off is 16:00 Lima time.” [payments/peru.md:4]",
    ]
    # Only the quotable sentences sharing a term with the question were embedded.
    assert "SPEI is used for local transfers." not in embedder.documents


def test_a_second_quote_only_when_it_is_about_as_similar_as_the_first() -> None:
    embedder = Chosen({"14:30": 0.9, "Peru cut-off": 0.4})
    quotes = evidence.select([MEXICO, PERU], "Mexico payments cut-off", embedder)
    assert [q.path for q in quotes] == ["payments/mexico.md"]


def test_shared_terms_break_ties_and_choose_when_the_embedder_fails() -> None:
    tied = Chosen({"14:30": 0.5, "Peru cut-off": 0.5})
    question = "When is the Peru cut-off?"
    assert evidence.select([MEXICO, PERU], question, tied)[0].path == "payments/peru.md"
    for embedder in (None, Broken()):
        quotes = evidence.select([MEXICO, PERU], "Mexico payments cut-off", embedder)
        assert quotes[0].text.startswith("Payments must be released before the 14:30")


def test_wrapped_lines_join_and_the_quote_cites_every_line_it_spans() -> None:
    text = (
        "---\ntags: [mexico]\n---\n# Mexico payments\n\nPayments to Acme S.A. de C.V. are\n"
        "sent by SPEI before the 14:30 Mexico\ncut-off. Late ones wait.\n```\nmexico cut-off\n```"
    )
    [quote] = evidence.select([P(3, "m.md", text)], "mexico cut-off", HashingEmbedder(), 5)
    assert quote.text == (
        "Payments to Acme S.A. de C.V. are sent by SPEI before the 14:30 Mexico cut-off."
    )
    assert (quote.start, quote.end, quote.citation) == (5, 7, "[m.md:6-8]")


def test_quotes_are_plain_text_and_fragments_filler_code_and_short_ones_are_skipped() -> None:
    text = "\n".join(
        [
            "Return an **HTML** page with [`HTMLResponse`](https://x.test/r) and "
            "<abbr title='x'>ASGI</abbr>.",
            "To return HTML from the endpoint, write:",  # introduces a code block
            "",
            "```python",
            "return HTMLResponse(content=html_page, status_code=200)",
            "```",
            "",
            "Let's start with an example that returns HTML and then see it in detail.",
            "In the next chapter you'll see how to return HTML pages with templates.",
            "HTML page.",  # too short
            "which returns the HTML page to the browser with its own headers.",
            "    html = {'a': [1, 2]}; page = f(html) <div>HTML</div> $x",
            "<div>Return an HTML page from a raw HTML block of the document.</div>",
            "| HTML | page |",
            "/// tip | Return HTML pages from the endpoint",
        ]
    )
    quotes = evidence.select([P(1, "html.md", text)], "return an HTML page", HashingEmbedder(), 9)
    assert [q.text for q in quotes] == ["Return an HTML page with HTMLResponse and ASGI."]
    assert quotes[0].citation == "[html.md:1]"


def test_a_passage_cut_inside_a_code_block_quotes_no_code() -> None:
    text = (
        'raise HTTPException(status_code=404, detail="Item not found")\n```\n\n'
        "Raise an HTTPException with status 404 when the item is not found."
    )
    quotes = evidence.select([P(1, "errors.md", text, 40)], "item not found 404", None)
    assert [(q.text, q.start) for q in quotes] == [
        ("Raise an HTTPException with status 404 when the item is not found.", 43)
    ]


def test_nothing_quotable_gives_no_lead() -> None:
    assert evidence.select([MEXICO, PERU], "kubernetes ingress") == []
    assert evidence.select([MEXICO], "the of and") == []  # stopwords only
    assert evidence.lead([MEXICO], "kubernetes ingress", HashingEmbedder()) == ""
    assert evidence.render([]) == ""


def test_the_lead_opens_every_answer_and_the_check_judges_the_model_text_only() -> None:
    question = "Mexico payments cut-off?"
    lead = evidence.lead([MEXICO, PERU], question, HashingEmbedder())
    assert lead.startswith("From your notes:\n- “Payments must be released")

    failing = compose("The cut-off is at noon.", [MEXICO, PERU], question, lead)
    assert not failing.grounded
    paragraphs = failing.text().split("\n\n")
    assert paragraphs[0] == lead
    assert paragraphs[1] == "The cut-off is at noon." == failing.folded
    assert paragraphs[2].startswith("> Not supported by your notes: cites no passage")
    assert paragraphs[3].startswith("Passages the model was given: [1]")
    assert failing.pending() == "\n\n".join(paragraphs[:3])

    model = "Payments must be released before the 14:30 cut-off, Mexico City time [1]."
    passing = compose(model, [MEXICO, PERU], question, lead)
    assert passing.grounded
    assert passing.pending() == f"{lead}\n\n{model}"
    assert passing.folded is None
    assert passing.text() == f"{lead}\n\n{model}\n\nPassages the model was given: " + (
        "[1] `payments/mexico.md` lines 7–10; [2] `payments/peru.md` lines 4–4"
    )
    # The lead quotes the passages word for word with their lines, yet an empty model
    # text with it is not grounded: the check never sees the lead.
    assert not compose("", [MEXICO, PERU], question, lead).grounded
    assert compose(model, [MEXICO, PERU], question, "").grounded == passing.grounded
    # A cut-off note comes after the model's text, before the unverified label.
    assert failing.pending("> Cut off.").split("\n\n")[1:] == [
        "The cut-off is at noon.",
        "> Cut off.",
        paragraphs[2],
    ]


_TEXT = st.text(
    alphabet=st.sampled_from(list("abc xyzABC14:30.!?-#|*>[]`_<\n\t“”éß")), max_size=200
) | st.text(max_size=200)


@given(
    texts=st.lists(_TEXT, max_size=5),
    question=_TEXT,
    limit=st.integers(min_value=0, max_value=4),
)
def test_selection_never_raises_and_only_quotes_the_lines_it_cites(
    texts: list[str], question: str, limit: int
) -> None:
    passages = [P(i + 1, f"f{i}.md", text, start=i * 10) for i, text in enumerate(texts)]
    quotes = evidence.select(passages, question, HashingEmbedder(), limit)
    assert len(quotes) <= limit
    by_path = {p.path: p for p in passages}
    for quote in quotes:
        passage = by_path[quote.path]
        lines = passage.text.split("\n")[
            quote.start - passage.start : quote.end - passage.start + 1
        ]
        assert quote.text.strip() and "\n" not in quote.text
        # Its own lines hold it, once their Markdown is rendered.
        held = inline_text(
            " ".join(re.sub(r"^\s*(?:[-*+>]\s+|\d{1,3}[.)]\s+)+", "", line) for line in lines)
        )
        assert quote.text in held
        assert re.fullmatch(r"\[f\d\.md:\d+(?:-\d+)?\]", quote.citation)
    evidence.render(quotes)


def test_the_next_turn_gets_the_model_text_without_the_evidence() -> None:
    lead = evidence.lead([MEXICO, PERU], "Mexico payments cut-off?", HashingEmbedder())
    model = "Payments must be released before the 14:30 cut-off, Mexico City time [1]."
    answer = compose(model, [MEXICO, PERU], "Mexico payments cut-off?", lead).text()
    assert for_history(answer) == (
        "Payments must be released before the 14:30 cut-off, Mexico City time."
    )
