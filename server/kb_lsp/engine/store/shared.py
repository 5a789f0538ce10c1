"""The vectors a team shares: one collection on a Chroma server, by text hash.

Every workstation of a team index (`kb.chroma.url` + `kb.chroma.collection`) names the
same collection. A record's id is the hash of the text its vector was made from (a
chunk's heading path and text, `index/prepare.py`, or a note card), its embedding the
vector, and nothing else: no path, no text. So members whose notes differ (a branch, an
edit not pushed yet, the same repository cloned at another path) never overwrite one
another, and a passage any member embedded is there for all (`team.py` says how a store
uses it). The collection's metadata names the embedder that made its vectors; a member
with another embedder is refused, in one line.

Spoken over Chroma's HTTP API (v2) with httpx, not through `chromadb.HttpClient`: every
request here has a bounded timeout (that client has none, so a server that stops
answering would hold a save for ever), a one-shot `kb` command does not import chromadb
(a second of its start), and only the few calls below are used. After the server could
not be reached, calls fail at once with the same message for `RETRY_SECONDS`: a save in
the editor does not wait on a dead host each time.

An answer is read as it comes, up to `MAX_ANSWER_BYTES`, parsed by the bounded parser
(`json_bounds.load_json`) and checked for the shape each call expects (ids as strings,
vectors as lists of finite numbers of the right size, a count as a whole number): whatever
else a server sends is a `TeamUnavailable` in one line, like a server that is down, and
local search keeps working.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from kb_lsp.errors import Unavailable
from kb_lsp.json_bounds import JsonRefused, load_json

if TYPE_CHECKING:  # imported when a team index opens: not on every `kb` command's path
    import httpx

API = "/api/v2"
COLLECTIONS = API + "/tenants/default_tenant/databases/default_database/collections"
CONNECT_SECONDS = 5.0
REQUEST_SECONDS = 60.0  # an upsert of a few thousand vectors on a busy server
RETRY_SECONDS = 30.0
# A `get` of a batch of 1,000 vectors of 1,024 dimensions is about 20 MB of JSON.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
MAX_BATCH = 100_000
_FLOAT32_MAX = float(np.finfo(np.float32).max)
EMBEDDER_KEY = "kb_embedder"  # collection metadata: the identity of the embedder
DIMENSION_KEY = "kb_dimension"

# After a problem, in the status and on the command line: what happens meanwhile.
TEAM_MEANWHILE = "the local index works, and keeps the vectors until the team index takes them"

T = TypeVar("T")


class TeamUnavailable(Unavailable):
    """The team index cannot be used now: the server is down or refuses, or it holds
    another embedder's vectors. Its message is one line, naming the index."""


