"""The runtime's one status: the knowledge base's counts, with what only the runtime knows
laid over them (the worker busy or paused, the one error, another process building the
index, workspace folders gone). Pure functions of what the runtime gathered, and
`gathered`, which gathers it from the session."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_lsp.protocol import IndexProgress, IndexStatus, LlmStatus
from kb_lsp.runtime.takeover import WriterState

if TYPE_CHECKING:
    from kb_lsp.runtime.session import Session

CANCELLED = "indexing was cancelled: some files may be missing until the next reindex"
BUILT_ELSEWHERE = "being built by another process"  # how far: the status's `progress`


@dataclass(frozen=True)
class Activity:
    """What the runtime knows besides the knowledge base."""

    pending: int = 0  # files waiting for the worker
    busy: bool = False  # the worker runs or has work queued
    paused: bool = False
    incomplete: bool = False  # a sync of everything was cancelled
    error: str | None = None  # the one error slot: opening or the last sync failed
    missing: list[Path] = field(default_factory=list)  # workspace folders gone
    elsewhere: WriterState | None = None  # another process is building the index
    seconds_left: float | None = None  # the running sync's estimate for its phase


def opening(
    activity: Activity, *, embedder: str, store: str, llm: LlmStatus, roots: list[Path]
) -> IndexStatus:
    """While the knowledge base is not open (yet, or it failed to open)."""
    return IndexStatus(
        state="error" if activity.error else "indexing",
        files=0,
        chunks=0,
        pending=activity.pending,
        embedder=embedder,
        store=store,
        llm=llm,
        roots=[str(root) for root in roots],
        message=activity.error or "Opening the index…",
    )


def combined(base: IndexStatus, activity: Activity) -> IndexStatus:
    """`base` (the knowledge base's status) with the runtime's activity over it."""
    update: dict[str, Any] = {}
    messages = [base.message] if base.message else []
    if base.read_only:
        elsewhere = activity.elsewhere
        if elsewhere is not None:
            # Not "ready" with nothing in it: the other process is still at it, and its
            # progress reads as this process's own would (the files it has left are
            # pending; keyword search is complete once it embeds).
            update["state"] = "indexing"
            update["progress"] = IndexProgress(
                phase=elsewhere.phase,
                files_done=elsewhere.files_done,
                files_total=elsewhere.files_total,
                chunks_done=elsewhere.chunks_done,
                chunks_total=elsewhere.chunks_total,
                seconds_left=elsewhere.seconds_left,
            )
            # The metadata phase counts notes the model reads, every file is indexed.
            left = elsewhere.files_total - elsewhere.files_done
            update["pending"] = 0 if elsewhere.phase == "metadata" else max(0, left)
            update["keyword_complete"] = elsewhere.phase in ("vectors", "metadata")
            update["vectors_ready"] = _vectors_ready(base, elsewhere)
            messages = [BUILT_ELSEWHERE]
    elif activity.busy:
        update["state"] = "indexing"
        # Not while paused: a paused sync has no time left, only a wait.
        if base.progress is not None and activity.seconds_left is not None and not activity.paused:
            update["progress"] = base.progress.model_copy(
                update={"seconds_left": activity.seconds_left}
            )
    elif activity.error:
        update["state"] = "error"
        messages.append(activity.error)
    if activity.paused:
        update["paused"] = True
        messages.append("indexing is paused")
    if activity.incomplete:
        messages.append(CANCELLED)
    messages += [f"workspace folder missing: {root}" for root in sorted(activity.missing)]
    if messages:
        update["message"] = "; ".join(messages)
    return base.model_copy(update=update)


def _vectors_ready(base: IndexStatus, elsewhere: WriterState) -> float:
    """The share of vectors ready while another process indexes: never all of them while
    its sync has any to make (the store's count alone says 1.0 of nothing at the start)."""
    ready = base.vectors_ready
    if elsewhere.phase == "vectors" and elsewhere.chunks_total:
        return min(ready, elsewhere.chunks_done / elsewhere.chunks_total)
    if elsewhere.phase == "keyword" and elsewhere.files_total:
        return min(ready, elsewhere.files_done / elsewhere.files_total)
    if elsewhere.phase == "scanning" and base.chunks == 0:
        return 0.0  # a first index: nothing is embedded yet
    return ready


def gathered(session: Session) -> IndexStatus:
    """The status of what `session` has open (the caller holds its gate)."""
    from kb_lsp.engine.knowledge import default_storage
    from kb_lsp.engine.llm import configured_status

    settings = session.settings
    llm = session.probe.status(session.made_agent, configured_status(settings))
    kb = session.kb
    worker = session.worker
    activity = Activity(
        pending=worker.pending,
        busy=worker.busy,
        paused=worker.paused,
        incomplete=worker.incomplete,
        error=session.error,
        missing=sorted(session.missing),
        elsewhere=session.built_elsewhere(),
        seconds_left=worker.seconds_left,
    )
    if kb is None:
        return opening(
            activity,
            embedder=settings.embedder.provider,
            store=str(default_storage(settings)),
            llm=llm,
            roots=session.roots,
        )
    return combined(kb.status(pending=activity.pending, llm=llm), activity)
