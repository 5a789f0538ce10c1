"""The question-answering agent over the knowledge base (see `ask.py` for the stages).

Public API, for the LSP handlers and the CLI:

* `Agent(kb, settings, llm=None)` — `llm` defaults to `create_llm(settings)` (the model of
  `kb.llm.*`, else `kb.ollama.*`).
* `Agent.ask(params, *, numbered, on_event, cancel) -> AskOutcome` — `kb/ask`.
* `Agent.summarize(file, n, *, numbered, cancel) -> SummarizeResponse` — `kb/summarize`.
* `InvalidInput` — a bad `file`/`n` for `summarize` (answer it as `InvalidParams`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kb_lsp.errors import InvalidInput

if TYPE_CHECKING:
    from kb_lsp.engine.agent.facade import Agent
    from kb_lsp.engine.agent.request import AskOutcome

__all__ = ["Agent", "AskOutcome", "InvalidInput"]


# Loaded on first use (PEP 562): a one-shot search never asks the model, and the
# agent's modules take about as long to import as that search runs.
_HOMES = {"Agent": "facade", "AskOutcome": "request"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
