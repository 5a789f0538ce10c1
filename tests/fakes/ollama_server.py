"""`ScriptedOllama`: a scripted stand-in for the Ollama HTTP API, for tests.

It is a real HTTP server on 127.0.0.1 (a free port), so the real `ollama` client, the real
agent loop and the real LSP server run against it unchanged. It answers:

* `GET /api/tags` — the configured models; `GET /api/version`; `GET /api/ps`;
* `POST /api/show` — details of a configured model (its `capabilities`: `["completion",
  "tools"]` unless `capabilities=` says otherwise, e.g. `["completion"]` for a model that
  does not call tools; its `template`: a chat template, or with `chat_template=False`
  Ollama's `{{ .Prompt }}` of a model that has none), 404 for any other;
* `POST /api/chat` — the next turn of the script, streamed as Ollama streams (NDJSON over
  chunked HTTP: content in small pieces, `thinking` pieces, `tool_calls`, then a final
  chunk with `done: true`, `done_reason`, token counts and durations), or as one JSON
  object when the request says `"stream": false`. A chat for a model that is not in the
  list gets Ollama's 404 "model not found" answer;
* `POST /api/embed` — deterministic vectors (`tests.fakes.embedder.HashingEmbedder`).

Every request is recorded (`requests`, `chat_requests`), so a test can assert what the
model was shown.

The script is a list of turns, one per `/api/chat` call, each one of:

* `answer("text", thinking="…")` — a streamed text answer;
* `call("tool_name", arg=value, …)` or `calls(("a", {...}), ("b", {...}))` — tool calls;
* `error(500, "message")` — an HTTP error with Ollama's `{"error": …}` body;
* `Turn(content=…, endless=True)` — the content streamed again and again until the client
  hangs up (a server that ignores the token limit); `hung_up` is set when a client left
  in the middle of a stream;
* `stall(after_chunks=2)` — sends some chunks, then goes silent until the server is closed
  or `release()` is called (for timeout and cancellation tests; `stalled` is an event set
  when a stall begins, so a test can wait for it instead of sleeping);
* `pause(after_chunks=2, content=…)` — the same, but after `release()` it sends the rest
  of the content (a model that wrote some, paused, and went on);
* a `Turn` with `delay=` seconds before the first byte;
* a callable `f(request_body) -> Turn | dict` that decides from the messages it gets;
* a dict with the same fields as `Turn` (that is what a JSON script holds:
  `{"content": …}`, `{"tool_calls": [{"name": …, "arguments": {…}}]}`,
  `{"status": 500, "error": …}`, `{"stall_after": 0}`).

When the script runs out, `default` answers (a turn or callable); without one the server
answers HTTP 500 "script exhausted" and records it in `errors`. A callable that raises
(a failed assertion about the request) also gives HTTP 500 and lands in `errors`, so a
test should end with `assert server.errors == []`.

Use it as a context manager (`with ScriptedOllama([...]) as server: server.url`), or start
it as a process for the LSP/extension contract tests:

    python -m tests.fakes.ollama_server --script script.json [--port N] [--port-file F]
        [--models qwen2.5:7b,other]

where script.json is a list of turns or `{"models": [...], "turns": [...], "default": {...}}`.
It prints `ollama stand-in listening on http://127.0.0.1:PORT` on stderr (and writes the
port to --port-file) and runs until it is terminated.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .embedder import HashingEmbedder

DEFAULT_MODELS = ("qwen2.5:7b",)


@dataclass
class Turn:
    """One scripted `/api/chat` answer. See the module docstring."""

    content: str = ""
    thinking: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{name, arguments}]
    status: int = 200
    error: str | None = None
    stream_error: str | None = None  # sent as an {"error": …} line after the content
    delay: float = 0.0  # seconds before the first byte (a slow model)
    stall_after: int | None = None  # chunks sent before going silent; None: no stall
    # The content sent again and again, never the end, until the client goes away (or
    # `release()`): a server that ignores the token limit.
    endless: bool = False
    resume: bool = False  # after a stall is released, send the rest of the content
    chunk_chars: int = 6  # content is streamed in pieces of this size
    prompt_eval_count: int | None = None  # default: a count derived from the request
    eval_count: int | None = None
    done_reason: str = "stop"

    @classmethod
    def of(cls, value: Turn | dict[str, Any]) -> Turn:
        if isinstance(value, Turn):
            return value
        known = {f.name for f in fields(cls)}
        unknown = set(value) - known
        if unknown:
            raise ValueError(f"unknown turn fields {sorted(unknown)}; known: {sorted(known)}")
        return cls(**value)


def answer(content: str, *, thinking: str = "", **extra: Any) -> Turn:
    return Turn(content=content, thinking=thinking, **extra)


def call(name: str, /, **arguments: Any) -> Turn:
    return Turn(tool_calls=[{"name": name, "arguments": arguments}])


def calls(*pairs: tuple[str, dict[str, Any]], content: str = "") -> Turn:
    return Turn(
        content=content, tool_calls=[{"name": name, "arguments": args} for name, args in pairs]
    )


def error(status: int, message: str) -> Turn:
    return Turn(status=status, error=message)


def stall(after_chunks: int = 0, content: str = "working on it " * 4) -> Turn:
    return Turn(content=content, stall_after=after_chunks)


def pause(after_chunks: int, content: str) -> Turn:
    return Turn(content=content, stall_after=after_chunks, resume=True)


ScriptItem = Turn | dict[str, Any] | Callable[[dict[str, Any]], "Turn | dict[str, Any]"]


@dataclass
class Recorded:
    method: str
    path: str
    body: dict[str, Any]


class ScriptedOllama:
    """A scripted Ollama on 127.0.0.1. Thread-safe; see the module docstring."""

    def __init__(
        self,
        script: Sequence[ScriptItem] = (),
        *,
        models: Sequence[str] = DEFAULT_MODELS,
        default: ScriptItem | None = None,
        port: int = 0,
        embed_dimension: int = 64,
        capabilities: Sequence[str] = ("completion", "tools"),
        chat_template: bool = True,
    ) -> None:
        self.models = list(models)
        self.capabilities = list(capabilities)
        self.chat_template = chat_template
        self.default = default
        self.requests: list[Recorded] = []
        self.errors: list[str] = []
        self.stalled = threading.Event()  # set when a stall turn goes silent
        self.hung_up = threading.Event()  # set when a client left in the middle of a stream
        self._script = list(script)
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._embedder = HashingEmbedder(embed_dimension)
        self._server = _Server(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    chat_path = "/api/chat"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    # -- life cycle --

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedOllama:
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="scripted-ollama", daemon=True
        )
        self._thread.start()
        return self

    @property
    def released(self) -> bool:
        """Whether `release()` (or `close()`) has ended the stalls."""
        return self._release.is_set()

    def release(self) -> None:
        """End every stall: stalled handlers finish their answer."""
        self._release.set()

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scripting --

    def add(self, *items: ScriptItem) -> None:
        with self._lock:
            self._script.extend(items)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path == self.chat_path]

    def _record(self, method: str, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Recorded(method, path, body))

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        with self._lock:
            item = self._script.pop(0) if self._script else self.default
        if item is None:
            message = "scripted Ollama: script exhausted (no turn left for this /api/chat)"
            self.errors.append(message)
            return error(500, message)
        if callable(item):
            try:
                item = item(body)
            except Exception as exc:  # a failed assertion in a test's turn: report it
                message = f"scripted Ollama: the turn callable failed: {exc!r}"
                self.errors.append(message)
                return error(500, message)
        return Turn.of(item)


# --- HTTP ---------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing its connection (a cancelled stream, a closed keep-alive
        # connection) is normal here; anything else is still reported.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _words(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in messages)


class JsonHandler(BaseHTTPRequestHandler):
    """What both stand-ins' handlers share: quiet logs, a lenient JSON body, JSON answers
    and HTTP/1.1 chunked streams (one chunk per line or SSE event)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet: a test's output should not fill with access logs.
        pass

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return {"_invalid": raw.decode("utf-8", "replace")}
        return parsed if isinstance(parsed, dict) else {"_value": parsed}

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _make_handler(owner: ScriptedOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def _chunk(self, payload: dict[str, Any]) -> None:
            self._send_chunk(json.dumps(payload).encode() + b"\n")

        # -- routes --

        def do_GET(self) -> None:
            owner._record("GET", self.path, {})
            if self.path == "/api/tags":
                self._json(200, {"models": [_model_entry(name) for name in owner.models]})
            elif self.path == "/api/version":
                self._json(200, {"version": "0.0.0-scripted"})
            elif self.path == "/api/ps":
                self._json(200, {"models": []})
            else:
                self._json(404, {"error": f"no route {self.path}"})

        def do_POST(self) -> None:
            body = self._body()
            owner._record("POST", self.path, body)
            if self.path == "/api/chat":
                self._chat(body)
            elif self.path == "/api/show":
                name = str(body.get("model") or body.get("name") or "")
                if _known(owner.models, name):
                    self._json(200, _show(name, owner.capabilities, owner.chat_template))
                else:
                    self._json(404, {"error": f"model '{name}' not found"})
            elif self.path == "/api/embed":
                inputs = body.get("input") or []
                texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
                self._json(
                    200,
                    {
                        "model": body.get("model"),
                        "embeddings": owner._embedder.embed_documents(texts),
                        "prompt_eval_count": sum(len(t.split()) for t in texts),
                    },
                )
            else:
                self._json(404, {"error": f"no route {self.path}"})

        def _chat(self, body: dict[str, Any]) -> None:
            model = str(body.get("model") or "")
            if not _known(owner.models, model):
                self._json(404, {"error": f'model "{model}" not found, try pulling it first'})
                return
            turn = owner._next_turn(body)
            if turn.delay:
                owner._release.wait(turn.delay)
            if turn.error is not None or turn.status != 200:
                self._json(turn.status, {"error": turn.error or "scripted error"})
                return
            messages = body.get("messages") or []
            prompt_tokens = turn.prompt_eval_count
            if prompt_tokens is None:
                prompt_tokens = 10 + _words(messages)
            pieces = _pieces(turn)
            eval_count = turn.eval_count if turn.eval_count is not None else 1 + len(pieces)
            final = {
                "model": model,
                "created_at": _now(),
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": turn.done_reason,
                "total_duration": 1_000_000 * (1 + len(pieces)),
                "load_duration": 100_000,
                "prompt_eval_count": prompt_tokens,
                "prompt_eval_duration": 200_000,
                "eval_count": eval_count,
                "eval_duration": 500_000 * len(pieces),
            }
            if body.get("stream") is False:
                message: dict[str, Any] = {"role": "assistant", "content": turn.content}
                if turn.thinking:
                    message["thinking"] = turn.thinking
                if turn.tool_calls:
                    message["tool_calls"] = [_tool_call(c) for c in turn.tool_calls]
                self._json(200, {**final, "message": message})
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for index, piece in enumerate(pieces):
                    if turn.stall_after is not None and index == turn.stall_after:
                        if not turn.resume:
                            break
                        owner.stalled.set()
                        owner._release.wait()
                    self._chunk(
                        {"model": model, "created_at": _now(), "message": piece, "done": False}
                    )
                while turn.endless and not owner.released:
                    for piece in pieces:
                        self._chunk(
                            {"model": model, "created_at": _now(), "message": piece, "done": False}
                        )
                if turn.stream_error is not None:
                    self._chunk({"error": turn.stream_error})
                    self._end_chunks()
                    return
                if turn.stall_after is not None and not turn.resume:
                    owner.stalled.set()
                    owner._release.wait()
                    # Released (or the server is closing): end the stream cleanly.
                self._chunk(final)
                self._end_chunks()
            except (BrokenPipeError, ConnectionResetError):
                # The client went away (a cancelled request): nothing more to send.
                owner.hung_up.set()

    return Handler


def _pieces(turn: Turn) -> list[dict[str, Any]]:
    """The streamed `message` objects of a turn: thinking, content, then tool calls."""
    size = max(1, turn.chunk_chars)
    out: list[dict[str, Any]] = []
    for start in range(0, len(turn.thinking), size):
        out.append(
            {"role": "assistant", "content": "", "thinking": turn.thinking[start : start + size]}
        )
    for start in range(0, len(turn.content), size):
        out.append({"role": "assistant", "content": turn.content[start : start + size]})
    # Ollama sends each tool call whole, in a chunk of its own.
    for tool_call in turn.tool_calls:
        out.append({"role": "assistant", "content": "", "tool_calls": [_tool_call(tool_call)]})
    return out


def _tool_call(spec: dict[str, Any]) -> dict[str, Any]:
    if "function" in spec:
        return spec
    return {"function": {"name": spec["name"], "arguments": spec.get("arguments") or {}}}


def _known(models: list[str], name: str) -> bool:
    full = name if ":" in name else name + ":latest"
    return any((m if ":" in m else m + ":latest") == full for m in models)


def _model_entry(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": 4_683_087_332,
        "digest": "0" * 64,
        "details": {
            "format": "gguf",
            "family": "qwen2",
            "families": ["qwen2"],
            "parameter_size": "7.6B",
            "quantization_level": "Q4_K_M",
        },
    }


# A chat template as Ollama shows one (ChatML, as qwen2.5's), and a base model's.
CHAT_TEMPLATE = (
    "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
    "<|im_start|>assistant\n"
)
RAW_TEMPLATE = "{{ .Prompt }}"


def _show(name: str, capabilities: list[str], chat_template: bool = True) -> dict[str, Any]:
    return {
        "modelfile": f"FROM {name}",
        "parameters": "",
        "template": CHAT_TEMPLATE if chat_template else RAW_TEMPLATE,
        "details": _model_entry(name)["details"],
        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
        "capabilities": capabilities,
        "modified_at": "2025-01-01T00:00:00Z",
    }


# --- standalone process -------------------------------------------------------------------------


def _load_script(path: Path) -> tuple[list[ScriptItem], list[str] | None, ScriptItem | None]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return [Turn.of(t) for t in data], None, None
    turns = [Turn.of(t) for t in data.get("turns", [])]
    default = Turn.of(data["default"]) if data.get("default") else None
    return turns, data.get("models"), default


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A scripted stand-in for the Ollama API.")
    parser.add_argument("--script", type=Path, help="JSON list of turns (see module docs)")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    parser.add_argument("--port-file", type=Path, help="write the port number to this file")
    parser.add_argument("--models", help="comma-separated model names for /api/tags")
    args = parser.parse_args(argv)

    turns: list[ScriptItem] = []
    models: list[str] | None = None
    default: ScriptItem | None = None
    if args.script:
        turns, models, default = _load_script(args.script)
    if args.models:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
    server = ScriptedOllama(
        turns, models=models or DEFAULT_MODELS, default=default, port=args.port
    ).start()
    done = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: done.set())
    if args.port_file:
        args.port_file.write_text(str(server.port), encoding="utf-8")
    print(f"ollama stand-in listening on {server.url}", file=sys.stderr, flush=True)
    try:
        while not done.wait(0.5):
            pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "DEFAULT_MODELS",
    "Recorded",
    "ScriptedOllama",
    "Turn",
    "answer",
    "call",
    "calls",
    "error",
    "main",
    "stall",
]
