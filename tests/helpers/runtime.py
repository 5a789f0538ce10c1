"""Runtime helpers: a progress display that holds a sync, the status a runtime gives."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

from kb_lsp.config import load_settings
from kb_lsp.runtime import Hooks, ProcessKind, Runtime


def editor_runtime(hooks: Hooks | None = None, **fields: Any) -> Runtime:
    """An editor's runtime (`ProcessKind.editor`) with some of its kind's fields replaced:
    no watcher, no probe, and the like, as a test needs."""
    return Runtime(hooks or Hooks(), dataclasses.replace(ProcessKind.editor(), **fields))


class HeldSync:
    """A progress display that holds the sync at its first report until `go` is set."""

    def __init__(self) -> None:
        self.holding = threading.Event()
        self.go = threading.Event()

    def start(self, title: str, cancel: threading.Event) -> HeldSync:
        return self

    def report(self, progress: object) -> None:
        self.holding.set()
        assert self.go.wait(60), "the test never let the sync go on"

    def end(self, message: str) -> None:
        return None


def runtime_status(workspace: Path, storage: Path) -> object:
    """The status a one-shot runtime gives after indexing `workspace`."""
    runtime = editor_runtime(
        Hooks(), watch=False, probe_llm=False, take_over=False, log_file=False, listen=False
    )
    try:
        runtime.open([workspace], load_settings({"storage": str(storage)}).settings).result()
        runtime.reindex().result()
        return runtime.status()
    finally:
        runtime.close()
