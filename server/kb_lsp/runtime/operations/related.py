"""`kb/related`: the files nearest to one file by meaning, from stored vectors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import RelatedParams, RelatedResponse
from kb_lsp.runtime import file_reads

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: RelatedParams, call: Call) -> RelatedResponse:
    """With `params.numbered` they become the caller's last list. `InvalidInput` for a
    file outside the workspace or not in the index."""
    given = file_reads.given_file(params.path, params.uri)
    path, hits = rt.read(
        lambda kb: file_reads.related(
            kb, given, limit=params.limit, exclude_linked=params.exclude_linked
        )
    )
    if params.numbered:
        rt.lists.remember(call.client, f"related to {path}", hits)
    return RelatedResponse(path=path, results=hits, index=rt.status())
