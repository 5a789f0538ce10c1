"""The last numbered list shown to the client, so that "open result n" means what it saw.

One server process serves one client (stdio, or one TCP connection at a time), so this is
per-connection state: a field of the server, reset when the connection starts.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from kb_lsp.lsp.errors import invalid_params
from kb_lsp.protocol import SearchHit


class LastResults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hits: list[SearchHit] | None = None
        self._query = ""

    def remember(self, query: str, hits: Sequence[SearchHit]) -> None:
        with self._lock:
            self._hits = list(hits)
            self._query = query

    def get(self, n: int) -> SearchHit:
        """Result `n` (1-based) of the last list, or `InvalidParams` saying what exists."""
        with self._lock:
            hits, query = self._hits, self._query
        if hits is None:
            raise invalid_params(f"No result {n}: there has been no search yet")
        if not hits:
            raise invalid_params(f"No result {n}: the last search ({query!r}) returned no results")
        for hit in hits:
            if hit.n == n:
                return hit
        count = len(hits)
        plural = "result" if count == 1 else "results"
        raise invalid_params(f"No result {n}: the last search returned {count} {plural}")

    @property
    def hits(self) -> list[SearchHit]:
        with self._lock:
            return list(self._hits or [])
