"""A provider's stream, read on a helper thread and added up, for `ChatModel.chat_stream`.

A provider (`ollama_chat.py`, `openai_chat.py`) opens its HTTP stream and turns what
arrives into `Piece`s. Here, `Pump` reads those pieces on its own thread into a queue, so
that the caller can act while the model is silent (cancel, say it is waiting, time out);
`Silence` says when the caller should tell the user it is waiting; `Assembly` turns the
pieces into `Delta`s as they come and into one `ChatResult` at the end.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kb_lsp.engine.llm.shapes import ChatResult, ToolCall
from kb_lsp.engine.llm.thinking import Delta, ThinkSplitter, split_thinking
from kb_lsp.json_bounds import JsonRefused, load_json

# A tool call's arguments: a query, a path, a few numbers.
MAX_ARGUMENTS_BYTES = 64 * 1024
# Pieces read ahead of the caller, and how often a full queue looks at `stop`.
AHEAD = 256
PUT_POLL_SECONDS = 0.05


@dataclass
class Piece:
    """One item of a provider's stream, in a provider-neutral shape."""

    content: str = ""
    thinking: str = ""
    calls: list[ToolCall] = field(default_factory=list)  # whole calls (Ollama)
    # (index, id, name part, arguments part): OpenAI streams calls as fragments by index.
    fragments: list[tuple[int, str, str, str]] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    done_reason: str | None = None


class LineTooLong(ValueError):
    """A stream's line longer than a reply may be (`lines`)."""


def lines(chunks: Iterable[bytes], max_line: int) -> Iterator[str]:
    """The lines of a byte stream (`\n` or `\r\n`), never holding more than `max_line`
    bytes of one: a server's stream is read as it comes, whatever it sends."""
    pending = bytearray()
    for chunk in chunks:
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", start)) >= 0:
            yield bytes(pending[start:end]).rstrip(b"\r").decode("utf-8", "replace")
            start = end + 1
        del pending[:start]
        if len(pending) > max_line:
            raise LineTooLong(f"a line of more than {max_line:,} bytes")
    if pending:
        yield bytes(pending).rstrip(b"\r").decode("utf-8", "replace")


class Stream:
    """A provider's open stream: the pieces; `close` (on the reader thread, which may
    close the generator) and `abort` (from the caller's thread while the reader may be
    inside the generator: only drops the connection)."""

    def __init__(
        self, pieces: Iterator[Piece], close: Callable[[], None], abort: Callable[[], None]
    ) -> None:
        self.pieces = pieces
        self.close = close
        self.abort = abort


