"""The server end to end: index, search, open, status, commands, hover."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .conftest import KbClient, initialize_like_vscode, running_server


async def test_first_index_reports_progress_and_searches(kb: KbClient, workspace: Path) -> None:
    ended = kb.ended_progress()
    assert ended, "no work-done progress ended"
    begin = ended[0][0]
    assert isinstance(begin, types.WorkDoneProgressBegin)
    assert begin.cancellable
    reports = [r for r in ended[0] if isinstance(r, types.WorkDoneProgressReport)]
    files = len(list(workspace.rglob("*.md")))
    # "Reading 12/14 files", then "Keyword search ready · embedding 30/41 passages" (the
    # extension's one label per phase): each phase counts its own unit from 0 against a
    # total fixed for the phase, on one bar that never goes back.
    pattern = r"Reading (\d+)/(\d+) files|Keyword search ready · embedding (\d+)/(\d+) passages"
    found = [re.fullmatch(pattern, r.message or "") for r in reports]
    assert all(m or r.message == "Scanning files…" for m, r in zip(found, reports, strict=True)), [
        r.message for r in reports
    ]
    matched = [m for m in found if m]
    reading = [(int(m.group(1)), int(m.group(2))) for m in matched if m.group(1)]
    embedding = [(int(m.group(3)), int(m.group(4))) for m in matched if m.group(3)]
    assert {total for _, total in reading} == {files}
    assert len({total for _, total in embedding}) == 1
    phases = ["embedding" if m.group(3) else "reading" for m in matched]
    assert phases == sorted(phases, key=["reading", "embedding"].index)
    for counts in (reading, embedding):
        assert [done for done, _ in counts] == sorted(done for done, _ in counts)
    percentages = [r.percentage for r in reports]
    assert percentages == sorted(percentages)
    assert reports[-1].percentage == 100

    status = await kb.status()
    assert status["state"] == "ready"
    assert status["files"] == files
    assert status["chunks"] >= files
    assert status["readOnly"] is False

    response = await kb.search("Mexico payments SPEI cut-off")
    results = response["results"]
    assert results, "no results"
    assert [hit["n"] for hit in results] == list(range(1, len(results) + 1))
    assert results[0]["path"] == "payments/mexico-payments.md"
    assert results[0]["label"] == "filename match"
    assert results[0]["uri"] == (workspace / "payments/mexico-payments.md").as_uri()
    assert response["index"]["state"] == "ready"

    opened = await kb.request("kb/openResult", {"n": 1})
    assert opened["uri"] == results[0]["uri"]
    assert opened["range"] == results[0]["range"]

    with pytest.raises(JsonRpcException) as err:
        await kb.request("kb/openResult", {"n": len(results) + 5})
    assert err.value.code == -32602
    assert str(err.value) == (
        f"No result {len(results) + 5}: the last search returned {len(results)} results"
    )


async def test_commands_status_and_hover(kb: KbClient, workspace: Path) -> None:
    result = await kb.request(
        "workspace/executeCommand",
        types.ExecuteCommandParams(command="kb.search", arguments=[{"query": "glossary"}]),
    )
    assert any(hit["path"] == "glossary.md" for hit in result["results"])
    opened = await kb.request(
        "workspace/executeCommand",
        types.ExecuteCommandParams(command="kb.openResult", arguments=[{"n": 1}]),
    )
    assert opened["uri"] == result["results"][0]["uri"]
    status = await kb.request(
        "workspace/executeCommand", types.ExecuteCommandParams(command="kb.status")
    )
    assert status["state"] == "ready"

    readme = workspace / "README.md"
    line_no, line = next(
        (i, text)
        for i, text in enumerate(readme.read_text().splitlines())
        if "(glossary.md)" in text
    )
    hover = await kb.lsp.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=readme.as_uri()),
            position=types.Position(line=line_no, character=line.index("glossary.md")),
        )
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert "`glossary.md`" in hover.contents.value
    assert hover.contents.value.startswith("**")

    nothing = await kb.lsp.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=readme.as_uri()),
            position=types.Position(line=0, character=0),
        )
    )
    assert nothing is None


async def test_the_editor_s_open_notes_are_synced_and_hovered_as_shown(
    workspace: Path, storage: Path
) -> None:
    """The server asks for open and close (the open files go first to the vector pass),
    and a hover reads an open note as the editor holds it, unsaved lines included."""
    async with running_server([workspace], storage, initialize=False) as kb:
        result = await initialize_like_vscode(kb, [workspace], storage)
        sync = result.capabilities.text_document_sync
        assert isinstance(sync, types.TextDocumentSyncOptions)
        assert sync.open_close is True
        await kb.wait_until_ready()
        readme = workspace / "README.md"
        draft = "# Draft\n\nOnly the editor has this: see [the terms](glossary.md).\n"
        kb.lsp.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=readme.as_uri(),
                    language_id="markdown",
                    version=1,
                    text=draft + readme.read_text(encoding="utf-8"),
                )
            )
        )
        line = draft.splitlines()[2]
        assert line not in readme.read_text(encoding="utf-8")
        hover = await kb.lsp.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=readme.as_uri()),
                position=types.Position(line=2, character=line.index("glossary.md")),
            )
        )
        assert hover is not None
        assert isinstance(hover.contents, types.MarkupContent)
        assert "`glossary.md`" in hover.contents.value
        kb.lsp.text_document_did_close(
            types.DidCloseTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=readme.as_uri())
            )
        )
        assert (await kb.status())["state"] == "ready"  # still serving after the close


async def test_open_result_before_any_search(kb: KbClient) -> None:
    with pytest.raises(JsonRpcException) as err:
        await kb.request("kb/openResult", {"n": 1})
    assert err.value.code == -32602
    assert "no search yet" in str(err.value)


async def test_index_control_pauses_and_resumes(kb: KbClient, workspace: Path) -> None:
    paused = await kb.request("kb/indexControl", {"action": "pause"})
    assert paused["paused"] is True and "paused" in (paused["message"] or "")
    # A file written while paused waits for the resume.
    (workspace / "zebra.md").write_text("# Zebra\n\nThe quokka ledger closes on Fridays.\n")
    resumed = await kb.request("kb/indexControl", {"action": "resume"})
    assert resumed["paused"] is False
    await kb.wait_for_hit("quokka ledger", "zebra.md")
    with pytest.raises(JsonRpcException) as err:
        await kb.request("kb/indexControl", {"action": "stop"})
    assert err.value.code == -32602
