"""`KbLanguageServer`: the knowledge base behind pygls, and `serve()` to run it.

Threads, and who may block:

* the event loop (main thread) runs every handler; handlers only parse, hand work to an
  executor and await it, so a `kb/status` is answered while a cold index runs;
* pygls' own pool reads stdin (sized to 2: it does nothing else, no handler uses it);
* `queries`, a bounded pool of our own, runs reads: search, status, hover;
* `asks`, another bounded pool, runs the agent (`kb/ask`, `kb/summarize`): a model call
  takes seconds to minutes, so asks never hold up the `queries` pool;
* one `kb-llm-probe` thread checks whether Ollama answers, so that `kb/status` reports
  `llm.reachable` from a cached answer and never waits for the network (`asking.py`);
* the indexing worker (`indexing.py`) is the one writer: syncs, roots, new settings;
* the watcher's threads only collect events and hand batches to the worker.

Messages sent from other threads are written by the event loop (`jsonrpc.KbProtocol`).

Test-only: `KB_TEST_EMBEDDER=hashing` (or `module:attribute` of a zero-argument factory)
replaces the embedder, so end-to-end tests need not load the real model every time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from kb_lsp import __version__
from kb_lsp.agent import Agent
from kb_lsp.agent.conversations import Conversations
from kb_lsp.config import LoadedSettings, Settings, env_settings, load_settings
from kb_lsp.embeddings import Embedder
from kb_lsp.knowledge import KnowledgeBase
from kb_lsp.lsp import logs
from kb_lsp.lsp.asking import LlmProbe, RunningWork
from kb_lsp.lsp.errors import ServerError
from kb_lsp.lsp.indexing import IndexingWorker, Job, ProgressHandle
from kb_lsp.lsp.jsonrpc import KbProtocol, plain_converter
from kb_lsp.lsp.results import LastResults
from kb_lsp.protocol import INDEX_CHANGED, IndexStatus, dump
from kb_lsp.watcher import Batch, Watcher
from kb_lsp.workspace import WorkspaceRoot

log = logging.getLogger(__name__)

T = TypeVar("T")

QUERY_WORKERS = max(2, min(4, os.cpu_count() or 2))
# Asks mostly wait on Ollama, which runs one generation at a time anyway; two let a
# summary run beside a question, more would only queue inside Ollama.
ASK_WORKERS = 2
INDEX_CHANGED_INTERVAL = 0.25  # seconds: at most four kb/indexChanged a second
CONFIG_TIMEOUT = 5.0


def storage_folder(settings: Settings, environ: dict[str, str] | None = None) -> Path:
    """`kb.storage` (the extension passes its storageUri), else `KB_STORAGE` (already
    merged into settings by `env_settings`), else `$XDG_CACHE_HOME/kb-lsp`."""
    environ = dict(os.environ) if environ is None else environ
    if settings.storage:
        return Path(settings.storage).expanduser()
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kb-lsp"


def test_embedder() -> Embedder | None:
    """The embedder named by `KB_TEST_EMBEDDER` (tests only), or None for the configured one."""
    spec = os.environ.get("KB_TEST_EMBEDDER", "").strip()
    if not spec:
        return None
    if spec == "hashing":
        spec = "tests.fakes.embedder:HashingEmbedder"
    module, _, attribute = spec.partition(":")
    factory = getattr(importlib.import_module(module), attribute or "Embedder")
    embedder: Embedder = factory()
    log.warning("using the test embedder %s (KB_TEST_EMBEDDER)", embedder.identity)
    return embedder


def uri_to_path(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(os.path.abspath(path)) if path else None


class _Gate:
    """Readers (queries) share the knowledge base; closing or reopening it waits until
    the queries in flight are done and holds new ones back until it is open again."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._exclusive = False

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            self._exclusive = True
            while self._readers:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class _ClientProgress:
    """One work-done progress bar on the client, fed from the indexing worker."""

    def __init__(self, server: KbLanguageServer, token: str) -> None:
        self._server = server
        self._token = token
        self._last = 0.0

    def report(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last < 0.1 and done < total:
            return
        self._last = now
        percentage = int(done * 100 / total) if total else 0
        self._server.work_done_progress.report(
            self._token,
            types.WorkDoneProgressReport(
                message=f"{done}/{total} files", percentage=percentage, cancellable=True
            ),
        )

    def end(self, message: str) -> None:
        self._server.work_done_progress.end(self._token, types.WorkDoneProgressEnd(message=message))
        self._server.work_done_progress.tokens.pop(self._token, None)


class KbLanguageServer(LanguageServer):
    protocol: KbProtocol

    def __init__(self) -> None:
        super().__init__(
            "kb-lsp",
            __version__,
            protocol_cls=KbProtocol,
            converter_factory=plain_converter,
            max_workers=2,  # pygls' pool only reads stdin: no handler runs on it
        )
        self.queries = concurrent.futures.ThreadPoolExecutor(
            max_workers=QUERY_WORKERS, thread_name_prefix="kb-query"
        )
        self.asks = concurrent.futures.ThreadPoolExecutor(
            max_workers=ASK_WORKERS, thread_name_prefix="kb-ask"
        )
        self.agent: Agent | None = None
        # Kept by the server, not the agent, so that a conversation survives the agent
        # being recreated for new settings.
        self.conversations = Conversations()
        self.running = RunningWork()
        self.llm_probe = LlmProbe(self.index_changed)
        self.results = LastResults()
        self.gate = _Gate()
        self.settings = Settings()
        self.init_options: Any = None
        self.roots: list[Path] = []
        self.kb: KnowledgeBase | None = None
        self.kb_error: str | None = None
        self.opened: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.watcher: Watcher | None = None
        self.worker = IndexingWorker(
            lambda: self.kb,
            start_progress=self._start_progress,
            changed=self.index_changed,
            after_job=self._check_roots,
        )
        self._told: set[str] = set()
        self._missing: set[Path] = set()
        self._closed = False
        self._close_lock = threading.Lock()
        self._changed_handle: asyncio.TimerHandle | None = None
        self._changed_last = 0.0
        self._changed_sent: dict[str, Any] | None = None
        self.shutdown_requested = False
        logs.setup(self._log_to_client)

    # --- messages ---------------------------------------------------------------------

    def _log_to_client(self, params: types.LogMessageParams) -> None:
        if self.protocol.writer is not None and not self._closed:
            self.window_log_message(params)

    def tell(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """`window/showMessage`, once per distinct message for the life of the server."""
        if message in self._told:
            return
        self._told.add(message)
        log.log(logging.ERROR if kind == types.MessageType.Error else logging.WARNING, message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    # --- settings -----------------------------------------------------------------------

    async def load_settings(self) -> LoadedSettings:
        """env < initializationOptions < workspace/configuration (section `kb`)."""
        sources: list[Any] = [env_settings(), self.init_options]
        workspace = self.client_capabilities.workspace
        if workspace is not None and workspace.configuration:
            try:
                config = await asyncio.wait_for(
                    self.workspace_configuration_async(
                        types.ConfigurationParams(items=[types.ConfigurationItem(section="kb")])
                    ),
                    CONFIG_TIMEOUT,
                )
                if config and config[0] is not None:
                    sources.append(config[0])
            except Exception as err:  # a client that fails here still gets a server
                log.warning("workspace/configuration failed: %s", err)
        loaded = load_settings(*sources)
        if loaded.message:
            self.tell(loaded.message)
        return loaded

    # --- opening and closing the knowledge base ------------------------------------------

    def open_knowledge(self, settings: Settings) -> None:
        """On the worker thread: open the stores of every root and start watching."""
        storage = storage_folder(settings)
        log_file = logs.log_to_file(storage)
        log.info("kb-lsp %s: storage %s, log %s", __version__, storage, log_file)
        self._check_roots()
        try:
            kb = KnowledgeBase(
                [root for root in self.roots if root.is_dir()],
                settings,
                embedder=test_embedder(),
                storage=storage,
            )
        except Exception as err:
            self.kb_error = f"kb-lsp could not open its index in {storage}: {err}"
            log.exception("opening the knowledge base failed")
            self.tell(self.kb_error, types.MessageType.Error)
            raise
        self.settings = settings
        self.kb = kb
        self.agent = Agent(kb, settings, conversations=self.conversations)
        self.kb_error = None
        self.llm_probe.refresh(self.agent)
        if kb.read_only:
            self.tell(
                "kb-lsp: another window is indexing this workspace; this one is read-only "
                "(search works, the other window keeps the index up to date)."
            )
            return
        watcher = Watcher(
            self._on_batch,
            debounce=settings.debounce_ms / 1000,
            reconcile_seconds=settings.reconcile_seconds,
        )
        for root in self.roots:
            self._watch(watcher, root, settings)
        watcher.start()
        self.watcher = watcher

    def _watch(self, watcher: Watcher, root: Path, settings: Settings) -> None:
        try:
            rules = WorkspaceRoot(root, settings)
        except Exception as err:
            log.warning("cannot read the file rules of %s: %s", root, err)
            watcher.add_root(root)
            return
        watcher.add_root(rules.root, rules.is_ignored_dir)

    def close_knowledge(self) -> None:
        """Stop watching and close the stores (releases the writer lock)."""
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        self.agent = None
        kb, self.kb = self.kb, None
        if kb is not None:
            try:
                kb.close()
            except Exception:
                log.exception("closing the knowledge base failed")

    def start_indexing(self, settings: Settings) -> None:
        """Open the knowledge base (on the worker) and sync every root with progress."""
        self.worker.start()

        def open_it() -> None:
            try:
                self.open_knowledge(settings)
            finally:
                if not self.opened.done():
                    self.opened.set_result(None)

        self.worker.submit(Job(fn=open_it, title="Opening the index"))
        self.worker.submit(Job(title="Indexing the knowledge base", progress="always"))

    def reconfigure(self, settings: Settings) -> None:
        """New settings: reopen with them (on the worker) and sync everything again."""
        if settings == self.settings:
            return
        log.info("settings changed: reopening the knowledge base")

        def reopen() -> None:
            # Asks in flight hold the gate for as long as the model talks: stop them
            # (they end with stop "cancelled") rather than hold every search back.
            self.running.cancel_all()
            with self.gate.exclusive():
                self.close_knowledge()
                self.open_knowledge(settings)

        self.worker.submit(Job(fn=reopen, title="Applying new settings"))
        self.worker.submit(Job(title="Indexing with new settings", progress="always"))

    def change_roots(self, added: list[Path], removed: list[Path]) -> None:
        def apply() -> None:
            for root in removed:
                if root in self.roots:
                    self.roots.remove(root)
                self._missing.discard(root)
                if self.watcher is not None:
                    self.watcher.remove_root(root)
                if self.kb is not None:
                    self.kb.remove_root(root)
            for root in added:
                if root in self.roots:
                    continue
                self.roots.append(root)
                if self.kb is not None:
                    self.kb.add_root(root)
                if self.watcher is not None:
                    self._watch(self.watcher, root, self.settings)

        self.worker.submit(Job(fn=apply, title="Updating workspace folders"))
        if added:
            self.worker.submit(
                Job(paths=frozenset(added), title="Indexing new folders", progress="always")
            )

    def _on_batch(self, batch: Batch) -> None:
        if batch.rescan:
            self.worker.submit_rescan(batch.reason)
        else:
            self.worker.submit_paths(batch.paths)

    def notify_changed(self, paths: list[Path]) -> None:
        """Paths the editor says changed (didSave, didChangeWatchedFiles)."""
        if self.watcher is not None:
            self.watcher.notify(paths)
        else:
            self.worker.submit_paths(paths)

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

    def close(self) -> None:
        """Stop the watcher and the workers, close the knowledge base. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        log.info("kb-lsp: stopping")
        if self.watcher is not None:
            self.watcher.stop()
        self.worker.stop()
        self.running.cancel_all()
        self.llm_probe.close()
        with self.gate.exclusive():
            self.close_knowledge()
        self.queries.shutdown(wait=False, cancel_futures=True)
        self.asks.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        """pygls' end of the connection (exit, or stdin closed): close everything without
        waiting for the thread still blocked reading stdin."""
        self.close()
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
        if self._server is not None:
            self._server.close()

    # --- status and notifications -------------------------------------------------------

    def index_status(self) -> IndexStatus:
        """The `IndexStatus` now (a reader: any thread)."""
        settings = self.settings
        llm = self.llm_probe.status(self.agent, settings.ollama.host, settings.ollama.model)
        kb = self.kb
        pending = self.worker.pending
        if kb is None:
            return IndexStatus(
                state="error" if self.kb_error else "indexing",
                files=0,
                chunks=0,
                pending=pending,
                embedder=settings.embedder.provider,
                store=str(storage_folder(settings)),
                llm=llm,
                roots=[str(root) for root in self.roots],
                message=self.kb_error or "Opening the index…",
            )
        status = kb.status(pending=pending, llm=llm)
        update: dict[str, Any] = {}
        messages = [status.message] if status.message else []
        if kb.read_only:
            update["read_only"] = True
        elif self.worker.busy:
            update["state"] = "indexing"
        elif self.worker.last_error:
            update["state"] = "error"
            messages.append(self.worker.last_error)
        if self.worker.incomplete:
            messages.append(
                "indexing was cancelled: some files may be missing until the next reindex"
            )
        messages += [f"workspace folder missing: {root}" for root in sorted(self._missing)]
        if messages:
            update["message"] = "; ".join(messages)
        return status.model_copy(update=update)

    def index_changed(self) -> None:
        """Schedule a `kb/indexChanged` (any thread; at most one per 0.25 s)."""
        loop = self.protocol.loop
        if loop is None or loop.is_closed() or self._closed:
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._schedule_index_changed)

    def _schedule_index_changed(self) -> None:
        loop = self.protocol.loop
        if self._changed_handle is not None or loop is None:
            return
        delay = max(0.0, self._changed_last + INDEX_CHANGED_INTERVAL - loop.time())
        self._changed_handle = loop.call_later(delay, self._fire_index_changed)

    def _fire_index_changed(self) -> None:
        loop = self.protocol.loop
        self._changed_handle = None
        if loop is None or self._closed:
            return
        self._changed_last = loop.time()
        future = loop.run_in_executor(self.queries, self.index_status)

        def send(done: asyncio.Future[IndexStatus]) -> None:
            if done.cancelled() or done.exception() is not None or self._closed:
                return
            payload = dump(done.result())
            if payload != self._changed_sent:
                self._changed_sent = payload
                self.protocol.notify(INDEX_CHANGED, payload)

        future.add_done_callback(send)

    def _start_progress(self, title: str, cancel: threading.Event) -> ProgressHandle | None:
        """On the worker thread: open a work-done progress bar on the client."""
        window = self.client_capabilities.window
        loop = self.protocol.loop
        if window is None or not window.work_done_progress or loop is None or self._closed:
            return None
        token = f"kb-index-{uuid.uuid4().hex[:12]}"
        created = asyncio.run_coroutine_threadsafe(
            self.work_done_progress.create_async(token), loop
        )
        try:
            created.result(timeout=10)
        except Exception as err:
            log.info("the client did not create a progress bar: %s", err)
            return None
        self.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=title, cancellable=True, message="Scanning files…", percentage=0
            ),
        )
        user_cancel = self.work_done_progress.tokens.get(token)
        if user_cancel is not None:
            user_cancel.add_done_callback(lambda f: cancel.set() if f.cancelled() else None)
        return _ClientProgress(self, token)

    # --- helpers for handlers ------------------------------------------------------------------

    async def run_query(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a read on the query pool; a cancelled request stops waiting for it."""

        def read() -> T:
            with self.gate.read():
                return fn(*args)

        return await asyncio.get_running_loop().run_in_executor(self.queries, read)

    async def query(self, fn: Callable[[KnowledgeBase], T]) -> T:
        """Run `fn(knowledge base)` on the query pool. Waits while the knowledge base is
        being opened (a second or so), never for indexing."""
        await asyncio.wrap_future(self.opened)

        def read() -> T:
            with self.gate.read():
                kb = self.kb
                if kb is None:
                    raise ServerError(self.kb_error or "The knowledge base is not open.")
                return fn(kb)

        return await asyncio.get_running_loop().run_in_executor(self.queries, read)

    async def run_agent(self, fn: Callable[[Agent], T], cancel: threading.Event) -> T:
        """Run `fn(agent)` on the `asks` pool. `cancel` is the run's cancel event: it is
        set when the request is cancelled (this stops waiting at once; the agent sees the
        event and stops its model stream) and when the knowledge base is reopened."""
        await asyncio.wrap_future(self.opened)

        def work() -> T:
            with self.gate.read():
                agent = self.agent
                if agent is None:
                    raise ServerError(self.kb_error or "The knowledge base is not open.")
                return fn(agent)

        self.running.add(cancel)
        try:
            return await asyncio.get_running_loop().run_in_executor(self.asks, work)
        except asyncio.CancelledError:
            cancel.set()
            raise
        finally:
            self.running.discard(cancel)


def create_server() -> KbLanguageServer:
    from kb_lsp.lsp import features, hover

    server = KbLanguageServer()
    features.register(server)
    hover.register(server)
    return server


def serve(tcp: tuple[str, int] | None = None) -> int:
    """Run the language server on stdio (or on a TCP port, for debugging).

    On stdio this does not return: when the client exits (or closes stdin) the process
    ends with 0 after `shutdown` + `exit`, else 1 — at once, since pygls' reader thread
    may still be blocked on stdin and would keep the interpreter from exiting. With `tcp`
    it returns that code when the connection ends."""
    server = create_server()
    if tcp is not None:
        server.start_tcp(*tcp)
    else:
        server.start_io()
    code = 0 if server.shutdown_requested else 1
    logging.shutdown()
    if tcp is None:
        sys.stderr.flush()
        os._exit(code)
    return code
