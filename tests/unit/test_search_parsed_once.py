"""`kb/search` answers its list, its did-you-mean and its warnings from one parse of the
query over one snapshot of the roots (issue 38, point 2): the query is parsed once, where
the list and the correction parsed it twice before and the warnings split it a third
time, reading the indexed fields again; the answer is the same as asking for each apart."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.conftest import copy_example_workspace
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine import queries
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.protocol import SearchHit


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("once")
    workspace = copy_example_workspace(root / "workspace")
    knowledge = KnowledgeBase(
        [workspace], load_settings({}).settings, embedder=HashingEmbedder(), storage=root / "st"
    )
    knowledge.sync()
    yield knowledge
    knowledge.close()


@pytest.mark.parametrize(
    ("query", "filter"),
    [("Mexico payments", None), ("close ownr:priya checklist", None), ("deploy", "tag:runbook")],
)
def test_the_query_is_parsed_once_and_the_answer_is_the_same(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, query: str, filter: str | None
) -> None:
    parsed: list[str] = []
    real = queries.parse_query

    def counting(text: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(text)
        return real(text, *args, **kwargs)

    fields: list[set[str]] = []
    known = kb.queries.field_names

    def reading_fields() -> set[str]:
        fields.append(known())
        return fields[-1]

    monkeypatch.setattr(queries, "parse_query", counting)
    monkeypatch.setattr(kb.queries, "field_names", reading_fields)
    hits, fix, warnings = kb.queries.search_with_hints(query, filter=filter)
    assert parsed == [query]
    # The fields are read to split a query that uses the filter language, once.
    assert len(fields) == (1 if ":" in query else 0)
    apart = (
        kb.search(query, filter=filter),
        kb.did_you_mean(query, filter),
        kb.queries.query_warnings(query, filter),
    )
    assert (hits, fix, warnings) == apart
    assert hits, "a query with results, so no correction searches again"
    assert parsed.count(query) == 4  # apart: the list, the correction, the warnings


@pytest.mark.parametrize("query", ["Mexico payments", "tag:runbook"])
def test_each_hit_is_built_once_with_its_metadata(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    """A hit is made once, its key metadata in it, where it was made and then copied with
    its metadata (and once more for a chunk shown by FTS's own snippet)."""
    built: list[str] = []
    copied: list[str] = []
    real_init = SearchHit.__init__
    real_copy = SearchHit.model_copy

    def init(self: SearchHit, **fields: Any) -> None:
        built.append(fields["path"])
        real_init(self, **fields)

    def copy(self: SearchHit, **kwargs: Any) -> SearchHit:
        copied.append(self.path)
        return real_copy(self, **kwargs)

    monkeypatch.setattr(SearchHit, "__init__", init)
    monkeypatch.setattr(SearchHit, "model_copy", copy)
    hits = kb.search(query)
    assert hits
    assert sorted(built) == sorted(hit.path for hit in hits)
    assert copied == []
    assert any(hit.meta is not None for hit in hits)
