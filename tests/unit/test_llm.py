"""The model clients: `OllamaChat` (the real `ollama` client) against `ScriptedOllama`,
`OpenAIChat` (httpx) against `ScriptedOpenAI`, both against a server that never answers
(`SilentServer`), and, when one is reachable, a real Ollama (the `ollama` marker)."""

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
from tests.fakes.openai_server import ScriptedOpenAI
from tests.fakes.silent_server import SilentServer

from kb_lsp.config import OllamaSettings, env_settings, load_settings
from kb_lsp.engine.llm import (
    AuthFailed,
    ChatModel,
    ChatResult,
    ContextTooLong,
    Delta,
    LlmCancelled,
    LlmError,
    LlmTimeout,
    LlmUnreachable,
    ModelNotFound,
    OllamaChat,
    OpenAIChat,
    WrongApi,
    create_llm,
    ollama_chat,
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


def client_for(url: str, **settings: object) -> OllamaChat:
    return ollama_chat(OllamaSettings.model_validate({"host": url, "timeout": 10, **settings}))


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
    # Asked for by name (`-m ollama`): no Ollama is a failure, not a silent skip.
    assert model is not None, f"no Ollama with a model is reachable at {_real_host()}"
    client = ollama_chat(OllamaSettings(host=_real_host(), model=model, timeout=300))
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


# --- provider and settings --------------------------------------------------------------------


def openai_for(url: str, environ: dict[str, str] | None = None, **llm: object) -> ChatModel:
    settings = load_settings({"llm": {"provider": "openai", "baseUrl": url, "timeout": 10, **llm}})
    assert settings.problems == []
    model = create_llm(settings.settings, environ=environ or {})
    assert isinstance(model, OpenAIChat)
    return model


def test_kb_llm_settings_win_over_kb_ollama_and_keep_it_working() -> None:
    plain = create_llm(load_settings({"ollama": {"host": "http://h:1", "model": "m1"}}).settings)
    assert isinstance(plain, OllamaChat)
    assert (plain.host, plain.model, plain.num_ctx, plain.timeout) == (
        "http://h:1",
        "m1",
        8192,
        120,
    )
    both = load_settings(
        {
            "ollama": {"host": "http://h:1", "model": "m1", "timeout": 30},
            "llm": {"model": "m2", "baseUrl": "h:2/", "timeout": 5, "contextSize": 4096},
        }
    ).settings
    chosen = create_llm(both)
    assert (chosen.host, chosen.model, chosen.timeout, chosen.num_ctx) == (
        "http://h:2",
        "m2",
        5,
        4096,
    )
    # The OpenAI-compatible default is llama-server's address; its model comes from it.
    openai = create_llm(load_settings({"llm": {"provider": "openai"}}).settings)
    assert (openai.host, openai.config.model) == ("http://127.0.0.1:8080/v1", None)


def test_bad_llm_settings_are_reported_and_defaulted() -> None:
    loaded = load_settings(
        {"llm": {"provider": "lmstudio", "apiKeyEnv": "sk-12345 secret", "maxTokens": -1}}
    )
    text = " ".join(loaded.problems)
    assert "kb.llm.provider" in text and "kb.llm.apiKeyEnv" in text and "kb.llm.maxTokens" in text
    assert "NAME of an environment variable" in text
    assert loaded.settings.llm.provider == "ollama" and loaded.settings.llm.api_key_env is None


def test_llm_environment_variables() -> None:
    env = env_settings({"KB_LLM_PROVIDER": "openai", "KB_LLM_BASE_URL": "http://x:1/v1"})
    settings = load_settings(env).settings
    assert (settings.llm.provider, settings.llm.base_url) == ("openai", "http://x:1/v1")


# --- the OpenAI-compatible provider -------------------------------------------------------------


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as scripted:
        yield scripted
    assert scripted.errors == []


def test_openai_streams_content_reasoning_and_usage(openai_server: ScriptedOpenAI) -> None:
    openai_server.add(answer("The cut-off is 14:30.", thinking="Reading the notes.", chunk_chars=4))
    model = openai_for(openai_server.base_url)
    deltas: list[Delta] = []
    result = model.chat(USER, on_delta=deltas.append)
    assert result.content == "The cut-off is 14:30."
    assert result.thinking == "Reading the notes."
    assert "".join(d.text for d in deltas if d.kind == "content") == "The cut-off is 14:30."
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert result.done_reason == "stop" and not result.truncated
    request = openai_server.chat_requests[0]
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    # No kb.llm.model: the server's own model; the context and the reply limit from /props.
    assert request["model"] == "smollm2"
    assert model.num_ctx == 8192 and request["max_tokens"] == 2048


def test_openai_tool_calls_from_fragments_and_results_by_id(
    openai_server: ScriptedOpenAI,
) -> None:
    openai_server.add(
        calls(
            ("search_knowledge_base", {"query": "mexico cut-off"}),
            ("read_file", {"path": "a.md", "start_line": 3}),
            content="Looking.",
        )
    )
    model = openai_for(openai_server.base_url, model="smollm2")
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    result = model.chat(USER, tools)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("search_knowledge_base", {"query": "mexico cut-off"}),
        ("read_file", {"path": "a.md", "start_line": 3}),
    ]
    assert all(c.id.startswith("call_") for c in result.tool_calls)
    assert result.done_reason == "tool_calls"
    assert openai_server.chat_requests[0]["tools"] == tools

    # The next turn sends the calls back with their ids, and each result with its id.
    openai_server.add(answer("Done."))
    call = result.tool_calls[0]
    history = [
        *USER,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": call.id, "function": {"name": call.name, "arguments": call.arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "tool_name": call.name, "content": "found"},
    ]
    model.chat(history, tools)
    sent = openai_server.chat_requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == call.id
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == call.arguments
    assert sent[2] == {"role": "tool", "content": "found", "tool_call_id": call.id}


