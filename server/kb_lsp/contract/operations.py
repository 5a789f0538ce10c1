"""Every kb/* operation, declared once: its method name, params and result (the payload
models of `protocol.py`, whose docstrings and field descriptions become TSDoc and tool
schemas), the pool it runs on, the runtime call, and the kinds of error it may end with.

The front ends iterate over this table: the LSP server registers a handler and a
`workspace/executeCommand` command per row (`lsp/features.py`), the local socket answers
the rows marked `local` (`kb search/status/schema` ask the editor's server), and the
TypeScript protocol is generated from it (`codegen`). Adding an operation is a row here
and a method on `Runtime` (docs/design.md says the steps).

Pools (where a call runs, decided here rather than by each front end):

* `reads` — the runtime's reads pool, with the read deadline: searches, status, lists;
* `asks` — the asks pool: calls to the user's model, that take seconds to minutes;
* `worker` — the indexing worker: `run` returns a future of the result;
* `inline` — on the caller's thread: memory only, never a disk or a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from kb_lsp.errors import Cancelled, Failed, InvalidInput, KbError, Unavailable
from kb_lsp.protocol import (
    AskEvent,
    AskParams,
    AskResponse,
    IndexControlParams,
    IndexStatus,
    ListChanged,
    OpenResultParams,
    OpenResultResponse,
    ReindexParams,
    RelatedParams,
    RelatedResponse,
    SchemaParams,
    SchemaResponse,
    SearchParams,
    SearchResponse,
    StatusParams,
    Step,
    SummarizeParams,
    SummarizeResponse,
)

Pool = Literal["reads", "asks", "worker", "inline"]

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class Call:
    """Who asks (whose numbered list it is), how to stop the call, where its steps go."""

    client: str
    cancel: threading.Event = field(default_factory=threading.Event)
    on_event: Callable[[Step], None] | None = None


@dataclass(frozen=True)
class Operation(Generic[P, R]):
    method: str
    params: type[P]
    result: type[R]
    pool: Pool
    # The runtime call (the runtime is typed loosely: the contract sits below it).
    run: Callable[[Any, P, Call], Any]
    summary: str
    errors: tuple[type[KbError], ...] = (InvalidInput, Unavailable)
    progress: str | None = None  # a work-done progress title, for calls worth watching
    local: bool = False  # answered on the local socket, for `kb … --json`
    cli: str | None = None  # the `kb` command whose `--json` prints this result

    @property
    def command(self) -> str:
        """Its `workspace/executeCommand` name: `kb.search` for `kb/search`."""
        return self.method.replace("/", ".")


@dataclass(frozen=True)
class Notification(Generic[P]):
    method: str
    payload: type[P]
    summary: str


SEARCH = Operation(
    "kb/search",
    SearchParams,
    SearchResponse,
    "reads",
    lambda rt, p, c: rt.search(p, client=c.client),
    "The numbered list of files for a query; it becomes the caller's last list.",
    local=True,
    cli="search",
)
OPEN_RESULT = Operation(
    "kb/openResult",
    OpenResultParams,
    OpenResultResponse,
    # This client's numbered list is in memory: nothing here touches a disk.
    "inline",
    lambda rt, p, c: rt.open_result(p.n, client=c.client),
    "Result n of the caller's last numbered list.",
    errors=(InvalidInput,),
)
ASK = Operation(
    "kb/ask",
    AskParams,
    AskResponse,
    "asks",
    lambda rt, p, c: rt.ask(p, client=c.client, on_event=c.on_event, cancel=c.cancel),
    "The agent's answer to a question, with its sources; every step goes out as an event.",
    errors=(InvalidInput, Unavailable, Cancelled),
    progress="Asking…",
    cli="ask",
)
SUMMARIZE = Operation(
    "kb/summarize",
    SummarizeParams,
    SummarizeResponse,
    "asks",
    lambda rt, p, c: rt.summarize(p, client=c.client, cancel=c.cancel),
    "The cached or a new summary of one file (extractive without a model).",
    errors=(InvalidInput, Unavailable, Cancelled, Failed),
    progress="Summarizing…",
)
STATUS = Operation(
    "kb/status",
    StatusParams,
    IndexStatus,
    "reads",
    lambda rt, p, c: rt.status(probe=True) if p.probe else rt.status(),
    "The index's state: files, chunks, pending work, embedder, model, progress.",
    errors=(Unavailable,),
    local=True,
    cli="status",
)
REINDEX = Operation(
    "kb/reindex",
    ReindexParams,
    IndexStatus,
    "worker",
    lambda rt, p, c: rt.reindex_status(full=p.full, cancel=c.cancel),
    "Sync every folder (`full`: read and embed everything again); answers when done.",
    errors=(Unavailable, Cancelled, Failed),
    cli="index",
)
RELATED = Operation(
    "kb/related",
    RelatedParams,
    RelatedResponse,
    "reads",
    lambda rt, p, c: rt.related(p, client=c.client),
    "The files nearest to one file by meaning, from stored vectors.",
)
INDEX_CONTROL = Operation(
    "kb/indexControl",
    IndexControlParams,
    IndexStatus,
    "reads",
    lambda rt, p, c: rt.index_control(p.action),
    "Pause, resume or cancel the running sync.",
    errors=(Unavailable,),
)
SCHEMA = Operation(
    "kb/schema",
    SchemaParams,
    SchemaResponse,
    "reads",
    lambda rt, p, c: rt.schema(extracted=p.extracted),
    "The metadata fields a filter can use: types, file counts, frequent values, and the "
    "values a model extracted (kept or rejected).",
    errors=(Unavailable,),
    local=True,
    cli="schema",
)

OPERATIONS: tuple[Operation[Any, Any], ...] = (
    SEARCH,
    OPEN_RESULT,
    ASK,
    SUMMARIZE,
    STATUS,
    REINDEX,
    RELATED,
    INDEX_CONTROL,
    SCHEMA,
)
BY_METHOD = {op.method: op for op in OPERATIONS}
BY_CLI = {op.cli: op for op in OPERATIONS if op.cli is not None}

INDEX_CHANGED = Notification(
    "kb/indexChanged", IndexStatus, "The index changed (at most a few times a second)."
)
ASK_EVENT = Notification(
    "kb/askEvent", AskEvent, "One step of a running `kb/ask`, for a live chain of thought."
)
LIST_CHANGED = Notification(
    "kb/listChanged",
    ListChanged,
    "The numbered list changed by a search the editor did not make (the agent's, the "
    "command line's through the socket, an MCP client's in this process).",
)
NOTIFICATIONS: tuple[Notification[Any], ...] = (INDEX_CHANGED, ASK_EVENT, LIST_CHANGED)
