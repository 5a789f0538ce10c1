"""`kb/search`: the numbered list for a query; it becomes the caller's last list."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import SearchParams, SearchResponse
from kb_lsp.runtime.numbered import origin_of

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: SearchParams, call: Call) -> SearchResponse:
    """A malformed filter raises `FilterError` (an `InvalidInput` naming its character)."""
    hits = rt.read(
        lambda kb: kb.search(
            params.query,
            limit=params.limit,
            paths=params.paths,
            mode=params.mode,
            filter=params.filter,
        )
    )
    suggestion = rt.read(lambda kb: kb.did_you_mean(params.query, params.filter))
    rt.lists.remember(call.client, params.query, hits, origin=origin_of(call.client))
    return SearchResponse(
        query=params.query, results=hits, index=rt.status(), did_you_mean=suggestion
    )