def test_openai_capabilities(openai_server: ScriptedOpenAI) -> None:
    caps = openai_for(openai_server.base_url).capabilities()
    assert (caps.tools, caps.context, caps.model) == (True, 8192, "smollm2")
    with ScriptedOpenAI(tools=False, n_ctx=2048) as small:
        model = openai_for(small.base_url)
        assert model.capabilities().tools is False
        assert model.num_ctx == 2048 and model.num_predict == 512
        status = model.status()
        assert (status.provider, status.reachable, status.tools) == ("openai", True, False)
    with ScriptedOpenAI(props=False) as plain:
        # A server without /props says nothing about tools: the agent is used.
        caps = openai_for(plain.base_url).capabilities()
        assert (caps.tools, caps.context) == (None, None)


def test_openai_length_is_reported(openai_server: ScriptedOpenAI) -> None:
    openai_server.add(answer("A long answer that was", done_reason="length"))
    result = openai_for(openai_server.base_url, maxTokens=5).chat(USER)
    assert result.truncated and result.content == "A long answer that was"
    assert openai_server.chat_requests[0]["max_tokens"] == 5


def test_openai_unreachable_names_the_provider_and_setting() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    model = openai_for(url)
    with pytest.raises(LlmUnreachable) as raised:
        model.chat(USER)
    assert "The OpenAI-compatible server is not reachable at " + url in str(raised.value)
    assert "kb.llm.baseUrl" in str(raised.value) and "Ollama" not in str(raised.value)
    status = model.status()
    assert status.reachable is False and status.message == str(raised.value)


def test_openai_api_key_from_the_named_environment_variable() -> None:
    with ScriptedOpenAI(api_key="s3cret") as server:
        ok = openai_for(server.base_url, {"MY_KEY": "s3cret"}, apiKeyEnv="MY_KEY")
        server.add(answer("ok"))
        assert ok.chat(USER).content == "ok"
        missing = openai_for(server.base_url, {}, apiKeyEnv="MY_KEY")
        with pytest.raises(AuthFailed, match=r"set the environment variable MY_KEY"):
            missing.chat(USER)
        with pytest.raises(AuthFailed, match=r"kb\.llm\.apiKeyEnv"):
            openai_for(server.base_url).capabilities()


