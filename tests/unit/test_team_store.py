"""A store that is a member of a team index (`store/team.py`), in-process: knowledge bases
on copies of the example wiki at different paths, each with its own storage, sharing one
collection on a stand-in Chroma server (`tests/fakes/chroma_api.py`). What is embedded is
counted by each member's own embedder. The same against a real `chroma run`, through
`kb` processes: `tests/e2e/test_team_index.py`."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.conftest import copy_example_workspace
from tests.fakes.chroma_api import FakeChroma
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.store import pending_paths

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.store import indexes
from kb_lsp.engine.store.shared import RETRY_SECONDS, SharedVectors

TEAM = {"chroma": {"url": "http://chroma.test:8000", "collection": "team-notes"}}
QUERY = "monthly wire run funding the subsidiary in MXN"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeChroma, Clock]]:
    """Every team collection a store opens here talks to one stand-in server."""
    fake, clock = FakeChroma(), Clock()
    made = functools.partial(SharedVectors, clock=clock, transport=httpx.MockTransport(fake))
    monkeypatch.setattr(indexes, "SharedVectors", made)
    yield fake, clock


class Member:
    def __init__(self, home: Path, settings: dict[str, object] = TEAM) -> None:
        self.notes = copy_example_workspace(home / "notes")
        self.storage = home / "store"
        self.settings = load_settings(settings).settings
        self.embedder = HashingEmbedder()
        self.kb = self.open()

    def open(self) -> KnowledgeBase:
        return KnowledgeBase(
            [self.notes], self.settings, embedder=self.embedder, storage=self.storage
        )

    def reopen(self) -> None:
        self.kb.close()
        self.kb = self.open()

    def pending(self) -> list[str]:
        (folder,) = self.kb.store_folders()
        return pending_paths(folder)

    def finds(self, query: str = QUERY) -> str:
        return self.kb.search(query, mode="semantic")[0].path


def test_the_second_member_embeds_nothing(tmp_path: Path, server: tuple[FakeChroma, Clock]) -> None:
    fake, _ = server
    alice = Member(tmp_path / "alice")
    first = alice.kb.sync()
    assert first.chunks_embedded > 0 and first.team_error is None
    assert fake.hashes(), "alice's vectors went to the team's collection"
    assert alice.pending() == []

    bob = Member(tmp_path / "bob" / "elsewhere")
    second = bob.kb.sync()
    assert bob.embedder.texts_embedded == 0  # passages and note cards
    assert second.chunks_embedded == 0
    assert second.chunks_shared == second.chunks_reused > 0
    assert bob.pending() == []
    assert bob.finds() == "payments/mexico-payments.md"
    # Bob's search found Bob's chunks from Bob's cache: the server was not asked.
    asked = len(fake.requests)
    bob.finds()
    assert len(fake.requests) == asked


def test_nothing_is_deleted_from_the_team_index(
    tmp_path: Path, server: tuple[FakeChroma, Clock]
) -> None:
    fake, _ = server
    alice = Member(tmp_path / "alice")
    alice.kb.sync()
    held = fake.hashes()
    (alice.notes / "glossary.md").unlink()  # on Alice's branch only
    alice.kb.sync()
    assert fake.hashes() == held
    bob = Member(tmp_path / "bob")  # still has the glossary: reuses its vectors
    bob.kb.sync()
    assert bob.embedder.texts_embedded == 0


def test_while_the_server_is_down_vectors_wait_in_the_local_store(
    tmp_path: Path, server: tuple[FakeChroma, Clock]
) -> None:
    fake, clock = server
    fake.down = True
    alice = Member(tmp_path / "alice")
    report = alice.kb.sync()
    assert report.team_error is not None
    assert "cannot connect" in report.team_error and "\n" not in report.team_error
    assert "the local index works" in report.team_error
    embedded = alice.embedder.texts_embedded
    assert embedded > 0
    # Cached, not on the server: pending (crash safety), and searched all the same.
    assert alice.pending()
    assert alice.finds() == "payments/mexico-payments.md"
    assert "cannot connect" in (alice.kb.status().message or "")

    fake.down = False
    clock.now += RETRY_SECONDS
    caught_up = alice.kb.sync()
    assert caught_up.team_error is None
    assert alice.embedder.texts_embedded == embedded  # sent from the cache
    assert alice.pending() == []
    assert alice.kb.status().message is None
    bob = Member(tmp_path / "bob")
    bob.kb.sync()
    assert bob.embedder.texts_embedded == 0


def test_a_collection_lost_on_the_server_is_refilled_from_the_cache(
    tmp_path: Path, server: tuple[FakeChroma, Clock]
) -> None:
    fake, _ = server
    alice = Member(tmp_path / "alice")
    alice.kb.sync()
    held = fake.hashes()
    fake.collections.clear()  # dropped on the server
    alice.reopen()
    with (alice.notes / "glossary.md").open("a", encoding="utf-8") as note:
        note.write("\n## Zebra\n\nA zebra is a striped payment.\n")
    alice.kb.sync()  # reaches the server, so its repair runs
    assert fake.hashes() >= held
    assert alice.pending() == []


def test_a_collection_without_a_server_stays_local(tmp_path: Path) -> None:
    alone = Member(tmp_path / "alone", {"chroma": {"collection": "team-notes"}})
    report = alone.kb.sync()
    assert report.team_error is None and report.chunks_shared == 0
    message = alone.kb.status().message or ""
    assert "kb.chroma.collection is set without kb.chroma.url" in message
