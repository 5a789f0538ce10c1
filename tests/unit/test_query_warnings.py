"""Filter slips typed in a query are said beside the results, with the query as it was
probably meant, and the search still runs as typed (issue 39, point 5): a field no file
has close to one that files have (`ownr:priya`), a parenthesis without its pair
(`tag:payments )`), a value no file has where a longer one exists (`owner:priya` beside
"Priya Raman"). Plain words, filters that match and unrelated colons get no warning."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import copy_example_workspace
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.metadata.filters import FilterError


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("hints")
    workspace = copy_example_workspace(root / "workspace")
    knowledge = KnowledgeBase(
        [workspace], load_settings({}).settings, embedder=HashingEmbedder(), storage=root / "st"
    )
    knowledge.sync()
    yield knowledge
    knowledge.close()


def paths(kb: KnowledgeBase, query: str, filter: str | None = None) -> set[str]:
    return {hit.path for hit in kb.search(query, filter=filter)}


def test_a_mistyped_field_is_searched_as_words_and_named_with_what_was_meant(
    kb: KnowledgeBase,
) -> None:
    [warning] = kb.queries.query_warnings("ownr:priya")
    assert warning.where == "query" and warning.position == 0
    assert "'ownr'" in warning.message and "searched as words" in warning.message
    # The field and the value it stands for: equality on "priya" would keep nothing.
    assert warning.suggestion == 'owner:"Priya Raman"'
    assert paths(kb, warning.suggestion) == {
        "payments/mexico-payments.md",
        "projects/policy_brief.md",
        "runbooks/treasury-close.md",
    }
    # The words around it stay where they were.
    [inside] = kb.queries.query_warnings("close ownr:priya checklist")
    assert inside.position == len("close ")
    assert inside.suggestion == 'close owner:"Priya Raman" checklist'


def test_a_parenthesis_without_its_pair_is_left_out_and_said(kb: KnowledgeBase) -> None:
    [warning] = kb.queries.query_warnings("tag:payments )")
    assert warning.position == len("tag:payments ")
    assert "')' without a matching '('" in warning.message
    assert warning.suggestion == "tag:payments"
    # The search ran as typed all the same: the filter's files.
    assert paths(kb, "tag:payments )") == paths(kb, "tag:payments")
    [opened] = kb.queries.query_warnings("tag:runbook treasury (")
    assert opened.position == len("tag:runbook treasury ")
    assert "'(' without a matching ')'" in opened.message


def test_a_value_no_file_has_beside_a_longer_one(kb: KnowledgeBase) -> None:
    [typed] = kb.queries.query_warnings("owner:priya")
    assert typed.where == "query" and typed.position == len("owner:")
    assert typed.suggestion == 'owner:"Priya Raman"'
    assert paths(kb, "owner:priya") == set()
    # Given as a filter: the same hint, in the filter's own characters.
    [given_filter] = kb.queries.query_warnings("close", "status:draft owner:priya")
    assert given_filter.where == "filter"
    assert given_filter.position == len("status:draft owner:")
    assert given_filter.suggestion == 'status:draft owner:"Priya Raman"'
    # Negated, or a tag that is the start of a longer one.
    [negated] = kb.queries.query_warnings("-owner:priya payments")
    assert negated.suggestion == '-owner:"Priya Raman" payments'
    [tag] = kb.queries.query_warnings("tag:treas")
    assert tag.suggestion == "tag:treasury"


@pytest.mark.parametrize(
    "query",
    [
        "payments tag:runbook",  # a filter that keeps files
        'owner:"Priya Raman"',  # the whole value
        "owner:priya*",  # a pattern is the user's own choice
        "mexico payments",  # words only
        "timeout error:404",  # a colon in pasted text, nothing like a field
        "payments (draft)",  # parentheses among plain words are text
        "owner:nobody",  # no file has it and no longer value holds it
    ],
)
def test_no_warning_where_nothing_looks_mistyped(kb: KnowledgeBase, query: str) -> None:
    assert kb.queries.query_warnings(query) == []


@given(st.text(max_size=80), st.one_of(st.none(), st.text(max_size=40)))
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_it_never_raises_and_a_suggestion_is_another_text(
    kb: KnowledgeBase, query: str, filter: str | None
) -> None:
    warnings = kb.queries.query_warnings(query, filter)
    for warning in warnings:
        text = query if warning.where == "query" else filter
        assert text is not None and 0 <= warning.position < len(text)
        assert warning.suggestion != text
        if warning.where == "query" and warning.suggestion:
            # A suggestion is something the search takes (or refuses by name).
            with contextlib.suppress(FilterError):
                kb.search(warning.suggestion)
