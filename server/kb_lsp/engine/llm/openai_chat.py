"""`kb.llm.provider = openai`: any OpenAI-compatible server (llama.cpp's llama-server,
LM Studio, vLLM, LocalAI, Jan, llama-cpp-python, Ollama's /v1), spoken with plain httpx.

Why httpx and not the official `openai` package: the wire format is small and stable
(`POST /chat/completions` streamed as SSE, `GET /models`), the parts that matter here are
extensions the typed client hides behind `model_extra` (`reasoning_content`, llama-server's
`/props` with the context size and the template's tool support), httpx is already what
the `ollama` client runs on (one HTTP stack, one set of timeouts), and current `openai`
releases bring a second HTTP stack (`httpx2`) and client-side retries we would turn off.

What is read from the stream: `delta.content`; `delta.reasoning_content` (or
`delta.reasoning`) as thinking, never in the answer; `delta.tool_calls` fragments, keyed
by `index`, assembled into whole calls; `finish_reason` (`length` when the reply was cut
at `max_tokens`); `usage`, which servers send in a last chunk when asked with
`stream_options.include_usage`. Tool results go back with their `tool_call_id`.

Capabilities: `GET /models` (the served model when `kb.llm.model` is unset; the context
size where the server says it: vLLM's `max_model_len`, …) and llama-server's `GET /props`
(`default_generation_settings.n_ctx`, `chat_template_caps.supports_tools`, and
`chat_template`: llama.cpp's own fallback template there means the model has none). A
server that says nothing about tools is taken to support them (the agent, as for Ollama).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import httpx

from kb_lsp.config import LlmProviderName
from kb_lsp.engine.llm.base import (
    CONNECT_TIMEOUT_SECONDS,
    HTTP_TIMEOUT_SLACK_SECONDS,
    ChatModel,
)
from kb_lsp.engine.llm.errors import (
    AuthFailed,
    ContextTooLong,
    LlmError,
    LlmTimeout,
    LlmUnreachable,
    ModelNotFound,
    WrongApi,
)
from kb_lsp.engine.llm.shapes import Capabilities, Message
from kb_lsp.engine.llm.stream import LineTooLong, Piece, Stream, lines
from kb_lsp.json_bounds import load_json

log = logging.getLogger(__name__)

LABEL = "The OpenAI-compatible server"
# Keys under which OpenAI-compatible servers report a model's context size in /models.
_CONTEXT_KEYS = ("max_model_len", "context_length", "max_context_length", "n_ctx")
# One line of the stream (a chunk: a token, a tool call's fragment) is far smaller.
MAX_LINE = 1024 * 1024
# llama.cpp's template for a model without one (`common/chat.cpp`), whitespace removed:
# /props reports it as the model's `chat_template` when the GGUF has none.
LLAMA_FALLBACK_TEMPLATE = (
    "{%-formessageinmessages-%}{{-'<|im_start|>'+message.role+''+message.content+"
    "'<|im_end|>'-}}{%-endfor-%}{%-ifadd_generation_prompt-%}"
    "{{-'<|im_start|>assistant'-}}{%-endif-%}"
)


class HttpStatusError(Exception):
    """A non-200 answer, with the server's own message."""

    def __init__(self, status: int, message: str, route: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.route = route


class OpenAIChat(ChatModel):
    provider: ClassVar[LlmProviderName] = "openai"
    label: ClassVar[str] = LABEL

    @property
    def root(self) -> str:
        """The server root (llama-server's /props and /health live there, not under /v1)."""
        base = self.host
        return base[: -len("/v1")] if base.endswith("/v1") else base

    def _http(self, read_timeout: float) -> httpx.Client:
        headers = {"Accept": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        return httpx.Client(
            timeout=httpx.Timeout(read_timeout, connect=min(CONNECT_TIMEOUT_SECONDS, read_timeout)),
            headers=headers,
        )

    # -- capabilities --

    def _probe(self, timeout: float) -> Capabilities:
        with self._http(timeout) as http:
            try:
                response = http.get(f"{self.host}/models")
                _raise_for_status(response, "/models")
                listing = load_json(response.content, "/models")
            except (httpx.HTTPError, HttpStatusError, ValueError) as err:
                raise self._translate(err) from err
            models = [m for m in listing.get("data") or [] if isinstance(m, dict)]
            ids = [str(m.get("id")) for m in models if m.get("id")]
            model = self.config.model
            if model is None:
                if not ids:
                    raise ModelNotFound(
                        f"{LABEL} at {self.host} lists no model at /models: load one, "
                        "or set kb.llm.model.",
                        host=self.host,
                    )
                model = ids[0]
            elif len(ids) > 1 and model not in ids:
                # One served model answers to any name (llama-server); among several the
                # name must be right.
                raise ModelNotFound(
                    f"The model {model} is not served by {LABEL.lower()} at {self.host}: "
                    f"set kb.llm.model to one of {', '.join(ids[:8])}.",
                    host=self.host,
                    model=model,
                )
            entry = next((m for m in models if m.get("id") == model), models[0] if models else {})
            context = _context_of(entry)
            tools: bool | None = None
            template: bool | None = None
            props = _props(http, self.root)
            if props is not None:
                template = own_template(props.get("chat_template"))
                slot = props.get("default_generation_settings") or {}
                if isinstance(slot.get("n_ctx"), int) and slot["n_ctx"] > 0:
                    context = slot["n_ctx"]
                caps = props.get("chat_template_caps") or {}
                flags = [caps[k] for k in ("supports_tools", "supports_tool_calls") if k in caps]
                if flags:
                    tools = all(bool(flag) for flag in flags)
        return Capabilities(tools=tools, context=context, model=model, chat_template=template)

    # -- chat --

    def _open(
        self,
        messages: list[Message],
        tools: list[Mapping[str, Any]] | None,
        max_tokens: int,
        temperature: float | None,
        response_schema: Mapping[str, Any] | None = None,
    ) -> Stream:
        if not self.model:
            self.capabilities(timeout=min(self.timeout, 10.0))
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_message(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": max_tokens,
        }
        if temperature is not None:
            body["temperature"] = temperature
        if tools:
            body["tools"] = list(tools)
        if response_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "fields", "strict": True, "schema": dict(response_schema)},
            }
        http = self._http(self.timeout + HTTP_TIMEOUT_SLACK_SECONDS)
        context = http.stream("POST", f"{self.host}/chat/completions", json=body)

        def pieces() -> Iterator[Piece]:
            with context as response:
                if response.status_code != 200:
                    response.read()
                    _raise_for_status(response, "/chat/completions")
                for line in lines(response.iter_bytes(), MAX_LINE):
                    if not line.startswith("data:"):
                        continue  # SSE comments, event names, keep-alives
                    data = line[len("data:") :].strip()
                    if data == "[DONE]":
                        return
                    if not data:
                        continue
                    yield _piece(load_json(data, "a chunk of the stream", max_bytes=MAX_LINE))

        return Stream(pieces(), http.close, http.close)

    # -- errors --

    def _translate(self, err: BaseException) -> LlmError:
        host, model = self.host, self.model
        if isinstance(err, LlmError):
            return err
        if isinstance(err, (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError)):
            return LlmUnreachable(
                f"{LABEL} is not reachable at {host} (kb.llm.provider is openai): start it "
                "(for example `llama-server -m MODEL.gguf --port 8080`) or set kb.llm.baseUrl "
                "to where it runs (the URL ending in /v1).",
                host=host,
                model=model,
            )
        if isinstance(err, httpx.TimeoutException):
            return LlmTimeout(self.timeout_error().message, host=host, model=model)
        if isinstance(err, HttpStatusError):
            return self._status_error(err)
        if isinstance(err, LineTooLong):
            return LlmError(f"{LABEL} at {host} sent {err}: not a reply", host=host, model=model)
        if isinstance(err, (ValueError, KeyError, TypeError)):
            return WrongApi(
                f"{LABEL} at {host} sent something that is not the OpenAI API ({err}): "
                "check kb.llm.baseUrl (the URL ending in /v1), or set kb.llm.provider to "
                "ollama for Ollama's own API.",
                host=host,
                model=model,
            )
        if isinstance(err, httpx.HTTPError):
            return LlmError(f"The connection to {host} failed: {err}", host=host, model=model)
        return LlmError(f"{LABEL} at {host} failed: {err}", host=host, model=model)

    def _status_error(self, err: HttpStatusError) -> LlmError:
        host, model = self.host, self.model
        text = err.message
        lowered = text.lower()
        if err.status in (401, 403):
            env = self.config.api_key_env
            if env is None:
                fix = "name the environment variable holding the key in kb.llm.apiKeyEnv"
            elif self.config.api_key is None:
                fix = f"set the environment variable {env} (named in kb.llm.apiKeyEnv)"
            else:
                fix = f"check the key in {env} (named in kb.llm.apiKeyEnv)"
            return AuthFailed(
                f"{LABEL} at {host} refused the request (HTTP {err.status}: {text}): {fix}.",
                host=host,
                model=model,
            )
        if err.status == 404:
            if "model" in lowered:
                return ModelNotFound(
                    f"The model {model} is not available at {host}: set kb.llm.model to a "
                    f"model the server lists at {host}/models. The server said: {text}",
                    host=host,
                    model=model,
                )
            return WrongApi(
                f"{host} has no OpenAI-compatible {err.route} (HTTP 404): set kb.llm.baseUrl "
                "to the server's URL ending in /v1 (e.g. http://127.0.0.1:8080/v1), or "
                "kb.llm.provider to ollama for Ollama's own API.",
                host=host,
                model=model,
            )
        if err.status in (400, 413) and ("context" in lowered or "too long" in lowered):
            return ContextTooLong(
                f"The prompt is too long for the context of {model} ({self.num_ctx} tokens): "
                f"ask about one file, or give the server a larger context and set "
                f"{self.config.num_ctx_setting}. The server said: {text}",
                host=host,
                model=model,
            )
        return LlmError(
            f"{LABEL} at {host} returned HTTP {err.status}: {text}", host=host, model=model
        )


