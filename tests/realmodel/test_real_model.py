"""kb-lsp against a real model: SmolLM2-135M-Instruct served by llama.cpp's own server from
the xllamacpp wheel (OpenAI-compatible API, no tool calls). The real kb-lsp server runs
over stdio with the real embedder on a copy of examples/workspace, as in tests/e2e.

The assertions are about plumbing and grounding — the provider streams, the mode is
grounded, sources exist and point at lines that hold what the question asks about, stop
reasons are honest, cancellation is immediate, a misconfiguration is named — never about
the prose of a 135M model.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from tests.e2e.conftest import KbClient, _plain, running_server

from kb_lsp.config import load_settings
from kb_lsp.engine.llm import ChatResult, Delta, LlmCancelled, OpenAIChat, create_llm

from .conftest import ALIAS, CONTEXT, LlamaServer

# One thread on a busy two-core machine: a grounded answer can take minutes. The
# deadlines are generous; nothing here measures speed (that is `bench ask`).
pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(1500)]
REQUEST_DEADLINE = 900.0

MEXICO = "payments/mexico-payments.md"
CUTOFF = "What is the cut-off time for Mexico payments?"
MAX_TOKENS = 96  # keeps each answer short with one thread


def openai_options(server: LlamaServer, **llm: Any) -> dict[str, Any]:
    return {
        "llm": {"provider": "openai", "baseUrl": server.base_url, "maxTokens": MAX_TOKENS, **llm}
    }


async def ask(kb: KbClient, question: str, **extra: Any) -> dict[str, Any]:
    request = kb.lsp.protocol.send_request_async("kb/ask", {"question": question, **extra})
    result: dict[str, Any] = _plain(await asyncio.wait_for(request, REQUEST_DEADLINE))
    return result


def source_lines(workspace: Path, source: dict[str, Any]) -> list[str]:
    lines = (workspace / source["path"]).read_text(encoding="utf-8").splitlines()
    start, end = source["range"]["start"]["line"], source["range"]["end"]["line"]
    assert 0 <= start < end <= len(lines), source  # the range is inside the file
    return lines[start:end]


def test_openai_provider_streams_an_answer(llama_server: LlamaServer) -> None:
    settings = load_settings(openai_options(llama_server)).settings
    model = create_llm(settings)
    assert isinstance(model, OpenAIChat)
    caps = model.capabilities()
    # The server's /props: SmolLM2's template has no tools; the context is ours.
    assert (caps.tools, caps.context, caps.model) == (False, CONTEXT, ALIAS)
    items = list(
        model.chat_stream(
            [{"role": "user", "content": "Name three colours."}], max_tokens=MAX_TOKENS
        )
    )
    result = items[-1]
    assert isinstance(result, ChatResult)
    deltas = [item for item in items[:-1] if isinstance(item, Delta)]
    assert len(deltas) > 1  # streamed, not one block
    assert "".join(d.text for d in deltas if d.kind == "content").strip() == result.content
    assert result.content
    assert result.prompt_tokens > 0 and 0 < result.completion_tokens <= MAX_TOKENS
    assert result.done_reason in ("stop", "length")


def test_cancel_mid_stream_stops_at_once(llama_server: LlamaServer) -> None:
    model = create_llm(load_settings(openai_options(llama_server)).settings)
    cancel = threading.Event()
    seen: list[Delta] = []

    def on_delta(delta: Delta) -> None:
        seen.append(delta)
        cancel.set()  # mid-stream: after the first piece of text

    prompt = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    with pytest.raises(LlmCancelled):
        model.chat(prompt, cancel=cancel, on_delta=on_delta, max_tokens=1024)
    assert len(seen) == 1
    # The server's one slot is free again: the next request is answered.
    again = model.chat([{"role": "user", "content": "Say hello."}], max_tokens=16)
    assert again.completion_tokens > 0


async def test_grounded_answer_about_the_example_workspace(
    llama_server: LlamaServer, workspace: Path, storage: Path
) -> None:
    options = openai_options(llama_server)
    async with running_server([workspace], storage, options=options, real_embedder=True) as kb:
        response = await ask(kb, CUTOFF)
        events = list(kb.ask_events)
    assert response["mode"] == "grounded"
    assert response["stop"] in ("answer", "length", "degenerate")
    mode = next(e for e in events if e["text"].startswith("Mode:"))
    assert mode["kind"] == "status" and f"{ALIAS} does not call tools" in mode["text"]
    assert response["usage"]["calls"] == 1 and response["usage"]["promptTokens"] > 0
    sources = response["sources"]
    assert sources, response
    for source in sources:
        assert source["uri"] == (workspace / source["path"]).as_uri()
        assert "".join(source_lines(workspace, source)).strip()
    # The passage that answers the question was given, and its source holds the answer.
    mexico = [s for s in sources if s["path"] == MEXICO]
    assert mexico and any("14:30" in line for s in mexico for line in source_lines(workspace, s))
    # What the notes say comes first (the real embedder chose it), quoted with its lines.
    lead, _, rest = response["answer"].partition("\n\n")
    assert lead.startswith("From your notes:\n- “") and f"[{MEXICO}:" in lead, lead
    assert "Passages the model was given: [" in rest
    # One verdict, said once: supported, or why not (the model's text folded by clients).
    if response["grounded"]:
        assert response["verdict"] == "supported" and response["folded"] is None
    else:
        assert response["verdict"] == "unsupported"
        assert rest.count("> Not supported by your notes: ") <= 1
    # The answer streamed: its pieces came before the final answer event.
    pieces = [e for e in events if e["kind"] == "answer" and (e.get("args") or {}).get("piece")]
    assert pieces and events.index(pieces[0]) < len(events) - 1


async def test_summarize_file_1_and_a_tiny_token_limit(
    llama_server: LlamaServer, workspace: Path, storage: Path
) -> None:
    options = openai_options(llama_server)
    async with running_server([workspace], storage, options=options, real_embedder=True) as kb:
        results = (await kb.search("mexico payments"))["results"]
        assert results[0]["path"] == MEXICO
        summary = await ask(kb, "summarize file 1")
        assert summary["stop"] in ("answer", "length"), summary
        assert summary["sources"][0]["path"] == MEXICO
        text = summary["answer"].split("\n\nSources: ")[0]
        assert text.strip() and not text.startswith("**Extractive summary**")

        # One token per reply: the answer is cut, and says so.
        kb.lsp.set_configuration(openai_options(llama_server, maxTokens=1), section="kb")
        kb.lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await kb.wait_until_ready()
        cut = await ask(kb, "Explain every step of the Mexico payment process in detail.")
    assert cut["stop"] == "length", cut
    assert "Cut off: the model reached its limit of 1 tokens" in cut["answer"]


async def test_misconfigured_provider_is_named(
    llama_server: LlamaServer, workspace: Path, storage: Path
) -> None:
    # kb.llm.provider left at ollama, pointed at llama.cpp's server.
    options = {"ollama": {"host": llama_server.root, "timeout": 30}}
    async with running_server([workspace], storage, options=options) as kb:
        response = await ask(kb, CUTOFF)
        events = list(kb.ask_events)
    assert (response["mode"], response["stop"]) == ("fallback", "answer")
    wrong = [e for e in events if "does not speak the Ollama API" in e["text"]]
    assert len(wrong) == 1 and wrong[0]["kind"] == "status"
    assert "set kb.llm.provider to openai" in wrong[0]["text"]
    assert "ollama pull" not in wrong[0]["text"]


def test_kb_ask_on_the_command_line(
    llama_server: LlamaServer, workspace: Path, storage: Path
) -> None:
    # The CLI end to end, as a user types it: its own process, settings from the
    # environment, the real embedder, llama.cpp's server answering in grounded mode.
    env = {
        **os.environ,
        "KB_LLM_PROVIDER": "openai",
        "KB_LLM_BASE_URL": llama_server.base_url,
        "KB_STORAGE": str(storage),
    }
    env.pop("KB_EMBEDDER_FACTORY", None)
    done = subprocess.run(
        [sys.executable, "-m", "kb_lsp.cli", "ask", "--json", "-w", str(workspace), CUTOFF],
        env=env,
        capture_output=True,
        text=True,
        timeout=REQUEST_DEADLINE,
    )
    assert done.returncode == 0, done.stderr
    response = json.loads(done.stdout)
    assert response["mode"] == "grounded", response
    assert response["stop"] in ("answer", "length", "degenerate"), response
    assert any(source["path"] == MEXICO for source in response["sources"]), response
    for source in response["sources"]:
        assert "".join(source_lines(workspace, source)).strip()


async def test_a_missing_file_is_said_not_found_and_a_follow_up_searched_with_its_question(
    llama_server: LlamaServer, workspace: Path, storage: Path
) -> None:
    options = openai_options(llama_server)
    async with running_server([workspace], storage, options=options, real_embedder=True) as kb:
        missing = await ask(kb, "summarize payments/peru-payments.md")
        first = await ask(kb, CUTOFF)
        # A follow-up sharing no word with the notes ("happens", "miss"; "it" is the
        # cut-off): searched alone it finds nothing above the threshold, so only a search
        # that takes the conversation's question along gives the passage that answers it.
        late = await ask(
            kb, "And what happens if we miss it?", conversationId=first["conversationId"]
        )
    # Not found before any search or model call: no passages of other files.
    assert missing["stop"] == "error" and missing["usage"]["calls"] == 0
    assert missing["answer"].startswith("`payments/peru-payments.md` is not in the knowledge base")
    assert missing["sources"] == []
    # The follow-up is its own turn of the same conversation, answered from the passage
    # that says what happens after the Mexico cut-off.
    assert late["conversationId"] == first["conversationId"]
    assert late["mode"] == "grounded" and late["stop"] in ("answer", "length", "degenerate"), late
    given = [" ".join(source_lines(workspace, s)) for s in late["sources"] if s["path"] == MEXICO]
    assert any("Anything released after 14:30 is executed" in text for text in given), late
