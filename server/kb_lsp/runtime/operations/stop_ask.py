"""`kb/stopAsk`: the caller's running asks end as a Stop ends them — each is still
answered, with `stop: "cancelled"`, what was written and its sources (a cancelled
request gets no answer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import StopAskParams, StopAskResponse

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: StopAskParams, call: Call) -> StopAskResponse:
    return StopAskResponse(stopped=rt.session.running.cancel_all(call.client))