def _raise_for_status(response: httpx.Response, route: str) -> None:
    if response.status_code == 200:
        return
    message = response.text.strip()
    try:
        body = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            message = str(error.get("message") or message)
        elif isinstance(error, str):
            message = error
    except ValueError:
        pass
    raise HttpStatusError(response.status_code, message[:500] or "(no message)", route)


def _props(http: httpx.Client, root: str) -> dict[str, Any] | None:
    """llama-server's /props, or None from servers without it."""
    try:
        response = http.get(f"{root}/props")
        if response.status_code != 200:
            return None
        props = load_json(response.content, "/props")
    except (httpx.HTTPError, ValueError):
        return None
    return props if isinstance(props, dict) else None


def own_template(template: object) -> bool | None:
    """Whether /props' `chat_template` is the model's own: False for none or llama.cpp's
    fallback, None when the server does not say."""
    if not isinstance(template, str):
        return None
    return "".join(template.split()) not in ("", LLAMA_FALLBACK_TEMPLATE)


def _context_of(entry: Mapping[str, Any]) -> int | None:
    for holder in (entry, entry.get("meta") or {}):
        if not isinstance(holder, Mapping):
            continue
        for key in _CONTEXT_KEYS:
            value = holder.get(key)
            if isinstance(value, int) and value > 0:
                return value
    return None


