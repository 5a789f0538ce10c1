"""`ScriptedOpenAI`: a scripted stand-in for an OpenAI-compatible server (llama-server).

The same scripts as `ScriptedOllama` (`answer`, `call`, `calls`, `error`, `stall`, turns
with `delay`, `done_reason`, callables; see `ollama_server.py`), spoken the way
llama.cpp's llama-server speaks:

* `GET /v1/models` — the models (`data[].id`, with `meta.n_ctx_train`);
* `GET /props` — llama-server's properties: `default_generation_settings.n_ctx`,
  `chat_template_caps.supports_tools` / `supports_tool_calls` (`tools=` sets both) and
  `chat_template` (the model's own, or with `chat_template=False` llama.cpp's fallback for
  a model that has none); `props=False` answers 404, as servers other than llama-server do;
* `GET /health`;
* `POST /v1/chat/completions` — the next turn, streamed as SSE (`data: {chunk}` …
  `data: [DONE]`): `reasoning_content` pieces, `content` pieces, tool calls as fragments
  keyed by `index` (the name first, the JSON arguments in pieces; a call's
  `raw_arguments` are sent as written, JSON or not), a last chunk with
  `finish_reason`, then a `usage` chunk when `stream_options.include_usage` is set; or one
  JSON object when `"stream": false`. Errors as `{"error": {"code", "message", "type"}}`;
* Ollama's routes (`/api/chat`, `/api/tags`, `/api/show`) — 404 "File Not Found", as a
  real llama-server answers them.

`api_key="…"` makes every route but /health answer 401 without `Authorization: Bearer …`.
`strict_models=True` answers 404 "model not found" for a model not in the list (like LM
Studio or Ollama's /v1; llama-server serves its one model under any name).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from .ollama_server import JsonHandler, ScriptedOllama, ScriptItem, Turn, _words

DEFAULT_OPENAI_MODELS = ("smollm2",)
# A model's own template (as SmolLM2's GGUF has one), and llama.cpp's fallback for a model
# without one, as /props reports them.
MODEL_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
FALLBACK_TEMPLATE = (
    "{%- for message in messages -%}\n"
    "  {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "  {{- '<|im_start|>assistant\n' -}}\n"
    "{%- endif -%}"
)


class ScriptedOpenAI(ScriptedOllama):
    """A scripted OpenAI-compatible server on 127.0.0.1; see the module docstring."""

    chat_path = "/v1/chat/completions"

    def __init__(
        self,
        script: Sequence[ScriptItem] = (),
        *,
        models: Sequence[str] = DEFAULT_OPENAI_MODELS,
        default: ScriptItem | None = None,
        port: int = 0,
        tools: bool = True,
        props: bool = True,
        n_ctx: int = 8192,
        api_key: str | None = None,
        strict_models: bool = False,
        chat_template: bool = True,
    ) -> None:
        self.tools = tools
        self.template = chat_template
        self.props = props
        self.n_ctx = n_ctx
        self.api_key = api_key
        self.strict_models = strict_models
        super().__init__(script, models=models, default=default, port=port)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)


def _make_handler(owner: ScriptedOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def _error(self, status: int, message: str, kind: str) -> None:
            self._json(status, {"error": {"code": status, "message": message, "type": kind}})

        def _event(self, payload: Any) -> None:
            data = f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n"
            self._send_chunk(data.encode())

        def _authorized(self) -> bool:
            if owner.api_key is None:
                return True
            if self.headers.get("Authorization") == f"Bearer {owner.api_key}":
                return True
            self._error(401, "Invalid API Key", "authentication_error")
            return False

        def do_GET(self) -> None:
            owner._record("GET", self.path, {})
            if self.path in ("/health", "/v1/health"):
                self._json(200, {"status": "ok"})
            elif not self._authorized():
                return
            elif self.path in ("/v1/models", "/models"):
                self._json(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {
                                "id": name,
                                "object": "model",
                                "owned_by": "scripted",
                                "meta": {"n_ctx_train": 32768},
                            }
                            for name in owner.models
                        ],
                    },
                )
            elif self.path == "/props" and owner.props:
                self._json(
                    200,
                    {
                        "default_generation_settings": {"n_ctx": owner.n_ctx, "params": {}},
                        "total_slots": 1,
                        "model_alias": owner.models[0] if owner.models else "",
                        "chat_template": MODEL_TEMPLATE if owner.template else FALLBACK_TEMPLATE,
                        "chat_template_caps": {
                            "supports_tools": owner.tools,
                            "supports_tool_calls": owner.tools,
                            "supports_system_role": True,
                        },
                    },
                )
            else:
                self._error(404, "File Not Found", "not_found_error")

        def do_POST(self) -> None:
            body = self._body()
            owner._record("POST", self.path, body)
            if not self._authorized():
                return
            if self.path in ("/v1/chat/completions", "/chat/completions"):
                self._chat(body)
            else:
                self._error(404, "File Not Found", "not_found_error")

        def _chat(self, body: dict[str, Any]) -> None:
            model = str(body.get("model") or "")
            if owner.strict_models and model not in owner.models:
                self._error(404, f"model '{model}' not found", "not_found_error")
                return
            turn = owner._next_turn(body)
            if turn.delay:
                owner._release.wait(turn.delay)
            if turn.error is not None or turn.status != 200:
                self._error(turn.status, turn.error or "scripted error", "server_error")
                return
            messages = body.get("messages") or []
            prompt_tokens = turn.prompt_eval_count
            if prompt_tokens is None:
                prompt_tokens = 10 + _words(messages)
            deltas = _deltas(turn)
            completion_tokens = turn.eval_count if turn.eval_count is not None else 1 + len(deltas)
            finish = (
                "tool_calls"
                if turn.tool_calls and turn.done_reason == "stop"
                else (turn.done_reason)
            )
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
            chunk_id = f"chatcmpl-{uuid.uuid4().hex[:12]}"
            if body.get("stream") is not True:
                message: dict[str, Any] = {"role": "assistant", "content": turn.content}
                if turn.thinking:
                    message["reasoning_content"] = turn.thinking
                if turn.tool_calls:
                    message["tool_calls"] = [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {
                                "name": c["name"],
                                "arguments": json.dumps(c.get("arguments") or {}),
                            },
                        }
                        for i, c in enumerate(turn.tool_calls)
                    ]
                self._json(
                    200,
                    {
                        "id": chunk_id,
                        "object": "chat.completion",
                        "model": model,
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": usage,
                    },
                )
                return

            def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
                return {
                    "id": chunk_id,
                    "object": "chat.completion.chunk",
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                }

            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                self._event(chunk({"role": "assistant", "content": None}))
                for index, delta in enumerate(deltas):
                    if turn.stall_after is not None and index == turn.stall_after:
                        break
                    self._event(chunk(delta))
                while turn.endless and not owner.released:
                    for delta in deltas:
                        self._event(chunk(delta))
                if turn.stream_error is not None:
                    self._event({"error": {"code": 500, "message": turn.stream_error}})
                    self._end_chunks()
                    return
                if turn.stall_after is not None:
                    owner.stalled.set()
                    owner._release.wait()
                self._event(chunk({}, finish))
                if (body.get("stream_options") or {}).get("include_usage"):
                    self._event(
                        {
                            "id": chunk_id,
                            "object": "chat.completion.chunk",
                            "model": model,
                            "choices": [],
                            "usage": usage,
                        }
                    )
                self._event("[DONE]")
                self._end_chunks()
            except (BrokenPipeError, ConnectionResetError):
                owner.hung_up.set()

    return Handler


def _deltas(turn: Turn) -> list[dict[str, Any]]:
    """The streamed `delta`s of a turn: reasoning, content, then tool-call fragments."""
    size = max(1, turn.chunk_chars)
    out: list[dict[str, Any]] = []
    for start in range(0, len(turn.thinking), size):
        out.append({"reasoning_content": turn.thinking[start : start + size]})
    for start in range(0, len(turn.content), size):
        out.append({"content": turn.content[start : start + size]})
    for index, spec in enumerate(turn.tool_calls):
        name = spec.get("name") or spec.get("function", {}).get("name")
        arguments = spec.get("raw_arguments") or json.dumps(
            spec.get("arguments") or spec.get("function", {}).get("arguments") or {}
        )
        out.append(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": f"call_{uuid.uuid4().hex[:8]}",
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        for start in range(0, len(arguments), size):
            out.append(
                {
                    "tool_calls": [
                        {"index": index, "function": {"arguments": arguments[start : start + size]}}
                    ]
                }
            )
    return out


__all__ = ["DEFAULT_OPENAI_MODELS", "ScriptedOpenAI"]
