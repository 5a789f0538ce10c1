"""Each client's last numbered list, so that "open result n" and "file n" mean what that
client was shown.

A client is whoever keeps a list of its own: the editor connected to a language server,
the `kb` command line (whose every run is a new process, so its list is kept on disk,
in the store folder of the first workspace root), an MCP session. The lists live in
memory; `persist` names the clients whose list is also written to disk and read back
by a later process.

One last list: a front end with a person in front of it (the editor) `follow`s the
lists set from other origins — the agent's search during an ask, `kb search` through the
socket, an MCP client in this process — so that its "file N" and its panel mean the list
set last, whoever set it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import ValidationError

from kb_lsp.protocol import ListOrigin, SearchHit, dump
from kb_lsp.runtime.errors import InvalidRequest
from kb_lsp.runtime.local_socket import CLI_CLIENT

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# MCP sessions are clients named `mcp` or `mcp-<session id>` (mcp/server.py).
MCP_CLIENT = "mcp"

# `listener(query, hits, origin)`: a followed list changed.
ListListener = Callable[[str, list[SearchHit], ListOrigin], None]


def origin_of(client: str) -> ListOrigin | None:
    """The origin of a search made by `client`: None for a front end's own person."""
    if client == CLI_CLIENT:
        return "cli"
    if client == MCP_CLIENT or client.startswith(f"{MCP_CLIENT}-"):
        return "mcp"
    return None


class _List:
    def __init__(self, query: str, hits: Sequence[SearchHit]) -> None:
        self.query = query
        self.hits = list(hits)


class NumberedLists:
    def __init__(self, folder: Callable[[], Path | None], persist: frozenset[str]) -> None:
        """`folder()`: where persisted lists go now (None: nowhere yet)."""
        self._folder = folder
        self._persist = persist
        self._lock = threading.Lock()
        self._lists: dict[str, _List] = {}
        self._followers: dict[str, ListListener] = {}

    def remember(
        self,
        client: str,
        query: str,
        hits: Sequence[SearchHit],
        *,
        origin: ListOrigin | None = None,
    ) -> None:
        """`client`'s last list is now `hits`. With an `origin` (not the client's own
        person searching), every follower's list becomes it too, and it is told."""
        entry = _List(query, hits)
        with self._lock:
            self._lists[client] = entry
            followers = list(self._followers.items()) if origin is not None else []
            for follower, _ in followers:
                self._lists[follower] = entry
        if client in self._persist:
            self._save(client, entry)
        for _, listener in followers:
            assert origin is not None
            try:
                listener(entry.query, list(entry.hits), origin)
            except Exception:  # a front end's failure must not fail the search
                log.exception("telling a follower of the numbered list failed")

    def follow(self, follower: str, listener: ListListener) -> Callable[[], None]:
        """`follower`'s list follows every list set from another origin, and `listener`
        hears of each; returns what stops it."""
        with self._lock:
            self._followers[follower] = listener

        def stop() -> None:
            with self._lock:
                self._followers.pop(follower, None)

        return stop

    def hits(self, client: str) -> list[SearchHit]:
        """The client's last list (empty when it has none)."""
        entry = self._entry(client)
        return list(entry.hits) if entry is not None else []

    def query(self, client: str) -> str | None:
        """What the client's last list was made for (a search's query, a question), or
        None when it has none."""
        entry = self._entry(client)
        return entry.query if entry is not None else None

    def get(self, client: str, n: int) -> SearchHit:
        """Result `n` (1-based) of the client's last list; `InvalidRequest` saying what
        exists otherwise."""
        entry = self._entry(client)
        if entry is None:
            raise InvalidRequest(f"No result {n}: there has been no search yet")
        if not entry.hits:
            raise InvalidRequest(
                f"No result {n}: the last search ({entry.query!r}) returned no results"
            )
        for hit in entry.hits:
            if hit.n == n:
                return hit
        count = len(entry.hits)
        plural = "result" if count == 1 else "results"
        raise InvalidRequest(f"No result {n}: the last search returned {count} {plural}")

    def forget(self, client: str) -> None:
        with self._lock:
            self._lists.pop(client, None)

    # --- persistence ---------------------------------------------------------------------

    def _entry(self, client: str) -> _List | None:
        with self._lock:
            entry = self._lists.get(client)
        if entry is None and client in self._persist:
            entry = self._load(client)
            if entry is not None:
                with self._lock:
                    entry = self._lists.setdefault(client, entry)
        return entry

    def _file(self, client: str) -> Path | None:
        folder = self._folder()
        return None if folder is None else folder / f"numbered-{_UNSAFE.sub('_', client)}.json"

    def _save(self, client: str, entry: _List) -> None:
        path = self._file(client)
        if path is None:
            return
        payload = {"query": entry.query, "hits": [dump(hit) for hit in entry.hits]}
        try:
            temp = path.with_suffix(".tmp")
            temp.write_text(json.dumps(payload), encoding="utf-8")
            temp.replace(path)
        except OSError as err:
            log.debug("could not save the numbered list of %s: %s", client, err)

    def _load(self, client: str) -> _List | None:
        path = self._file(client)
        if path is None:
            return None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            hits = [SearchHit.model_validate(item) for item in raw["hits"]]
            return _List(str(raw["query"]), hits)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as err:
            log.debug("ignoring the saved numbered list of %s: %s", client, err)
            return None
