"""The runtime's one status: the knowledge base's counts, with what only the runtime knows
laid over them (the worker busy or paused, the one error, another process building the
index, workspace folders gone). Pure functions of what the runtime gathered."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb_lsp.protocol import IndexProgress, IndexStatus, LlmStatus
from kb_lsp.runtime.takeover import WriterState

CANCELLED = "indexing was cancelled: some files may be missing until the next reindex"


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
        if activity.elsewhere is not None:
            # Not "ready" with nothing in it: the other process is still at it.
            update["state"] = "indexing"
            update["progress"] = IndexProgress(
                phase=activity.elsewhere.phase,
                files_done=activity.elsewhere.files_done,
                files_total=activity.elsewhere.files_total,
            )
            messages = [f"being built by another process ({base.files} files so far)"]
    elif activity.busy:
        update["state"] = "indexing"
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
