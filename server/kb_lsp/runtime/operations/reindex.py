"""`kb/reindex`: sync every folder (`full`: read and embed everything again), answered
with the status once the sync ended (on the indexing worker: a future)."""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import IndexStatus, ReindexParams
from kb_lsp.runtime.reindexing import status_after

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: ReindexParams, call: Call) -> concurrent.futures.Future[IndexStatus]:
    """A read-only index is `Unavailable`, a sync that broke `Failed` (the contract's
    kinds). The status is read on the reads pool: the worker may still hold the gate."""
    return status_after(
        rt.reindex(full=params.full, cancel=call.cancel), lambda: rt.submit_read(rt.status)
    )
