"""A team server that answers anything but Chroma's answers (`store/shared.py`): every
malformed answer is a `TeamUnavailable` in one line, the sync goes on locally and local
search keeps working — `kb index` and `kb search` once ended with `KeyError: 'id'`,
`AttributeError` or `ValueError: inhomogeneous shape`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from tests.conftest import copy_example_workspace
from tests.fakes.chroma_api import FakeChroma
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.store import indexes, shared
from kb_lsp.engine.store.shared import SharedVectors

TEAM = {"chroma": {"url": "http://chroma.test:8000", "collection": "team-notes"}}
HUGE = b"1" + b"0" * 5000
DIMENSION = HashingEmbedder().dimension

# (route, what the server answers there): each is not what Chroma answers.
Answer = Callable[[httpx.Request], httpx.Response]


def raw(body: bytes, status: int = 200) -> Answer:
    return lambda request: httpx.Response(status, content=body)


def json_answer(value: object) -> Answer:
    return lambda request: httpx.Response(200, json=value)


def vectors(make: Callable[[int], object]) -> Answer:
    """A get answered with the ids asked for and `make(i)` as the i-th vector."""

    def answer(request: httpx.Request) -> httpx.Response:
        import json

        ids = json.loads(request.content)["ids"]
        return httpx.Response(
            200, json={"ids": ids, "embeddings": [make(i) for i in range(len(ids))]}
        )

    return answer


MALFORMED: dict[str, tuple[str, Answer]] = {
    "checks not an object": ("pre-flight-checks", json_answer([1, 2])),
    "checks with a text batch": ("pre-flight-checks", json_answer({"max_batch_size": "many"})),
    "checks not JSON": ("pre-flight-checks", raw(b"<html>hello</html>")),
    "checks with a huge number": ("pre-flight-checks", raw(b'{"max_batch_size": ' + HUGE + b"}")),
    "checks nested deep": ("pre-flight-checks", raw(b"[" * 100_000 + b"]" * 100_000)),
    "collection without an id": ("collections", json_answer({"name": "team-notes"})),
    "collection a list": ("collections", json_answer(["id"])),
    "ids not a list": ("get", json_answer({"ids": 7, "embeddings": []})),
    "ids not strings": ("get", json_answer({"ids": [1, 2], "embeddings": [[0.0], [0.0]]})),
    "ragged vectors": ("get", vectors(lambda i: [[0.1], [0.2, 0.3]])),
    "vectors of text": ("get", vectors(lambda i: ["x"] * DIMENSION)),
    "vectors out of float32 range": ("get", vectors(lambda i: [1e300] * DIMENSION)),
    "fewer vectors than ids": ("get", json_answer({"ids": ["a"], "embeddings": []})),
    "a get not an object": ("get", json_answer("nothing")),
}


class Hostile(FakeChroma):
    """Chroma's answers, but `route` answered by `answer`."""

    def __init__(self, route: str, answer: Answer) -> None:
        super().__init__()
        self.route = route
        self.answer = answer

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        hit = path.endswith("/" + self.route) and (
            self.route != "collections" or request.method == "POST"
        )
        return self.answer(request) if hit else super().__call__(request)


def member(tmp_path: Path, fake: FakeChroma, monkeypatch: pytest.MonkeyPatch) -> KnowledgeBase:
    made = functools.partial(SharedVectors, transport=httpx.MockTransport(fake))
    monkeypatch.setattr(indexes, "SharedVectors", made)
    notes = copy_example_workspace(tmp_path / "notes")
    settings = load_settings(TEAM).settings
    return KnowledgeBase([notes], settings, embedder=HashingEmbedder(), storage=tmp_path / "s")


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_answer_is_one_line_and_search_keeps_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    route, answer = MALFORMED[case]
    kb = member(tmp_path, Hostile(route, answer), monkeypatch)
    try:
        report = kb.sync()
        assert report.team_error is not None, case
        assert "not a Chroma server's answer" in report.team_error
        assert "\n" not in report.team_error and "Traceback" not in report.team_error
        assert kb.search("monthly wire run in MXN")[0].path == "payments/mexico-payments.md"
        assert kb.search("SPEI", mode="keyword")
    finally:
        kb.close()


def test_an_answer_over_the_size_limit_is_refused_as_it_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared, "MAX_ANSWER_BYTES", 4096)
    endless = httpx.Response(200, content=(b"[" + b"0," * 1000 for _ in range(10**6)))
    kb = member(tmp_path, Hostile("pre-flight-checks", lambda request: endless), monkeypatch)
    try:
        report = kb.sync()
        assert report.team_error is not None
        assert "an answer of more than 4,096 bytes" in report.team_error
    finally:
        kb.close()


def test_a_count_that_is_not_a_whole_number(monkeypatch: pytest.MonkeyPatch) -> None:
    for count in ({"n": 1}, "3", True, -1, 2.5):
        fake = Hostile("count", json_answer(count))
        team = SharedVectors(
            "http://chroma.test",
            "c",
            embedder="e",
            dimension=4,
            transport=httpx.MockTransport(fake),
        )
        with pytest.raises(shared.TeamUnavailable, match="not a Chroma server's answer"):
            team.count()
