"""`Runtime`: one workspace's knowledge base, alive in one process, for any front end.

The language server, the `kb` command line and the MCP server are thin adapters over
this class: each turns its transport into calls of these methods and their results (or
`InvalidRequest` / `Unavailable` / the agent's errors) back into its own terms.

Life cycle: `open(roots, settings)` opens the knowledge base on the indexing worker and
syncs it; `apply_settings` applies new settings (reopening only when they need it);
`change_roots` and `notify_changed` follow the workspace; `close()` ends it all.

Threads, and who may block:

* callers (an event loop, a terminal) never need to block: every read has a `submit_*`
  form that runs it on one of the runtime's pools and returns a `Future`;
* `reads`, a bounded pool, runs searches, status and hovers;
* `asks`, another bounded pool, runs the agent: a model call takes seconds to minutes,
  so asks never hold up the reads;
* the indexing worker (`worker.py`) is the one writer: syncs, roots, new settings;
* the watcher's threads only collect events and hand batches to the worker;
* `kb-llm-probe` checks whether the model answers, so the status never waits for it;
* `kb-status-feed` sends status changes to subscribers (`feed.py`).

Reads hold the gate (`gate.py`) while they use the knowledge base; reopening it waits
for them. Callbacks to the front end (`Hooks`) may come from any of these threads.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, ParamSpec, TypeVar
from urllib.parse import unquote, urlsplit

from kb_lsp import __version__
from kb_lsp.config import Settings, changed_settings
from kb_lsp.engine import reading
from kb_lsp.engine.agent.conversations import Conversations
from kb_lsp.engine.knowledge import (
    FileInfo,
    KnowledgeBase,
    NotIndexed,
    ReadOnlyStore,
    SyncProgress,
    SyncReport,
    default_storage,
)
from kb_lsp.engine.llm import LlmCancelled, LlmError, configured_status
from kb_lsp.engine.metadata.filters import FilterError
from kb_lsp.engine.store import store_dir_for
from kb_lsp.engine.workspace.files import PathOutsideWorkspace, UnreadableFile, WorkspaceRoot
from kb_lsp.engine.workspace.watcher import Batch, Watcher
from kb_lsp.protocol import (
    AskParams,
    AskResponse,
    IndexAction,
    IndexStatus,
    OpenResultResponse,
    RelatedParams,
    RelatedResponse,
    SchemaResponse,
    SearchHit,
    SearchParams,
    SearchResponse,
    Step,
    SummarizeParams,
    SummarizeResponse,
)
from kb_lsp.runtime import logs
from kb_lsp.runtime.changes import settings_change
from kb_lsp.runtime.embedders import embedder_from_environment
from kb_lsp.runtime.errors import Failed, InvalidRequest, KbError, Unavailable
from kb_lsp.runtime.feed import StatusFeed, Subscriber
from kb_lsp.runtime.gate import Gate
from kb_lsp.runtime.local_socket import CLI_CLIENT
from kb_lsp.runtime.numbered import NumberedLists, origin_of
from kb_lsp.runtime.probe import LlmProbe, RunningWork
from kb_lsp.runtime.status import Activity, combined, opening
from kb_lsp.runtime.takeover import TakeoverWatch, WriterState, publish, read_state
from kb_lsp.runtime.worker import IndexingWorker, Job, ProgressFactory, ProgressHandle

if TYPE_CHECKING:
    from kb_lsp.engine.agent import Agent

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

Severity = Literal["error", "warning", "info"]

READ_WORKERS = max(2, min(4, os.cpu_count() or 2))
# Asks mostly wait on the model server, which runs one generation at a time anyway; two
# let a summary run beside a question, more would only queue there.
ASK_WORKERS = 2
STATUS_INTERVAL = 0.25  # seconds: at most four status changes a second to subscribers
DEFAULT_CLIENT = "default"

READ_ONLY_REINDEX = (
    "This window's index is read-only: another kb-lsp server (another window) is "
    "indexing this workspace. Reindex from that window, or close it and retry."
)


def _no_message(message: str, severity: Severity) -> None:
    return None


def _no_progress(title: str, cancel: threading.Event) -> ProgressHandle | None:
    return None


@dataclass(frozen=True)
class FileText:
    """Some lines of a workspace file (`Runtime.read_file`)."""

    path: str
    uri: str
    start_line: int  # 1-based, inclusive
    end_line: int
    total_lines: int
    text: str

    @property
    def next_start_line(self) -> int | None:
        """Where to read on, or None when these lines reach the end of the file."""
        return self.end_line + 1 if self.end_line < self.total_lines else None


def _confined(path: str, read: Callable[[], T]) -> T:
    """`read()`, with the reader's refusals as `InvalidRequest` worded for the caller."""
    try:
        return read()
    except PathOutsideWorkspace as err:
        raise InvalidRequest(
            f"Refused: {err}. Only files inside the workspace's knowledge base can be read; "
            "give a path relative to the workspace, as search shows them."
        ) from err
    except (reading.NotIndexed, reading.LinesOutOfRange) as err:
        raise InvalidRequest(str(err)) from err
    except UnreadableFile as err:
        raise InvalidRequest(f"{path} cannot be read: {err.reason}") from err
    except OSError as err:
        raise InvalidRequest(f"{path} cannot be read now: {err.strerror or err}") from err


