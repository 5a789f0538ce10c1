"""What every model client shares: streaming with cancellation, a "waiting" notice and a
silence timeout, whatever the provider's wire format.

A provider (`ollama_chat.py`, `openai_chat.py`) only opens its HTTP stream and turns what
arrives into `Piece`s. `ChatModel.chat_stream` reads those pieces on a helper thread and
hands them to the caller through a queue (`stream.py`), so that the caller can act while
the model is silent:

* **Cancellation at once**: the caller checks its `cancel` event between items; on cancel
  the stream is closed and `LlmCancelled` is raised, even if the model never sends again.
* **"Waiting for the model"**: after `WAIT_NOTICE_SECONDS` without a byte, `on_wait` runs
  once (the agent turns it into a `status` step).
* **The timeout** (`kb.llm.timeout`, else `kb.ollama.timeout`) is silence measured here,
  not inside the HTTP library, so a server that accepts the connection and never answers
  ends with the same clear `LlmTimeout` as one that stops half-way.
* **Bounds**: a reply that goes on past its tokens, bytes or time (`bounds.py`) is cut
  there, as a server's own cut at the token limit reads.

The result (`shapes.py`) holds the whole content (thinking kept apart), every tool call
(assembled from fragments where the API sends fragments), token counts, time and the stop
reason.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from kb_lsp.config import LlmProviderName
from kb_lsp.engine.llm.bounds import ReplyBounds
from kb_lsp.engine.llm.config import UNNAMED_MODEL, LlmConfig
from kb_lsp.engine.llm.errors import (
    LlmCancelled,
    LlmError,
    LlmTimeout,
    ServerHung,
)
from kb_lsp.engine.llm.shapes import Capabilities, ChatResult, Message
from kb_lsp.engine.llm.stream import Assembly, Piece, Pump, Silence, Stream
from kb_lsp.engine.llm.thinking import Delta
from kb_lsp.protocol import LlmStatus

log = logging.getLogger(__name__)

# How often the waiting caller looks at the cancel event while the stream is silent.
CANCEL_POLL_SECONDS = 0.02
# Silence after which the caller is told that the model is still working.
WAIT_NOTICE_SECONDS = 1.0
# Connecting to a local server is instant when it runs; do not wait the full timeout.
CONNECT_TIMEOUT_SECONDS = 5.0
# The HTTP library's own read timeout sits above ours, so ours always speaks first.
HTTP_TIMEOUT_SLACK_SECONDS = 5.0


class ChatModel(ABC):
    """One chat model on one server. Thread-safe: every chat opens its own HTTP client,
    so one stream can be closed on cancellation without touching another."""

    provider: ClassVar[LlmProviderName]
    label: ClassVar[str]  # how messages name the server: "Ollama", "The OpenAI-compatible …"

    def __init__(self, config: LlmConfig, *, num_predict: int | None = None) -> None:
        self.config = config
        self._num_predict = num_predict
        self._caps: Capabilities | None = None
        self._caps_lock = threading.Lock()

    # --- what it is -------------------------------------------------------------------------

    @property
    def host(self) -> str:
        return self.config.base_url

    @property
    def model(self) -> str:
        known = self._caps.model if self._caps is not None else None
        return self.config.model or known or ""

    @property
    def num_ctx(self) -> int:
        known = self._caps.context if self._caps is not None else None
        return self.config.num_ctx or known or self.config.default_num_ctx

    @property
    def num_predict(self) -> int:
        """The most tokens one reply may have: bounded so that a model that never stops
        cannot hold a request for ever; a quarter of the context is plenty for an answer."""
        return self._num_predict or self.config.max_tokens or max(256, min(2048, self.num_ctx // 4))

    @property
    def timeout(self) -> float:
        return self.config.timeout

    @property
    def cache_identity(self) -> str:
        """What a cached model output is keyed by: provider, server and model (two
        servers may serve different models under one name: a stand-in and the real one)."""
        return f"{self.provider}@{self.host}/{self.model}"

    # --- what it can do ---------------------------------------------------------------------

    def capabilities(self, *, timeout: float = 5.0, refresh: bool = False) -> Capabilities:
        """Ask the server about the model (once; `refresh` asks again). Raises a
        `ModelUnavailable` (no server, no such model, another API, a refused key)."""
        with self._caps_lock:
            if self._caps is not None and not refresh:
                return self._caps
        timeout = min(timeout, self.timeout)
        try:
            caps = self._probe(timeout)
        except LlmTimeout as err:
            raise ServerHung(
                f"{self.label} at {self.host} accepted the connection but did not answer "
                f"within {timeout:g} s when asked about the model: it may be hung, or busy "
                f"loading it. Restart it, or check {self.config.base_url_setting}.",
                host=self.host,
                model=self.model,
            ) from err
        with self._caps_lock:
            self._caps = caps
        return caps

    def ensure_ready(self, *, timeout: float = 5.0) -> None:
        """Raise `ModelUnavailable` unless a chat could run now."""
        self.capabilities(timeout=timeout, refresh=True)

    def reachable(self, *, timeout: float = 2.0) -> bool:
        try:
            self.ensure_ready(timeout=timeout)
        except LlmError:
            return False
        return True

    def status(self, *, timeout: float = 2.0) -> LlmStatus:
        """For `kb/status`: where, which model, whether it answers and, if not, why."""
        try:
            caps = self.capabilities(timeout=timeout, refresh=True)
        except LlmError as err:
            return self._status(reachable=False, message=err.message)
        return self._status(reachable=True, tools=caps.tools)

    def configured_status(self) -> LlmStatus:
        """The status without asking the server (reachable unknown)."""
        return self._status()

    def _status(
        self,
        *,
        reachable: bool | None = None,
        message: str | None = None,
        tools: bool | None = None,
    ) -> LlmStatus:
        return LlmStatus(
            host=self.host,
            model=self.model or UNNAMED_MODEL,
            reachable=reachable,
            provider=self.provider,
            message=message,
            tools=tools,
        )

    # --- chat -------------------------------------------------------------------------------

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        cancel: threading.Event | None = None,
        on_delta: Callable[[Delta], None] | None = None,
        on_wait: Callable[[], None] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        response_schema: Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """Run `chat_stream` to the end and return its result. `response_schema`: a JSON
        Schema the reply must follow (structured output: Ollama's `format`, the OpenAI
        API's `response_format`); the caller still validates what comes back."""
        stream = self.chat_stream(
            messages,
            tools,
            cancel=cancel,
            on_wait=on_wait,
            max_tokens=max_tokens,
            temperature=temperature,
            response_schema=response_schema,
        )
        for item in stream:
            if isinstance(item, ChatResult):
                return item
            if on_delta is not None:
                on_delta(item)
        raise LlmError(f"{self.label} ended the stream without a result", host=self.host)

    def chat_stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        cancel: threading.Event | None = None,
        on_wait: Callable[[], None] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        response_schema: Mapping[str, Any] | None = None,
    ) -> Iterator[Delta | ChatResult]:
        """Stream one chat call: `Delta`s as they arrive, then exactly one `ChatResult`.

        Messages are in one neutral shape (the assistant's `tool_calls` as
        `{"id", "function": {"name", "arguments": dict}}`, tool results with `tool_call_id`
        and `tool_name`); each provider converts them. Raises an `LlmError` subclass on
        failure, `LlmTimeout` after the configured silence, and `LlmCancelled` as soon as
        `cancel` is set (the HTTP response is closed; nothing more is read).
        `temperature` None leaves the server's own; `max_tokens` None is `num_predict`.
        """
        started = time.monotonic()
        cancel = cancel or threading.Event()
        limit = max_tokens or self.num_predict
        pump = Pump(
            lambda: self._open(
                list(messages), list(tools) if tools else None, limit, temperature, response_schema
            )
        )
        pump.start()
        assembly = Assembly()
        silence = Silence(on_wait, WAIT_NOTICE_SECONDS)
        bounds = ReplyBounds(limit, self.timeout)
        try:
            while (piece := self._next_piece(pump, silence, cancel)) is not None:
                passed = bounds.passed(piece)
                if passed is not None:
                    log.warning(
                        "%s at %s: the reply of %s went over %s; cut there",
                        self.label,
                        self.host,
                        self.model or "the model",
                        passed,
                    )
                    assembly.cut()
                    break
                yield from assembly.take(piece)
        finally:
            pump.stop()
        yield from assembly.flush()
        result = assembly.result(time.monotonic() - started)
        if result.prompt_tokens >= self.num_ctx:
            # Some servers cut an over-long prompt silently; say so in the log at least.
            log.warning(
                "the prompt filled the whole context (%d tokens, context %d): "
                "the start may have been cut; raise %s",
                result.prompt_tokens,
                self.num_ctx,
                self.config.num_ctx_setting,
            )
        yield result

    def _next_piece(self, pump: Pump, silence: Silence, cancel: threading.Event) -> Piece | None:
        """The stream's next piece, None at its end. Raises `LlmCancelled` as soon as
        `cancel` is set, `LlmTimeout` after the configured silence, and what the stream
        raised as one typed `LlmError`."""
        while True:
            if cancel.is_set():
                raise LlmCancelled("Cancelled.", host=self.host, model=self.model)
            try:
                item = pump.next(timeout=CANCEL_POLL_SECONDS)
            except queue.Empty:
                if silence.waited() >= self.timeout:
                    raise self.timeout_error() from None
                continue
            silence.heard()
            if isinstance(item, BaseException):
                raise self._translate(item) from item
            return item

    def timeout_error(self) -> LlmTimeout:
        return LlmTimeout(
            f"{self.label} at {self.host} did not answer within {self.timeout:g} s "
            f"(model {self.model or 'unknown'}): it accepted the request but sent nothing. "
            f"A first call can be slow while the model loads: try again, or raise "
            f"{self.config.timeout_setting}.",
            host=self.host,
            model=self.model,
        )

    # --- what a provider implements ---------------------------------------------------------

    @abstractmethod
    def _open(
        self,
        messages: list[Message],
        tools: list[Mapping[str, Any]] | None,
        max_tokens: int,
        temperature: float | None,
        response_schema: Mapping[str, Any] | None = None,
    ) -> Stream:
        """Open the HTTP stream (on the reader thread); errors are raised as they are."""

    @abstractmethod
    def _probe(self, timeout: float) -> Capabilities:
        """Ask the server about the model; raise a typed `ModelUnavailable`."""

    @abstractmethod
    def _translate(self, err: BaseException) -> LlmError:
        """One typed error, with an actionable message, for whatever the stream raised."""
