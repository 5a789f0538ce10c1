"""The runtime in-process: life cycle, reads, numbered lists, status feed, the embedder
seam, and the import graph (front ends → runtime → engine, never back up)."""

from __future__ import annotations

import ast
import collections
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.cli import HASHING
from tests.helpers.runtime import HeldSync, editor_runtime

from kb_lsp.config import load_settings
from kb_lsp.contract.operations import INDEX_CONTROL, OPEN_RESULT, SEARCH, Call
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.protocol import (
    IndexControlParams,
    IndexProgress,
    IndexStatus,
    OpenResultParams,
    SearchParams,
)
from kb_lsp.runtime import Hooks, InvalidInput, Runtime, Unavailable
from kb_lsp.runtime import progress as progress_module
from kb_lsp.runtime.changes import SettingsChange, settings_change
from kb_lsp.runtime.dispatch import answer
from kb_lsp.runtime.embedders import EmbedderFactoryError, embedder_from_environment
from kb_lsp.runtime.worker import Job

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "kb_lsp"


@pytest.fixture
def runtime(workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    runtime = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
    settings = load_settings({"storage": str(storage)}).settings
    runtime.open([workspace], settings, index=False).result()
    runtime.reindex().result()
    yield runtime
    runtime.close()


def test_search_numbers_and_open_result_follow_the_client(runtime: Runtime) -> None:
    response = answer(runtime, SEARCH, SearchParams(query="Mexico payments SPEI"), Call("a"))
    assert response.results and response.results[0].path == "payments/mexico-payments.md"
    assert response.index.state == "ready"
    assert (
        answer(runtime, OPEN_RESULT, OpenResultParams(n=1), Call("a")).path
        == "payments/mexico-payments.md"
    )
    # Another client has its own (empty) list.
    with pytest.raises(InvalidInput, match="no search yet"):
        answer(runtime, OPEN_RESULT, OpenResultParams(n=1), Call("b"))
    count = len(response.results)
    with pytest.raises(InvalidInput, match=f"the last search returned {count} results"):
        answer(runtime, OPEN_RESULT, OpenResultParams(n=count + 1), Call("a"))


def test_read_file_pages_and_reads_only_indexed_files(runtime: Runtime, workspace: Path) -> None:
    lines = (workspace / "glossary.md").read_text(encoding="utf-8").splitlines()
    assert runtime.read_file("glossary.md").next_start_line is None  # the whole file
    part = runtime.read_file("glossary.md", 2, 3)
    assert part.next_start_line == 4 and part.text == "\n".join(lines[1:3])
    # A page is bounded: at most max_lines lines, and where to go on.
    page = runtime.read_file("glossary.md", max_lines=2)
    assert (page.start_line, page.end_line, page.next_start_line) == (1, 2, 3)
    with pytest.raises(InvalidInput, match="numbered from 1"):
        runtime.read_file("glossary.md", 0)
    # Inside the workspace but not indexed (the knowledge base excludes it): refused too.
    (workspace / "notes.env").write_text("TOKEN=do-not-show\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not a file of the knowledge base") as refused:
        runtime.read_file("notes.env")
    assert "do-not-show" not in str(refused.value)
    with pytest.raises(InvalidInput, match=r"Did you mean: payments/mexico-payments\.md"):
        runtime.read_file("payments/mexico.md")


def test_file_text_is_the_whole_indexed_file(runtime: Runtime, workspace: Path) -> None:
    info, text = runtime.file_text("payments/mexico-payments.md")
    assert info.path == "payments/mexico-payments.md"
    assert text == (workspace / "payments" / "mexico-payments.md").read_text(encoding="utf-8")
    with pytest.raises(InvalidInput, match="Refused"):
        runtime.file_text("../secret.md")


def test_status_is_one_object_with_one_error_slot(runtime: Runtime) -> None:
    status = runtime.status()
    assert status.state == "ready" and status.files > 0 and not status.message
    assert status.embedder == HashingEmbedder().identity
    runtime.session.set_error("indexing failed: disk full")
    failed = runtime.status()
    assert failed.state == "error" and "disk full" in (failed.message or "")
    runtime.session.set_error(None)
    assert runtime.status().state == "ready"


def test_reads_after_close_are_unavailable(runtime: Runtime) -> None:
    runtime.close()
    with pytest.raises(Unavailable):
        answer(runtime, SEARCH, SearchParams(query="anything"))


def test_numbered_list_is_kept_on_disk_for_a_later_process(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    settings = load_settings({"storage": str(storage)}).settings

    def fresh() -> Runtime:
        runtime = editor_runtime(
            watch=False,
            probe_llm=False,
            log_file=False,
            listen=False,
            persist_lists=frozenset({"cli"}),
        )
        runtime.open([workspace], settings, index=False).result()
        return runtime

    first = fresh()
    try:
        first.reindex().result()
        hits = answer(first, SEARCH, SearchParams(query="glossary"), Call("cli")).results
        answer(first, SEARCH, SearchParams(query="glossary"), Call("editor"))
    finally:
        first.close()
    second = fresh()
    try:
        assert answer(second, OPEN_RESULT, OpenResultParams(n=1), Call("cli")).path == hits[0].path
        with pytest.raises(InvalidInput, match="no search yet"):
            answer(
                second, OPEN_RESULT, OpenResultParams(n=1), Call("editor")
            )  # kept in memory only
    finally:
        second.close()


def test_status_changes_reach_subscribers_once_per_change(runtime: Runtime) -> None:
    seen: list[IndexStatus] = []
    arrived = threading.Event()

    def subscriber(status: IndexStatus) -> None:
        seen.append(status)
        arrived.set()

    runtime.subscribe(subscriber)
    runtime.changed()
    assert arrived.wait(60), "no status change was sent"
    arrived.clear()
    runtime.session.set_error("indexing failed: disk full")
    runtime.changed()
    assert arrived.wait(60), "the new status was not sent"
    assert seen[-1].state == "error"
    assert all(a != b for a, b in itertools.pairwise(seen)), "a status sent twice"


def test_embedder_factory_seam() -> None:
    assert embedder_from_environment({}) is None
    made = embedder_from_environment({"KB_EMBEDDER_FACTORY": HASHING})
    assert made is not None and made.identity == HashingEmbedder().identity
    with pytest.raises(EmbedderFactoryError, match="module:callable"):
        embedder_from_environment({"KB_EMBEDDER_FACTORY": "no_colon_here"})
    with pytest.raises(EmbedderFactoryError, match="no_such_module"):
        embedder_from_environment({"KB_EMBEDDER_FACTORY": "no_such_module:make"})


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


# Each front end is a package (or module) of its own; cli/serve.py (with its parser) and
# __main__.py also launch the others (`kb serve`, `kb mcp`). terminal/ is the command
# line's own helpers.
FRONT_ENDS: dict[str, tuple[str, ...]] = {
    "lsp/": ("kb_lsp.lsp",),
    "mcp/": ("kb_lsp.mcp",),
    # The command line and its terminal helpers are one front end.
    "cli/": ("kb_lsp.cli", "kb_lsp.terminal"),
    "terminal/": ("kb_lsp.terminal",),
}
LAUNCHERS = {"cli/serve.py", "cli/parser.py", "__main__.py"}


def test_import_graph_points_down_only() -> None:
    """Front ends (lsp/, mcp/, cli/) → runtime → engine: no arrow back up, no
    front end imports another, and only lsp/ imports pygls or lsprotocol (only
    mcp/ the MCP SDK)."""
    checked = 0
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        imports = _imports(path)
        checked += 1
        if not relative.startswith("lsp/"):
            assert not {n for n in imports if n.split(".")[0] in {"pygls", "lsprotocol"}}, relative
        if not relative.startswith("mcp/"):
            assert not {n for n in imports if n.split(".")[0] == "mcp"}, relative
        own = next((m for prefix, m in FRONT_ENDS.items() if relative.startswith(prefix)), None)
        every = tuple(prefix for owned in FRONT_ENDS.values() for prefix in owned)
        front_ends = {n for n in imports if n.startswith(every)}
        if relative not in LAUNCHERS:
            assert {n for n in front_ends if own is None or not n.startswith(own)} == set(), (
                relative
            )
        # listener.py: the front ends' socket server over the runtime (made by them).
        shared = {"listener.py"}
        if (
            own is None
            and relative not in LAUNCHERS | shared
            and not relative.startswith("runtime/")
        ):
            assert not {n for n in imports if n.startswith("kb_lsp.runtime")}, relative
    assert checked > 50


def test_settings_change_says_what_applying_takes() -> None:
    base = load_settings({}).settings

    def change(**raw: object) -> SettingsChange:
        return settings_change(base, load_settings(raw).settings)

    live = change(
        search={"threshold": 0.5}, ollama={"timeout": 5, "model": "m"}, log={"level": "debug"}
    )
    assert sorted(live.live) == [
        "kb.log.level",
        "kb.ollama.model",
        "kb.ollama.timeout",
        "kb.search.threshold",
    ]
    assert not live.reopen and not live.watcher
    assert change(debounceMs=50).watcher == ["kb.debounceMs"]
    chunking = change(chunkSize=500)
    assert chunking.reopen == ["kb.chunkSize"] and chunking.rechunk
    for raw in (
        {"storage": "/elsewhere"},
        {"exclude": ["drafts/**"]},
        {"embedder": {"provider": "ollama"}},
    ):
        reopen = change(**raw)
        assert reopen.reopen and not reopen.rechunk and not reopen.live, raw
    # The Ollama embedder uses the Ollama host: with it, a new host reopens.
    on_ollama = load_settings({"embedder": {"provider": "ollama"}}).settings
    moved = settings_change(
        on_ollama,
        load_settings({"embedder": {"provider": "ollama"}, "ollama": {"host": "h:1"}}).settings,
    )
    assert moved.reopen == ["kb.ollama.host"]
    assert change().empty
    assert change(server={"python": "/usr/bin/python3"}).empty  # the editor's, not ours


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_read_only_runtime_says_who_builds_and_takes_over(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    settings = load_settings({"storage": str(storage)}).settings
    held = HeldSync()
    writer = editor_runtime(
        Hooks(start_progress=held.start),
        watch=False,
        probe_llm=False,
        log_file=False,
        listen=False,
    )
    reader = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
    try:
        writer.open([workspace], settings).result()  # its first sync is held at file 1
        assert held.holding.wait(60)
        reader.open([workspace], settings).result()
        status = reader.status()
        assert status.read_only and status.state == "indexing"
        # How far it got is the other process's progress (held while scanning here).
        assert status.message == "being built by another process"
        assert status.progress is not None and status.progress.phase == "scanning"
        assert not status.keyword_complete

        held.go.set()
        wait_until(lambda: reader.status().state == "ready", "the other process to finish")
        assert reader.status().files == writer.status().files > 0

        writer.close()  # the writer goes away: the reader becomes the writer
        wait_until(lambda: not reader.status().read_only, "the reader to take over")
        note = workspace / "zebra.md"
        note.write_text("# Zebra\n\nThe quokka ledger closes on Fridays.\n", encoding="utf-8")
        reader.reindex().result()
        hits = answer(reader, SEARCH, SearchParams(query="quokka ledger")).results
        assert hits and hits[0].path == "zebra.md"
    finally:
        held.go.set()
        writer.close()
        reader.close()


def test_one_progress_from_one_source(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    monkeypatch.setattr(progress_module, "CHANGED_EVERY", 0.0)  # every step re-sends
    paragraphs = (f"Paragraph {i} about the ledgers of account {i}. " * 10 for i in range(1000))
    (workspace / "big.md").write_text("# Big\n\n" + "\n\n".join(paragraphs), encoding="utf-8")
    files = len(list(workspace.rglob("*.md")))
    seen: list[IndexProgress] = []  # what the front end's bar got
    snapshots: list[IndexStatus] = []  # the status at each of those moments
    fed: list[IndexStatus] = []  # what a status bar got from the feed, if it came in time
    runtime = editor_runtime(
        Hooks(start_progress=lambda title, cancel: bar),
        watch=False,
        probe_llm=False,
        log_file=False,
        listen=False,
    )

    class Bar:
        def report(self, progress: IndexProgress) -> None:
            seen.append(progress)
            snapshots.append(runtime.status())

        def end(self, message: str) -> None:
            return None

    bar = Bar()
    try:
        settings = load_settings({"storage": str(storage)}).settings
        runtime.open([workspace], settings, index=False).result()
        runtime.subscribe(fed.append)
        runtime.reindex().result()  # the one sync: a cold index
    finally:
        runtime.close()
    assert seen, "no progress reported"
    # The status and the bar say the same at each moment: one source. (The status adds
    # the time left, an estimate on the clock of the moment it is asked.)
    assert [
        s.progress.model_copy(update={"seconds_left": None}) if s.progress else None
        for s in snapshots
    ] == seen
    during = [s.progress for s in snapshots + fed if s.progress is not None]
    # One total of files for the whole sync, once it has scanned; the chunks to embed
    # fixed from the embedding's start.
    counted = [p for p in during if p.phase != "scanning"]
    assert {p.files_total for p in counted} == {files}
    vectors = [p for p in seen if p.phase == "vectors"]
    assert len({p.chunks_total for p in vectors}) == 1 and vectors[0].chunks_total > 0
    text = [p for p in seen if p.phase == "keyword"]
    assert text and vectors and seen.index(text[-1]) < seen.index(vectors[0])
    for phase in (text, vectors):
        assert [p.files_done for p in phase] == sorted(p.files_done for p in phase)
        assert phase[-1].files_done == files
    assert [p.chunks_done for p in vectors] == sorted(p.chunks_done for p in vectors)
    assert vectors[-1].chunks_done == vectors[-1].chunks_total
    # Inside the big file (hundreds of chunks) the chunk count moves in several steps
    # while the count of complete files stands still.
    steps = collections.Counter(p.files_done for p in vectors)
    assert max(steps.values()) >= 3


def test_read_file_gives_lines_confined_to_the_workspace(
    runtime: Runtime, workspace: Path, tmp_path: Path
) -> None:
    lines = (workspace / "glossary.md").read_text(encoding="utf-8").splitlines()
    whole = runtime.read_file("glossary.md")
    assert whole.text.splitlines() == lines and whole.total_lines == len(lines)
    assert whole.uri == (workspace / "glossary.md").as_uri()
    part = runtime.read_file("glossary.md", 2, 3)
    assert (part.start_line, part.end_line, part.text) == (2, 3, "\n".join(lines[1:3]))
    with pytest.raises(InvalidInput, match=f"has {len(lines)} lines"):
        runtime.read_file("glossary.md", len(lines) + 5)
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n", encoding="utf-8")
    (workspace / "link.md").symlink_to(outside)
    for path in ("../secret.md", str(outside), "link.md"):
        with pytest.raises(InvalidInput):
            runtime.read_file(path)


def test_removing_a_folder_waits_for_the_reads_in_flight(
    workspace: Path, storage: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    other = tmp_path / "other-notes"
    other.mkdir()
    (other / "okapi.md").write_text("# Okapi\n\nThe okapi budget is approved.\n")
    runtime = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
    try:
        settings = load_settings({"storage": str(storage)}).settings
        runtime.open([workspace, other.resolve()], settings, index=False).result()
        runtime.reindex().result()
        reading, go = threading.Event(), threading.Event()

        def slow_read(kb: KnowledgeBase) -> list[str]:
            reading.set()
            assert go.wait(60)
            return [hit.path for hit in kb.search("okapi budget")]

        read = runtime.submit_read(runtime.read, slow_read)
        assert reading.wait(60)
        runtime.session.change_roots([], [other.resolve()])
        removed = runtime.session.worker.submit(Job(fn=lambda: None))  # done once the removal is
        go.set()
        assert "other-notes/okapi.md" in read.result(60)  # the store was still open
        removed.result(60)
        assert all(
            h.path != "okapi.md"
            for h in answer(runtime, SEARCH, SearchParams(query="okapi")).results
        )
    finally:
        runtime.close()


def test_pause_resume_and_cancel_indexing(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    files = len(list(workspace.rglob("*.md")))
    held = HeldSync()
    runtime = editor_runtime(
        Hooks(start_progress=held.start), watch=False, probe_llm=False, listen=False
    )
    try:
        settings = load_settings({"storage": str(storage)}).settings
        runtime.open([workspace], settings, index=False).result()
        cold = runtime.reindex()
        assert held.holding.wait(60)  # the cold index is at its first file
        status = answer(runtime, INDEX_CONTROL, IndexControlParams(action="pause"))
        assert status.paused and status.state == "indexing"
        assert "indexing is paused" in (status.message or "")
        held.go.set()
        cold.result(60)  # it stopped at its next step
        assert runtime.status().files < files
        # Changes wait while paused; resuming finishes the interrupted sync and them.
        note = workspace / "zebra.md"
        note.write_text("# Zebra\n\nThe quokka ledger closes on Fridays.\n", encoding="utf-8")
        runtime.session.notify_changed([note])
        assert runtime.status().paused
        answer(runtime, INDEX_CONTROL, IndexControlParams(action="resume"))
        wait_until(
            lambda: (s := runtime.status()).state == "ready" and s.files == files + 1,
            "the resumed index to finish",
        )
        assert not runtime.status().paused and not runtime.status().message

        # Cancel: the queued rebuild never runs, and the status says the index may lack files.
        answer(runtime, INDEX_CONTROL, IndexControlParams(action="pause"))
        queued = runtime.reindex(full=True)
        status = answer(runtime, INDEX_CONTROL, IndexControlParams(action="cancel"))
        assert queued.cancelled()
        assert "indexing was cancelled" in (status.message or "")
        answer(runtime, INDEX_CONTROL, IndexControlParams(action="resume"))
        assert runtime.reindex().result(60).cancelled is False
        assert not runtime.status().message
    finally:
        held.go.set()
        runtime.close()
