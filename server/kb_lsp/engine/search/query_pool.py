"""The threads that embed a query while SQLite runs its keyword queries (`Searcher`).

Each `Searcher` — one per knowledge base — owns its pool: made at its first search by
meaning (a keyword search never starts one), stopped when the knowledge base closes, so
a closed session leaves no thread behind.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

if TYPE_CHECKING:
    import concurrent.futures

P = ParamSpec("P")
T = TypeVar("T")

QUERY_THREADS = "kb-query-embed"  # the pool's thread names start with it
QUERY_WORKERS = 4  # one per concurrent search the front ends run, give or take


class QueryPool:
    def __init__(self, workers: int = QUERY_WORKERS) -> None:
        self._workers = workers
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(
        self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[T]:
        """`work` on one of the pool's threads; on this one once the pool is closed (a
        search that raced the close still answers, or fails on its closed store)."""
        # Loaded on the first query embedded: a keyword search embeds none.
        import concurrent.futures

        with self._lock:
            if not self._closed:
                if self._pool is None:
                    self._pool = concurrent.futures.ThreadPoolExecutor(
                        max_workers=self._workers, thread_name_prefix=QUERY_THREADS
                    )
                return self._pool.submit(work, *args, **kwargs)
        done: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            done.set_result(work(*args, **kwargs))
        except Exception as err:
            done.set_exception(err)
        return done

    def close(self) -> None:
        """Stop the threads once their work is done. Idempotent."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
