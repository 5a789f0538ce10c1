"""Settings apply live over the real server: what can change without reopening the
knowledge base does, and neither kind of change drops the client's numbered list or its
conversations (the server keeps both in its runtime)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer, call, stall

from .conftest import KbClient, initialize_like_vscode, running_server, wait_for

MEXICO = "payments/mexico-payments.md"
OFF_TOPIC = "how to bake sourdough bread"


@pytest.fixture
def ollama() -> Iterator[ScriptedOllama]:
    with ScriptedOllama() as server:
        yield server
    assert server.errors == []


@pytest.fixture
async def kb(workspace: Path, storage: Path, ollama: ScriptedOllama) -> AsyncIterator[KbClient]:
    options = {"ollama": {"host": ollama.url, "timeout": 60}}
    async with running_server([workspace], storage, options=options) as client:
        yield client


def change_settings(kb: KbClient, section: dict[str, Any]) -> None:
    """What VS Code does when the user edits a setting: `workspace/configuration` answers
    the new `kb` section from now on, and the server is told that something changed."""
    kb.lsp.set_configuration(section, section="kb")
    kb.lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


async def applied_at_once(kb: KbClient, setting: str) -> str:
    """The server's log line saying `setting` took effect without reopening."""

    async def logged() -> str | None:
        return next(
            (
                m.message
                for m in kb.lsp.log_messages
                if "settings applied at once" in m.message and setting in m.message
            ),
            None,
        )

    return await wait_for(logged, f"the server to apply {setting}")


def reopened(kb: KbClient) -> bool:
    return any("reopening the knowledge base" in m.message for m in kb.lsp.log_messages)


async def test_threshold_change_keeps_the_numbered_list_and_the_conversation(
    kb: KbClient, ollama: ScriptedOllama
) -> None:
    results = (await kb.search("Mexico payments SPEI cut-off"))["results"]
    assert results and results[0]["path"] == MEXICO
    assert (await kb.search(OFF_TOPIC))["results"] == []  # below the default threshold
    results = (await kb.search("Mexico payments SPEI cut-off"))["results"]
    # It cites its file: history keeps grounded answers only. It calls a tool first: a
    # model that claims tools and calls none is answered in grounded mode (issue 35).
    ollama.add(
        call("search_knowledge_base", query="mexico cut-off"),
        answer(f"Before 14:30 [{MEXICO}:9-11]."),
    )
    first = await kb.request("kb/ask", {"question": "When is the Mexico cut-off?"})
    assert first["stop"] == "answer"

    change_settings(kb, {"search": {"threshold": 0.0}})
    await applied_at_once(kb, "kb.search.threshold")
    assert not reopened(kb)

    # The list shown before the change is still the one "open result 1" means.
    opened = await kb.request("kb/openResult", {"n": 1})
    assert (opened["uri"], opened["range"]) == (results[0]["uri"], results[0]["range"])

    # The conversation goes on: the model is given the earlier turn.
    def sees_the_first_turn(request: dict[str, Any]) -> Turn:
        contents = [message.get("content") or "" for message in request["messages"]]
        assert any("When is the Mexico cut-off?" in text for text in contents)
        assert any("Before 14:30" in text for text in contents)
        return answer("Yes, every business day.")

    ollama.add(call("search_knowledge_base", query="mexico every day"), sees_the_first_turn)
    follow = await kb.request(
        "kb/ask", {"question": "Every day?", "conversationId": first["conversationId"]}
    )
    assert follow["stop"] == "answer" and follow["conversationId"] == first["conversationId"]

    # And the new threshold is the one searches use: nothing is cut any more.
    assert (await kb.search(OFF_TOPIC))["results"]


async def test_ollama_timeout_change_reaches_the_agent(
    kb: KbClient, ollama: ScriptedOllama
) -> None:
    change_settings(kb, {"ollama": {"timeout": 1}})
    await applied_at_once(kb, "kb.ollama.timeout")
    assert not reopened(kb)
    # The log says what changed, from what to what (the code-server e2e waits on it).
    logged = [m.message for m in kb.lsp.log_messages if "settings changed:" in m.message]
    assert [line.split("settings changed: ")[1] for line in logged] == [
        "kb.ollama.timeout: 60.0 → 1.0"
    ]
    # The model goes silent: the agent gives up after the new timeout (1 s), not the
    # 60 s it was started with, and says so.
    ollama.add(stall(after_chunks=0))
    response = await kb.request("kb/ask", {"question": "When is the Mexico cut-off?"})
    assert response["stop"] == "error"
    assert "did not answer within 1 s" in response["answer"]
    ollama.release()


async def test_a_setting_that_needs_reopening_reopens_and_keeps_the_list(
    kb: KbClient, workspace: Path
) -> None:
    results = (await kb.search("Mexico payments SPEI cut-off"))["results"]
    chunks_before = (await kb.status())["chunks"]
    change_settings(kb, {"chunkSize": 300, "chunkOverlap": 50})

    async def rechunked() -> dict[str, Any] | None:
        status = await kb.status()
        ready = status["state"] == "ready" and status["pending"] == 0
        return status if ready and status["chunks"] > chunks_before else None

    # Every file is chunked again with the new size (smaller chunks: more of them).
    await wait_for(rechunked, "the files to be chunked again")
    assert reopened(kb)
    assert (await kb.request("kb/openResult", {"n": 1}))["uri"] == results[0]["uri"]


async def test_a_change_while_the_server_starts_is_applied_after_the_first_settings(
    workspace: Path, storage: Path
) -> None:
    """The user changes a setting while the server still waits for its first settings
    (its `workspace/configuration` after `initialized`): the change is applied on top of
    them, not before the knowledge base opens (which would reopen it, then open it again
    with the older settings)."""
    async with running_server([workspace], storage, initialize=False) as kb:
        client = kb.lsp
        pulls = 0

        async def round_trip() -> None:
            """A request the server answers at once (no such method): when its answer
            is back, the server has read and started on every message sent before it."""
            with contextlib.suppress(Exception):
                await client.protocol.send_request_async("kb/noSuchMethod", {})

        async def configuration(params: types.ConfigurationParams) -> list[Any]:
            nonlocal pulls
            pulls += 1
            if pulls == 1:
                client.set_configuration({"search": {"threshold": 0.0}}, section="kb")
                client.workspace_did_change_configuration(
                    types.DidChangeConfigurationParams(settings=None)
                )
                for _ in range(3):
                    await round_trip()
            return [client.get_configuration(section=item.section) for item in params.items]

        # The harness answers from the settings it holds; this answer takes its time.
        del client.protocol.fm.features[types.WORKSPACE_CONFIGURATION]
        client.feature(types.WORKSPACE_CONFIGURATION)(configuration)
        await initialize_like_vscode(kb, [workspace], storage)
        await kb.wait_until_ready()

        async def unfiltered() -> bool:
            return bool((await kb.search(OFF_TOPIC))["results"])

        await wait_for(unfiltered, "the threshold set while the server started")
        assert pulls == 2
        assert not reopened(kb)
