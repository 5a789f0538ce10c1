"""The Ollama chat client the agent uses: streaming chat with tools, model checks, typed errors.

`LlmClient` wraps `ollama.Client` with the settings of `kb.ollama` (host, model, timeout,
`num_ctx`, `keep_alive`). What it adds:

* **Streaming with tools.** `chat_stream` yields `Delta`s (thinking or content text, for a
  live display) and ends with one `ChatResult`: the whole content, the thinking, every tool
  call collected across chunks, token counts and time. `chat` runs it to the end.
* **Thinking kept out of the answer.** Ollama sends reasoning in `message.thinking` when
  thinking is on; models whose template does not do that write `<think>…</think>` into the
  content (sometimes only the closing tag, the opening one being in the prompt). Both end up
  in `ChatResult.thinking`, never in `ChatResult.content`.
* **Cancellation at once.** The HTTP stream is read on a helper thread; the caller waits on
  a queue and checks the `cancel` event between items, so a stalled model cannot hold a
  cancelled request. On cancel the stream is closed and `LlmCancelled` is raised.
* **Typed errors** (`LlmError` and subclasses), each with a message a person can act on.

Nothing here prints; problems are logged through `logging`.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import httpx
import ollama

from kb_lsp.config import OllamaSettings
from kb_lsp.protocol import LlmStatus

log = logging.getLogger(__name__)

# How often the waiting caller looks at the cancel event while the stream is silent.
_CANCEL_POLL_SECONDS = 0.02
# Connecting to a local server is instant when it runs; do not wait the full read timeout.
_CONNECT_TIMEOUT_SECONDS = 5.0


# --- errors ---------------------------------------------------------------------------------


class LlmError(Exception):
    """Ollama could not answer; `str(error)` is a message a person can act on."""

    def __init__(self, message: str, *, host: str = "", model: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.host = host
        self.model = model


class LlmUnreachable(LlmError):
    """Nothing answers at the configured host."""


class ModelNotFound(LlmError):
    """The server runs but the model has not been pulled."""


class ContextTooLong(LlmError):
    """The prompt does not fit the model's context window."""


class LlmTimeout(LlmError):
    """The server did not answer within `kb.ollama.timeout` seconds."""


class LlmCancelled(LlmError):
    """The caller's cancel event was set; the stream was closed."""


def unreachable_message(host: str) -> str:
    return (
        f"Ollama is not reachable at {host}: start it with `ollama serve` "
        "or set kb.ollama.host to where it runs."
    )


def model_missing_message(model: str, host: str) -> str:
    return f"The model {model} is not available in Ollama at {host}: run `ollama pull {model}`."


# --- results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Delta:
    """A piece of streamed text, for live display only (the result has the whole text)."""

    kind: Literal["thinking", "content"]
    text: str


@dataclass
class ChatResult:
    content: str = ""
    thinking: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    done_reason: str | None = None


# --- <think> blocks -----------------------------------------------------------------------------

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_THINK_BLOCK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.DOTALL)


def split_thinking(raw: str) -> tuple[str, str]:
    """`(content, thinking)` of a model's raw content.

    `<think>…</think>` blocks (an unclosed one runs to the end) are thinking. A closing tag
    with no opening one means the template opened the block in the prompt: everything
    before it is thinking.
    """
    thinking: list[str] = []
    close = raw.find(_THINK_CLOSE)
    opened = raw.find(_THINK_OPEN)
    if close != -1 and (opened == -1 or opened > close):
        thinking.append(raw[:close])
        raw = raw[close + len(_THINK_CLOSE) :]

    def keep(match: re.Match[str]) -> str:
        thinking.append(match.group(1))
        return ""

    content = _THINK_BLOCK.sub(keep, raw)
    return content.strip(), "\n".join(part.strip() for part in thinking if part.strip())


