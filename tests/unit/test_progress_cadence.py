"""Indexing progress that moves often enough to trust: the vectors count moves every
`PROGRESS_EVERY` passages inside a batch, never backwards, and the status carries an
estimate of the phase's time left from the recent rate (`secondsLeft`), absent until
there is a rate. Counted in steps and on the test's clock, never the wall's."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.index import vector_pass
from kb_lsp.engine.index.reports import SyncProgress
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.protocol import IndexProgress, IndexStatus, LlmStatus
from kb_lsp.runtime import progress
from kb_lsp.runtime.progress import SyncMonitor
from kb_lsp.runtime.status import Activity, combined


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


class CountingEmbedder(HashingEmbedder):
    """Says how many passages each call embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:  # type: ignore[override]
        self.sizes.append(len(texts))
        return super().embed_documents(texts)


def _workspace(root: Path, files: int, paragraphs: int) -> None:
    for f in range(files):
        body = "\n\n".join(
            f"## Part {p}\n\nLedger {f} entry {p}: reconcile batch {f * 100 + p} of the "
            f"treasury close, wire {p} to account {f}."
            for p in range(paragraphs)
        )
        (root / f"note-{f}.md").write_text(f"# Note {f}\n\n{body}\n", encoding="utf-8")


def test_the_passage_count_moves_every_few_dozen_passages_and_never_back(
    tmp_path: Path,
) -> None:
    workspace, storage = tmp_path / "ws", tmp_path / "store"
    workspace.mkdir()
    _workspace(workspace, files=10, paragraphs=40)
    embedder = CountingEmbedder()
    settings = load_settings({"chunkSize": 100, "chunkOverlap": 0}).settings
    kb = KnowledgeBase([workspace], settings, embedder=embedder, storage=storage)
    steps: list[SyncProgress] = []
    try:
        kb.sync(progress=steps.append)
    finally:
        kb.close()
    vectors = [s for s in steps if s.phase == "vectors"]
    total = vectors[-1].chunks_total
    assert total > vector_pass.EMBED_BATCH  # more than one batch: the test means something
    counts = [s.chunks_done for s in vectors]
    assert counts == sorted(counts) and counts[-1] == total
    moves = [b - a for a, b in itertools.pairwise(counts) if b > a]
    # Every step of the count is at most a progress slice (not a whole batch of 256).
    assert max(moves) <= vector_pass.PROGRESS_EVERY
    assert len(moves) >= total // vector_pass.PROGRESS_EVERY
    assert max(embedder.sizes) <= vector_pass.PROGRESS_EVERY


def test_seconds_left_comes_from_the_recent_rate_and_is_absent_until_there_is_one() -> None:
    clock = Clock()
    monitor = SyncMonitor(clock)
    monitor.step(SyncProgress(0, 0, None, "scanning"))
    assert monitor.seconds_left() is None  # no total yet
    monitor.step(SyncProgress(0, 10, None, "vectors", 0, 1000))
    assert monitor.seconds_left() is None  # the phase starts: no rate
    clock.now += 10
    monitor.step(SyncProgress(0, 10, None, "vectors", 100, 1000))  # 10 passages/s
    assert monitor.seconds_left() == 90.0
    # The machine slows down to 1 passage/s for longer than the window: the estimate
    # follows the recent rate, not the run's average.
    for _ in range(int(progress.RATE_WINDOW) + 10):
        clock.now += 1
        done = 100 + (_ + 1)
        monitor.step(SyncProgress(0, 10, None, "vectors", done, 1000))
    left = monitor.seconds_left()
    assert left is not None and left == (1000 - done) * 1.0
    # A new phase (another sync's reading) starts its measure afresh.
    monitor.step(SyncProgress(3, 10, None, "keyword"))
    assert monitor.seconds_left() is None


@given(
    st.lists(
        st.tuples(st.floats(0.0, 120.0), st.integers(0, 400)),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 5000),
)
def test_seconds_left_is_never_negative(moves: list[tuple[float, int]], total: int) -> None:
    clock = Clock()
    monitor = SyncMonitor(clock)
    monitor.step(SyncProgress(0, 5, None, "vectors", 0, total))
    done = 0
    for pause, more in moves:
        clock.now += pause
        done = min(total + 50, done + more)  # a count past its total must not break it
        monitor.step(SyncProgress(0, 5, None, "vectors", done, total))
        left = monitor.seconds_left()
        assert left is None or left >= 0.0


def _status(progress_: IndexProgress | None) -> IndexStatus:
    return IndexStatus(
        state="indexing",
        files=3,
        chunks=30,
        embedder="test",
        store="/tmp/x",
        llm=LlmStatus(host="h", model="m"),
        progress=progress_,
    )


def test_the_status_carries_the_estimate_but_not_while_paused() -> None:
    running = IndexProgress(
        phase="vectors", files_done=1, files_total=5, chunks_done=64, chunks_total=640
    )
    sent = combined(_status(running), Activity(busy=True, seconds_left=42.0))
    assert sent.progress is not None and sent.progress.seconds_left == 42.0
    paused = combined(_status(running), Activity(busy=True, paused=True, seconds_left=42.0))
    assert paused.progress is not None and paused.progress.seconds_left is None
    no_rate = combined(_status(running), Activity(busy=True, seconds_left=None))
    assert no_rate.progress is not None and no_rate.progress.seconds_left is None
