"""The chat model the agent talks to, whichever local runtime serves it.

* `create_llm(settings)` — the configured `ChatModel`: `OllamaChat` (`kb.llm.provider =
  ollama`, the default: Ollama's own API through the `ollama` client) or `OpenAIChat`
  (`openai`: any OpenAI-compatible server, over httpx). `kb.llm.*` settings win over the
  older `kb.ollama.*` ones, which keep working as defaults (`config.py` here).
* `ChatModel.chat_stream` / `chat` — streaming with tools, thinking kept out of the
  answer, usage, a silence timeout, a "waiting" notice and cancellation at once
  (`base.py`; the stream's reader in `stream.py`; messages and results in `shapes.py`);
  `capabilities()` — whether the model calls tools, its context size.
* Typed errors (`errors.py`), each with a message that names the configured provider
  and the fix. `ModelUnavailable` (and subclasses) means no model can answer at all.

Nothing here prints; problems are logged through `logging`.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kb_lsp.engine.llm.config import LlmConfig

if TYPE_CHECKING:
    from kb_lsp.config import OllamaSettings, Settings
    from kb_lsp.engine.llm.base import ChatModel
    from kb_lsp.engine.llm.errors import (
        AuthFailed,
        ContextTooLong,
        EmptyAnswer,
        LlmCancelled,
        LlmError,
        LlmTimeout,
        LlmUnreachable,
        ModelNotFound,
        ModelUnavailable,
        ServerHung,
        WrongApi,
    )
    from kb_lsp.engine.llm.ollama_chat import OllamaChat, model_missing_message, unreachable_message
    from kb_lsp.engine.llm.openai_chat import OpenAIChat
    from kb_lsp.engine.llm.shapes import Capabilities, ChatResult, Message, ToolCall
    from kb_lsp.engine.llm.thinking import Delta, split_thinking
    from kb_lsp.protocol import LlmStatus

# Loaded on first use (PEP 562): naming the configured model (`LlmConfig`, `kb status`)
# must not load the HTTP clients (ollama, httpx: a few hundred ms).
_HOMES = {
    "ChatModel": "base",
    **dict.fromkeys(["Capabilities", "ChatResult", "Message", "ToolCall"], "shapes"),
    **dict.fromkeys(
        [
            "AuthFailed",
            "ContextTooLong",
            "EmptyAnswer",
            "LlmCancelled",
            "LlmError",
            "LlmTimeout",
            "LlmUnreachable",
            "ModelNotFound",
            "ModelUnavailable",
            "ServerHung",
            "WrongApi",
        ],
        "errors",
    ),
    **dict.fromkeys(["OllamaChat", "model_missing_message", "unreachable_message"], "ollama_chat"),
    "OpenAIChat": "openai_chat",
    **dict.fromkeys(["Delta", "split_thinking"], "thinking"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def create_llm(
    settings: Settings, *, environ: Mapping[str, str] | None = None, num_predict: int | None = None
) -> ChatModel:
    """The chat model `settings` configure."""
    from kb_lsp.engine.llm.ollama_chat import OllamaChat
    from kb_lsp.engine.llm.openai_chat import OpenAIChat

    config = LlmConfig.from_settings(settings, environ)
    if config.provider == "openai":
        return OpenAIChat(config, num_predict=num_predict)
    return OllamaChat(config, num_predict=num_predict)


def configured_status(settings: Settings) -> LlmStatus:
    """What `create_llm(settings).configured_status()` says, without loading the HTTP
    clients (every answer carries it; a one-shot search never talks to the model)."""
    from kb_lsp.engine.llm.config import UNNAMED_MODEL
    from kb_lsp.protocol import LlmStatus

    config = LlmConfig.from_settings(settings)
    return LlmStatus(
        host=config.base_url, model=config.model or UNNAMED_MODEL, provider=config.provider
    )


def ollama_chat(ollama: OllamaSettings, *, num_predict: int | None = None) -> OllamaChat:
    """An Ollama model from `kb.ollama` settings alone (tests, scripts)."""
    from kb_lsp.config import Settings
    from kb_lsp.engine.llm.ollama_chat import OllamaChat

    config = LlmConfig.from_settings(Settings(ollama=ollama), environ={})
    return OllamaChat(config, num_predict=num_predict)


class _Package(types.ModuleType):
    """This package, keeping its name `ollama_chat` for the function above.

    Loading a submodule binds its name in the package: the `ollama_chat` submodule, now
    loaded on first use rather than here, would replace the function of the same name
    the moment it loads. The function keeps the name, as when everything loaded here
    (the submodule stays `sys.modules["kb_lsp.engine.llm.ollama_chat"]`)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "ollama_chat" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "AuthFailed",
    "Capabilities",
    "ChatModel",
    "ChatResult",
    "ContextTooLong",
    "Delta",
    "EmptyAnswer",
    "LlmCancelled",
    "LlmConfig",
    "LlmError",
    "LlmTimeout",
    "LlmUnreachable",
    "Message",
    "ModelNotFound",
    "ModelUnavailable",
    "OllamaChat",
    "OpenAIChat",
    "ServerHung",
    "ToolCall",
    "WrongApi",
    "create_llm",
    "model_missing_message",
    "ollama_chat",
    "split_thinking",
    "unreachable_message",
]
