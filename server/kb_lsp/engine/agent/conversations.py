"""Conversations kept in memory, so that follow-up questions see earlier turns.

Only the question and the final answer of each turn are kept (not tool results: the
model can call the tools again), capped per conversation and in number of conversations
(least recently used dropped first). Answers are stored stripped of thinking and of any
usage block, so nothing but the conversation itself is given back to the model.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from kb_lsp.engine.llm import split_thinking
from kb_lsp.protocol import StopReason

_USAGE_BLOCK = re.compile(r"<usage>.*?</usage>", re.I | re.S)
# A usage line gives counts of tokens, calls or seconds ("Usage: 812 prompt tokens, 3
# calls"); a line that merely starts with "Usage:" ("Usage: run make") is content.
_USAGE_LINE = re.compile(
    r"^[ \t>*_-]*(?:usage|tokens?|prompt tokens|completion tokens|model calls|calls|elapsed)"
    r"\b[^\n]*?\d[\d,.]*\s*(?:prompt |completion )?(?:tokens?|calls?|s|sec|seconds)\b[^\n]*$",
    re.I | re.M,
)


def strip_usage(text: str) -> str:
    """`text` without `<usage>` blocks, usage lines or thinking."""
    text, _ = split_thinking(text)
    text = _USAGE_BLOCK.sub("", text)
    text = _USAGE_LINE.sub("", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# Paragraphs of an answer that are for the user, not the model's next turn: the evidence
# quoted from the notes, the sources (numbered for that turn's passages), the passages
# list, cut-off and unverified notes.
_NOT_HISTORY = re.compile(
    r"^\s*(?:\*\*|_)?(?:From your notes:|Sources:|Passages the model was given|> Cut off:|"
    r"> Unverified:|> Not supported by your notes|> Stopped early:|> Note:)",
    re.I,
)
_NUMBER = re.compile(r"\s*\[\s*\d{1,3}(?:\s*[,;]\s*\d{1,3})*\s*\]")


def for_history(answer: str) -> str:
    """An answer as the next turn sees it: no usage, no sources or notes, and no `[n]`
    (the numbers were the previous turn's passages; the next turn gets its own)."""
    paragraphs = re.split(r"\n\s*\n", strip_usage(answer))
    kept = [p for p in paragraphs if not _NOT_HISTORY.match(p)]
    return _NUMBER.sub("", "\n\n".join(kept)).strip()


@dataclass(frozen=True)
class Turn:
    question: str
    answer: str
    stop: StopReason
    # The question that started the turn's topic: the turn's own, or for a follow-up the
    # one it followed up (`followup.py`); "" when nothing was searched.
    topic: str = ""


class Conversations:
    def __init__(self, *, max_conversations: int = 64, max_turns: int = 8) -> None:
        self.max_conversations = max_conversations
        self.max_turns = max_turns
        self._lock = threading.Lock()
        self._turns: OrderedDict[str, list[Turn]] = OrderedDict()

    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex[:16]

    def turns(self, conversation_id: str) -> list[Turn]:
        with self._lock:
            turns = self._turns.get(conversation_id)
            if turns is None:
                return []
            self._turns.move_to_end(conversation_id)
            return list(turns)

    def add(
        self, conversation_id: str, question: str, answer: str, stop: StopReason, topic: str = ""
    ) -> None:
        with self._lock:
            turns = self._turns.setdefault(conversation_id, [])
            turns.append(Turn(question, for_history(answer), stop, topic))
            del turns[: -self.max_turns]
            self._turns.move_to_end(conversation_id)
            while len(self._turns) > self.max_conversations:
                self._turns.popitem(last=False)

    def forget(self, conversation_id: str) -> None:
        with self._lock:
            self._turns.pop(conversation_id, None)
