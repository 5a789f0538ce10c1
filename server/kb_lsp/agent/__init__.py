"""The question-answering agent over the knowledge base (see `loop.py` for the stages).

Public API, for the LSP handlers and the CLI:

* `Agent(kb, settings, llm=None)` — `llm` defaults to `create_llm(settings)` (the model of
  `kb.llm.*`, else `kb.ollama.*`).
* `Agent.ask(params, *, numbered, on_event, cancel) -> AskOutcome` — `kb/ask`.
* `Agent.summarize(file, n, *, numbered, cancel) -> SummarizeResponse` — `kb/summarize`.
* `InvalidInput` — a bad `file`/`n` for `summarize` (answer it as `InvalidParams`).
"""

from kb_lsp.agent.loop import Agent, AskOutcome, InvalidInput

__all__ = ["Agent", "AskOutcome", "InvalidInput"]