class _ThinkSplitter:
    """Splits streamed content into content and `<think>` deltas as it arrives.

    Only for live display: a tag split across chunks is held back until it is complete.
    A lone closing tag cannot be foreseen, so text before it may have gone out as content;
    the final `ChatResult` is computed from the whole text with `split_thinking`.
    """

    def __init__(self) -> None:
        self._buffer = ""
        self._thinking = False

    def feed(self, text: str) -> list[Delta]:
        self._buffer += text
        out: list[Delta] = []
        while self._buffer:
            tag = _THINK_CLOSE if self._thinking else _THINK_OPEN
            at = self._buffer.find(tag)
            if at != -1:
                self._emit(out, self._buffer[:at])
                self._buffer = self._buffer[at + len(tag) :]
                self._thinking = not self._thinking
                continue
            # Hold back a suffix that could be the start of the tag.
            hold = 0
            for size in range(min(len(tag) - 1, len(self._buffer)), 0, -1):
                if tag.startswith(self._buffer[-size:]):
                    hold = size
                    break
            self._emit(out, self._buffer[: len(self._buffer) - hold])
            self._buffer = self._buffer[len(self._buffer) - hold :]
            break
        return out

    def flush(self) -> list[Delta]:
        out: list[Delta] = []
        self._emit(out, self._buffer)
        self._buffer = ""
        return out

    def _emit(self, out: list[Delta], text: str) -> None:
        if text:
            out.append(Delta("thinking" if self._thinking else "content", text))


# --- the client ---------------------------------------------------------------------------------

Message = Mapping[str, Any]
_END = object()


