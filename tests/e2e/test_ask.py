"""kb/ask and kb/summarize end to end: the real server over stdio, the real agent and
`ollama` client in it, and `ScriptedOllama` in this process playing the model (the
server reaches it over HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer, call, stall
from tests.fakes.openai_server import ScriptedOpenAI
from tests.fakes.silent_server import SilentServer
from tests.helpers.prompts import number_of

from .conftest import KbClient, initialize_like_vscode, running_server, wait_for

MEXICO = "payments/mexico-payments.md"
CUTOFF = "What is the cut-off time for Mexico payments?"


@pytest.fixture
def ollama() -> Iterator[ScriptedOllama]:
    with ScriptedOllama() as server:
        yield server
    assert server.errors == []  # no turn missing, no failed assertion inside a turn


@pytest.fixture
async def kb(workspace: Path, storage: Path, ollama: ScriptedOllama) -> AsyncIterator[KbClient]:
    """A server whose model is the scripted stand-in, in the tool loop whatever it does
    (`kb.llm.mode: agent`: a scripted answer without a tool call is then the answer)."""
    options = {"ollama": {"host": ollama.url, "timeout": 30}, "llm": {"mode": "agent"}}
    async with running_server([workspace], storage, options=options) as client:
        yield client


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def ask(kb: KbClient, question: str, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = await kb.request("kb/ask", {"question": question, **extra})
    return result


async def expect_error(kb: KbClient, method: str, params: object, code: int) -> str:
    with pytest.raises(JsonRpcException) as err:
        await kb.send_raw(method, params)
    assert err.value.code == code, err.value
    return str(err.value)


def events_of(kb: KbClient, ask_id: str, *, waiting: bool = False) -> list[dict[str, Any]]:
    """The steps of one ask; "Waiting for the model…" comes whenever the machine is slow,
    so it is left out unless asked for, and so are the answer's pieces (`pieces_of`)."""
    return [
        event
        for event in kb.ask_events
        if event["askId"] == ask_id
        and (waiting or not event["text"].startswith("Waiting for the model"))
        and not (event.get("args") or {}).get("piece")
    ]


def pieces_of(kb: KbClient) -> list[dict[str, Any]]:
    """The answer's pieces streamed so far, of every ask."""
    return [
        e for e in kb.ask_events if e["kind"] == "answer" and (e.get("args") or {}).get("piece")
    ]


def progress_titled(kb: KbClient, title: str) -> list[list[Any]]:
    return [
        reports
        for reports in kb.lsp.progress_reports.values()
        if reports
        and isinstance(reports[0], types.WorkDoneProgressBegin)
        and reports[0].title == title
    ]


# --- answers ---------------------------------------------------------------------------------


async def test_two_step_answer_streams_its_steps_and_cites_sources(
    kb: KbClient, ollama: ScriptedOllama, workspace: Path
) -> None:
    def answer_from_results(request: dict[str, Any]) -> Turn:
        shown = [m["content"] for m in request["messages"] if m["role"] == "tool"][-1]
        assert MEXICO in shown and "14:30" in shown
        return answer(
            "Payments must be released before **14:30 Mexico City time** "
            f"[{MEXICO}:9-11]; later ones go out the next business day.",
            thinking="The search result has the cut-off.",
        )

    ollama.add(call("search_knowledge_base", query="mexico payment cut-off"), answer_from_results)
    response = await ask(kb, CUTOFF)

    assert response["stop"] == "answer"
    assert "14:30" in response["answer"]
    source = response["sources"][0]
    assert (source["path"], source["range"]["start"]["line"]) == (MEXICO, 8)
    assert source["uri"] == (workspace / MEXICO).as_uri()
    assert response["usage"]["calls"] == 2
    assert response["conversationId"]

    # Every step was streamed, in order, under one askId, before the answer came back.
    ask_ids = {event["askId"] for event in kb.ask_events}
    assert len(ask_ids) == 1
    events = events_of(kb, ask_ids.pop())
    assert [e["kind"] for e in events] == [
        "status",
        "tool_call",
        "tool_result",
        "thinking",
        "answer",
    ]
    assert events[0]["text"].startswith("Mode: agent")
    assert (response["mode"], response["grounded"]) == ("agent", True)
    assert events[1]["tool"] == "search_knowledge_base"
    assert events[1]["args"] == {"query": "mexico payment cut-off"}
    assert MEXICO in events[2]["text"]
    assert events[-1]["text"] == response["answer"]
    assert [(e["kind"], e["text"]) for e in events_of(kb, events[0]["askId"], waiting=True)] == [
        (s["kind"], s["text"]) for s in response["steps"]
    ]

    # Work-done progress: "Asking…", the steps, then the end.
    (bar,) = progress_titled(kb, "Asking…")
    assert isinstance(bar[-1], types.WorkDoneProgressEnd)
    reports = [r.message for r in bar if isinstance(r, types.WorkDoneProgressReport)]
    assert "Calling search_knowledge_base" in reports
    # The answer's pieces say "Answering…" on the bar, not once each (a step between two
    # pieces says its own words, then "Answering…" again).
    assert "Answering…" in reports
    assert ("Answering…", "Answering…") not in set(itertools.pairwise(reports))
    steps = [r for r in reports if r != "Answering…"]
    assert len(steps) == len(events_of(kb, events[0]["askId"], waiting=True))
    # The pieces, in order, are the model's answer.
    assert "".join(e["text"] for e in pieces_of(kb)) == response["answer"]

    # The search the agent ran is the client's numbered list now.
    opened = await kb.request("kb/openResult", {"n": 1})
    assert opened["path"] == MEXICO


