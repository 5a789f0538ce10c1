"""`kb/schema`: the metadata fields a filter can use, and what a model extracted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import SchemaParams, SchemaResponse

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: SchemaParams, call: Call) -> SchemaResponse:
    return rt.read(lambda kb: kb.schema(extracted=params.extracted))
