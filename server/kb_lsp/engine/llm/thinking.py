"""Reasoning kept out of the answer: `<think>…</think>` blocks in streamed content.

Ollama sends reasoning in `message.thinking` and OpenAI-compatible servers in
`delta.reasoning_content` when the template supports it; models whose template does not
write `<think>…</think>` into the content (sometimes only the closing tag, the opening one
being in the prompt). Both end up as thinking, never in the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_THINK_BLOCK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.DOTALL)


@dataclass(frozen=True)
class Delta:
    """A piece of streamed text, for live display only (the result has the whole text)."""

    kind: Literal["thinking", "content"]
    text: str


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


class ThinkSplitter:
    """Splits streamed content into content and `<think>` deltas as it arrives.

    Only for live display: a tag split across chunks is held back until it is complete.
    A lone closing tag cannot be foreseen, so text before it may have gone out as content;
    the final result is computed from the whole text with `split_thinking`.
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