async def test_summarize_file_1_after_a_search(kb: KbClient, ollama: ScriptedOllama) -> None:
    results = (await kb.search("mexico payments"))["results"]
    assert results[0]["path"] == MEXICO

    def summary(request: dict[str, Any]) -> Turn:
        assert "Acme Servicios" in request["messages"][-1]["content"]  # the file itself
        assert not request.get("tools")  # resolved by the server, not chosen by the model
        return answer("Mexico is funded monthly by SPEI before the 14:30 cut-off.")

    ollama.add(summary)
    response = await ask(kb, "summarize file 1")

    assert response["stop"] == "answer"
    assert "SPEI before the 14:30 cut-off" in response["answer"]
    assert response["sources"][0]["path"] == MEXICO
    assert response["steps"][0]["kind"] == "thinking" and MEXICO in response["steps"][0]["text"]
    assert len(ollama.chat_requests) == 1
    # The list the client was shown is still the one "file N" refers to.
    assert (await kb.request("kb/openResult", {"n": 2}))["path"] == results[1]["path"]


@pytest.fixture
def two_budget_briefs(workspace: Path) -> Path:
    """A second budget_brief.md, so that the file name alone names two files."""
    (workspace / "archive").mkdir()
    (workspace / "archive" / "budget_brief.md").write_text(
        "# Brief: 2026 treasury budget\n\nHeadcount stayed at 6.\n", encoding="utf-8"
    )
    return workspace


async def test_ambiguous_reference_asks_which_and_numbers_the_candidates(
    two_budget_briefs: Path, kb: KbClient, ollama: ScriptedOllama
) -> None:
    assert (two_budget_briefs / "archive" / "budget_brief.md").is_file()  # before the server
    response = await ask(kb, "summarize budget_brief.md")
    assert response["stop"] == "clarify"
    assert "1. `archive/budget_brief.md`" in response["answer"]
    assert "2. `projects/budget_brief.md`" in response["answer"]
    assert kb.ask_events[-1]["kind"] == "clarify"
    assert ollama.chat_requests == []

    # The candidates are the client's numbered list: "open result 2" is the second one.
    opened = await kb.request("kb/openResult", {"n": 2})
    assert opened["path"] == "projects/budget_brief.md"
    message = await expect_error(kb, "kb/openResult", {"n": 3}, -32602)
    assert "returned 2 results" in message

    # And the reply "the second one" continues the question that was asked.
    ollama.add(answer("Headcount goes from 6 to 7 in the 2027 budget."))
    follow = await ask(kb, "the second one", conversationId=response["conversationId"])
    assert follow["stop"] == "answer"
    assert follow["sources"][0]["path"] == "projects/budget_brief.md"


async def test_out_of_range_n_gets_a_clear_answer(kb: KbClient, ollama: ScriptedOllama) -> None:
    count = len((await kb.search("payments", limit=3))["results"])
    assert count == 3
    response = await ask(kb, "summarize file 7")
    assert response["stop"] == "error"
    assert "the last list has 3 entries" in response["answer"]
    response = await ask(kb, "what is this about?", n=9)
    assert response["stop"] == "error"
    assert "There is no result 9" in response["answer"]
    assert ollama.chat_requests == []


async def test_bad_ask_params(kb: KbClient) -> None:
    assert "question" in await expect_error(kb, "kb/ask", {}, -32602)
    assert "n" in await expect_error(kb, "kb/ask", {"question": "x", "n": 0}, -32602)
    assert (await kb.status())["state"] == "ready"