def test_openai_wrong_base_url_and_unknown_model(openai_server: ScriptedOpenAI) -> None:
    # The server root instead of its /v1 URL: no /chat/completions there.
    no_v1 = openai_for(openai_server.url + "/api", model="smollm2")
    with pytest.raises(WrongApi, match=r"URL ending in /v1"):
        no_v1.chat(USER)
    with ScriptedOpenAI(models=["a", "b"], strict_models=True) as several:
        with pytest.raises(ModelNotFound, match=r"set kb\.llm\.model to one of a, b"):
            openai_for(several.base_url, model="c").capabilities()
        with pytest.raises(ModelNotFound, match=r"model 'c' not found"):
            openai_for(several.base_url, model="c").chat(USER)


def test_openai_http_500_and_error_in_the_stream(openai_server: ScriptedOpenAI) -> None:
    openai_server.add(error(500, "slot unavailable"))
    model = openai_for(openai_server.base_url)
    with pytest.raises(LlmError, match=r"returned HTTP 500: slot unavailable"):
        model.chat(USER)
    openai_server.add(Turn(content="partial", stream_error="the model crashed"))
    with pytest.raises(LlmError, match=r"the model crashed"):
        model.chat(USER)
    openai_server.add(error(400, "the request exceeds the available context size"))
    with pytest.raises(ContextTooLong, match=r"kb\.llm\.contextSize"):
        model.chat(USER)


def test_openai_cancel_mid_stream(openai_server: ScriptedOpenAI) -> None:
    openai_server.add(stall(after_chunks=2))
    cancel = threading.Event()
    seen: list[Delta] = []

    def on_delta(delta: Delta) -> None:
        # Cancel once text has arrived and the model has gone silent: mid-stream.
        seen.append(delta)
        if len(seen) == 1:
            threading.Thread(target=lambda: openai_server.stalled.wait(10) and cancel.set()).start()

    with pytest.raises(LlmCancelled):
        openai_for(openai_server.base_url).chat(USER, cancel=cancel, on_delta=on_delta)
    assert seen and not openai_server.released


def test_ollama_provider_at_an_openai_server_says_so(openai_server: ScriptedOpenAI) -> None:
    model = client_for(openai_server.url)
    expected = "this server does not speak the Ollama API — set kb.llm.provider to openai"
    with pytest.raises(WrongApi) as raised:
        model.chat(USER)
    assert expected in str(raised.value)
    assert "ollama pull" not in str(raised.value)
    with pytest.raises(WrongApi, match=expected):
        model.capabilities()
    assert expected in (model.status().message or "")


def test_ollama_capabilities(server: ScriptedOllama) -> None:
    caps = client_for(server.url).capabilities()
    assert (caps.tools, caps.context) == (True, 8192)  # the model's 32768, capped by numCtx
    with ScriptedOllama(capabilities=["completion"]) as plain:
        assert client_for(plain.url).capabilities().tools is False
        assert client_for(plain.url).status().tools is False
    with pytest.raises(ModelNotFound, match=r"ollama pull mistral"):
        client_for(server.url, model="mistral").capabilities()


# --- silence: the waiting notice and the timeout ------------------------------------------------


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_a_server_that_never_answers_times_out_after_a_waiting_notice(provider: str) -> None:
    waited = threading.Event()
    with SilentServer() as silent:
        if provider == "ollama":
            model: ChatModel = client_for(silent.url, timeout=2)
        else:
            model = openai_for(silent.url + "/v1", model="m", timeout=2)
        with pytest.raises(LlmTimeout) as raised:
            model.chat(USER, on_wait=waited.set)
        assert silent.accepted.is_set()
    # The notice came first (after a second of silence), then the timeout, with the fix.
    assert waited.is_set()
    message = str(raised.value)
    assert "did not answer within 2 s" in message and "accepted the request" in message
    assert ("kb.ollama.timeout" if provider == "ollama" else "kb.llm.timeout") in message


def test_the_waiting_notice_comes_once_per_call(server: ScriptedOllama) -> None:
    server.add(stall(after_chunks=1))
    notices: list[int] = []
    cancel = threading.Event()

    def on_wait() -> None:
        notices.append(1)
        server.release()  # the model answers after the notice

    result = client_for(server.url).chat(USER, cancel=cancel, on_wait=on_wait)
    assert notices == [1] and result.content
