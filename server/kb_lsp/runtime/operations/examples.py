"""`kb/examples`: searches, questions and filters made from the open index
(`engine/examples.py`), for a welcome that fits the workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import ExamplesParams, ExamplesResponse

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: ExamplesParams, call: Call) -> ExamplesResponse:
    return rt.read(lambda kb: kb.queries.examples().response())