@dataclass
class Hooks:
    """How the runtime reaches the person in front of the front end (any thread)."""

    # A message worth showing (each distinct message once per runtime).
    tell: Callable[[str, Severity], None] = _no_message
    # A progress display for a sync; its cancel sets the event. None: no display.
    start_progress: ProgressFactory = _no_progress


class Runtime:
    def __init__(
        self,
        hooks: Hooks | None = None,
        *,
        watch: bool = True,
        probe_llm: bool = True,
        take_over: bool = True,
        log_file: bool = True,
        persist_lists: frozenset[str] = frozenset(),
        listen: bool = False,
        read_workers: int = READ_WORKERS,
        ask_workers: int = ASK_WORKERS,
        exact_vectors: bool = False,
    ) -> None:
        """`watch`: follow the disk with a watcher (a long-lived process); `probe_llm`:
        check in the background whether the model answers; `take_over`: when another
        process writes the index, become the writer once it goes away (`takeover.py`);
        `log_file`: log to a file in
        the storage folder; `persist_lists`: the clients whose numbered list is kept on
        disk for a later process (the CLI); `listen`: a front end serves the `kb` command
        line on a local socket in the stores this process writes (`follow_writes`,
        `listener.py`), so the command line's list is kept on disk here;
        `exact_vectors`: a one-shot process, which searches vectors without opening
        Chroma (`Store`)."""
        self._exact_vectors = exact_vectors
        self.hooks = hooks or Hooks()
        self._watch_disk = watch
        self._take_over = take_over
        self._takeover: TakeoverWatch | None = None
        self._log_file = log_file
        self.gate = Gate()
        self.reads = concurrent.futures.ThreadPoolExecutor(
            max_workers=read_workers, thread_name_prefix="kb-read"
        )
        self.asks = concurrent.futures.ThreadPoolExecutor(
            max_workers=ask_workers, thread_name_prefix="kb-ask"
        )
        self.running = RunningWork()
        self.probe = LlmProbe(self.changed, enabled=probe_llm)
        # Kept here, not by the agent, so that they survive new settings.
        self.conversations = Conversations()
        if listen:
            persist_lists |= {CLI_CLIENT}
        self.lists = NumberedLists(self._list_folder, persist_lists)
        # A front end that writes the index serves the command line in its stores.
        self._follow_writes: Callable[[list[Path]], None] | None = None
        # The settings in use, and the latest asked for (they differ while a reopen waits).
        self.settings = self._wanted = Settings()
        self.roots: list[Path] = []
        self._kb: KnowledgeBase | None = None
        self._agent: Agent | None = None  # made on first use: `_the_agent`
        self._agent_lock = threading.Lock()
        self._watcher: Watcher | None = None
        self._error: str | None = None
        self._error_lock = threading.Lock()
        # Done once the first attempt to open has ended (opened or failed).
        self.opened: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.worker = IndexingWorker(
            lambda: self._kb,
            start_progress=self._start_progress,
            changed=self.changed,
            set_error=self._set_error,
            after_job=self._check_roots,
            publish=self._publish,
        )
        self.feed = StatusFeed(self.status, interval=STATUS_INTERVAL)
        self._told: set[str] = set()
        self._told_lock = threading.Lock()
        self._missing: set[Path] = set()
        self._closed = False
        self._close_lock = threading.Lock()

    # --- life cycle ------------------------------------------------------------------------

    def open(
        self, roots: list[Path], settings: Settings, *, index: bool = True
    ) -> concurrent.futures.Future[None]:
        """Open the knowledge base of `roots` (on the worker) and, with `index`, sync it.
        Returns the opening's future: its exception says why opening failed (readers see
        the same in the status and in `Unavailable`)."""
        self.roots = list(dict.fromkeys(roots))
        self.settings = self._wanted = settings
        logs.set_level(settings.log.level)
        self.worker.start()
        self.feed.start()

        def open_it() -> None:
            try:
                self._open_knowledge(settings)
            finally:
                if not self.opened.done():
                    self.opened.set_result(None)

        done = self.worker.submit(Job(fn=open_it, title="Opening the index"))
        if index:
            self.worker.submit(Job(title="Indexing the knowledge base", progress="always"))
        return done

    def apply_settings(self, settings: Settings) -> None:
        """New settings. What can change at once does (search, the model, the agent, the
        log level: `changes.py`); the watcher's settings restart the watcher; settings
        that decide what is indexed or where reopen the knowledge base (on the worker,
        stopping the asks in flight: they end with stop "cancelled") and sync it again.
        The numbered lists and the conversations survive either way."""
        change = settings_change(self._wanted, settings)
        if change.empty:
            return
        # One line per setting with its old and new value: what a user (and the editor's
        # end-to-end test) reads to know that a change reached the server.
        for line in changed_settings(self._wanted, settings):
            log.info("settings changed: %s", line)
        self._wanted = settings
        logs.set_level(settings.log.level)
        if change.reopen:
            names = ", ".join(change.reopen)
            log.info("settings changed (%s): reopening the knowledge base", names)
            self.worker.submit(Job(fn=self._reopen, title="Applying new settings"))
            self.worker.submit(
                Job(title="Indexing with new settings", progress="always", full=change.rechunk)
            )
            return
        if change.live:
            self._use_settings(settings)
            log.info("settings applied at once: %s", ", ".join(change.live))
        if change.watcher:
            self.worker.submit(Job(fn=self._restart_watcher, title="Applying watcher settings"))
            log.info("settings applied to the watcher: %s", ", ".join(change.watcher))

    def _reopen(self) -> None:
        """On the worker: close and open again with the latest settings."""
        # Asks in flight hold the gate for as long as the model talks: stop them rather
        # than hold every search back.
        self.running.cancel_all()
        with self.gate.exclusive():
            self._close_knowledge()
            self._open_knowledge(self._wanted)

    def _use_settings(self, settings: Settings) -> None:
        """Settings that need no reopening take effect now (any thread): the knowledge
        base searches with them, and the agent is made anew with them (a run in flight
        finishes with the one it started with)."""
        self.settings = settings
        kb = self._kb
        if kb is not None:
            kb.use_settings(settings)
            with self._agent_lock:
                self._agent = None  # made anew with these settings
            self.probe.refresh(self._the_agent() if self.probe.enabled else None)
        self.changed()

    def _restart_watcher(self) -> None:
        if self._watcher is None:
            return
        self._watcher.stop()
        self._watcher = None
        self._start_watcher(self.settings)

    def change_roots(self, added: list[Path], removed: list[Path]) -> None:
        """Workspace folders added and removed; new ones are indexed."""

        def apply() -> None:
            if removed:
                # Closing a folder's store under a read in flight would fail that read:
                # wait for the reads (and stop the asks, as a reopen does).
                self.running.cancel_all()
                with self.gate.exclusive():
                    self._remove_roots(removed)
            for root in added:
                if root in self.roots:
                    continue
                self.roots.append(root)
                if self._kb is not None:
                    self._kb.add_root(root)
                if self._watcher is not None:
                    self._watch(self._watcher, root, self.settings)
            self._listen()

        self.worker.submit(Job(fn=apply, title="Updating workspace folders"))
        if added:
            self.worker.submit(
                Job(paths=frozenset(added), title="Indexing new folders", progress="always")
            )

    def _remove_roots(self, removed: list[Path]) -> None:
        for root in removed:
            if root in self.roots:
                self.roots.remove(root)
            self._missing.discard(root)
            if self._watcher is not None:
                self._watcher.remove_root(root)
            if self._kb is not None:
                self._kb.remove_root(root)

    def notify_changed(self, paths: list[Path]) -> None:
        """Paths an editor says changed (saved, or seen by its own file watcher)."""
        if self._watcher is not None:
            self._watcher.notify(paths)
        else:
            self.worker.submit_paths(paths)

    def reindex(
        self, *, full: bool = False, cancel: threading.Event | None = None
    ) -> concurrent.futures.Future[SyncReport]:
        """Sync every root (`full`: rebuild everything) on the worker; the future ends with
        the sync. Setting `cancel` stops the sync. `Unavailable` when read-only."""
        kb = self._kb
        if kb is not None and kb.read_only:
            raise Unavailable(READ_ONLY_REINDEX)
        title = "Rebuilding the knowledge base" if full else "Reindexing the knowledge base"
        job = Job(title=title, full=full, progress="always")
        if cancel is not None:
            job.cancel = cancel
        future: concurrent.futures.Future[SyncReport] = self.worker.submit(job)
        return future

    def reindex_status(
        self, *, full: bool = False, cancel: threading.Event | None = None
    ) -> concurrent.futures.Future[IndexStatus]:
        """`reindex`, answered with the status once the sync ended; a read-only index is
        `Unavailable`, a sync that broke `Failed` (the contract's kinds)."""
        answer: concurrent.futures.Future[IndexStatus] = concurrent.futures.Future()

        def done(sync: concurrent.futures.Future[SyncReport]) -> None:
            try:
                sync.result()
            except ReadOnlyStore as err:
                answer.set_exception(Unavailable(f"The index is read-only: {err}"))
            except (KbError, concurrent.futures.CancelledError) as err:
                answer.set_exception(err)
            except Exception as err:
                answer.set_exception(Failed(f"Reindexing failed: {err}"))
            else:  # read on the reads pool: the worker may still hold the gate here
                status = self.submit_read(self.status)
                status.add_done_callback(lambda read: _settle(answer, read))

        self.reindex(full=full, cancel=cancel).add_done_callback(done)
        return answer

    def index_control(self, action: IndexAction) -> IndexStatus:
        """The user's say over indexing: `pause` (the running sync stops at its next
        step; changes queue), `resume` (what queued runs, the interrupted sync finishes),
        `cancel` (the running and queued syncs stop; the next change or reindex catches
        up). Returns the status after it."""
        if action == "pause":
            self.worker.pause()
        elif action == "resume":
            self.worker.resume()
        else:
            self.worker.cancel_syncs()
        log.info("indexing: %s (asked by the user)", action)
        return self.status()

    def close(self) -> None:
        """Stop the watcher and the workers, close the knowledge base. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        log.info("kb-lsp: stopping")
        if self._watcher is not None:
            self._watcher.stop()
        self.worker.stop()
        self.running.cancel_all()
        self.probe.close()
        self.feed.stop()
        with self.gate.exclusive():
            self._close_knowledge()
        if not self.opened.done():
            self.opened.set_result(None)
        self.reads.shutdown(wait=False, cancel_futures=True)
        self.asks.shutdown(wait=False, cancel_futures=True)

    @property
    def closed(self) -> bool:
        return self._closed

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
        """`fn(knowledge base)`, holding the gate. Waits while the knowledge base is being
        opened (a second or so), never for indexing; `Unavailable` when it is not open."""
        with self._reading() as kb:
            return fn(kb)

    def search(self, params: SearchParams, *, client: str = DEFAULT_CLIENT) -> SearchResponse:
        """The numbered list for `params`; it becomes `client`'s last list."""
        try:
            hits, suggestion = self.read(
                lambda kb: (
                    kb.search(
                        params.query,
                        limit=params.limit,
                        paths=params.paths,
                        mode=params.mode,
                        filter=params.filter,
                    ),
                    kb.did_you_mean(params.query, params.filter),
                )
            )
        except FilterError as err:
            # "filter, character 14: ')' without a matching '(' (in 'tag:x )')"
            raise InvalidRequest(str(err)) from err
        self.lists.remember(client, params.query, hits, origin=origin_of(client))
        return SearchResponse(
            query=params.query, results=hits, index=self.status(), did_you_mean=suggestion
        )

    def related(self, params: RelatedParams, *, client: str = DEFAULT_CLIENT) -> RelatedResponse:
        """The files nearest to one file by meaning (`KnowledgeBase.related`, from stored
        vectors). With `params.numbered` they become `client`'s last list. `InvalidRequest`
        for a file outside the workspace or not in the index."""
        if params.path:
            given: str | Path = params.path
        elif params.uri:
            parts = urlsplit(params.uri)
            if parts.scheme != "file":
                raise InvalidRequest(f"{params.uri}: only file: URIs are in the workspace")
            from urllib.request import url2pathname  # 40 ms to import: only here

            given = Path(url2pathname(unquote(parts.path)))
        else:
            raise InvalidRequest("kb/related: give the file as `uri` or `path`")

        def find(kb: KnowledgeBase) -> tuple[str, list[SearchHit]]:
            path = given if isinstance(given, str) else kb.display_path(given.resolve())
            if path is None:
                raise InvalidRequest(f"{given} is not inside the workspace")
            try:
                hits = kb.related(path, limit=params.limit, exclude_linked=params.exclude_linked)
            except (NotIndexed, PathOutsideWorkspace) as err:
                raise InvalidRequest(str(err)) from err
            return path, hits

        path, hits = self.read(find)
        if params.numbered:
            self.lists.remember(client, f"related to {path}", hits)
        return RelatedResponse(path=path, results=hits, index=self.status())

    def open_result(self, n: int, *, client: str = DEFAULT_CLIENT) -> OpenResultResponse:
        """Result `n` of `client`'s last list; `InvalidRequest` naming what exists."""
        hit = self.lists.get(client, n)
        return OpenResultResponse(uri=hit.uri, path=hit.path, range=hit.range)

    def schema(self) -> SchemaResponse:
        """Every metadata field of the indexed files: types, file counts, top values."""
        return self.read(lambda kb: kb.schema())

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
        nor a file the knowledge base excludes). `InvalidRequest` for a path leading out of
        the workspace, a file that is not indexed or cannot be read, lines it does not have."""
        page = self.read(
            lambda kb: _confined(
                path,
                lambda: reading.read_page(
                    kb,
                    path,
                    1 if start_line is None else start_line,
                    end_line,
                    max_lines=max_lines,
                    max_chars=max_chars,
                ),
            )
        )
        return FileText(
            path=page.info.path,
            uri=page.info.uri,
            start_line=page.start_line,
            end_line=page.end_line,
            total_lines=page.total_lines,
            text="\n".join(page.lines),
        )

    def file_text(self, path: str) -> tuple[FileInfo, str]:
        """The whole text of an indexed file as it is on disk now (within
        `kb.maxFileSize`), read confined; `InvalidRequest` as for `read_file`."""

        def read(kb: KnowledgeBase) -> tuple[FileInfo, str]:
            info = reading.indexed_file(kb, path)
            return info, kb.read_text(info.path)

        return self.read(lambda kb: _confined(path, lambda: read(kb)))

    def ask(
        self,
        params: AskParams,
        *,
        client: str = DEFAULT_CLIENT,
        on_event: Callable[[Step], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> AskResponse:
        """The agent's answer. "file N" and `n` refer to `client`'s last list; a list the
        agent shows becomes the new one. `cancel` (or reopening the knowledge base) ends
        the run with `stop: "cancelled"`."""
        cancel = cancel or threading.Event()
        outcome = None
        try:
            outcome = self._with_agent(
                lambda agent: agent.ask(
                    params,
                    numbered=self.lists.hits(client) or None,
                    on_event=on_event,
                    cancel=cancel,
                ),
                cancel,
            )
        finally:
            if outcome is None or outcome.response.stop == "error":
                self.probe.refresh(self._agent)  # the model may have gone away: say so soon
        if outcome.numbered is not None:
            self.lists.remember(client, params.question, outcome.numbered, origin="agent")
        return outcome.response

    def summarize(
        self,
        params: SummarizeParams,
        *,
        client: str = DEFAULT_CLIENT,
        cancel: threading.Event | None = None,
    ) -> SummarizeResponse:
        """The cached or a new summary of one file (`file`, or `n` of `client`'s last
        list). Raises the agent's `InvalidInput`, `LlmCancelled` and `LlmError`s."""
        cancel = cancel or threading.Event()
        try:
            return self._with_agent(
                lambda agent: agent.summarize(
                    params.file, params.n, numbered=self.lists.hits(client) or None, cancel=cancel
                ),
                cancel,
            )
        except LlmCancelled:
            raise
        except LlmError:
            self.probe.refresh(self._agent)
            raise

    def status(self, *, probe: bool = False) -> IndexStatus:
        """The one status of this runtime (any thread, never waits for indexing).
        `probe`: ask the model server now (a few seconds at most) rather than answer
        from the last check."""
        if probe:
            self.probe.probe_now(self._agent)
        with self.gate.read():
            return self._status()

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """`subscriber(status)` whenever the status changes (at most four times a second,
        from the feed's thread); returns the unsubscribe."""
        return self.feed.subscribe(subscriber)

    def changed(self) -> None:
        """Something that shows in the status changed (any thread)."""
        if not self._closed:
            self.feed.changed()

    # --- messages ---------------------------------------------------------------------------

    def tell(self, message: str, severity: Severity = "warning") -> None:
        """Log `message` and show it through the front end, once per distinct message."""
        with self._told_lock:
            if message in self._told:
                return
            self._told.add(message)
        log.log(logging.ERROR if severity == "error" else logging.WARNING, message)
        self.hooks.tell(message, severity)

    # --- inside ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _reading(self) -> Iterator[KnowledgeBase]:
        self.opened.result()
        with self.gate.read():
            kb = self._kb
            if kb is None:
                raise Unavailable(self._error or "The knowledge base is not open.")
            yield kb

    def _with_agent(self, fn: Callable[[Agent], T], cancel: threading.Event) -> T:
        self.running.add(cancel)
        try:
            self.opened.result()
            with self.gate.read():
                agent = self._the_agent()
                if agent is None:
                    raise Unavailable(self._error or "The knowledge base is not open.")
                return fn(agent)
        finally:
            self.running.discard(cancel)

    def _the_agent(self) -> Agent | None:
        """The agent of the open knowledge base, made on first use: a one-shot search never
        asks the model, and the agent's modules take about as long to import."""
        with self._agent_lock:
            kb = self._kb
            if self._agent is None and kb is not None:
                from kb_lsp.engine.agent import Agent

                self._agent = Agent(kb, self.settings, conversations=self.conversations)
            return self._agent

    def _set_error(self, message: str | None) -> None:
        with self._error_lock:
            self._error = message

    def _list_folder(self) -> Path | None:
        roots = self.roots
        if not roots:
            return None
        return store_dir_for(default_storage(self.settings), roots[0])

    def _open_knowledge(self, settings: Settings) -> None:
        """On the worker thread: open the stores of every root and start watching."""
        storage = default_storage(settings)
        log_file = logs.log_to_file(storage) if self._log_file else None
        log.info("kb-lsp %s: storage %s, log %s", __version__, storage, log_file)
        self._check_roots()
        try:
            kb = KnowledgeBase(
                [root for root in self.roots if root.is_dir()],
                settings,
                embedder=embedder_from_environment(),
                storage=storage,
                exact_vectors=self._exact_vectors,
            )
        except Exception as err:
            message = f"kb-lsp could not open its index in {storage}: {err}"
            self._set_error(message)
            log.exception("opening the knowledge base failed")
            self.tell(message, "error")
            raise
        self.settings = settings
        self._kb = kb
        with self._agent_lock:
            self._agent = None
        self._set_error(None)
        self.probe.refresh(self._the_agent() if self.probe.enabled else None)
        if kb.read_only:
            self.tell(
                "kb-lsp: another window is indexing this workspace; this one is read-only "
                "(search works, the other window keeps the index up to date)."
            )
            self._watch_writer(kb)
            return
        self._start_watcher(settings)
        self._listen()

    # --- two processes on one index (takeover.py) ------------------------------------------

    def _watch_writer(self, kb: KnowledgeBase) -> None:
        if not self._take_over:
            return
        folders = [folder for folder, read_only in kb.store_folders().items() if read_only]
        self._takeover = TakeoverWatch(folders, free=self._writer_gone, tick=self.changed)
        self._takeover.start()

    def _writer_gone(self) -> None:
        """(The takeover thread.) Reopen as the writer, then sync; say so."""
        self.worker.submit(Job(fn=self._take_over_index, title="Taking over the index"))

    def _take_over_index(self) -> None:
        kb = self._kb
        if kb is None or not kb.read_only:
            return
        with self.gate.exclusive():
            self._close_knowledge()
            self._open_knowledge(self._wanted)
        kb = self._kb
        if kb is not None and not kb.read_only:
            log.info("kb-lsp: the other process let go of the index; this one writes it now")
            self.tell(
                "kb-lsp: the other window closed; this one now keeps the index up to date.",
                "info",
            )
            self.worker.submit(Job(title="Indexing after taking over", progress="always"))
        self.changed()

    def _publish(self, step: SyncProgress | None) -> None:
        """(The worker.) Tell other processes on these stores how the sync is going."""
        kb = self._kb
        if kb is None:
            return
        folders = [folder for folder, read_only in kb.store_folders().items() if not read_only]
        if step is None:
            publish(folders, WriterState("ready"))
        else:
            publish(
                folders,
                WriterState(
                    "indexing",
                    step.done,
                    step.total,
                    phase=step.phase,
                    chunks_done=step.chunks_done,
                    chunks_total=step.chunks_total,
                ),
            )

    def _built_elsewhere(self, kb: KnowledgeBase) -> WriterState | None:
        """The writer's state when another process is indexing these stores now."""
        for folder, read_only in kb.store_folders().items():
            state = read_state(folder) if read_only else None
            if state is not None and state.state == "indexing":
                return state
        return None

    def _start_watcher(self, settings: Settings) -> None:
        if not self._watch_disk:
            return
        watcher = Watcher(
            self._on_batch,
            debounce=settings.debounce_ms / 1000,
            reconcile_seconds=settings.reconcile_seconds,
        )
        for root in self.roots:
            self._watch(watcher, root, settings)
        watcher.start()
        self._watcher = watcher

    def _watch(self, watcher: Watcher, root: Path, settings: Settings) -> None:
        try:
            rules = WorkspaceRoot(root, settings)
        except Exception as err:
            log.warning("cannot read the file rules of %s: %s", root, err)
            watcher.add_root(root)
            return
        watcher.add_root(rules.root, rules.is_ignored_dir)

    def follow_writes(self, follow: Callable[[list[Path]], None]) -> None:
        """`follow(stores)` now and whenever the store folders this process writes change
        ([] when it stops writing): the front ends that write an index listen for the
        command line there (`listener.py`)."""
        self._follow_writes = follow
        if self._kb is not None:
            self.worker.submit(Job(fn=self._listen, title="Listening for the command line"))

    def _listen(self) -> None:
        """(The worker.) The stores this process writes, to whoever follows them."""
        kb = self._kb
        if self._follow_writes is not None:
            stores = {} if kb is None else kb.store_folders()
            self._follow_writes([store for store, read_only in stores.items() if not read_only])

    def _close_knowledge(self) -> None:
        """Stop watching and close the stores (releases the writer lock)."""
        if self._follow_writes is not None:
            self._follow_writes([])
        if self._takeover is not None:
            self._takeover.stop()
            self._takeover = None
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        self._agent = None
        kb, self._kb = self._kb, None
        if kb is not None:
            try:
                kb.close()
            except Exception:
                log.exception("closing the knowledge base failed")

    def _on_batch(self, batch: Batch) -> None:
        if batch.rescan:
            self.worker.submit_rescan(batch.reason)
        else:
            self.worker.submit_paths(batch.paths)

    def _check_roots(self) -> None:
        for root in list(self.roots):
            if root.is_dir():
                self._missing.discard(root)
            elif root not in self._missing:
                self._missing.add(root)
                self.tell(
                    f"kb-lsp: the workspace folder {root} no longer exists; "
                    "its files are no longer in the knowledge base."
                )

    def _start_progress(self, title: str, cancel: threading.Event) -> ProgressHandle | None:
        if self._closed:
            return None
        try:
            return self.hooks.start_progress(title, cancel)
        except Exception:
            log.exception("the front end could not show progress")
            return None

    def _status(self) -> IndexStatus:
        settings = self.settings
        llm = self.probe.status(self._agent, configured_status(settings))
        kb = self._kb
        activity = Activity(
            pending=self.worker.pending,
            busy=self.worker.busy,
            paused=self.worker.paused,
            incomplete=self.worker.incomplete,
            error=self._error,
            seconds_left=self.worker.seconds_left,
            missing=sorted(self._missing),
            elsewhere=self._built_elsewhere(kb) if kb is not None and kb.read_only else None,
        )
        if kb is None:
            return opening(
                activity,
                embedder=settings.embedder.provider,
                store=str(default_storage(settings)),
                llm=llm,
                roots=self.roots,
            )
        return combined(kb.status(pending=activity.pending, llm=llm), activity)


__all__ = [
    "DEFAULT_CLIENT",
    "READ_ONLY_REINDEX",
    "FileText",
    "Hooks",
    "ProgressHandle",
    "ReadOnlyStore",
    "Runtime",
    "Severity",
]


def _settle(answer: concurrent.futures.Future[T], done: concurrent.futures.Future[T]) -> None:
    """`answer` ends as `done` did."""
    error = done.exception()
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(done.result())
