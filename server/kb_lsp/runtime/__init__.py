"""The runtime: one workspace's knowledge base alive in one process, shared by every
front end (`lsp/`, `cli.py`, the MCP server). Nothing here imports pygls or lsprotocol.

Public surface (see `runtime.py` for the threading rules):

* `Runtime(hooks, watch=…, probe_llm=…, persist_lists=…)`;
* life cycle: `open(roots, settings)`, `apply_settings(settings)`,
  `change_roots(added, removed)`, `notify_changed(paths)`, `reindex(full, cancel)`,
  `close()`; `opened` is done once the first opening has ended;
* reads: `search(params, client=)`, `open_result(n, client=)`, `files(pattern)`,
  `ask(params, client=, on_event=, cancel=)`, `summarize(params, client=, cancel=)`,
  `status()`, `read(fn)`; `submit_read` / `submit_ask` run any of them on the runtime's
  pools and return a `Future`;
* `subscribe(callback)` to status changes; `Hooks` for messages and sync progress;
* errors: `InvalidRequest` (the client can fix it), `Unavailable` (not now), and the
  agent's `InvalidInput` / `LlmError`s from `ask` and `summarize`.
"""

from kb_lsp.runtime.errors import InvalidInput, InvalidRequest, Unavailable
from kb_lsp.runtime.runtime import DEFAULT_CLIENT, Hooks, Runtime, Severity
from kb_lsp.runtime.worker import ProgressHandle

__all__ = [
    "DEFAULT_CLIENT",
    "Hooks",
    "InvalidInput",
    "InvalidRequest",
    "ProgressHandle",
    "Runtime",
    "Severity",
    "Unavailable",
]
