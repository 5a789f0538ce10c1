"""Quotes that state the answer (issue 35, point 3): a sentence read with the command or
list it introduces, its list's introduction, the sentence a "This…" points back to; the
kind of answer the question asks for and the names it has weigh in the choice."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_lsp.engine.agent import answer_kind, evidence, grounded, prose

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