# --- kb/summarize ----------------------------------------------------------------------------


async def test_summarize_a_file_then_the_cache_answers(
    kb: KbClient, ollama: ScriptedOllama
) -> None:
    ollama.add(answer("Mexico is paid by SPEI; the cut-off is 14:30 Mexico City time."))
    first = await kb.request("kb/summarize", {"file": MEXICO})
    assert first == {
        "path": MEXICO,
        "summary": "Mexico is paid by SPEI; the cut-off is 14:30 Mexico City time.",
        "cached": False,
        "extractive": False,
    }
    chats = len(ollama.chat_requests)

    again = await kb.request("kb/summarize", {"file": MEXICO})
    assert again["cached"] is True and again["summary"] == first["summary"]
    assert len(ollama.chat_requests) == chats  # the cache answered, not the model

    # `n` is result n of the last search.
    await kb.search("mexico payments")
    by_n = await kb.request("kb/summarize", {"n": 1})
    assert (by_n["path"], by_n["cached"]) == (MEXICO, True)
    (bar, *_) = progress_titled(kb, "Summarizing…")
    assert isinstance(bar[-1], types.WorkDoneProgressEnd)


async def test_summarize_bad_input_is_invalid_params(kb: KbClient) -> None:
    assert "outside the workspace" in await expect_error(
        kb, "kb/summarize", {"file": "../outside.md"}, -32602
    )
    assert "nowhere.md" in await expect_error(kb, "kb/summarize", {"file": "nowhere.md"}, -32602)
    assert "Say which file" in await expect_error(kb, "kb/summarize", {}, -32602)
    await kb.search("mexico payments", limit=2)
    assert "There is no result 5" in await expect_error(kb, "kb/summarize", {"n": 5}, -32602)
    assert (await kb.search("Mexico payments"))["results"]


# --- cancellation and concurrency ------------------------------------------------------------


async def test_cancel_mid_stream_answers_at_once_and_keeps_serving(
    kb: KbClient, ollama: ScriptedOllama
) -> None:
    ollama.add(stall(after_chunks=2))
    pending = kb.send_raw("kb/ask", {"question": CUTOFF}, msg_id="ask-to-cancel")
    running = asyncio.ensure_future(pending)
    await wait_for(lambda: _true(ollama.stalled.is_set()), "the model stream to stall")

    # While the model stalls, search and status answer: the ask holds none of their workers.
    assert (await kb.search("Mexico payments"))["results"]
    assert (await kb.status())["state"] == "ready"

    kb.lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="ask-to-cancel"))
    with pytest.raises(JsonRpcException) as err:
        await running
    assert err.value.code == -32800

    (bar,) = await wait_for(lambda: _ended(kb, "Asking…"), "the ask's progress to end")
    assert bar[-1].message == "Cancelled"
    assert (await kb.search("Mexico payments"))["results"]
    # The agent is free for the next question.
    ollama.add(answer("At 14:30."))
    response = await ask(kb, CUTOFF)
    assert response["stop"] == "answer"


async def test_the_answer_streams_in_pieces_before_the_model_ends(
    kb: KbClient, ollama: ScriptedOllama
) -> None:
    # The model writes three pieces of its answer, then stalls until released.
    ollama.add(stall(after_chunks=3, content="Payments are released before 14:30 in Mexico."))
    running = asyncio.ensure_future(ask(kb, CUTOFF))
    first = await wait_for(lambda: _true(bool(pieces_of(kb))), "the first piece of the answer")
    assert first and not running.done()  # the model has not ended its answer
    assert not ollama.released
    # What the model wrote before it went silent is not held back during the silence.
    await wait_for(
        lambda: _true("".join(e["text"] for e in pieces_of(kb)) == "Payments are relea"),
        "every piece written before the stall",
    )
    ollama.release()
    response = await running
    assert response["stop"] == "answer"
    assert "".join(e["text"] for e in pieces_of(kb)) == response["answer"] == "Payments are relea"
    assert pieces_of(kb)[0]["args"] == {"piece": True}
    # The final answer still comes whole, as the last answer event.
    assert [e for e in kb.ask_events if e["kind"] == "answer"][-1]["text"] == response["answer"]