class Pump:
    """Reads the stream `open_stream` opens on its own thread, so that the caller can give
    up on a silent one: the pieces, then the end (None) or what was raised, in a queue."""

    def __init__(self, open_stream: Callable[[], Stream]) -> None:
        self._open = open_stream
        # Bounded: a server faster than the caller waits, rather than filling memory.
        self._items: queue.Queue[Piece | BaseException | None] = queue.Queue(AHEAD)
        self._stop = threading.Event()
        self._opened: list[Stream] = []
        self._opened_lock = threading.Lock()
        self._reader = threading.Thread(target=self._pump, name="kb-llm-stream", daemon=True)

    def start(self) -> None:
        self._reader.start()

    def next(self, timeout: float) -> Piece | BaseException | None:
        """The next piece, what the stream raised, or None at its end; `queue.Empty`
        when nothing came within `timeout` seconds."""
        return self._items.get(timeout=timeout)

    def stop(self) -> None:
        self._stop.set()
        # Aborting drops the connection of a stream that is still open; a reader
        # blocked on a silent socket ends at the HTTP library's timeout on its own.
        with self._opened_lock:
            for stream in self._opened:
                stream.abort()

    def _pump(self) -> None:
        try:
            stream = self._open()
            with self._opened_lock:
                self._opened.append(stream)
            for piece in stream.pieces:
                if not self._put(piece):
                    return
            self._put(None)
        except BaseException as err:  # handed to the caller, who raises it typed
            self._put(err)
        finally:
            with self._opened_lock:
                for stream in self._opened:
                    stream.close()

    def _put(self, item: Piece | BaseException | None) -> bool:
        """`item` queued once there is room; False when the caller stopped meanwhile."""
        while not self._stop.is_set():
            try:
                self._items.put(item, timeout=PUT_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False


class Silence:
    """When to tell the caller that the model is still working: after `after` seconds
    without an item; again after the model spoke and went silent once more, each time
    after twice the silence, so that a slow but steady model is not announced per token."""

    def __init__(self, on_wait: Callable[[], None] | None, after: float) -> None:
        self._on_wait = on_wait
        self._after = after
        self._last_byte = time.monotonic()
        self._told = False

    def waited(self) -> float:
        """Seconds since the last item; runs `on_wait` when it is due."""
        silent = time.monotonic() - self._last_byte
        if self._on_wait is not None and not self._told and silent >= self._after:
            self._told = True
            self._on_wait()
        return silent

    def heard(self) -> None:
        self._last_byte = time.monotonic()
        if self._told:
            self._told, self._after = False, self._after * 2


class Assembly:
    """What the pieces add up to: `Delta`s as they come (thinking kept out of the
    content), then one `ChatResult` with every tool call, assembled from fragments where
    the API sends fragments."""

    def __init__(self) -> None:
        self._raw_content: list[str] = []
        self._thinking: list[str] = []
        self._calls: list[ToolCall] = []
        self._fragments: dict[int, list[str]] = {}  # index -> [id, name, arguments]
        self._splitter = ThinkSplitter()
        self._result = ChatResult()

    def take(self, piece: Piece) -> Iterator[Delta]:
        if piece.thinking:
            self._thinking.append(piece.thinking)
            yield Delta("thinking", piece.thinking)
        if piece.content:
            self._raw_content.append(piece.content)
            yield from self._splitter.feed(piece.content)
        self._calls.extend(piece.calls)
        for index, call_id, name, arguments in piece.fragments:
            slot = self._fragments.setdefault(index, ["", "", ""])
            slot[0] = slot[0] or call_id
            slot[1] += name
            slot[2] += arguments
        result = self._result
        if piece.prompt_tokens is not None:
            result.prompt_tokens = piece.prompt_tokens
        if piece.completion_tokens is not None:
            result.completion_tokens = piece.completion_tokens
        if piece.done_reason is not None:
            result.done_reason = piece.done_reason

    def cut(self) -> None:
        """The reply ends here, cut (`bounds.py`): as a server's cut at the limit reads."""
        self._result.done_reason = "length"

    def flush(self) -> Iterator[Delta]:
        """What the thinking splitter held back, at the end of the stream."""
        yield from self._splitter.flush()

    def result(self, seconds: float) -> ChatResult:
        result = self._result
        content, inline_thinking = split_thinking("".join(self._raw_content))
        result.content = content
        result.thinking = "".join(self._thinking).strip()
        if inline_thinking:
            result.thinking = (result.thinking + "\n" + inline_thinking).strip()
        result.tool_calls = self._calls + [
            ToolCall(name, _arguments(arguments), call_id or f"call_{index}")
            for index, (call_id, name, arguments) in sorted(self._fragments.items())
        ]
        result.tool_calls = [
            c if c.id else ToolCall(c.name, c.arguments, f"call_{i}")
            for i, c in enumerate(result.tool_calls)
        ]
        result.seconds = seconds
        return result


def _arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments assembled from fragments; what is not a JSON object within
    `load_json`'s bounds is kept whole under `_unparsed`, so the tool reports the problem
    instead of a crash."""
    if not raw.strip():
        return {}
    try:
        value = load_json(raw, "the tool call's arguments", max_bytes=MAX_ARGUMENTS_BYTES)
    except JsonRefused:
        return {"_unparsed": raw}
    return value if isinstance(value, dict) else {"_unparsed": raw}
