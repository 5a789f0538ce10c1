"""Counting what the model costs during one request: calls, tokens, time."""

from __future__ import annotations

import threading
import time

from kb_lsp.engine.llm import ChatResult
from kb_lsp.protocol import Usage


class Meter:
    """Adds up every model call of one `ask` or `summarize` (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def add(self, result: ChatResult) -> None:
        with self._lock:
            self.calls += 1
            self.prompt_tokens += result.prompt_tokens
            self.completion_tokens += result.completion_tokens

    def usage(self) -> Usage:
        with self._lock:
            return Usage(
                calls=self.calls,
                prompt_tokens=self.prompt_tokens,
                completion_tokens=self.completion_tokens,
                seconds=round(time.monotonic() - self._started, 3),
            )
