"""Dates a filter cannot compare are filter errors at their character, and nothing typed
in a filter raises anything else, when parsed or when run against a real store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import copy_example_workspace
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.metadata.filters import FilterError, parse_filter, split_query

TODAY = date(2026, 11, 25)


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("modified>-9999y", 9),
        ("date:9999", 5),
        ("date<=9999-12-31", 6),
        ("date>=9999-12", 6),
        ("date>0000-01-01", 5),
        ("status:draft (modified<-5000y OR tag:x)", 23),
    ],
)
def test_a_date_outside_the_calendar_is_a_filter_error(text: str, position: int) -> None:
    with pytest.raises(FilterError) as caught:
        parse_filter(text, today=TODAY)
    assert caught.value.position == position
    assert "out of range" in caught.value.message
    assert str(caught.value).startswith(f"filter, character {position + 1}: ")


def test_the_last_dates_of_the_calendar_still_compare() -> None:
    for text in ("date<9999-12-30", "modified>-9999m", "modified>-9999d", "date>0001-01-01"):
        parse_filter(text, today=TODAY)


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    folder = tmp_path_factory.mktemp("filters")
    workspace = copy_example_workspace(folder / "workspace")
    (workspace / "dated.md").write_text("---\ndate: 2026-10-14\npriority: 2\n---\n# Dated\n\nx\n")
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    opened = KnowledgeBase(
        [workspace], settings, embedder=HashingEmbedder(), storage=folder / "storage"
    )
    opened.sync()
    yield opened
    opened.close()


def test_dates_far_from_now_compare_file_times(kb: KnowledgeBase) -> None:
    """An mtime in nanoseconds runs out in 2262: later and earlier bounds still work."""
    every = len(kb.files())
    assert len(kb.search("", filter="modified<9000-01-01", limit=100)) == every
    assert len(kb.search("", filter="modified>1200-01-01", limit=100)) == every
    assert kb.search("", filter="modified>9000-01-01") == []
    dated = {h.path for h in kb.search("", filter="has:date", limit=100)}
    assert "dated.md" in dated
    assert {h.path for h in kb.search("", filter="date<9999-12-30", limit=100)} == dated


def test_an_out_of_range_date_typed_in_a_query_is_a_filter_error(kb: KnowledgeBase) -> None:
    with pytest.raises(FilterError) as caught:
        kb.search("payments modified>-9999y")
    assert str(caught.value).startswith("query, character 19: '-9999y' is out of range")


# --- anything typed in a filter -------------------------------------------------------------

_FIELD = st.sampled_from(
    ["modified", "date", "tag", "tags", "folder", "size", "words", "title", "has", "priority"]
)
_OPERATOR = st.sampled_from([":", "=", ">", ">=", "<", "<="])
_DIGITS = st.integers(min_value=0, max_value=99_999).map(str)
_VALUE = st.one_of(
    st.tuples(_DIGITS, _DIGITS, _DIGITS).map(lambda t: "-".join(t)),
    st.tuples(_DIGITS, _DIGITS).map(lambda t: "-".join(t)),
    _DIGITS,
    st.tuples(_DIGITS, st.sampled_from("dwmyDWMYx")).map(lambda t: f"-{t[0]}{t[1]}"),
    st.sampled_from(["today", "yesterday", "1e309", "-0", ".5", "10kb", "3MiB", "*", "a*b"]),
    st.text(max_size=12).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
    st.text(alphabet=st.characters(exclude_characters=' ()"'), max_size=12),
)
_TERM = st.tuples(st.sampled_from(["", "-", "NOT "]), _FIELD, _OPERATOR, _VALUE).map("".join)
_ITEM = st.one_of(_TERM, st.text(max_size=8), st.sampled_from(["(", ")", "OR", "AND", "-", '"']))
_FILTER = st.lists(_ITEM, max_size=8).map(" ".join)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(text=_FILTER)
def test_a_filter_raises_nothing_but_a_filter_error(kb: KnowledgeBase, text: str) -> None:
    try:
        node = parse_filter(text)
    except FilterError as err:
        assert 0 <= err.position <= len(text)
        assert str(err).startswith(f"filter, character {err.position + 1}: ")
    else:
        kb.search("", filter=text)  # compiled to SQL and run
        kb.search("payments", filter=text, mode="keyword")
        assert node is not None
    try:
        split_query(f"payments {text}", ["priority", "date"])
    except FilterError as err:
        assert str(err).startswith(f"query, character {err.position + 1}: ")