async def test_cancelling_mid_answer_stops_its_pieces(kb: KbClient, ollama: ScriptedOllama) -> None:
    ollama.add(stall(after_chunks=2, content="Payments are released before 14:30."))
    pending = kb.send_raw("kb/ask", {"question": CUTOFF}, msg_id="ask-to-stop")
    running = asyncio.ensure_future(pending)
    await wait_for(
        lambda: _true("".join(e["text"] for e in pieces_of(kb)) == "Payments are"),
        "the pieces written before the stall",
    )
    kb.lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="ask-to-stop"))
    with pytest.raises(JsonRpcException) as err:
        await running
    assert err.value.code == -32800
    await wait_for(lambda: _ended(kb, "Asking…"), "the ask's progress to end")
    ask_id = pieces_of(kb)[0]["askId"]
    before = [e for e in kb.ask_events if e["askId"] == ask_id]
    ollama.release()  # the model would go on now: nothing more reaches the client
    ollama.add(answer("At 14:30."))
    assert (await ask(kb, CUTOFF))["stop"] == "answer"
    assert [e for e in kb.ask_events if e["askId"] == ask_id] == before
    stopped = [e for e in before if e["kind"] == "answer"]
    assert all((e.get("args") or {}).get("piece") for e in stopped)  # no final answer
    assert "".join(e["text"] for e in stopped) == "Payments are"


async def test_new_settings_stop_a_running_ask_with_stop_cancelled(
    kb: KbClient, ollama: ScriptedOllama
) -> None:
    ollama.add(stall(after_chunks=2))
    running = asyncio.ensure_future(ask(kb, CUTOFF))
    await wait_for(lambda: _true(ollama.stalled.is_set()), "the model stream to stall")

    # Reopening the knowledge base for new settings (chunking: every file is chunked
    # again) does not wait for the model.
    kb.lsp.set_configuration({"chunkSize": 600}, section="kb")
    kb.lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    response = await running
    assert response["stop"] == "cancelled"

    await kb.wait_until_ready()
    ollama.add(answer("At 14:30."))
    assert (await ask(kb, CUTOFF))["stop"] == "answer"


async def _true(value: bool) -> bool:
    return value


async def _ended(kb: KbClient, title: str) -> list[list[Any]]:
    return [
        bar for bar in progress_titled(kb, title) if isinstance(bar[-1], types.WorkDoneProgressEnd)
    ]


# --- without Ollama --------------------------------------------------------------------------


async def test_ollama_down_degrades_and_the_rest_works(workspace: Path, storage: Path) -> None:
    host = f"http://127.0.0.1:{closed_port()}"
    async with running_server(
        [workspace], storage, options={"ollama": {"host": host, "timeout": 5}}
    ) as kb:
        response = await ask(kb, CUTOFF)
        # It says what it did, without claiming a failure, and the model's state once.
        assert (response["stop"], response["mode"]) == ("answer", "fallback")
        # What the notes say first, then what the rest is: the best passages.
        lead, heading = response["answer"].split("\n\n")[:2]
        assert lead.startswith("From your notes:\n- “") and ".md:" in lead
        assert heading.startswith("**No model: here are the best passages**")
        assert MEXICO in response["answer"]
        assert response["sources"] and response["sources"][0]["path"] == MEXICO
        mentions = [e for e in kb.ask_events if "ollama serve" in e["text"]]
        assert [e["kind"] for e in mentions] == ["status"] and host in mentions[0]["text"]
        assert not any(event["kind"] == "error" for event in kb.ask_events)

        async def unreachable() -> dict[str, Any] | None:
            llm: dict[str, Any] = (await kb.status())["llm"]
            return llm if llm["reachable"] is False else None

        llm = await wait_for(unreachable, "kb/status to say Ollama is unreachable")
        assert llm["host"] == host
        # The probe's own message: which server, and what to do.
        assert host in llm["message"] and "ollama serve" in llm["message"], llm

        summary = await kb.request("kb/summarize", {"file": MEXICO})
        assert summary["extractive"] is True and summary["summary"]
        assert (await kb.search("Mexico payments"))["results"]
        assert (await kb.request("kb/openResult", {"n": 1}))["path"] == MEXICO


async def test_status_says_the_model_is_reachable(kb: KbClient, ollama: ScriptedOllama) -> None:
    async def reachable() -> dict[str, Any] | None:
        llm: dict[str, Any] = (await kb.status())["llm"]
        return llm if llm["reachable"] else None

    llm = await wait_for(reachable, "kb/status to say Ollama is reachable")
    assert {k: llm[k] for k in ("host", "model", "reachable", "provider", "tools", "message")} == {
        "host": ollama.url,
        "model": "qwen2.5:7b",
        "reachable": True,
        "provider": "ollama",
        "tools": True,  # from /api/show's capabilities, probed in the background
        "message": None,
    }


