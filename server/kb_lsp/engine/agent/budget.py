"""Fitting the conversation into the model's context window (`kb.ollama.numCtx`).

Ollama has no tokenizer endpoint, so sizes are estimated from characters. The estimate
is deliberately pessimistic (3 characters per token; English prose averages about 4) so
that a prompt that "fits" really does: Ollama silently drops the start of a prompt that
is too long, which would cut the system prompt and the question.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD_TOKENS = 8  # role markers and template text around each message
ELIDED = "[elided to fit the model's context: {what}]"


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def message_tokens(message: Mapping[str, Any]) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + estimate_tokens(str(message.get("content") or ""))
    if message.get("tool_calls"):
        tokens += estimate_tokens(json.dumps(message["tool_calls"], default=str))
    return tokens


def messages_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(message_tokens(m) for m in messages)


def tools_tokens(tools: Sequence[Any]) -> int:
    return estimate_tokens(json.dumps(list(tools))) if tools else 0


def truncate(text: str, max_chars: int, *, note: str = "") -> str:
    """`text` cut to about `max_chars` at a line break, saying that it was cut."""
    if len(text) <= max_chars:
        return text
    cut = text.rfind("\n", 0, max_chars)
    if cut < max_chars // 2:
        cut = max_chars
    return text[:cut].rstrip() + "\n" + (note or "[… cut to fit the model's context]")


def fit(messages: list[dict[str, Any]], budget_tokens: int) -> list[dict[str, Any]]:
    """The messages, shrunk until they fit `budget_tokens`.

    Kept whole while possible: the system prompt (first message), the current question
    (the last user message) and the newest message. Older tool results are elided first,
    oldest first (the model can call the tool again); then earlier conversation turns
    (before the current question) are dropped; then what is left is cut, the longest
    first. Returns a new list; the input is not changed.
    """
    out = [dict(m) for m in messages]
    if messages_tokens(out) <= budget_tokens:
        return out

    def question_index() -> int:
        users = [i for i, m in enumerate(out) if m.get("role") == "user"]
        return users[-1] if users else len(out) - 1

    for i in range(1, len(out) - 1):
        message = out[i]
        if message.get("role") == "tool" and not str(message.get("content", "")).startswith(
            "[elided"
        ):
            message["content"] = ELIDED.format(what=f"an earlier {message.get('tool_name')} result")
            if messages_tokens(out) <= budget_tokens:
                return out
    while messages_tokens(out) > budget_tokens and question_index() > 1:
        del out[1]  # the oldest earlier turn
    while messages_tokens(out) > budget_tokens:
        longest = max(range(1, len(out)), key=lambda i: len(str(out[i].get("content") or "")))
        content = str(out[longest].get("content") or "")
        excess = messages_tokens(out) - budget_tokens
        keep = len(content) - int(excess * CHARS_PER_TOKEN) - 100
        if keep < 200:
            out[longest]["content"] = truncate(content, 200)
            if len(content) <= 300:
                break  # nothing left worth cutting: send what there is
        else:
            out[longest]["content"] = truncate(content, keep)
    return out