def _piece(chunk: Mapping[str, Any]) -> Piece:
    if "error" in chunk:
        error = chunk["error"]
        message = error.get("message") if isinstance(error, dict) else str(error)
        code = error.get("code") if isinstance(error, dict) else None
        status = code if isinstance(code, int) else 500
        raise HttpStatusError(status, str(message), "/chat/completions")
    piece = Piece()
    usage = chunk.get("usage")
    if isinstance(usage, Mapping):
        piece.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        piece.completion_tokens = int(usage.get("completion_tokens") or 0)
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or choice.get("message") or {}
        piece.content += str(delta.get("content") or "")
        piece.thinking += str(delta.get("reasoning_content") or delta.get("reasoning") or "")
        for call in delta.get("tool_calls") or []:
            function = call.get("function") or {}
            arguments = function.get("arguments") or ""
            if not isinstance(arguments, str):  # a server that sends the object whole
                arguments = json.dumps(arguments)
            piece.fragments.append(
                (
                    int(call.get("index") or 0),
                    str(call.get("id") or ""),
                    str(function.get("name") or ""),
                    arguments,
                )
            )
        if choice.get("finish_reason"):
            piece.done_reason = str(choice["finish_reason"])
    return piece


def _message(message: Message) -> dict[str, Any]:
    """A neutral message in the shape of the OpenAI chat API."""
    role = message["role"]
    out: dict[str, Any] = {"role": role, "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": call.get("id") or f"call_{i}",
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": json.dumps(call["function"]["arguments"]),
                },
            }
            for i, call in enumerate(message["tool_calls"])
        ]
    if role == "tool":
        out["tool_call_id"] = message.get("tool_call_id") or ""
    return out
