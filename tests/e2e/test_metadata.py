"""Metadata over the real server: filters in kb/search (a parameter and typed inline),
kb/schema, metadata on hits, edits followed after save, bad filters as InvalidParams."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .conftest import KbClient, running_server, wait_for

# Front matter the test adds to the example workspace: path -> (front matter, mtime).
FRONT = {
    "payments/mexico-payments.md": (
        "tags: [payments, treasury]\nstatus: draft\nowner: Ana López\ndate: 2026-10-14",
        datetime(2026, 10, 20, 12),
    ),
    "payments/germany-payments.md": (
        "tags: [payments]\nstatus: published\nowner: Jonas Weber\ndate: 2026-09-02",
        datetime(2026, 9, 5, 12),
    ),
    "payments/brazil-payments.md": (
        "tags: [payments, archived]\nstatus: published\ndate: 2025-12-01",
        datetime(2026, 1, 10, 12),
    ),
    "runbooks/treasury-close.md": (
        "tags: [treasury, runbook]\nowner: Ana López\ndate: 2026-11-02",
        datetime(2026, 11, 3, 12),
    ),
    "runbooks/incident-response.md": ("tags: [runbook]", datetime(2026, 8, 1, 12)),
}


def add_front_matter(workspace: Path) -> None:
    """The test's front matter in place of these files' own; the example wiki's other
    notes keep theirs (projects/, meetings/), so they count below."""
    for rel, (front, mtime) in FRONT.items():
        path = workspace / rel
        body = path.read_text(encoding="utf-8")
        if body.startswith("---\n"):
            body = body[body.index("\n---\n", 4) + len("\n---\n") :]
        path.write_text(f"---\n{front}\n---\n{body}", "utf-8")
        stamp = mtime.timestamp()
        os.utime(path, (stamp, stamp))


def paths(response: dict[str, Any]) -> set[str]:
    return {hit["path"] for hit in response["results"]}


# Every file the filter keeps is listed, however weakly it matches the words.
NO_THRESHOLD = {"search": {"threshold": 0.0}}


@pytest.fixture
async def kb(workspace: Path, storage: Path):  # type: ignore[no-untyped-def]
    add_front_matter(workspace)
    async with running_server([workspace], storage, options=NO_THRESHOLD) as client:
        yield client


async def test_filters_return_exactly_the_expected_files(kb: KbClient) -> None:
    cases = {
        "tag:payments": {
            "payments/mexico-payments.md",
            "payments/germany-payments.md",
            "payments/brazil-payments.md",
        },
        "tag:payments -tag:archived": {
            "payments/mexico-payments.md",
            "payments/germany-payments.md",
        },
        "folder:runbooks": {"runbooks/treasury-close.md", "runbooks/incident-response.md"},
        "date>=2026-10-01 date<=2026-12-31": {
            "payments/mexico-payments.md",
            "runbooks/treasury-close.md",
            # The example wiki's own dates.
            "meetings/2026-10-14-payments-sync.md",
            "meetings/2026-11-03-retro.md",
            "projects/budget_brief.md",
        },
        "modified:2026-10 OR modified:2026-11-03": {
            "payments/mexico-payments.md",
            "runbooks/treasury-close.md",
        },
        'owner:"Ana López" status:draft': {"payments/mexico-payments.md"},
        "has:owner -folder:payments": {"runbooks/treasury-close.md", "projects/policy_brief.md"},
        "has:owner -folder:payments -folder:projects": {"runbooks/treasury-close.md"},
        "(tag:archived OR status:draft) folder:payments": {
            "payments/mexico-payments.md",
            "payments/brazil-payments.md",
        },
    }
    for filter_text, expected in cases.items():
        response = await kb.search("payments treasury runbook notes", filter=filter_text, limit=50)
        assert paths(response) == expected, filter_text
        # The same typed inline in the query, with words and alone.
        inline = await kb.search(f"payments treasury runbook notes {filter_text}", limit=50)
        assert paths(inline) == expected, f"inline: {filter_text}"
        alone = await kb.search(filter_text, limit=50)
        assert paths(alone) == expected, f"alone: {filter_text}"


async def test_hits_carry_metadata(kb: KbClient) -> None:
    response = await kb.search("mexico payments", filter="tag:treasury")
    hit = next(h for h in response["results"] if h["path"] == "payments/mexico-payments.md")
    assert hit["meta"] == {
        "tags": ["payments", "treasury"],
        "status": "draft",
        "modified": "2026-10-20",
        # No schema in this workspace: nothing a model extracted.
        "extracted": {},
        "extractedBy": None,
    }


async def test_a_selective_filter_with_a_semantic_query_fills_the_page(
    workspace: Path, storage: Path
) -> None:
    add_front_matter(workspace)
    # 60 more notes that match the query better than any tagged file.
    for i in range(60):
        (workspace / "noise").mkdir(exist_ok=True)
        (workspace / "noise" / f"wire-{i:02}.md").write_text(
            f"# Wire transfer {i}\n\nwire transfer payments cut-off payments {i}\n"
        )
    # No threshold: this is about the top-k cut (vector candidates are taken among the
    # files the filter keeps), not about which weak matches count as relevant.
    async with running_server([workspace], storage, options=NO_THRESHOLD) as kb:
        unfiltered = await kb.search("wire transfer payments", limit=5, mode="semantic")
        assert all(h["path"].startswith("noise/") for h in unfiltered["results"])
        response = await kb.search("wire transfer payments", filter="-folder:noise", limit=5)
        assert len(response["results"]) == 5
        assert not any(h["path"].startswith("noise/") for h in response["results"])
        semantic = await kb.search(
            "wire transfer payments", filter="-folder:noise", limit=5, mode="semantic"
        )
        assert len(semantic["results"]) == 5


async def test_editing_tags_is_reflected_after_save(kb: KbClient, workspace: Path) -> None:
    path = workspace / "runbooks" / "incident-response.md"
    text = path.read_text(encoding="utf-8").replace("tags: [runbook]", "tags: [runbook, paging]")
    path.write_text(text, encoding="utf-8")
    kb.lsp.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri())
        )
    )

    async def tagged() -> bool:
        response = await kb.search("incident", filter="tag:paging")
        return paths(response) == {"runbooks/incident-response.md"}

    await wait_for(tagged, "the new tag to be searchable")
    schema = await kb.request("kb/schema", {})
    tag = next(f for f in schema["fields"] if f["name"] == "tag")
    assert {"value": "paging", "count": 1} in tag["top"]


async def test_schema_counts(kb: KbClient) -> None:
    schema = await kb.request("kb/schema", {})
    status = await kb.status()
    assert schema["files"] == status["files"]
    fields = {f["name"]: f for f in schema["fields"]}
    # Five files from the test, and the example wiki's two meeting notes.
    assert fields["tag"]["files"] == 7
    assert {v["value"]: v["count"] for v in fields["tag"]["top"]} == {
        "payments": 3,
        "meeting": 2,
        "runbook": 2,
        "treasury": 2,
        "archived": 1,
    }
    # Three from the test, and the wiki's own: policy_brief.md and budget_brief.md.
    assert fields["status"]["files"] == 5
    assert fields["date"]["types"] == ["date"]
    assert fields["date"]["files"] == 7  # four from the test, the meetings and the budget
    assert fields["owner"]["files"] == 4
    assert fields["owner"]["top"][0] == {"value": "Ana López", "count": 2}
    assert fields["folder"]["files"] == status["files"]
    # Also as a command, for clients without custom requests.
    command = await kb.request(
        "workspace/executeCommand", types.ExecuteCommandParams(command="kb.schema", arguments=[{}])
    )
    assert command["fields"] == schema["fields"]


async def test_a_bad_filter_is_invalid_params_with_its_position(kb: KbClient) -> None:
    with pytest.raises(JsonRpcException) as err:
        await kb.search("payments", filter="tag:payments )")
    assert err.value.code == -32602
    assert "character 14" in str(err.value)
    with pytest.raises(JsonRpcException) as err:
        await kb.search("payments modified>2026-13-01")
    assert err.value.code == -32602
    assert "no month 13" in str(err.value)
    # The same through workspace/executeCommand.
    with pytest.raises(JsonRpcException) as err:
        await kb.request(
            "workspace/executeCommand",
            types.ExecuteCommandParams(
                command="kb.search", arguments=[{"query": "payments", "filter": "tag:"}]
            ),
        )
    assert err.value.code == -32602
    assert "character 5" in str(err.value) and "needs a value" in str(err.value)
    # A misspelt field: which one it looks like.
    with pytest.raises(JsonRpcException) as err:
        await kb.search("payments", filter="tag:payments stauts:draft")
    assert err.value.code == -32602
    assert "character 14: no indexed file has the field 'stauts'; did you mean 'status'?" in (
        str(err.value)
    )
    # The server keeps serving.
    assert (await kb.search("payments"))["results"]


async def test_malformed_front_matter_is_listed_in_the_status(
    kb: KbClient, workspace: Path
) -> None:
    (workspace / "broken.md").write_text("---\ntitle: x\nstatus: [oops\n---\n# Broken\n\nbody\n")

    async def listed() -> dict[str, Any] | None:
        status = await kb.status()
        return next((p for p in status.get("problems", []) if p["path"] == "broken.md"), None)

    problem = await wait_for(listed, "the broken front matter in kb/status")
    assert problem["line"] == 2 and "YAML" in problem["message"]
    await kb.wait_for_hit("broken body", "broken.md")
