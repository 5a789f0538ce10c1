"""`Runtime`: what every operation on one workspace's knowledge base shares, for any
front end — the pools, the gated reads of the knowledge base and the agent, the status,
the numbered lists and the messages.

The language server, the `kb` command line and the MCP server are thin adapters over it:
the dispatcher (`dispatch.py`) runs each operation's body (`operations/`, bound to its row
of `contract/operations.py` in `registry.py`) and they turn the results and errors into
their own terms. The life cycle (opening, settings, folders, the watcher, takeover,
closing) is the `Session`'s (`session.py`, `runtime.session`); `open` and `close` start
and stop the runtime's own parts with it. The process kind (`kind.py`):
`Runtime.editor(hooks)` or `Runtime.one_shot(hooks)`.

Threads, and who may block:

* callers (an event loop, a terminal) never need to block: every read has a `submit_*`
  form that runs it on one of the runtime's pools and returns a `Future`;
* `reads`, a bounded pool, runs searches, status and hovers;
* `asks`, another bounded pool, runs the agent: a model call takes seconds to minutes,
  so asks never hold up the reads;
* the indexing worker (`worker.py`) is the one writer: syncs, roots, new settings;
* the watcher's threads only collect events and hand batches to the worker;
* `kb-llm-probe` checks whether the model answers, so the status never waits for it;
* `kb-query-embed` embeds a search's query beside its keyword queries: the knowledge
  base's searcher owns the pool and stops it when the session closes the knowledge base;
* `kb-status-feed` sends status changes to subscribers (`feed.py`).

Reads hold the gate (`gate.py`) while they use the knowledge base; reopening it waits
for them. Callbacks to the front end (`Hooks`) may come from any of these threads.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from kb_lsp.config import Settings
from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase, ReadOnlyStore, SyncReport
from kb_lsp.engine.store.outage import store_outages
from kb_lsp.errors import Unavailable
from kb_lsp.protocol import IndexStatus
from kb_lsp.runtime import file_reads
from kb_lsp.runtime.feed import StatusFeed, Subscriber
from kb_lsp.runtime.file_reads import FileText
from kb_lsp.runtime.kind import Hooks, ProcessKind, Severity
from kb_lsp.runtime.numbered import NumberedLists
from kb_lsp.runtime.session import Session
from kb_lsp.runtime.status import gathered
from kb_lsp.runtime.told import OnceTold
from kb_lsp.runtime.worker import Job, ProgressHandle

if TYPE_CHECKING:
    from kb_lsp.engine.agent import Agent

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

STATUS_INTERVAL = 0.25  # seconds: at most four status changes a second to subscribers

READ_ONLY_REINDEX = (
    "This window's index is read-only: another kb-lsp server (another window) is "
    "indexing this workspace. Reindex from that window, or close it and retry."
)


class Runtime:
    def __init__(self, hooks: Hooks, kind: ProcessKind) -> None:
        """A runtime for a process of `kind`; `Runtime.editor` and `Runtime.one_shot` are
        the two the front ends use."""
        self.hooks = hooks
        self.kind = kind
        self._told = OnceTold(hooks)
        self.session = Session(kind, hooks, tell=self.tell, changed=self.changed)
        self.reads = concurrent.futures.ThreadPoolExecutor(
            max_workers=kind.read_workers, thread_name_prefix="kb-read"
        )
        self.asks = concurrent.futures.ThreadPoolExecutor(
            max_workers=kind.ask_workers, thread_name_prefix="kb-ask"
        )
        self.lists = NumberedLists(self.session.list_folder, kind.kept_lists)
        self.feed = StatusFeed(self.status, interval=STATUS_INTERVAL)

    @classmethod
    def editor(cls, hooks: Hooks | None = None) -> Runtime:
        """The language server's and `kb mcp`'s: a watcher, the model probe, takeover, a
        log file, the command line answered from this process (`ProcessKind.editor`)."""
        return cls(hooks or Hooks(), ProcessKind.editor())

    @classmethod
    def one_shot(cls, hooks: Hooks | None = None) -> Runtime:
        """A `kb` command's: none of those, exact vectors, its list kept on disk."""
        return cls(hooks or Hooks(), ProcessKind.one_shot())

    # --- the life cycle, the session's ------------------------------------------------------

    def open(
        self, roots: list[Path], settings: Settings, *, index: bool = True
    ) -> concurrent.futures.Future[None]:
        """`Session.open`; status changes reach subscribers from now on."""
        done = self.session.open(roots, settings, index=index)
        self.feed.start()
        return done

    def close(self) -> None:
        """Stop the watcher and the workers, close the knowledge base. Idempotent."""
        if self.session.close(before_closing=self.feed.stop):
            self.reads.shutdown(wait=False, cancel_futures=True)
            self.asks.shutdown(wait=False, cancel_futures=True)

    @property
    def opened(self) -> concurrent.futures.Future[None]:
        """Done once the first attempt to open has ended (opened or failed)."""
        return self.session.opened

    @property
    def closed(self) -> bool:
        return self.session.closed

    def editor_files(self, paths: list[Path]) -> None:
        """The files open in the editor now: the vector pass embeds them first."""
        self.session.editor_files = frozenset(paths)

    # --- operations ------------------------------------------------------------------------

    def reindex(
        self, *, full: bool = False, cancel: threading.Event | None = None, extract: bool = True
    ) -> concurrent.futures.Future[SyncReport]:
        """Sync every root (`full`: rebuild everything) on the worker; the future ends with
        the sync. Setting `cancel` stops the sync. `extract`: the model's metadata phase
        too (when a schema and `kb.metadata.extract` ask for it). `Unavailable` when
        read-only."""
        kb = self.session.kb
        if kb is not None and kb.read_only:
            raise Unavailable(READ_ONLY_REINDEX)
        title = "Rebuilding the knowledge base" if full else "Reindexing the knowledge base"
        job = Job(title=title, full=full, progress="always", extract=extract)
        if cancel is not None:
            job.cancel = cancel
        future: concurrent.futures.Future[SyncReport] = self.session.worker.submit(job)
        return future

    # --- reads (any thread; each has a pool to run on) --------------------------------------

    def submit_read(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[T]:
        """Run `fn` (a read: search, status, …) on the reads pool."""
        return self.reads.submit(fn, *args, **kwargs)

    def submit_ask(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[T]:
        """Run `fn` (`ask`, `summarize`) on the asks pool."""
        return self.asks.submit(fn, *args, **kwargs)

    def read(self, fn: Callable[[KnowledgeBase], T]) -> T:
        """`fn(knowledge base)`, holding the gate. Waits while it is being opened (a second
        or so), never for indexing; `Unavailable` when it is not open or cannot answer."""
        self.opened.result()
        with self.session.gate.read(), store_outages():
            kb = self.session.kb
            if kb is None:
                raise Unavailable(self.session.error or "The knowledge base is not open.")
            return fn(kb)

    def files(self, pattern: str | None = None) -> list[FileInfo]:
        """The indexed files (optionally those matching a glob on the workspace path)."""
        return self.read(lambda kb: kb.files(pattern))

    def read_file(
        self,
        path: str,
        start_line: int | None = None,
        end_line: int | None = None,
        *,
        max_lines: int | None = None,
        max_chars: int | None = None,
    ) -> FileText:
        """Lines `start_line..end_line` (1-based, inclusive; default: the whole file) of an
        indexed file as it is on disk now, at most `max_lines` lines and `max_chars`
        characters when given (a page: `next_start_line` says where to go on). Read
        confined (`reading.py`: never a link out, a FIFO or a file over `kb.maxFileSize`,
        nor a file the knowledge base excludes). `InvalidInput` for a path leading out of
        the workspace, a file that is not indexed or cannot be read, lines it does not have."""
        return self.read(
            lambda kb: file_reads.page(
                kb, path, start_line, end_line, max_lines=max_lines, max_chars=max_chars
            )
        )

    def file_text(self, path: str) -> tuple[FileInfo, str]:
        """The whole text of an indexed file as it is on disk now (within
        `kb.maxFileSize`), read confined; `InvalidInput` as for `read_file`."""
        return self.read(lambda kb: file_reads.whole(kb, path))

    def status(self, *, probe: bool = False) -> IndexStatus:
        """The one status (any thread, never waits for indexing); `probe`: ask the model now."""
        if probe:
            self.session.probe_model()
        with self.session.gate.read():
            return gathered(self.session)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """`subscriber(status)` whenever the status changes (at most four times a second,
        from the feed's thread); returns the unsubscribe."""
        return self.feed.subscribe(subscriber)

    def changed(self) -> None:
        """Something that shows in the status changed (any thread)."""
        if not self.session.closed:
            self.feed.changed()

    def tell(self, message: str, severity: Severity = "warning") -> None:
        """Log `message` and show it through the front end, once per distinct message."""
        self._told.tell(message, severity)

    def with_agent(self, fn: Callable[[Agent], T], cancel: threading.Event, who: str = "") -> T:
        """`fn(the agent)`, holding the gate; `cancel` is set when the knowledge base is
        reopened meanwhile, or when `who` (a client) stops its asks. `Unavailable` when it
        is not open."""
        self.session.running.add(cancel, who)
        try:
            self.opened.result()
            with self.session.gate.read(), store_outages():
                agent = self.session.agent()
                if agent is None:
                    raise Unavailable(self.session.error or "The knowledge base is not open.")
                return fn(agent)
        finally:
            self.session.running.discard(cancel)


__all__ = [
    "READ_ONLY_REINDEX",
    "FileText",
    "Hooks",
    "ProcessKind",
    "ProgressHandle",
    "ReadOnlyStore",
    "Runtime",
    "Severity",
]
