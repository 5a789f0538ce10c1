"""`kb/indexControl`: the user's say over indexing — pause, resume or cancel."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import IndexControlParams, IndexStatus

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime

log = logging.getLogger(__name__)


def run(rt: Runtime, params: IndexControlParams, call: Call) -> IndexStatus:
    """`pause` (the running sync stops at its next step; changes queue), `resume` (what
    queued runs, the interrupted sync finishes), `cancel` (the running and queued syncs
    stop; the next change or reindex catches up). Returns the status after it."""
    worker = rt.session.worker
    if params.action == "pause":
        worker.pause()
    elif params.action == "resume":
        worker.resume()
    else:
        worker.cancel_syncs()
    log.info("indexing: %s (asked by the user)", params.action)
    return rt.status()
