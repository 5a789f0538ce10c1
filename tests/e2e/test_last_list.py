"""One last list, over the wire (the real server over stdio, the real `kb` command in a
process of its own, the scripted model): a search the editor did not make — `kb search`
through the server's socket, the agent's search during an ask — becomes the editor's
numbered list and is sent as `kb/listChanged`; the editor's own searches are not echoed.
Beside it, the other answers the panel reads: `didYouMean` on a search, `kb/status` with
`probe` asking the model again now, and a bad filter named with its position."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from tests.fakes.ollama_server import ScriptedOllama, answer, call

from kb_lsp.runtime.local_socket import SUPPORTED

from .conftest import KbClient, running_server, server_env, wait_for

MEXICO = "payments/mexico-payments.md"
CLI_QUERY = "treasury close checklist"


def kb_search(storage: Path, workspace: Path, query: str) -> dict[str, Any]:
    where = ["-w", str(workspace), "--storage", str(storage)]
    done = subprocess.run(
        [sys.executable, "-m", "kb_lsp.cli", "search", query, "--json", *where],
        capture_output=True,
        text=True,
        env=server_env(storage),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def changes_from(kb: KbClient, origin: str, count: int = 1) -> list[dict[str, Any]]:
    async def arrived() -> list[dict[str, Any]] | None:
        found = [c for c in kb.list_changes if c["origin"] == origin]
        return found if len(found) >= count else None

    return await wait_for(arrived, f"{count} kb/listChanged from {origin}")


def paths(hits: list[dict[str, Any]]) -> list[str]:
    return [hit["path"] for hit in hits]


@pytest.mark.skipif(not SUPPORTED, reason="no Unix sockets on this platform")
async def test_the_command_lines_search_becomes_the_editors_list(
    workspace: Path, storage: Path
) -> None:
    async with running_server([workspace], storage) as kb:
        own = await kb.search("Mexico payments SPEI")
        assert paths(own["results"])[0] == MEXICO
        cli = await asyncio.to_thread(kb_search, storage, workspace, CLI_QUERY)
        assert cli["results"] and paths(cli["results"])[0] != MEXICO

        (changed,) = await changes_from(kb, "cli")
        assert changed["query"] == CLI_QUERY
        assert paths(changed["results"]) == paths(cli["results"])
        assert changed["index"]["state"] == "ready"
        # The editor's own search came first on the same stream and was not echoed.
        assert [c["origin"] for c in kb.list_changes] == ["cli"]
        # "Result 1" in the editor is now the command line's first, as the panel shows.
        opened = await kb.request("kb/openResult", {"n": 1})
        assert opened["path"] == cli["results"][0]["path"]

        # The editor searching again makes the list its own, still without an echo.
        await kb.search("Mexico payments SPEI")
        assert (await kb.request("kb/openResult", {"n": 1}))["path"] == MEXICO
        await asyncio.to_thread(kb_search, storage, workspace, CLI_QUERY)
        await changes_from(kb, "cli", 2)
        assert [c["origin"] for c in kb.list_changes] == ["cli", "cli"]


async def test_the_agents_search_becomes_the_editors_list(workspace: Path, storage: Path) -> None:
    with ScriptedOllama() as ollama:
        ollama.add(
            call("search_knowledge_base", query="mexico payment cut-off"),
            answer(f"Before 14:30 [{MEXICO}:9-11]."),
        )
        options = {"ollama": {"host": ollama.url, "timeout": 30}}
        async with running_server([workspace], storage, options=options) as kb:
            await kb.search("treasury close checklist")
            question = "What is the cut-off time for Mexico payments?"
            response = await kb.request("kb/ask", {"question": question})
            assert response["stop"] == "answer"
            (changed,) = await changes_from(kb, "agent")
            assert changed["query"] == question
            assert paths(changed["results"])[0] == MEXICO
            opened = await kb.request("kb/openResult", {"n": 1})
            assert opened["path"] == MEXICO
        assert ollama.errors == []


async def test_a_typo_gets_a_suggestion_from_the_index(workspace: Path, storage: Path) -> None:
    async with running_server([workspace], storage) as kb:
        typo = await kb.search("mexcio paymnets")
        assert typo["didYouMean"] == "mexico payments"
        suggested = await kb.search(typo["didYouMean"])
        assert paths(suggested["results"])[0] == MEXICO
        assert suggested["didYouMean"] is None  # every word is known


async def test_a_bad_filter_is_named_with_its_position(workspace: Path, storage: Path) -> None:
    async with running_server([workspace], storage) as kb:
        with pytest.raises(JsonRpcException) as err:
            await kb.send_raw("kb/search", {"query": "payments (tag:x"})
        assert err.value.code == -32602
        assert "character" in str(err.value) and "(" in str(err.value)


async def test_status_with_probe_asks_the_model_now(workspace: Path, storage: Path) -> None:
    """The model comes up after the server started: a plain status may still say what
    the last check found; with `probe` the answer is what the model server says now."""
    with ScriptedOllama() as placeholder:
        port = placeholder.port  # a port that closes with it: the model is down
    options = {"ollama": {"host": f"http://127.0.0.1:{port}", "timeout": 30}}
    async with running_server([workspace], storage, options=options) as kb:
        down = await kb.request("kb/status", {"probe": True})
        assert down["llm"]["reachable"] is False
        with ScriptedOllama(port=port):
            up = await kb.request("kb/status", {"probe": True})
            assert up["llm"]["reachable"] is True
        # A client that does not know the field still gets the plain status.
        assert (await kb.request("kb/status", {}))["state"] == "ready"
