"""What kind of process a runtime lives in, and how it reaches the person using it.

A long-lived editor process (the language server, `kb mcp`) watches the disk, probes the
model, takes the index over when another writer goes, logs to a file and answers the
command line on a local socket; a one-shot `kb` command does none of that and searches
vectors exactly. `ProcessKind.editor()` and `ProcessKind.one_shot()` are those two;
a test that needs another mix replaces fields (`dataclasses.replace`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kb_lsp.runtime.local_socket import CLI_CLIENT

if TYPE_CHECKING:  # the worker loads the engine: a light `kb` command needs neither
    from kb_lsp.runtime.worker import ProgressFactory, ProgressHandle

Severity = Literal["error", "warning", "info"]

READ_WORKERS = max(2, min(4, os.cpu_count() or 2))
# Asks mostly wait on the model server, which runs one generation at a time anyway; two
# let a summary run beside a question, more would only queue there.
ASK_WORKERS = 2


def _no_message(message: str, severity: Severity) -> None:
    return None


def _no_progress(title: str, cancel: threading.Event) -> ProgressHandle | None:
    return None


@dataclass
class Hooks:
    """How the runtime reaches the person in front of the front end (any thread)."""

    # A message worth showing (each distinct message once per runtime).
    tell: Callable[[str, Severity], None] = _no_message
    # A progress display for a sync; its cancel sets the event. None: no display.
    start_progress: ProgressFactory = _no_progress


@dataclass(frozen=True)
class ProcessKind:
    """`watch`: follow the disk with a watcher; `probe_llm`: check in the background
    whether the model answers; `take_over`: when another process writes the index,
    become the writer once it goes away (`takeover.py`); `log_file`: log to a file in the
    storage folder; `persist_lists`: the clients whose numbered list is kept on disk for
    a later process; `listen`: a front end serves the `kb` command line on a local socket
    in the stores this process writes (`listener.py`), so the command line's list is
    kept on disk here too; `exact_vectors`: search vectors without opening Chroma
    (`store/exact.py`), for a process that lives for one command."""

    watch: bool = True
    probe_llm: bool = True
    take_over: bool = True
    log_file: bool = True
    persist_lists: frozenset[str] = field(default_factory=frozenset)
    listen: bool = False
    read_workers: int = READ_WORKERS
    ask_workers: int = ASK_WORKERS
    exact_vectors: bool = False

    @classmethod
    def editor(cls) -> ProcessKind:
        """The language server and `kb mcp`: long-lived, writing the index."""
        return cls(listen=True)

    @classmethod
    def one_shot(cls) -> ProcessKind:
        """A `kb` command: one answer, then exit; its list is kept for the next one."""
        return cls(
            watch=False,
            probe_llm=False,
            take_over=False,
            log_file=False,
            persist_lists=frozenset({CLI_CLIENT}),
            exact_vectors=True,
        )

    @property
    def kept_lists(self) -> frozenset[str]:
        """The clients whose numbered list is kept on disk."""
        return self.persist_lists | {CLI_CLIENT} if self.listen else self.persist_lists


__all__ = ["ASK_WORKERS", "READ_WORKERS", "Hooks", "ProcessKind", "Severity"]
