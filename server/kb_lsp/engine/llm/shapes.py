"""What a chat is made of, whatever the provider: the messages it sends, the tool calls
and the result it gets back, and what the server says about the model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Message = Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""  # the OpenAI API pairs a tool result with its call by this id


@dataclass
class ChatResult:
    content: str = ""
    thinking: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    # "stop", "length" (cut at the token limit), "tool_calls", or what the server said.
    done_reason: str | None = None

    @property
    def truncated(self) -> bool:
        return self.done_reason == "length"


@dataclass(frozen=True)
class Capabilities:
    """What the server says about the model: None where it does not say."""

    tools: bool | None = None
    context: int | None = None  # tokens of context the server runs the model with
    model: str | None = None  # the model it serves (when none is configured)
    # Whether the model has a chat template of its own: False for a base model that the
    # server runs with its fallback template (llama.cpp) or as a raw prompt (Ollama's
    # `{{ .Prompt }}`), which then continues the prompt rather than answering it.
    chat_template: bool | None = None
