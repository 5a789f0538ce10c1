"""Quotes that state the answer (issue 35, point 3): a sentence read with the command or
list it introduces, its list's introduction, the sentence a "This…" points back to; the
kind of answer the question asks for and the names it has weigh in the choice."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import Settings
from kb_lsp.engine.agent import answer_kind, evidence, grounded, grounding, prose
from kb_lsp.engine.knowledge import KnowledgeBase

TAR = """# tar

> Archiving utility.

- Lis[t] the contents of a tar [f]ile [v]erbosely:

`tar tvf {{path/to/source.tar}}`

- E[x]tract a (compressed) archive [f]ile into the target directory:

`tar xf {{path/to/source.tar}} -C {{path/to/directory}}`
"""


@dataclass(frozen=True)
class P:
    n: int
    path: str
    text: str
    start: int = 0


def test_a_sentence_introducing_a_command_is_quoted_with_it() -> None:
    quotes = evidence.select([P(1, "pages/common/tar.md", TAR)], "list the contents of a tar file")
    assert quotes[0].text == (
        "List the contents of a tar file verbosely: `tar tvf {{path/to/source.tar}}`"
    )
    # Its lines run from the sentence to the command (1-based in the citation).
    assert quotes[0].citation == "[pages/common/tar.md:5-7]"


def test_a_long_code_block_is_not_carried_and_its_introduction_is_a_last_resort() -> None:
    code = "\n".join(f"step_{i} --flag" for i in range(5))
    text = f"Run every one of the following steps in order now:\n\n```bash\n{code}\n```\n"
    (piece,) = prose.pieces(text, 0, evidence.MAX_CHARS)
    assert piece.intro and not piece.command
    assert evidence.select([P(1, "a.md", text)], "which steps run in order")[0].text.endswith(
        evidence.ELLIPSIS
    )


def test_a_list_item_is_read_with_its_introduction() -> None:
    text = (
        "Payments above MXN 2,000,000 need the following approvals:\n\n"
        "- Two approvers from the treasury team.\n"
        "- The controller above MXN 20,000,000.\n"
    )
    pieces = prose.pieces(text, 0, evidence.MAX_CHARS)
    assert pieces[0].text == (
        "Payments above MXN 2,000,000 need the following approvals: Two approvers from "
        "the treasury team."
    )
    assert pieces[2].text.startswith("Payments above MXN 2,000,000 need the following")
    assert pieces[2].text.endswith("The controller above MXN 20,000,000.")


def test_a_sentence_pointing_back_is_read_with_the_one_before() -> None:
    text = "Another example would be 201, Created. It is used after creating a new record."
    pieces = prose.pieces(text, 0, evidence.MAX_CHARS)
    assert pieces[1].text == text


def test_a_passage_opening_in_a_list_starts_at_its_introduction() -> None:
    lines = ["## Limits", "", "Two approvers are needed when:", "", "- the amount is large", "- x"]
    assert grounded.with_intro(lines, 4) == 2
    assert grounded.with_intro(lines, 5) == 2
    assert grounded.with_intro(["# Title", "", "- an item"], 2) == 2  # a heading, no sentence
    assert grounded.with_intro(["Some prose.", "More prose."], 1) == 1  # not in a list


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("When are deploys of the payments service frozen?", {"time"}),
        ("How many approvers does a Mexico payment need?", {"number"}),
        ("list my cron jobs", {"command"}),
        ("How do I list all my git stashes?", {"command"}),
        ("Who must approve a Brazil payment above BRL 200,000?", {"name"}),
        ("What is a boleto?", set()),
    ],
)
def test_the_kind_of_answer_a_question_asks_for(question: str, kinds: set[str]) -> None:
    assert answer_kind.asked(question) == kinds


def test_the_sentence_holding_the_asked_kind_wins_a_close_call() -> None:
    passage = P(
        1,
        "payments/mexico.md",
        "Mexico payments are sent by SPEI to the subsidiary every month. "
        "Mexico payments are sent before 14:30 on business days.",
    )
    quotes = evidence.select([passage], "When are Mexico payments sent?")
    assert quotes[0].text == "Mexico payments are sent before 14:30 on business days."


@given(st.text(max_size=600), st.integers(min_value=0, max_value=500))
def test_pieces_quote_lines_of_the_text_and_fit(text: str, first_line: int) -> None:
    last = first_line + text.count("\n")
    for piece in prose.pieces(text, first_line, evidence.MAX_CHARS):
        assert first_line <= piece.first <= piece.last <= last
        assert "\n" not in piece.text


def test_e_g_does_not_end_a_sentence_and_a_sentence_tail_is_never_quoted() -> None:
    text = "You can wrap the WSGI (e.g. Flask) app with the middleware. Then it serves /v1."
    assert prose.sentences([(0, text)])[0][2] == (
        "You can wrap the WSGI (e.g. Flask) app with the middleware."
    )
    assert not evidence.quotable("Flask) app with the middleware and more words.")


def test_a_chunk_overlapping_a_passage_gives_the_lines_it_adds() -> None:
    assert grounded.outside(20, 37, [(0, 23)]) == (24, 37)  # the end of a tldr page
    assert grounded.outside(0, 33, [(24, 37)]) == (0, 23)
    assert grounded.outside(5, 9, [(0, 23)]) is None  # nothing new
    assert grounded.outside(0, 30, [(10, 12)]) == (13, 30)  # the longer side
    assert grounded.outside(0, 9, [(20, 30)]) == (0, 9)  # no overlap


@given(
    st.integers(0, 60),
    st.integers(0, 30),
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 30)), max_size=4),
)
def test_lines_outside_shown_ranges_are_inside_the_chunk_and_new(
    start: int, length: int, spans: list[tuple[int, int]]
) -> None:
    shown = [(first, first + extra) for first, extra in spans]
    left = grounded.outside(start, start + length, shown)
    new_lines = set(range(start, start + length + 1)) - {
        line for first, last in shown for line in range(first, last + 1)
    }
    if left is None:
        assert not new_lines
        return
    assert start <= left[0] <= left[1] <= start + length
    assert set(range(left[0], left[1] + 1)) <= new_lines


def test_the_end_of_a_page_cut_by_a_chunk_edge_is_given(tmp_path: Path) -> None:
    """tldr's `tar` page is two overlapping chunks; the second's own lines (the answer,
    `tar xf … -C`) were dropped as a repeat of the first (bench quotes, tldr); they are
    joined to the first as one passage."""
    workspace = tmp_path / "notes"
    workspace.mkdir()
    items = [
        f"- Extract a tar archive into a directory, way {n}:\n\n"
        f"`tar x{n}f {{{{path/to/source{n}.tar}}}}`\n"
        for n in range(9)
    ]
    items.append(
        "- Choose where the files go:\n\n`tar xf {{path/to/source.tar}} -C {{path/to/target}}`\n"
    )
    (workspace / "tar.md").write_text("# tar\n\n" + "\n".join(items), encoding="utf-8")
    kb = KnowledgeBase([workspace], Settings(), embedder=HashingEmbedder(), storage=tmp_path / "s")
    try:
        kb.sync()
        question = "extract a tar archive into a given directory"
        spans = sorted(
            (h.range.start.line, h.range.end.line)
            for h in kb.search_in_file("tar.md", question, limit=4)
        )
        assert any(a[1] > b[0] for a, b in pairwise(spans))  # overlap
        passages, _ = grounded.gather(kb, question, [], budget_chars=7500, max_passages=5)
    finally:
        kb.close()
    assert any("-C {{path/to/target}}" in p.text for p in passages)
    # ... read as one passage with the page's first chunk: it takes no other file's place.
    assert [(p.start, p.end) for p in passages if p.path == "tar.md"] == [(0, 40)]
    lines = [line for p in passages for line in range(p.start, p.end + 1)]
    assert len(lines) == len(set(lines))  # no line given twice


class Similar:
    """An embedder whose cosine with any question is set per sentence."""

    def __init__(self, cosines: dict[str, float]) -> None:
        self.cosines = cosines

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[self.cosines[t], (1 - self.cosines[t] ** 2) ** 0.5] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


def test_a_sentence_with_more_of_the_question_s_terms_beats_a_similar_sounding_one() -> None:
    """A small embedder blurs near-synonyms; the question's own words tell them apart
    (bench quotes, dev: TERM_WEIGHT 0.2 -> 0.3: one term in six now outweighs 0.04 of
    cosine)."""
    near = "Failed payment retries wait overnight before the next attempt."
    answer = "Failed payment retries wait overnight in the retry queue."
    passage = P(1, "notes/retries.md", f"{near} {answer}")
    question = "Which queue keeps the failed payment retries overnight?"
    quotes = evidence.select([passage], question, Similar({near: 0.90, answer: 0.86}))
    assert quotes[0].text == answer


def test_a_later_step_of_a_sequence_loses_to_the_sentence_that_states_the_answer() -> None:
    """A step such as "Then wrap the WSGI app with the middleware." reads as the answer
    only after the step it follows (bench quotes, dev: fastapi-20 and -22 at both contexts)."""
    step = "Then wrap the WSGI (e.g. Flask) app with the middleware."
    answer = "You can use the WSGIMiddleware to wrap your WSGI application, for example Flask."
    passage = P(1, "docs/advanced/wsgi.md", f"{answer} {step}")
    question = "embed an existing Flask application inside my app"
    quotes = evidence.select([passage], question, Similar({step: 0.63, answer: 0.58}))
    assert quotes[0].text == answer
    # Without the rule the step, more similar, would lead.
    assert evidence.SEQUEL_PENALTY > 0.63 - 0.58


@pytest.mark.parametrize(
    "text",
    [
        "Then wrap the app with the middleware.",
        "And then, right after the yield, we unload the model.",
        "You can then deploy that container image in one of a few ways.",
        "We then close the session.",
        "After that, restart the server.",
        "Next, add the dependency.",
    ],
)
def test_sequels_are_recognised(text: str) -> None:
    assert evidence.sequel(text)


@given(st.text(alphabet=st.characters(categories=("L", "N", "Zs", "P")), max_size=80))
def test_a_sentence_is_a_sequel_by_its_opening_words_alone(rest: str) -> None:
    """Whatever follows, "Then …" is a sequel; the same words after a self-contained
    opening ("Deploy …") are not, nor is a "then" later in the sentence."""
    assert evidence.sequel(f"Then {rest}")
    assert not evidence.sequel(f"Deploy the app, then {rest}")
    assert not evidence.sequel(f"Thenceforth {rest}")


def test_a_chunk_longer_than_a_passage_is_cut_around_what_the_question_asks() -> None:
    """A small model's passage is 600 characters; a tldr page's chunk is longer, and its
    answering command sat after the cut (bench quotes, 2k: tldr-07)."""
    lines = ["# ls", "", "> List directory contents.", ""]
    for n in range(8):
        lines += [f"- Show the entries of a folder, style number {n}:", "", f"`ls -{n}`", ""]
    lines += ["- Sort the listing by modification time, newest first:", "", "`ls -t`"]
    asked = {"sort", "modif", "time"} & set(grounding.terms("sort by modification time"))
    assert asked  # the question's stemmed terms
    start = grounded.focused(lines, (0, len(lines) - 1), 300, asked)
    _, text = grounded.cut(lines, start, len(lines) - 1, 300)
    assert "Sort the listing by modification time" in text
    # Without it the passage would have kept the top and left the answer out.
    assert "Sort the listing" not in grounded.cut(lines, 0, len(lines) - 1, 300)[1]


def test_a_chunk_that_fits_or_a_question_without_terms_keeps_its_start() -> None:
    lines = ["Alpha beta gamma.", "Delta epsilon.", "Zeta eta theta."]
    assert grounded.focused(lines, (0, 2), 1000, {"zeta"}) == 0
    assert grounded.focused(lines, (0, 2), 20, set()) == 0


@given(
    st.lists(
        st.lists(st.sampled_from(["cut", "off", "time", "payment", "other", "words"]), max_size=6),
        min_size=1,
        max_size=30,
    ),
    st.integers(min_value=10, max_value=200),
)
def test_the_focused_window_holds_at_least_the_question_terms_of_the_top(
    words: list[list[str]], max_chars: int
) -> None:
    """Whatever the lines, the window starts inside the span and holds at least as many of
    the question's terms as the window from the span's top would."""
    lines = [" ".join(w) for w in words]
    asked = set(grounding.terms("cut off time"))
    end = len(lines) - 1
    start = grounded.focused(lines, (0, end), max_chars, asked)
    assert 0 <= start <= end

    def held(first: int) -> int:
        last, _ = grounded.cut(lines, first, end, max_chars)
        return len(asked & set(grounding.terms(" ".join(lines[first : last + 1]))))

    assert held(start) >= held(0)


def test_the_pronoun_i_is_not_a_name_of_the_question() -> None:
    """ "I" is capitalised inside a sentence but names nothing; as a name its first
    letters are in nearly every sentence, so every candidate held "a name" of any
    question asked in the first person (bench quotes, fresh: wiki-22, wiki-25)."""
    assert evidence.names("What should I do first if I see a payment going out twice?") == set()
    assert evidence.names("Where do I send Mexico payments under SEPA?") == {"mexico", "sepa"}
