"""`LlmClient` with the real `ollama` client against `ScriptedOllama` (and, when one is
reachable, a real Ollama: the `ollama` marker)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import ollama as ollama_package
import pytest
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer, call, calls, error, stall

from kb_lsp.config import OllamaSettings
from kb_lsp.llm import (
    ChatResult,
    ContextTooLong,
    Delta,
    LlmCancelled,
    LlmClient,
    LlmError,
    LlmTimeout,
    LlmUnreachable,
    ModelNotFound,
    split_thinking,
)

REPO = Path(__file__).resolve().parents[2]
USER = [{"role": "user", "content": "hello"}]
DEADLINE = 60.0  # seconds to wait for an event; generous for a loaded machine


@pytest.fixture
def server() -> Iterator[ScriptedOllama]:
    with ScriptedOllama() as scripted:
        yield scripted
    assert scripted.errors == []


def client_for(url: str, **settings: object) -> LlmClient:
    return LlmClient(OllamaSettings.model_validate({"host": url, "timeout": 10, **settings}))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_streamed_answer_with_thinking_field_and_think_block(server: ScriptedOllama) -> None:
    server.add(
        answer(
            "<think>first I reason</think>The cut-off is 14:30.",
            thinking="Looking at the question.",
            chunk_chars=3,  # tags arrive split across chunks
        )
    )
    deltas: list[Delta] = []
    result = client_for(server.url).chat(USER, on_delta=deltas.append)
    assert result.content == "The cut-off is 14:30."
    assert result.thinking == "Looking at the question.\nfirst I reason"
    assert result.prompt_tokens > 0 and result.completion_tokens > 0 and result.seconds > 0
    assert result.done_reason == "stop"
    # The live deltas kept the block out of the content as well.
    streamed = "".join(d.text for d in deltas if d.kind == "content")
    assert streamed == "The cut-off is 14:30."
    assert "".join(d.text for d in deltas if d.kind == "thinking") == (
        "Looking at the question.first I reason"
    )


@pytest.mark.parametrize(
    ("raw", "content", "thinking"),
    [
        ("plain answer", "plain answer", ""),
        ("<think>a</think>b<think>c</think>d", "bd", "a\nc"),
        (
            "reasoning the template opened</think>The answer.",
            "The answer.",
            "reasoning the template opened",
        ),
        ("Answer.<think>never closed", "Answer.", "never closed"),
    ],
)
def test_split_thinking(raw: str, content: str, thinking: str) -> None:
    assert split_thinking(raw) == (content, thinking)


def test_tool_calls_are_collected_across_chunks(server: ScriptedOllama) -> None:
    server.add(
        calls(
            ("search_knowledge_base", {"query": "mexico"}),
            ("read_file", {"path": "a.md", "start_line": 3}),
            content="Let me look.",
        )
    )
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    result = client_for(server.url).chat(USER, tools)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("search_knowledge_base", {"query": "mexico"}),
        ("read_file", {"path": "a.md", "start_line": 3}),
    ]
    assert result.content == "Let me look."
    request = server.chat_requests[0]
    assert request["stream"] is True
    assert request["options"]["num_ctx"] == 8192
    assert request["keep_alive"] == "10m"
    assert request["tools"][0]["function"]["name"] == "read_file"


def test_settings_reach_the_request(server: ScriptedOllama) -> None:
    server.add(answer("ok"))
    client_for(server.url, numCtx=4096, keepAlive="1h").chat(USER)
    request = server.chat_requests[0]
    assert request["options"]["num_ctx"] == 4096
    assert request["options"]["num_predict"] == 1024  # a quarter of the context
    assert request["keep_alive"] == "1h"
    assert request["model"] == "qwen2.5:7b"


def test_model_listing(server: ScriptedOllama) -> None:
    client = client_for(server.url)
    assert client.list_models() == ["qwen2.5:7b"]
    assert client.reachable() and client.has_model()
    assert client.status().reachable is True
    client.ensure_ready()
    with ScriptedOllama(models=["llama3"]) as other:
        # "llama3" and "llama3:latest" are the same model.
        assert client_for(other.url, model="llama3:latest").has_model()
        with pytest.raises(ModelNotFound, match=r"ollama pull qwen2\.5:7b"):
            client_for(other.url).ensure_ready()


def test_unreachable() -> None:
    host = f"http://127.0.0.1:{closed_port()}"
    client = client_for(host)
    with pytest.raises(LlmUnreachable) as raised:
        client.chat(USER)
    assert str(raised.value) == (
        f"Ollama is not reachable at {host}: start it with `ollama serve` "
        "or set kb.ollama.host to where it runs."
    )
    assert not client.reachable()
    assert client.status().reachable is False
    with pytest.raises(LlmUnreachable):
        client.list_models()


def test_model_not_pulled(server: ScriptedOllama) -> None:
    with pytest.raises(ModelNotFound) as raised:
        client_for(server.url, model="mistral:7b").chat(USER)
    assert "run `ollama pull mistral:7b`" in str(raised.value)


def test_http_500(server: ScriptedOllama) -> None:
    server.add(error(500, "llama runner process has terminated"))
    with pytest.raises(LlmError) as raised:
        client_for(server.url).chat(USER)
    assert type(raised.value) is LlmError
    assert "returned HTTP 500: llama runner process has terminated" in str(raised.value)


def test_context_too_long(server: ScriptedOllama) -> None:
    server.add(error(400, "the input length exceeds the context length"))
    with pytest.raises(ContextTooLong, match=r"raise kb\.ollama\.numCtx"):
        client_for(server.url).chat(USER)


def test_error_inside_the_stream(server: ScriptedOllama) -> None:
    # Ollama reports some failures as an {"error": ...} line in a 200 stream.
    server.add(Turn(content="partial answer", stream_error="an error was encountered"))
    with pytest.raises(LlmError, match="returned an error: an error was encountered"):
        client_for(server.url).chat(USER)


def test_timeout(server: ScriptedOllama) -> None:
    server.add(stall(after_chunks=1))
    with pytest.raises(LlmTimeout, match=r"did not answer within 0\.3 s"):
        client_for(server.url, timeout=0.3).chat(USER)


def test_cancel_stops_a_stalled_stream_at_once(server: ScriptedOllama) -> None:
    server.add(stall(after_chunks=2))
    cancel = threading.Event()
    seen: list[Delta] = []
    delivered = threading.Event()

    def on_delta(delta: Delta) -> None:
        seen.append(delta)
        if len(seen) == 2:
            delivered.set()

    # Cancel only once both chunks reached the caller and the model went silent, so the
    # cancel lands mid-stream however slowly the stream is read.
    def cancel_when_stalled() -> None:
        if delivered.wait(DEADLINE) and server.stalled.wait(DEADLINE):
            cancel.set()

    threading.Thread(target=cancel_when_stalled, daemon=True).start()
    with pytest.raises(LlmCancelled):
        client_for(server.url, timeout=DEADLINE).chat(USER, cancel=cancel, on_delta=on_delta)
    assert len(seen) == 2  # it was mid-stream: both chunks before the stall were delivered
    assert not server.released  # it did not wait for the model to finish


def test_chat_stream_yields_deltas_then_one_result(server: ScriptedOllama) -> None:
    server.add(call("list_files"))
    items = list(client_for(server.url).chat_stream(USER))
    assert isinstance(items[-1], ChatResult)
    assert all(isinstance(item, Delta) for item in items[:-1])
    assert items[-1].tool_calls[0].name == "list_files"


def test_scripted_server_answers_non_streaming_and_embed(server: ScriptedOllama) -> None:
    server.add(call("read_file", path="a.md"))
    client = ollama_package.Client(host=server.url)
    response = client.chat(model="qwen2.5:7b", messages=USER, stream=False)
    assert response.message.tool_calls is not None
    assert response.message.tool_calls[0].function.arguments == {"path": "a.md"}
    assert response.done
    embedded = client.embed(model="nomic-embed-text", input=["a b", "a b", "c"])
    vectors = embedded.embeddings
    assert vectors[0] == vectors[1] != vectors[2]
    assert client.show("qwen2.5:7b").capabilities == ["completion", "tools"]


def test_scripted_server_as_a_process(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "models": ["qwen2.5:7b"],
                "turns": [{"tool_calls": [{"name": "list_files", "arguments": {}}]}],
                "default": {"content": "Scripted answer."},
            }
        ),
        encoding="utf-8",
    )
    port_file = tmp_path / "port"
    process = subprocess.Popen(
        [
            sys.executable,
            *("-m", "tests.fakes.ollama_server"),
            *("--script", str(script), "--port-file", str(port_file)),
        ],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # printed once it listens
        assert "ollama stand-in listening on http://127.0.0.1:" in line
        url = line.split()[-1]
        assert port_file.read_text() == url.rsplit(":", 1)[1]
        client = client_for(url)
        assert client.chat(USER).tool_calls[0].name == "list_files"
        assert client.chat(USER).content == "Scripted answer."
        assert client.chat(USER).content == "Scripted answer."
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


# --- a real Ollama ----------------------------------------------------------------------------


def _real_host() -> str:
    return os.environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434"


def _real_ollama_model() -> str | None:
    host = _real_host() if "://" in _real_host() else "http://" + _real_host()
    try:
        listing = httpx.get(host + "/api/tags", timeout=2).json()
    except (httpx.HTTPError, ValueError):
        return None
    names = [m.get("model") or m.get("name") for m in listing.get("models", [])]
    wanted = os.environ.get("KB_OLLAMA_MODEL", "qwen2.5:7b")
    return wanted if wanted in names else (names[0] if names else None)


@pytest.mark.ollama
def test_real_ollama_chat_with_a_tool() -> None:
    model = _real_ollama_model()
    if model is None:
        pytest.skip(f"no Ollama with a model is reachable at {_real_host()}")
    client = LlmClient(OllamaSettings(host=_real_host(), model=model, timeout=300))
    tools = [
        {
            "type": "function",
            "function": {
                "name": "search_knowledge_base",
                "description": "Search the user's notes.",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}},
                    "required": ["query"],
                },
            },
        }
    ]
    result = client.chat(
        [{"role": "user", "content": "Search my notes for the Mexico payment cut-off."}], tools
    )
    assert result.tool_calls or result.content
    assert "<think>" not in result.content
