"""`kb/search`: the numbered list for a query; it becomes the caller's last list."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import SearchParams, SearchResponse
from kb_lsp.runtime.numbered import origin_of

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: SearchParams, call: Call) -> SearchResponse:
    """A malformed filter raises `FilterError` (an `InvalidInput` naming its character);
    what only looks mistyped is said beside the list (`warnings`, `did_you_mean`)."""
    query, filter, paths, mode = params.query, params.filter, params.paths, params.mode
    # One pass under the reader gate: the query parsed once for the list and the hints.
    hits, fix, slips = rt.read(
        lambda kb: kb.queries.search_with_hints(
            query, limit=params.limit, paths=paths, mode=mode, filter=filter
        )
    )
    rt.lists.remember(call.client, query, hits, origin=origin_of(call.client))
    return SearchResponse(
        query=query, results=hits, index=rt.status(), did_you_mean=fix, warnings=slips
    )
