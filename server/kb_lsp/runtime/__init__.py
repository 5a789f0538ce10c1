"""The runtime: one workspace's knowledge base alive in one process, shared by every
front end (`lsp/`, `cli/`, the MCP server). Nothing here imports pygls or lsprotocol.

Public surface (see `runtime.py` for the threading rules):

* `Runtime.editor(hooks)` (the language server, `kb mcp`) and `Runtime.one_shot(hooks)`
  (a `kb` command): a `ProcessKind` each (`kind.py`); the life cycle is the runtime's
  `Session` (`session.py`: `apply_settings`, `change_roots`, `notify_changed`, and
  `follow_writes`, which tells a front end the stores this process writes, where it
  answers the `kb` command line on a local socket: `kb_lsp/listener.py`,
  `local_socket.py`); `open(roots, settings)`, `reindex(full, cancel)` and `close()` on
  the runtime; `opened` is done once the first opening has ended;
* the operations: one module each in `operations/` (`search`, `ask`, …), bound to the
  contract's rows in `registry.py`, run by `dispatch.py` on the row's pool
  (`dispatch.answer(runtime, SEARCH, params, call)` for a caller that may block);
* reads: `files(pattern)`, `read_file(path, start_line, end_line, max_lines=,
  max_chars=)` and `file_text(path)` (indexed files only, read confined:
  `kb_lsp/reading.py`), `status()`, `read(fn)`, `with_agent(fn, cancel)`;
  `submit_read` / `submit_ask` run any of them on the runtime's pools;
* `subscribe(callback)` to status changes; `Hooks` for messages and sync progress;
* a client is a name (`client=`): each has its own numbered list; `persist_lists` names
  the clients whose list is kept on disk for a later process (the CLI's);
* two processes on one index: the first writes, the others open it read-only (their
  status says so, and "being built by another process" during its cold index) and take
  over when it goes away (`takeover.py`; not a one-shot process);
* errors: the contract's kinds (`kb_lsp.errors`): `InvalidInput` (the client can fix
  it), `Unavailable` (not now), `Cancelled`, `Failed` (`LlmError`s from `ask` and
  `summarize`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb_lsp.errors import InvalidInput, Unavailable
    from kb_lsp.runtime.dispatch import DEFAULT_CLIENT
    from kb_lsp.runtime.file_reads import FileText
    from kb_lsp.runtime.kind import Hooks, ProcessKind, Severity
    from kb_lsp.runtime.runtime import Runtime
    from kb_lsp.runtime.worker import ProgressHandle

# Loaded on first use (PEP 562): importing a light submodule (`runtime.logs`,
# `runtime.takeover`) must not load the engine, Chroma and the agent's HTTP clients —
# `kb status` answers from SQLite alone.
_HOMES = {
    "DEFAULT_CLIENT": "kb_lsp.runtime.dispatch",
    "FileText": "kb_lsp.runtime.file_reads",
    "Hooks": "kb_lsp.runtime.kind",
    "InvalidInput": "kb_lsp.errors",
    "ProcessKind": "kb_lsp.runtime.kind",
    "ProgressHandle": "kb_lsp.runtime.worker",
    "Runtime": "kb_lsp.runtime.runtime",
    "Severity": "kb_lsp.runtime.kind",
    "Unavailable": "kb_lsp.errors",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = [
    "DEFAULT_CLIENT",
    "FileText",
    "Hooks",
    "InvalidInput",
    "ProcessKind",
    "ProgressHandle",
    "Runtime",
    "Severity",
    "Unavailable",
]
