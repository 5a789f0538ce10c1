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


def fit(
    messages: list[dict[str, Any]], budget_tokens: int, *, protected: int = 2
) -> list[dict[str, Any]]:
    """The messages, shrunk until they fit `budget_tokens`.

    The system prompt (first message) and the last `protected` messages (the current
    question, the newest tool result) are kept. Older tool results are elided first
    (oldest first; the model can call the tool again), then older conversation turns are
    dropped. Returns a new list; the input is not changed.
    """
    out = [dict(m) for m in messages]
    if messages_tokens(out) <= budget_tokens:
        return out
    keep_from = max(1, len(out) - protected)
    for i in range(1, keep_from):
        if out[i].get("role") == "tool" and not str(out[i].get("content", "")).startswith(
            "[elided"
        ):
            out[i]["content"] = ELIDED.format(what=f"an earlier {out[i].get('tool_name')} result")
            if messages_tokens(out) <= budget_tokens:
                return out
    # Then whole earlier turns, oldest first (user/assistant pairs of the conversation).
    i = 1
    while messages_tokens(out) > budget_tokens and i < len(out) - protected:
        if out[i].get("role") in ("user", "assistant") and not out[i].get("tool_calls"):
            del out[i]
            continue
        i += 1
    if messages_tokens(out) > budget_tokens:
        # Still too long: the protected messages themselves are cut, newest last.
        for message in out[-protected:]:
            excess = messages_tokens(out) - budget_tokens
            if excess <= 0:
                break
            content = str(message.get("content") or "")
            keep = max(200, len(content) - int(excess * CHARS_PER_TOKEN) - 50)
            message["content"] = truncate(content, keep)
    return out