# --- workspace/executeCommand ----------------------------------------------------------------


async def test_ask_and_summarize_as_commands(
    workspace: Path, storage: Path, ollama: ScriptedOllama
) -> None:
    options = {"ollama": {"host": ollama.url, "timeout": 30}, "llm": {"mode": "agent"}}
    async with running_server([workspace], storage, initialize=False) as kb:
        result = await initialize_like_vscode(kb, [workspace], storage, options)
        commands = result.capabilities.execute_command_provider
        assert commands is not None
        assert {"kb.ask", "kb.summarize"} <= set(commands.commands)
        await kb.wait_until_ready()
        await _commands(kb, ollama)


async def _commands(kb: KbClient, ollama: ScriptedOllama) -> None:
    ollama.add(answer(f"Before 14:30 [{MEXICO}:9-11]."))
    response = await kb.request(
        "workspace/executeCommand",
        types.ExecuteCommandParams(command="kb.ask", arguments=[{"question": CUTOFF}]),
    )
    assert response["stop"] == "answer"
    assert response["sources"][0]["path"] == MEXICO
    assert kb.ask_events and kb.ask_events[-1]["kind"] == "answer"

    ollama.add(answer("A summary."))
    summary = await kb.request(
        "workspace/executeCommand",
        types.ExecuteCommandParams(command="kb.summarize", arguments=[{"file": MEXICO}]),
    )
    assert summary["summary"] == "A summary."
    message = await expect_error(
        kb, "workspace/executeCommand", {"command": "kb.summarize", "arguments": [{}]}, -32602
    )
    assert "Say which file" in message


# --- other runtimes, models without tools, a model that hangs --------------------------------


async def test_openai_provider_without_tools_answers_grounded(
    workspace: Path, storage: Path
) -> None:
    def cite_mexico(request: dict[str, Any]) -> Turn:
        prompt = request["messages"][-1]["content"]
        return answer(f"Before 14:30 Mexico City time [{number_of(prompt, MEXICO)}].")

    with ScriptedOpenAI([cite_mexico], tools=False) as server:
        options = {"llm": {"provider": "openai", "baseUrl": server.base_url, "timeout": 30}}
        async with running_server([workspace], storage, options=options) as kb:
            response = await ask(kb, CUTOFF)
        assert server.errors == []
    assert (response["stop"], response["mode"], response["grounded"]) == (
        "answer",
        "grounded",
        True,
    )
    # The evidence first, then the model's text, then its sources.
    lead, text, sources = response["answer"].split("\n\n")
    assert lead.startswith("From your notes:\n- “")
    assert sources.startswith("Passages the model was given: [")
    assert response["verdict"] == "supported" and response["folded"] is None
    # It streamed in that order as appends: the lead before the model's text, the sources
    # only in the final answer.
    pieces = pieces_of(kb)
    assert pieces[0]["text"].startswith("From your notes:")
    assert all(piece["args"] == {"piece": True} for piece in pieces)
    assert "".join(piece["text"] for piece in pieces) == f"{lead}\n\n{text}"
    # Every passage given is a source; the one it cites holds the answer.
    number = int(text.split("[")[1].split("]")[0])
    source = next(s for s in response["sources"] if s["n"] == number)
    assert source["path"] == MEXICO
    lines = (workspace / MEXICO).read_text(encoding="utf-8").splitlines()
    assert "14:30" in "\n".join(
        lines[source["range"]["start"]["line"] : source["range"]["end"]["line"]]
    )
    mode = next(e for e in kb.ask_events if e["text"].startswith("Mode:"))
    assert mode["kind"] == "status" and mode["text"].startswith("Mode: grounded")


async def test_a_model_that_never_answers_says_waiting_then_times_out(
    workspace: Path, storage: Path
) -> None:
    with SilentServer() as silent:
        options = {"ollama": {"host": silent.url, "timeout": 3}}
        async with running_server([workspace], storage, options=options) as kb:
            response = await ask(kb, CUTOFF)
    statuses = [e["text"] for e in kb.ask_events if e["kind"] == "status"]
    # A second of silence is announced; at the configured timeout it gives up, says why
    # once, and answers with the passages it has.
    assert statuses[0].startswith("Waiting for the model") and silent.url in statuses[0]
    assert "did not answer within 3 s" in statuses[1] and "kb.ollama.host" in statuses[1]
    assert (response["stop"], response["mode"]) == ("answer", "fallback")
    assert MEXICO in response["answer"]
