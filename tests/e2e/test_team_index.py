"""A team index on a real Chroma server (docs/team-index.md): `chroma run`, started here,
and two members — `kb` processes with the same notes at different paths, each with its
own local store, both naming the same `kb.chroma.collection` — of which only one embeds
each passage. What a process embedded is counted by the embedder itself
(`tests/fakes/embedder.py`: `CountingEmbedder` writes every passage it embeds to a file).

Nothing here sleeps: the server is waited for on its heartbeat (a bounded poll that
also notices the server dying), and every `kb` command runs to its end.
"""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from tests.conftest import copy_example_workspace
from tests.helpers.cli import REPO, run

from kb_lsp.engine.storage import DATABASE, store_dir_for

CHROMA = Path(sys.executable).with_name("chroma")
COLLECTION = "team-notes"
STARTUP_DEADLINE = 120.0  # seconds for `chroma run` to answer on a loaded machine
EDITED = "runbooks/incident-response.md"
NEW_SECTION = (
    "\n## Pager rotation\n\nThe zebra pager rotates every Tuesday among the treasury "
    "engineers; the outgoing holder hands over the zebra runbook in person.\n"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def chroma_server(data: Path, log: Path) -> Iterator[str]:
    """`chroma run` on a free port, persisting in `data`; its URL once it answers its
    heartbeat; stopped at the end."""
    port = _free_port()
    with log.open("ab") as out:
        server = subprocess.Popen(
            [str(CHROMA), "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_DEADLINE
        while not _beats(url):
            try:  # the pause between two polls is a wait for the server to die
                code = server.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                code = None
            if code is not None:
                raise AssertionError(f"chroma run exited with {code}:\n{log.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"chroma run did not answer in time:\n{log.read_text()}")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _beats(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/v2/heartbeat", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class Member:
    """One workstation: its clone of the notes, its own local store, and the log of the
    passages its `kb` processes embedded."""

    notes: Path
    storage: Path
    embedded_log: Path

    def kb(self, *args: str, url: str) -> subprocess.CompletedProcess[str]:
        return run(
            *args,
            storage=self.storage,
            KB_EMBEDDER_FACTORY="tests.fakes.embedder:CountingEmbedder",
            PYTHONPATH=str(REPO),
            KB_TEST_EMBEDDED_LOG=str(self.embedded_log),
            KB_CHROMA_URL=url,
            KB_CHROMA_COLLECTION=COLLECTION,
        )

    def index(self, url: str) -> subprocess.CompletedProcess[str]:
        return self.kb("index", str(self.notes), url=url)

    def cached_vectors(self) -> dict[str, bytes]:
        """The vectors the member's store keeps, by text hash (`kb.sqlite3`)."""
        database = store_dir_for(self.storage, self.notes) / DATABASE
        with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            return dict(db.execute("SELECT text_hash, embedding FROM vectors"))

    def embedded(self) -> list[str]:
        if not self.embedded_log.exists():
            return []
        lines = self.embedded_log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]


def _member(home: Path, clone: str) -> Member:
    home.mkdir(parents=True)
    return Member(
        notes=copy_example_workspace(home / clone),
        storage=home / "store",
        embedded_log=home / "embedded.jsonl",
    )


def _top_file(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert results, done.stderr
    return str(results[0]["path"])


def test_members_share_one_index_and_each_change_is_embedded_once(tmp_path: Path) -> None:
    alice = _member(tmp_path / "alice", "notes")
    bob = _member(tmp_path / "bob" / "src", "kb-notes")  # same notes, another path
    with chroma_server(tmp_path / "chroma", tmp_path / "chroma.log") as url:
        first = alice.index(url)
        assert first.returncode == 0, first.stderr
        made = alice.embedded()
        assert made  # every passage (and note card), embedded once

        second = bob.index(url)
        assert second.returncode == 0, second.stderr
        assert bob.embedded() == []  # all of it came from the team index
        assert "0 chunks embedded" in second.stderr
        assert "from the team index" in second.stderr
        assert bob.cached_vectors() == alice.cached_vectors()  # byte for byte

        # Bob's vectors find the file by meaning alone (semantic: no keyword candidates).
        asked = bob.kb(
            "search", "-w", str(bob.notes), "--mode", "semantic", "--json",
            "monthly wire run funding the subsidiary in MXN", url=url,
        )  # fmt: skip
        assert _top_file(asked) == "payments/mexico-payments.md"
        assert bob.embedded() == []  # a query is not a passage

        # Bob edits one file: only its changed passages are embedded, by Bob.
        with (bob.notes / EDITED).open("a", encoding="utf-8") as note:
            note.write(NEW_SECTION)
        edit = bob.index(url)
        assert edit.returncode == 0, edit.stderr
        # Exactly the new section (under its heading path): nothing else of the file again.
        assert bob.embedded() == [f"Incident response > Pager rotation\n{NEW_SECTION.strip()}"]

        # Alice pulls the edit: she reuses Bob's vectors, embeds nothing.
        shutil.copyfile(bob.notes / EDITED, alice.notes / EDITED)
        pulled = alice.index(url)
        assert pulled.returncode == 0, pulled.stderr
        assert alice.embedded() == made
        assert alice.cached_vectors() == bob.cached_vectors()
        asked = alice.kb(
            "search", "-w", str(alice.notes), "--mode", "semantic", "--json",
            "zebra pager rotation", url=url,
        )  # fmt: skip
        assert _top_file(asked) == EDITED


def test_a_server_that_is_down_leaves_the_local_index_working(tmp_path: Path) -> None:
    carol = _member(tmp_path / "carol", "notes")
    with socket.socket() as closed:  # a port nothing listens on: connection refused
        closed.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{closed.getsockname()[1]}"

        indexed = carol.index(down)
        assert indexed.returncode == 1  # the team index did not get the vectors
        said = [line for line in indexed.stderr.splitlines() if line.startswith("kb: ")]
        assert len(said) == 1, indexed.stderr
        assert f"the team index '{COLLECTION}' at {down}: cannot connect" in said[0]
        embedded = carol.embedded()
        assert embedded  # embedded here meanwhile, and kept

        # Keyword and vector search work from the local store, with the same one line.
        asked = carol.kb(
            "search", "-w", str(carol.notes), "--mode", "semantic", "--json",
            "monthly wire run funding the subsidiary in MXN", url=down,
        )  # fmt: skip
        assert _top_file(asked) == "payments/mexico-payments.md"
        assert asked.stderr.count("cannot connect") == 1, asked.stderr
        asked = carol.kb("search", "-w", str(carol.notes), "--json", "SPEI cut-off", url=down)
        assert _top_file(asked)

    # The server is up: the next sync sends what waited, with no embedding, and the
    # next member gets all of it.
    with chroma_server(tmp_path / "chroma", tmp_path / "chroma.log") as url:
        caught_up = carol.index(url)
        assert caught_up.returncode == 0, caught_up.stderr
        assert carol.embedded() == embedded
        dave = _member(tmp_path / "dave", "notes")
        joined = dave.index(url)
        assert joined.returncode == 0, joined.stderr
        assert dave.embedded() == []
