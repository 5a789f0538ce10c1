"""`kb/openResult`: result n of the caller's last numbered list (memory only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import OpenResultParams, OpenResultResponse

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: OpenResultParams, call: Call) -> OpenResultResponse:
    """`InvalidInput` naming what exists when there is no such result."""
    hit = rt.lists.get(call.client, params.n)
    return OpenResultResponse(uri=hit.uri, path=hit.path, range=hit.range)
