"""Citations of a grounded answer checked against the passages given; sources merged."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from kb_lsp.engine.agent.citations import check, merge_sources
from kb_lsp.protocol import Range, Source


@dataclass(frozen=True)
class P:
    n: int
    path: str


GIVEN = [P(1, "ops/deploy.md"), P(2, "ops/deploy.md"), P(3, "payments/mexico.md")]


def test_numbers_and_paths_of_given_passages_are_kept() -> None:
    checked = check("Frozen on Fridays [2] [payments/mexico.md:4-9], see [1, 3].", GIVEN)
    assert checked.cited == [2, 1, 3]
    assert checked.dropped == []
    assert checked.answer == "Frozen on Fridays [2] [payments/mexico.md:4-9], see [1, 3]."


def test_citations_outside_the_passages_are_taken_out() -> None:
    checked = check("Frozen [4]. Cut-off 14:30 [3, 7] [peru.md:2]. Done [#9].", GIVEN)
    assert checked.cited == [3]
    assert checked.dropped == ["[4]", "[3, 7]", "[#9]", "[peru.md:2]"]
    assert checked.answer == "Frozen. Cut-off 14:30 [3]. Done."


def source(n: int | None, path: str, first: int, last: int) -> Source:
    return Source(n=n, uri=f"file:///w/{path}", path=path, range=Range.of_lines(first, last))


def test_duplicate_sources_merge_but_numbered_ones_stay_apart() -> None:
    merged = merge_sources(
        [
            source(None, "a.md", 0, 4),
            source(None, "a.md", 5, 9),  # touches the first: one range
            source(None, "a.md", 30, 31),  # apart: its own
            source(1, "b.md", 0, 3),
            source(2, "b.md", 2, 6),  # another number: [2] must open its own lines
            source(1, "b.md", 3, 8),
        ]
    )
    assert [(s.n, s.path, s.range.start.line, s.range.end.line - 1) for s in merged] == [
        (None, "a.md", 0, 9),
        (None, "a.md", 30, 31),
        (1, "b.md", 0, 8),
        (2, "b.md", 2, 6),
    ]


@given(st.text(alphabet=st.sampled_from(list("ab [],;#0123456789.md/:-")), max_size=80))
def test_any_model_text_checks_without_error(text: str) -> None:
    checked = check(text, GIVEN)
    assert set(checked.cited) <= {1, 2, 3}
    assert all(c.strip() for c in checked.dropped)
    # What is kept cites only given passages.
    assert check(checked.answer, GIVEN).dropped == []
