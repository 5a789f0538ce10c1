"""`kb/status`: the index's state (`probe`: ask the model now)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import IndexStatus, StatusParams

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: StatusParams, call: Call) -> IndexStatus:
    return rt.status(probe=True) if params.probe else rt.status()
