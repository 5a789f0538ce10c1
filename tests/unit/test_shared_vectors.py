"""`SharedVectors`, a team index's collection on a Chroma server (`store/shared.py`),
against a stand-in for the few calls of Chroma's HTTP API it makes
(`tests/fakes/chroma_api.py`; the real server is `tests/e2e/test_team_index.py`'s):
vectors by text hash, batches, what a member is told in one line when the server cannot
be used, and that a dead server is not asked again on every save."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import pytest
from tests.fakes.chroma_api import FakeChroma

from kb_lsp.engine.store.shared import RETRY_SECONDS, SharedVectors, TeamUnavailable

URL = "http://chroma.test:8000"
EMBEDDER = "test:hashing:4"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _shared(handler: Any, clock: Clock | None = None, embedder: str = EMBEDDER) -> SharedVectors:
    return SharedVectors(
        URL,
        "team-notes",
        embedder=embedder,
        dimension=4,
        clock=clock or Clock(),
        transport=httpx.MockTransport(handler),
    )


def _vectors(*names: str) -> dict[str, np.ndarray]:
    return {
        name: np.asarray([i + 0.25, -0.5, 0.125, 1.0], dtype=np.float32)
        for i, name in enumerate(names)
    }


@pytest.mark.parametrize("base64_ok", [True, False])
def test_vectors_go_and_come_back_by_text_hash(base64_ok: bool) -> None:
    server = FakeChroma(base64_ok=base64_ok)
    shared = _shared(server)
    sent = _vectors("h1", "h2", "h3")
    assert shared.put(sent) == 3
    upsert = next(body for _, path, body in server.requests if path.endswith("/upsert"))
    assert isinstance(upsert["embeddings"][0], str) is base64_ok

    other = _shared(server)  # another member: same collection, nothing known yet
    found = other.fetch(["h1", "h3", "unknown"])
    assert sorted(found) == ["h1", "h3"]
    for name, vector in found.items():
        assert vector.dtype == np.float32
        assert np.array_equal(vector, sent[name])
    assert other.present({"h2", "unknown"}) == {"h2"}
    assert other.count() == 3
    (collection,) = server.collections.values()
    assert collection["metadata"]["kb_embedder"] == EMBEDDER


def test_what_the_server_holds_is_not_sent_again() -> None:
    server = FakeChroma()
    shared = _shared(server)
    shared.fetch(["h1"])  # not there
    shared.put(_vectors("h1", "h2"))
    assert shared.put(_vectors("h1", "h2")) == 0
    assert server.calls("upsert") == 1

    other = _shared(server)
    other.fetch(["h1", "h2"])  # another member: what it fetched is known to be there
    assert other.put(_vectors("h1", "h2")) == 0
    assert server.calls("upsert") == 1


def test_requests_stay_within_the_servers_batch_size() -> None:
    server = FakeChroma(max_batch=2)
    shared = _shared(server)
    shared.put(_vectors("a", "b", "c", "d", "e"))
    assert server.calls("upsert") == 3
    assert sorted(_shared(server).fetch(["a", "b", "c", "d", "e"])) == ["a", "b", "c", "d", "e"]
    assert server.calls("get") == 3


def test_a_collection_of_another_embedder_is_refused_in_one_line() -> None:
    server = FakeChroma()
    _shared(server, embedder="minilm:all-MiniLM-L6-v2").put(_vectors("h1"))
    with pytest.raises(TeamUnavailable) as refused:
        _shared(server).fetch(["h1"])
    message = str(refused.value)
    assert "\n" not in message
    assert "'team-notes' at http://chroma.test:8000" in message
    assert "minilm:all-MiniLM-L6-v2" in message and EMBEDDER in message
    assert "kb.chroma.collection" in message


def test_a_dead_server_is_asked_again_only_after_a_while() -> None:
    attempts: list[httpx.Request] = []
    server = FakeChroma()
    alive = False

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        if not alive:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        return server(request)

    clock = Clock()
    shared = _shared(handler, clock)
    with pytest.raises(TeamUnavailable, match=r"cannot connect .*Connection refused"):
        shared.fetch(["h1"])
    assert shared.problem is not None and "\n" not in shared.problem
    tried = len(attempts)
    clock.now += RETRY_SECONDS / 2
    with pytest.raises(TeamUnavailable):
        shared.put(_vectors("h1"))
    assert len(attempts) == tried  # failed at once, with the same message

    alive = True
    clock.now += RETRY_SECONDS
    assert shared.put(_vectors("h1")) == 1
    assert shared.problem is None


def test_a_dropped_collection_is_made_again() -> None:
    server = FakeChroma()
    shared = _shared(server)
    shared.put(_vectors("h1"))
    server.collections.clear()  # someone dropped it on the server
    assert shared.present({"h1"}) == set()  # the store's repair asks the server…
    assert shared.put(_vectors("h1")) == 1  # …and puts back what it lost
    assert shared.present({"h1"}) == {"h1"}


@pytest.mark.parametrize(
    ("response", "said"),
    [
        (httpx.Response(404, text="Not Found"), "not a Chroma server (1.0 or later)"),
        (httpx.Response(200, text="<html>hello</html>"), "not a Chroma server's answer"),
        (
            httpx.Response(500, json={"error": "Internal", "message": "disk full\nmore"}),
            "the server refused (HTTP 500: disk full)",
        ),
    ],
)
def test_a_wrong_url_is_said_in_one_line(response: httpx.Response, said: str) -> None:
    shared = _shared(lambda request: response)
    with pytest.raises(TeamUnavailable) as refused:
        shared.fetch(["h1"])
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_silent_server_times_out() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(TeamUnavailable, match="no answer within"):
        _shared(handler).count()


def test_a_host_that_never_answers_is_a_connection_problem() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=request)

    with pytest.raises(TeamUnavailable, match=r"cannot connect \(no answer within 5 s\)"):
        _shared(handler).fetch(["h1"])


def test_a_url_that_is_not_one_is_said_in_one_line() -> None:
    shared = SharedVectors("http://chroma:port", "team-notes", embedder=EMBEDDER, dimension=4)
    with pytest.raises(TeamUnavailable, match=r"at http://chroma:port: not a URL \(Invalid port"):
        shared.fetch(["h1"])
    shared.close()