class SharedVectors:
    """One team collection. Thread-safe; the store's writer is its only caller."""

    def __init__(
        self,
        url: str,
        name: str,
        *,
        embedder: str,
        dimension: int,
        clock: Callable[[], float] = time.monotonic,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.strip().rstrip("/")
        if "://" not in self.url:
            self.url = "http://" + self.url
        self.name = name
        self.embedder = embedder
        self.dimension = dimension
        self._clock = clock
        self._transport = transport
        self._http: httpx.Client | None = None  # made on first use
        self._lock = threading.Lock()
        self._collection: str | None = None  # its id, once connected
        self._max_batch = 1000
        self._base64 = False
        self._known: set[str] = set()  # hashes known to be on the server
        self._down_until = 0.0
        self.problem: str | None = None  # the last failure, until a call succeeds

    @property
    def where(self) -> str:
        return f"the team index {self.name!r} at {self.url}"

    @property
    def connected(self) -> bool:
        """Whether this process has reached the collection (it does when it has something
        to fetch or put: a search that syncs nothing sends no request)."""
        return self._collection is not None

    # --- what a store asks -----------------------------------------------------------------

    def fetch(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """text hash -> its vector, for those on the server (of this embedder's size)."""
        found: dict[str, np.ndarray] = {}
        for part in self._batches(list(dict.fromkeys(hashes))):
            found.update(self._call("get", {"ids": part, "include": ["embeddings"]}, self._got))
        with self._lock:
            self._known.update(found)
        return found

    def present(self, hashes: Collection[str]) -> set[str]:
        """Those of `hashes` the server holds, asked of the server (the store's repair:
        once per opening, and after a failure)."""
        there: set[str] = set()
        for part in self._batches(list(dict.fromkeys(hashes))):
            there.update(self._call("get", {"ids": part, "include": []}, self._ids))
        with self._lock:
            self._known.difference_update(set(hashes) - there)
            self._known.update(there)
        return there

    def put(self, vectors: Mapping[str, np.ndarray]) -> int:
        """Vectors onto the server, but those known to be there; returns how many went."""
        with self._lock:
            todo = [(h, v) for h, v in vectors.items() if h not in self._known]
        for part in self._batches(todo):
            embeddings = [self._encoded(np.asarray(v, dtype=np.float32)) for _, v in part]
            self._call("upsert", {"ids": [h for h, _ in part], "embeddings": embeddings}, _anything)
            with self._lock:
                self._known.update(h for h, _ in part)
        return len(todo)

    def count(self) -> int:
        """Vectors on the server: every member's, of every version of the notes."""
        return self._call("count", None, self._count)

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    # --- the wire --------------------------------------------------------------------------

    def _batches(self, items: list[Any]) -> Iterable[list[Any]]:
        """`items` in parts the server takes (connecting first: it says how many)."""
        if items:
            self._guarded(self._connect)
        for start in range(0, len(items), self._max_batch):
            yield items[start : start + self._max_batch]

    def _encoded(self, vector: np.ndarray) -> Any:
        if self._base64:  # little-endian float32, as the server stores it
            return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
        return vector.tolist()

    def _call(self, action: str, payload: dict[str, Any] | None, shape: Callable[[Any], T]) -> T:
        """One request on the collection, connecting first when needed; once more when
        the collection was dropped meanwhile (it is made again, and the members' repair
        refills it from their caches). Its answer is what `shape` makes of it, or a
        `TeamUnavailable` that is remembered like a server that is down."""

        def request() -> T:
            response = self._on_collection(action, payload)
            if response.status == 404:
                with self._lock:
                    self._collection = None
                    self._known.clear()
                response = self._on_collection(action, payload)
            return shape(self._answer(response))

        return self._guarded(request)

    def _on_collection(self, action: str, payload: dict[str, Any] | None) -> _Reply:
        path = f"{COLLECTIONS}/{self._connect()}/{action}"
        return self._send("GET" if payload is None else "POST", path, payload)

    def _guarded(self, call: Callable[[], T]) -> T:
        """`call`, failing at once while the server is known to be unusable; a failure
        is remembered (`problem`) for `RETRY_SECONDS`, a success forgets it."""
        with self._lock:
            if self._clock() < self._down_until and self.problem is not None:
                raise TeamUnavailable(self.problem)
        try:
            answer = call()
        except TeamUnavailable as err:
            with self._lock:
                self.problem = str(err)
                self._down_until = self._clock() + RETRY_SECONDS
            raise
        with self._lock:
            self.problem = None
        return answer

    def _connect(self) -> str:
        with self._lock:
            if self._collection is not None:
                return self._collection
        response = self._send("GET", f"{API}/pre-flight-checks", None)
        if response.status == 404:  # another server, or a Chroma before 1.0
            raise TeamUnavailable(f"{self.where}: not a Chroma server (1.0 or later)")
        checks = self._answer(response)
        batch = checks.get("max_batch_size", 1000) if isinstance(checks, dict) else None
        if type(batch) is not int:
            raise self._malformed("its pre-flight checks")
        collection = {
            "name": self.name,
            "get_or_create": True,  # the first member makes it; its embedder is the team's
            "metadata": {EMBEDDER_KEY: self.embedder, DIMENSION_KEY: self.dimension},
            # Chroma's default space (l2): it gives vectors back as they were sent (in
            # cosine space it gives them back re-rounded), and unit vectors rank alike.
        }
        made = self._answer(self._send("POST", COLLECTIONS, collection))
        if not isinstance(made, dict) or not isinstance(made.get("id"), str) or not made["id"]:
            raise self._malformed("the collection")
        metadata = made.get("metadata")
        theirs = metadata.get(EMBEDDER_KEY) if isinstance(metadata, dict) else None
        if theirs != self.embedder:
            shown = _first_line(theirs) if isinstance(theirs, str) else "another program"
            raise TeamUnavailable(
                f"{self.where} holds the vectors of {shown}, and this "
                f"workspace embeds with {self.embedder}: use the same kb.embedder settings "
                "as the team, or another kb.chroma.collection"
            )
        with self._lock:
            self._max_batch = min(max(1, batch), MAX_BATCH)
            self._base64 = checks.get("supports_base64_encoding") is True
            self._collection = str(made["id"])
            return self._collection

    def _send(self, method: str, path: str, payload: dict[str, Any] | None) -> _Reply:
        """One request, its answer read as it comes, up to `MAX_ANSWER_BYTES`."""
        import httpx

        try:
            if self._http is None:
                self._http = httpx.Client(
                    base_url=self.url,
                    timeout=httpx.Timeout(REQUEST_SECONDS, connect=CONNECT_SECONDS),
                    transport=self._transport,
                )
            request = self._http.build_request(method, path, json=payload)
            response = self._http.send(request, stream=True)
            try:
                return _Reply(response.status_code, self._body(response))
            finally:
                response.close()
        except httpx.InvalidURL as err:
            raise TeamUnavailable(f"{self.where}: not a URL ({_first_line(err)})") from None
        except httpx.ConnectTimeout:
            why = f"no answer within {CONNECT_SECONDS:.0f} s"
        except httpx.TimeoutException:
            raise TeamUnavailable(
                f"{self.where}: no answer within {REQUEST_SECONDS:.0f} s"
            ) from None
        except httpx.HTTPError as err:
            why = _first_line(err)
        raise TeamUnavailable(f"{self.where}: cannot connect ({why})")

    def _body(self, response: httpx.Response) -> bytes:
        parts: list[bytes] = []
        size = 0
        for part in response.iter_bytes():
            size += len(part)
            if size > MAX_ANSWER_BYTES:
                raise self._malformed(f"an answer of more than {MAX_ANSWER_BYTES:,} bytes")
            parts.append(part)
        return b"".join(parts)

    def _answer(self, response: _Reply) -> Any:
        try:
            body = load_json(response.body, "the answer", max_bytes=MAX_ANSWER_BYTES)
        except JsonRefused:
            raise self._malformed(f"HTTP {response.status}") from None
        if response.status >= 400:
            said = body.get("message") if isinstance(body, dict) else None
            raise TeamUnavailable(
                f"{self.where}: the server refused (HTTP {response.status}: "
                f"{_first_line(said or body)})"
            )
        return body

    # --- what an answer must be ------------------------------------------------------------

    def _malformed(self, what: str) -> TeamUnavailable:
        return TeamUnavailable(f"{self.where}: not a Chroma server's answer ({what})")

    def _ids(self, got: Any) -> list[str]:
        ids = got.get("ids") if isinstance(got, dict) else None
        if not isinstance(ids, list) or not all(isinstance(digest, str) for digest in ids):
            raise self._malformed("the ids of a get")
        return ids

    def _got(self, got: Any) -> dict[str, np.ndarray]:
        """The vectors of a get, by text hash (those of this embedder's size)."""
        ids = self._ids(got)
        embeddings = got.get("embeddings")
        if not isinstance(embeddings, list) or len(embeddings) != len(ids):
            raise self._malformed("the vectors of a get")
        found = {}
        for digest, values in zip(ids, embeddings, strict=True):
            vector = self._vector(values)
            if vector is not None:
                found[digest] = vector
        return found

    def _count(self, count: Any) -> int:
        if type(count) is not int or count < 0:
            raise self._malformed("a count")
        return count

    def _vector(self, values: Any) -> np.ndarray | None:
        """A vector of this embedder's size, None for one of another size (a member
        with another model); anything else is malformed."""
        if not isinstance(values, list) or not all(type(value) in (int, float) for value in values):
            raise self._malformed("a vector that is not a list of numbers")
        if len(values) != self.dimension:
            return None
        vector = np.asarray(values, dtype=np.float64)
        if not np.isfinite(vector).all() or np.abs(vector).max(initial=0.0) > _FLOAT32_MAX:
            raise self._malformed("a vector out of float32's range")
        return vector.astype(np.float32)


def _anything(body: Any) -> None:
    """An answer whose content does not matter (an upsert's)."""


@dataclass(frozen=True)
class _Reply:
    status: int
    body: bytes


def _first_line(what: object) -> str:
    lines = str(what).strip().splitlines()
    return lines[0][:200] if lines else type(what).__name__
