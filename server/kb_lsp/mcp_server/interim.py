"""A stand-in for `kb_lsp.runtime.Runtime` (issue 9) until it lands: the same method
names and errors, over `KnowledgeBase`, `Agent`, the watcher and the indexing worker.

The MCP server only uses the methods below; when the runtime lands this module goes and
`server.py` imports `kb_lsp.runtime` instead.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kb_lsp.agent import Agent, InvalidInput
from kb_lsp.config import Settings
from kb_lsp.embeddings import Embedder
from kb_lsp.knowledge import FileInfo, KnowledgeBase, default_storage
from kb_lsp.lsp.indexing import IndexingWorker, Job
from kb_lsp.protocol import (
    AskParams,
    AskResponse,
    IndexStatus,
    LlmStatus,
    OpenResultResponse,
    SearchHit,
    SearchParams,
    SearchResponse,
    Step,
    SummarizeParams,
    SummarizeResponse,
)
from kb_lsp.watcher import Batch, Watcher
from kb_lsp.workspace import WorkspaceRoot

log = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_CLIENT = "default"


class InvalidRequest(InvalidInput):
    """The request itself is wrong and the client can fix it."""


class Unavailable(RuntimeError):
    """The request cannot be served now."""


def _test_embedder() -> Embedder | None:
    spec = os.environ.get("KB_EMBEDDER_FACTORY") or os.environ.get("KB_TEST_EMBEDDER", "")
    if not spec:
        return None
    if spec == "hashing":
        spec = "tests.fakes.embedder:HashingEmbedder"
    module, _, attribute = spec.partition(":")
    embedder: Embedder = getattr(importlib.import_module(module), attribute)()
    return embedder


class _Lists:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lists: dict[str, tuple[str, list[SearchHit]]] = {}

    def remember(self, client: str, query: str, hits: list[SearchHit]) -> None:
        with self._lock:
            self._lists[client] = (query, list(hits))

    def hits(self, client: str) -> list[SearchHit]:
        with self._lock:
            return list(self._lists.get(client, ("", []))[1])

    def get(self, client: str, n: int) -> SearchHit:
        with self._lock:
            entry = self._lists.get(client)
        if entry is None:
            raise InvalidRequest(f"No result {n}: there has been no search yet")
        query, hits = entry
        if not hits:
            raise InvalidRequest(f"No result {n}: the last search ({query!r}) returned no results")
        for hit in hits:
            if hit.n == n:
                return hit
        plural = "result" if len(hits) == 1 else "results"
        raise InvalidRequest(f"No result {n}: the last search returned {len(hits)} {plural}")

    def forget(self, client: str) -> None:
        with self._lock:
            self._lists.pop(client, None)


class Runtime:
    def __init__(self) -> None:
        self.settings = Settings()
        self.roots: list[Path] = []
        self.lists = _Lists()
        self.opened: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._kb: KnowledgeBase | None = None
        self._agent: Agent | None = None
        self._watcher: Watcher | None = None
        self._error: str | None = None
        self.reads = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="kb-read")
        self.asks = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="kb-ask")
        self.worker = IndexingWorker(
            lambda: self._kb, start_progress=lambda title, cancel: None, changed=lambda: None
        )

    def open(self, roots: list[Path], settings: Settings) -> concurrent.futures.Future[None]:
        self.roots = list(roots)
        self.settings = settings
        self.worker.start()

        def open_it() -> None:
            try:
                kb = KnowledgeBase(roots, settings, embedder=_test_embedder())
                self._kb = kb
                self._agent = Agent(kb, settings)
                if not kb.read_only:
                    watcher = Watcher(
                        self._on_batch,
                        debounce=settings.debounce_ms / 1000,
                        reconcile_seconds=settings.reconcile_seconds,
                    )
                    for root in roots:
                        rules = WorkspaceRoot(root, settings)
                        watcher.add_root(rules.root, rules.is_ignored_dir)
                    watcher.start()
                    self._watcher = watcher
            except Exception as err:
                self._error = f"kb-lsp could not open its index: {err}"
                raise
            finally:
                if not self.opened.done():
                    self.opened.set_result(None)

        done = self.worker.submit(Job(fn=open_it, title="Opening the index"))
        self.worker.submit(Job(title="Indexing the knowledge base"))
        return done

    def submit_read(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        return self.reads.submit(fn)

    def submit_ask(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        return self.asks.submit(fn)

    def _on_batch(self, batch: Batch) -> None:
        if batch.rescan:
            self.worker.submit_rescan(batch.reason)
        else:
            self.worker.submit_paths(batch.paths)

    def read(self, fn: Callable[[KnowledgeBase], T]) -> T:
        self.opened.result()
        kb = self._kb
        if kb is None:
            raise Unavailable(self._error or "The knowledge base is not open.")
        return fn(kb)

    def search(self, params: SearchParams, *, client: str = DEFAULT_CLIENT) -> SearchResponse:
        hits = self.read(
            lambda kb: kb.search(
                params.query,
                limit=params.limit,
                paths=params.paths,
                mode=params.mode,
                filter=params.filter,
            )
        )
        self.lists.remember(client, params.query, hits)
        return SearchResponse(query=params.query, results=hits, index=self.status())

    def open_result(self, n: int, *, client: str = DEFAULT_CLIENT) -> OpenResultResponse:
        hit = self.lists.get(client, n)
        return OpenResultResponse(uri=hit.uri, path=hit.path, range=hit.range)

    def files(self, pattern: str | None = None) -> list[FileInfo]:
        return self.read(lambda kb: kb.files(pattern))

    def _agent_now(self) -> Agent:
        self.opened.result()
        if self._agent is None:
            raise Unavailable(self._error or "The knowledge base is not open.")
        return self._agent

    def ask(
        self,
        params: AskParams,
        *,
        client: str = DEFAULT_CLIENT,
        on_event: Callable[[Step], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> AskResponse:
        outcome = self._agent_now().ask(
            params, numbered=self.lists.hits(client) or None, on_event=on_event, cancel=cancel
        )
        if outcome.numbered is not None:
            self.lists.remember(client, params.question, outcome.numbered)
        return outcome.response

    def summarize(
        self,
        params: SummarizeParams,
        *,
        client: str = DEFAULT_CLIENT,
        cancel: threading.Event | None = None,
    ) -> SummarizeResponse:
        return self._agent_now().summarize(
            params.file, params.n, numbered=self.lists.hits(client) or None, cancel=cancel
        )

    def status(self) -> IndexStatus:
        kb = self._kb
        settings = self.settings
        if kb is None:
            return IndexStatus(
                state="error" if self._error else "indexing",
                files=0,
                chunks=0,
                embedder=settings.embedder.provider,
                store=str(default_storage(settings)),
                llm=LlmStatus(host=settings.ollama.host, model=settings.ollama.model),
                roots=[str(root) for root in self.roots],
                message=self._error or "Opening the index…",
            )
        status = kb.status(pending=self.worker.pending)
        if self.worker.busy and not kb.read_only:
            status = status.model_copy(update={"state": "indexing"})
        return status

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        self.worker.stop()
        self.reads.shutdown(wait=False, cancel_futures=True)
        self.asks.shutdown(wait=False, cancel_futures=True)
        if self._kb is not None:
            self._kb.close()
            self._kb = None