class LlmClient:
    """One Ollama server and chat model, as configured in `kb.ollama`.

    Thread-safe: every chat opens its own HTTP client, so one stream can be closed on
    cancellation without touching another.
    """

    def __init__(self, settings: OllamaSettings, *, num_predict: int | None = None) -> None:
        self.settings = settings
        # The answer's length is bounded so that a model that never stops cannot hold a
        # request for ever; a quarter of the context is plenty for an answer.
        self.num_predict = num_predict or max(256, min(2048, settings.num_ctx // 4))

    @property
    def host(self) -> str:
        return self.settings.host

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def num_ctx(self) -> int:
        return self.settings.num_ctx

    def _client(self, *, read_timeout: float | None = None) -> ollama.Client:
        timeout = read_timeout if read_timeout is not None else self.settings.timeout
        return ollama.Client(
            host=self.host,
            timeout=httpx.Timeout(timeout, connect=min(_CONNECT_TIMEOUT_SECONDS, timeout)),
        )

    # -- model checks --

    def list_models(self, *, timeout: float = 5.0) -> list[str]:
        """Names of the models pulled into the server (`/api/tags`)."""
        client = self._client(read_timeout=timeout)
        try:
            listing = client.list()
        except Exception as err:  # every failure becomes one typed error
            raise self._translate(err) from err
        finally:
            _close(client)
        return [model.model for model in listing.models if model.model]

    def reachable(self, *, timeout: float = 2.0) -> bool:
        try:
            self.list_models(timeout=timeout)
        except LlmError:
            return False
        return True

    def has_model(self, name: str | None = None, *, timeout: float = 5.0) -> bool:
        """Whether `name` (default: the chat model) is pulled; `llama3` means `llama3:latest`."""
        wanted = _full_name(name or self.model)
        return any(_full_name(model) == wanted for model in self.list_models(timeout=timeout))

    def ensure_ready(self, *, timeout: float = 5.0) -> None:
        """Raise `LlmUnreachable` or `ModelNotFound` unless a chat could run now."""
        if not self.has_model(timeout=timeout):
            raise ModelNotFound(
                model_missing_message(self.model, self.host), host=self.host, model=self.model
            )

    def status(self, *, timeout: float = 2.0) -> LlmStatus:
        """For `kb/status`: host, model and whether the server answers."""
        return LlmStatus(
            host=self.host, model=self.model, reachable=self.reachable(timeout=timeout)
        )

    # -- chat --

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        cancel: threading.Event | None = None,
        on_delta: Callable[[Delta], None] | None = None,
    ) -> ChatResult:
        """Run `chat_stream` to the end and return its result."""
        for item in self.chat_stream(messages, tools, cancel=cancel):
            if isinstance(item, ChatResult):
                return item
            if on_delta is not None:
                on_delta(item)
        raise LlmError("Ollama ended the stream without a result", host=self.host)

    def chat_stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        cancel: threading.Event | None = None,
    ) -> Iterator[Delta | ChatResult]:
        """Stream one chat call: `Delta`s as they arrive, then exactly one `ChatResult`.

        Raises an `LlmError` subclass on failure and `LlmCancelled` as soon as `cancel` is
        set (the HTTP response is closed; nothing more is read).
        """
        started = time.monotonic()
        cancel = cancel or threading.Event()
        client = self._client()
        items: queue.Queue[object] = queue.Queue()
        stop = threading.Event()

        def pump() -> None:
            # Runs on its own thread so that the caller can give up on a stalled stream.
            try:
                stream = client.chat(
                    model=self.model,
                    messages=list(messages),
                    tools=list(tools) if tools else None,
                    stream=True,
                    options={"num_ctx": self.num_ctx, "num_predict": self.num_predict},
                    keep_alive=self.settings.keep_alive,
                )
                for part in stream:
                    if stop.is_set():
                        # Leaves the client's `with` block around the response: closes it.
                        cast("Generator[Any, None, None]", stream).close()
                        return
                    items.put(part)
                items.put(_END)
            except BaseException as err:  # handed to the caller, who raises it typed
                items.put(err)

        reader = threading.Thread(target=pump, name="kb-llm-stream", daemon=True)
        reader.start()

        raw_content: list[str] = []
        thinking: list[str] = []
        tool_calls: list[ToolCall] = []
        splitter = _ThinkSplitter()
        result = ChatResult()
        try:
            while True:
                if cancel.is_set():
                    raise LlmCancelled("Cancelled.", host=self.host, model=self.model)
                try:
                    item = items.get(timeout=_CANCEL_POLL_SECONDS)
                except queue.Empty:
                    continue
                if item is _END:
                    break
                if isinstance(item, BaseException):
                    raise self._translate(item) from item
                assert isinstance(item, ollama.ChatResponse)
                message = item.message
                if message.thinking:
                    thinking.append(message.thinking)
                    yield Delta("thinking", message.thinking)
                if message.content:
                    raw_content.append(message.content)
                    yield from splitter.feed(message.content)
                for call in message.tool_calls or ():
                    tool_calls.append(
                        ToolCall(call.function.name, dict(call.function.arguments or {}))
                    )
                if item.done:
                    result.prompt_tokens = item.prompt_eval_count or 0
                    result.completion_tokens = item.eval_count or 0
                    result.done_reason = item.done_reason
        finally:
            stop.set()
            # Closing the client drops the connection of a stream that is still open; a
            # reader blocked on a silent socket ends at the read timeout on its own.
            _close(client)

        yield from splitter.flush()
        content, inline_thinking = split_thinking("".join(raw_content))
        result.content = content
        result.thinking = "".join(thinking).strip()
        if inline_thinking:
            result.thinking = (result.thinking + "\n" + inline_thinking).strip()
        result.tool_calls = tool_calls
        result.seconds = time.monotonic() - started
        if result.prompt_tokens >= self.num_ctx:
            # Ollama truncates an over-long prompt silently; say so in the log at least.
            log.warning(
                "the prompt filled the whole context (%d tokens, num_ctx %d): "
                "the start may have been cut; raise kb.ollama.numCtx",
                result.prompt_tokens,
                self.num_ctx,
            )
        yield result

    # -- errors --

    def _translate(self, err: BaseException) -> LlmError:
        """One typed error, with an actionable message, for whatever the client raised."""
        host, model = self.host, self.model
        if isinstance(err, LlmError):
            return err
        if isinstance(err, (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError)):
            return LlmUnreachable(unreachable_message(host), host=host, model=model)
        if isinstance(err, httpx.TimeoutException):
            return LlmTimeout(
                f"Ollama at {host} did not answer within {self.settings.timeout:g} s "
                f"(model {model}). A first call can be slow while the model loads: "
                "try again, or raise kb.ollama.timeout.",
                host=host,
                model=model,
            )
        if isinstance(err, ollama.ResponseError):
            text = str(err.error)
            lowered = text.lower()
            if err.status_code == 404 or ("not found" in lowered and "model" in lowered):
                return ModelNotFound(model_missing_message(model, host), host=host, model=model)
            if "context" in lowered and any(
                word in lowered for word in ("exceed", "too long", "length", "limit")
            ):
                return ContextTooLong(
                    f"The prompt is too long for the context of {model} "
                    f"({self.num_ctx} tokens): ask about one file, or raise kb.ollama.numCtx. "
                    f"Ollama said: {text}",
                    host=host,
                    model=model,
                )
            status = f"HTTP {err.status_code}" if err.status_code > 0 else "an error"
            return LlmError(f"Ollama at {host} returned {status}: {text}", host=host, model=model)
        if isinstance(err, httpx.HTTPError):
            return LlmError(
                f"The connection to Ollama at {host} failed: {err}", host=host, model=model
            )
        return LlmError(f"Ollama at {host} failed: {err}", host=host, model=model)


def _close(client: ollama.Client) -> None:
    # `ollama.Client.close` carries no annotations; the cast keeps mypy strict happy.
    cast("Callable[[], None]", client.close)()


def _full_name(name: str) -> str:
    return name if ":" in name else name + ":latest"
