"""`kb/summarize`: the cached or a new summary of one file (extractive without a model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.engine.llm import LlmCancelled, LlmError
from kb_lsp.protocol import SummarizeParams, SummarizeResponse

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: SummarizeParams, call: Call) -> SummarizeResponse:
    """`file`, or `n` of the caller's last list. Raises `InvalidInput`, `LlmCancelled`
    and `LlmError`s (the contract's kinds)."""
    try:
        return rt.with_agent(
            lambda agent: agent.summarize(
                params.file,
                params.n,
                numbered=rt.lists.hits(call.client) or None,
                cancel=call.cancel,
            ),
            call.cancel,
        )
    except LlmCancelled:
        raise
    except LlmError:
        rt.session.probe.refresh(rt.session.made_agent)
        raise
