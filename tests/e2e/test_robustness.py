"""Bad input, a second server on the same store, cancellation, shutdown, folders."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from tests.fakes.embedder import HOLD_DIR_VARIABLE
from tests.fakes.ollama_server import ScriptedOllama

from kb_lsp.protocol import MAX_QUERY_CHARS

from .conftest import (
    DEADLINE,
    GATED_EMBEDDER,
    KbClient,
    initialize_like_vscode,
    running_server,
    wait_for,
)


async def expect_error(kb: KbClient, method: str, params: object, code: int) -> str:
    with pytest.raises(JsonRpcException) as err:
        await kb.send_raw(method, params)
    assert err.value.code == code, err.value
    return str(err.value)


async def test_requests_before_initialize(workspace: Path, storage: Path) -> None:
    async with running_server([workspace], storage, initialize=False) as kb:
        message = await expect_error(kb, "kb/status", {}, -32002)
        assert "initialize" in message
        await initialize_like_vscode(kb, [workspace], storage)
        await kb.wait_until_ready()


async def test_bad_inputs_get_errors_and_the_server_keeps_serving(kb: KbClient) -> None:
    message = await expect_error(kb, "kb/search", {"query": "x" * (MAX_QUERY_CHARS + 1)}, -32602)
    assert "query" in message and str(MAX_QUERY_CHARS) in message
    message = await expect_error(kb, "kb/search", {"limit": 3}, -32602)
    assert "query" in message
    await expect_error(kb, "kb/search", {"query": "ok", "limit": "many"}, -32602)
    await expect_error(kb, "kb/search", {"query": "ok", "mode": "psychic"}, -32602)
    await expect_error(kb, "kb/search", ["not", "an", "object"], -32602)
    await expect_error(kb, "kb/openResult", {"n": 0}, -32602)
    await expect_error(kb, "kb/openResult", {}, -32602)
    await expect_error(kb, "kb/noSuchMethod", {}, -32601)
    # A standard method with params that do not fit its type.
    await expect_error(kb, "textDocument/hover", {"textDocument": 42}, -32602)
    await expect_error(
        kb,
        "workspace/executeCommand",
        {"command": "kb.search", "arguments": [{"query": ""}]},
        -32602,
    )
    # kb/status without params at all is fine.
    status = await kb.request("kb/status")
    assert status["state"] == "ready"
    assert (await kb.search("Mexico"))["results"]


async def test_second_server_on_the_same_store_is_read_only(
    kb: KbClient, workspace: Path, storage: Path
) -> None:
    async with running_server([workspace], storage) as second:
        status = await second.status()
        assert status["readOnly"] is True
        assert "read-only" in (status["message"] or "")
        assert any("read-only" in message for message in second.shown())
        # It still answers searches from what the first server indexed.
        assert (await second.search("Mexico payments"))["results"]
        message = await expect_error(second, "kb/reindex", {}, -32000)
        assert "read-only" in message
    # The first one is unaffected.
    assert (await kb.status())["readOnly"] is False


async def test_a_read_only_window_takes_over_when_the_writer_exits(
    workspace: Path, storage: Path
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        first = await stack.enter_async_context(running_server([workspace], storage))
        second = await stack.enter_async_context(running_server([workspace], storage))
        assert (await second.status())["readOnly"] is True
        assert (await first.status())["readOnly"] is False

        # The writer goes away (its window closes).
        await asyncio.wait_for(first.lsp.shutdown_session(), DEADLINE)
        assert first.process.returncode == 0

        async def took_over() -> dict[str, Any] | None:
            status = await second.status()
            return status if not status["readOnly"] and status["state"] == "ready" else None

        await wait_for(took_over, "the second window to take over")
        # It says so: a message, a log line, and a kb/indexChanged that is not read-only.
        assert any("now keeps the index up to date" in m for m in second.shown())
        logged = [m.message for m in second.lsp.log_messages]
        assert any("this one writes it now" in m for m in logged)
        assert any(not change["readOnly"] for change in second.index_changes)

        # And it keeps the index up to date itself: its own watcher sees a new file.
        note = workspace / "okapi-after.md"
        note.write_text("# Okapi\n\nThe okapi budget was approved after the handover.\n")
        await second.wait_for_hit("okapi budget handover", "okapi-after.md")


async def test_cancel_a_long_request(workspace: Path, storage: Path, tmp_path: Path) -> None:
    """A queued reindex and a running one, each cancelled: both are answered at once with
    RequestCancelled, and the running one stops its sync. The test embedder holds the
    syncs where the test wants them (`GatedEmbedder`), so nothing depends on how long a
    sync takes on this machine."""
    bulk = workspace / "bulk"
    bulk.mkdir()
    paragraph = "Ledger reconciliation notes for the quarterly close. " * 40
    for i in range(200):
        (bulk / f"doc-{i:03}.md").write_text(f"# Bulk {i}\n\n{paragraph}\n\n## Part two\n\n{i}\n")
    holds = tmp_path / "holds"
    holds.mkdir()
    env = {HOLD_DIR_VARIABLE: str(holds)}
    async with running_server([workspace], storage, embedder=GATED_EMBEDDER, env=env) as kb:

        async def held(name: str) -> bool:
            return (holds / f"{name}.waiting").exists()

        (holds / "a.hold").touch()
        (holds / "b.hold").touch()
        # The worker is busy: the watcher's sync of a new file is held in its embedding.
        (workspace / "held-a.md").write_text("# Held\n\nHOLD-a\n")
        await wait_for(lambda: held("a"), "the watcher's sync to be held")
        # Two rebuilds queue behind it. (kb/status answers after both were queued: the
        # server handles messages in order.)
        first = asyncio.ensure_future(kb.send_raw("kb/reindex", {"full": True}, msg_id="first"))
        second = kb.send_raw("kb/reindex", {"full": True}, msg_id="cancel-me")
        await kb.status()
        # A queued one, cancelled, answers at once.
        kb.lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="cancel-me"))
        with pytest.raises(JsonRpcException) as err:
            await second
        assert err.value.code == -32800

        # The first rebuild runs next, and is held at a file it finds new: the newest, so
        # its vectors come first, and big enough (hundreds of chunks of new text) that
        # more batches follow the held one, each starting with a look at the cancel.
        lines = [f"Held line {i} with words of its own: w{i}x{i}y{i}." for i in range(4000)]
        (workspace / "0-held-b.md").write_text("# Held too\n\nHOLD-b\n\n" + "\n".join(lines))
        (holds / "a.hold").unlink()
        await wait_for(lambda: held("b"), "the rebuild to be held")
        assert any(
            reports[0].title == "Rebuilding the knowledge base"
            for reports in kb.lsp.progress_reports.values()
            if reports and isinstance(reports[0], types.WorkDoneProgressBegin)
        )
        # The running one, cancelled, answers at once too, and stops its sync.
        kb.lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="first"))
        with pytest.raises(JsonRpcException) as err:
            await first
        assert err.value.code == -32800
        (holds / "b.hold").unlink()
        status = await kb.wait_until_ready()
        assert "cancelled" in (status["message"] or "")
        # A plain reindex afterwards completes what the cancelled rebuild left.
        status = await kb.request("kb/reindex", {})
        assert status["files"] == len(list(workspace.rglob("*.md")))
        assert not status["message"]
        assert (await kb.search("Mexico payments"))["results"]


async def test_shutdown_exits_and_releases_the_lock(workspace: Path, storage: Path) -> None:
    async with running_server([workspace], storage) as kb:
        await asyncio.wait_for(kb.lsp.shutdown_session(), DEADLINE)
        assert kb.process.returncode == 0
    async with running_server([workspace], storage) as again:
        assert (await again.status())["readOnly"] is False


async def test_workspace_folders_come_and_go(kb: KbClient, workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-notes"
    other.mkdir()
    (other / "okapi.md").write_text("# Okapi\n\nThe okapi budget is approved.\n")
    kb.lsp.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=other.resolve().as_uri(), name="other-notes")],
                removed=[],
            )
        )
    )
    hit = await kb.wait_for_hit("okapi budget", "other-notes/okapi.md")
    assert hit["root"] == str(other.resolve())
    kb.lsp.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[],
                removed=[types.WorkspaceFolder(uri=other.resolve().as_uri(), name="other-notes")],
            )
        )
    )
    await kb.wait_for_no_hit("okapi budget", "other-notes/okapi.md")
    await kb.wait_for_no_hit("okapi budget", "okapi.md")


async def test_invalid_settings_are_reported_once(workspace: Path, storage: Path) -> None:
    async with running_server(
        [workspace], storage, options={"chunkSize": -5, "search": {"limit": "lots"}}
    ) as kb:
        shown = [m for m in kb.shown() if "invalid" in m]
        assert len(shown) == 1
        assert "kb.chunkSize" in shown[0] and "kb.search.limit" in shown[0]
        assert (await kb.search("Mexico payments"))["results"]


async def test_configuration_change_is_applied(kb: KbClient, workspace: Path) -> None:
    # The file is found first: its leaving the results is then the setting's doing.
    await kb.wait_for_hit("Mexico payments SPEI", "payments/mexico-payments.md")
    kb.lsp.set_configuration({"exclude": ["payments/**"]}, section="kb")
    kb.lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await kb.wait_for_no_hit("Mexico payments SPEI", "payments/mexico-payments.md")


async def test_a_workspace_folder_that_disappears(kb: KbClient, workspace: Path) -> None:
    shutil.rmtree(workspace)

    async def told() -> bool:
        return any("no longer exists" in message for message in kb.shown())

    await wait_for(told, "a message about the missing folder")
    status = await kb.status()
    assert "missing" in (status["message"] or "")
    assert status["files"] == 0


async def test_an_ollama_embedder_gone_mid_session_is_unavailable_not_internal(
    workspace: Path, storage: Path
) -> None:
    """The embedder's failure is the contract's `Unavailable` (-32000) in Ollama's words,
    never an internal error; keyword search, which needs no embedder, keeps answering."""
    ollama = ScriptedOllama().start()
    options = {
        "embedder": {"provider": "ollama", "model": "nomic-embed-text"},
        "ollama": {"host": ollama.url, "timeout": 10},
    }
    try:
        # No factory: the server makes the embedder its settings name, Ollama's.
        env = {"KB_EMBEDDER_FACTORY": ""}
        async with running_server([workspace], storage, options=options, env=env) as kb:
            assert (await kb.status())["embedder"].startswith("ollama:nomic-embed-text")
            assert (await kb.search("Mexico payments"))["results"]
            ollama.close()
            message = await expect_error(kb, "kb/search", {"query": "currency fees"}, -32000)
            assert "Cannot reach Ollama" in message and ollama.url.split("//")[1] in message
            keyword = await kb.request("kb/search", {"query": "Mexico", "mode": "keyword"})
            assert keyword["results"]
    finally:
        ollama.close()
    assert ollama.errors == []
