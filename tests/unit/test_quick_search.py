"""A one-shot keyword search and `kb schema` from the store alone
(`runtime/quick_search.py`): the same `kb/search` payload and kept list, the same
`kb/schema` payload as the full path, and the full path whenever the index is not
current or the params are not plain."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.helpers.cli import HASHING

from kb_lsp.config import load_settings
from kb_lsp.contract.operations import SCHEMA, SEARCH, Call
from kb_lsp.engine.storage import store_dir_for
from kb_lsp.protocol import SchemaParams, SearchParams, dump
from kb_lsp.runtime import Hooks, Runtime
from kb_lsp.runtime.dispatch import answer
from kb_lsp.runtime.list_file import list_file
from kb_lsp.runtime.local_socket import CLI_CLIENT
from kb_lsp.runtime.quick import quick_settings
from kb_lsp.runtime.quick_search import quick_schema, quick_search

QUERIES: list[dict[str, Any]] = [
    {"query": "Mexico payments SPEI"},
    {"query": "SPEI folder:payments"},
    {"query": "tag:runbook"},
    {"query": "payments", "filter": "-status:draft"},
    {"query": "paymnets deploymnet checklist"},  # did-you-mean
    {"query": "incident", "limit": 1},
    {"query": "zzzz nothing matches this"},
]


def wanted(given: dict[str, Any]) -> dict[str, Any]:
    return {"limit": 10, "mode": "keyword", "paths": None, "filter": None, **given}


def full_search(workspace: Path, storage: Path, params: dict[str, Any]) -> dict[str, Any]:
    """`kb search`'s full path: the one-shot runtime, synced, then searched."""
    runtime = Runtime.one_shot(Hooks())
    try:
        runtime.open([workspace], load_settings({"storage": str(storage)}).settings).result()
        runtime.reindex().result()
        search = SearchParams.model_validate(params)
        return dump(answer(runtime, SEARCH, search, Call(CLI_CLIENT)))
    finally:
        runtime.close()
        # A closed runtime's store lock goes with the last reference to it, which a cycle
        # may hold: collected now, the lean path below finds the store free, as the next
        # `kb` process does.
        gc.collect()


@pytest.fixture
def indexed(workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    full_search(workspace, storage, wanted({"query": "warm up"}))
    return workspace


def lean(workspace: Path, storage: Path, params: dict[str, Any]) -> dict[str, Any] | None:
    settings = quick_settings({"storage": str(storage)}, {}, strict=True)
    assert settings is not None
    return quick_search(workspace, settings, params, CLI_CLIENT)


def kept_list(workspace: Path, storage: Path) -> Any:
    path = list_file(store_dir_for(storage, workspace.resolve()), CLI_CLIENT)
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("given", QUERIES)
def test_the_lean_search_is_the_full_search_on_the_wire(
    indexed: Path, storage: Path, given: dict[str, Any]
) -> None:
    params = wanted(given)
    got = lean(indexed, storage, params)
    assert got is not None, "the index is current: the lean path answers"
    lean_list = kept_list(indexed, storage)
    expected = full_search(indexed, storage, params)
    assert got == expected
    assert lean_list == kept_list(indexed, storage)
    assert lean_list["hits"] == expected["results"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(words=st.lists(st.sampled_from(["payments", "SPEI", "deploy", "incident", "tag:meeting",
                                        "runbook", "budget", "status:draft", "Mexico", "retro",
                                        "checklist", "-tag:runbook", "files", "paymnt"]),
                      min_size=1, max_size=4))  # fmt: skip
# A typo whose correction finds nothing: the lean path once offered it all the same.
@example(words=["tag:meeting", "status:draft", "paymnt"])
def test_any_query_of_the_notes_words_is_answered_alike(
    indexed: Path, storage: Path, words: list[str]
) -> None:
    params = wanted({"query": " ".join(words)})
    got = lean(indexed, storage, params)
    if got is None:  # only a query the full path refuses (a filter it cannot read)
        with pytest.raises(ValueError):
            full_search(indexed, storage, params)
        return
    assert got == full_search(indexed, storage, params)


def test_a_change_on_disk_sends_the_search_the_full_way(indexed: Path, storage: Path) -> None:
    params = wanted({"query": "SPEI"})
    assert lean(indexed, storage, params) is not None
    note = indexed / "payments" / "mexico-payments.md"
    note.write_text(note.read_text() + "\nA new line about SPEI.\n")
    assert lean(indexed, storage, params) is None  # changed
    full_search(indexed, storage, params)
    assert lean(indexed, storage, params) is not None  # synced again: current
    (indexed / "new-note.md").write_text("# New\n\nSPEI again.\n")
    assert lean(indexed, storage, params) is None  # added
    full_search(indexed, storage, params)
    os.remove(indexed / "new-note.md")
    assert lean(indexed, storage, params) is None  # removed


@pytest.mark.parametrize(
    "given",
    [
        {"query": "SPEI", "mode": "hybrid"},
        {"query": "SPEI", "paths": ["payments/**"]},
        {"query": "SPEI", "limit": 0},
        {"query": "SPEI", "filter": "tag:("},  # malformed: the full path says so
    ],
)
def test_what_the_lean_path_leaves_to_the_full_one(
    indexed: Path, storage: Path, given: dict[str, Any]
) -> None:
    assert lean(indexed, storage, wanted(given)) is None


def test_no_index_and_settings_it_has_no_rule_for_leave_it_too(
    workspace: Path, storage: Path
) -> None:
    assert lean(workspace, storage, wanted({"query": "SPEI"})) is None  # no index yet
    assert quick_settings({"include": ["**/*.txt"]}, {}, strict=True) is None
    assert quick_settings(None, {"KB_SEARCH_THRESHOLD": "0.9"}, strict=True) is None
    assert quick_settings({"include": ["**/*.txt"]}, {}) is not None  # a status ignores it


def test_the_lean_schema_is_the_full_schema_on_the_wire(indexed: Path, storage: Path) -> None:
    settings = quick_settings({"storage": str(storage)}, {}, strict=True)
    assert settings is not None
    got = quick_schema(indexed, settings)
    assert got is not None and {"tag", "status", "folder"} <= {f["name"] for f in got["fields"]}
    runtime = Runtime.one_shot(Hooks())
    try:
        runtime.open([indexed], load_settings({"storage": str(storage)}).settings).result()
        runtime.reindex().result()
        assert got == dump(answer(runtime, SCHEMA, SchemaParams()))
    finally:
        runtime.close()
        gc.collect()
    (indexed / "new-note.md").write_text("---\ntags: [fresh]\n---\n# New\n")
    assert quick_schema(indexed, settings) is None  # not current: the full path syncs first


def test_every_stand_in_dumps_as_its_wire_model() -> None:
    # Built alike both ways, a field named like the class's own bookkeeping (`model`)
    # included; an extracted value inside a hit's meta, as the search shows it.
    from kb_lsp import protocol
    from kb_lsp.runtime import quick_models

    def sample(m: Any) -> Any:
        place = m.Range(start=m.Position(line=2, character=4), end=m.Position(line=2, character=9))
        value = m.ExtractedValue(value="42", evidence="forty-two", range=place, start=30, end=39)
        meta = m.HitMeta(tags=["a"], extracted={"amount": [value]}, extracted_by="ollama/x")
        hit = m.SearchHit(
            n=1, uri="file:///w/a.md", path="a.md", root="/w", title="A",
            label="context match", score=0.5, snippet="s", heading="h",
            range=m.Range.of_lines(3, 7),
        )  # fmt: skip
        field = m.SchemaField(
            name="amount", types=["number"], files=2,
            top=[m.SchemaValue(value="42", count=1)],
            models=[m.FieldExtraction(model="ollama/x", kept=1, rejected=1)],
        )  # fmt: skip
        return [hit.model_copy(update={"meta": meta}), m.SchemaResponse(files=2, fields=[field])]

    lite = [item.wire() for item in sample(quick_models)]
    assert lite == [protocol.dump(item) for item in sample(protocol)]
