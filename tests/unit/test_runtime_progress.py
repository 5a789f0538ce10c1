"""The words of the one progress, and the log lines of a sync: every few seconds of a
clock (the test's), with the rate and the time left, whatever the steps."""

from __future__ import annotations

import logging

import pytest

from kb_lsp.engine.index.reports import SyncProgress
from kb_lsp.protocol import IndexProgress
from kb_lsp.runtime import progress
from kb_lsp.runtime.progress import SyncMonitor, progress_text, rate_line


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_progress_text_is_the_extensions() -> None:
    embedding = IndexProgress(
        phase="vectors", files_done=38, files_total=155, chunks_done=1204, chunks_total=3036
    )
    assert progress_text(embedding) == "Keyword search ready · embedding 1,204/3,036 passages"
    reading = IndexProgress(phase="keyword", files_done=12, files_total=155)
    assert progress_text(reading) == "Reading 12/155 files"
    # No total yet: not a "0/0" that would change.
    scanning = IndexProgress(phase="scanning", files_done=0, files_total=0)
    assert progress_text(scanning) == "Scanning files…"
    assert progress_text(reading.model_copy(update={"files_total": 0})) == "Scanning files…"


def test_rate_line_says_how_far_how_fast_and_how_long() -> None:
    step = IndexProgress(
        phase="vectors", files_done=120, files_total=155, chunks_done=2400, chunks_total=3036
    )
    assert rate_line(step, 2400, 4.0) == (
        "Keyword search ready · embedding 2,400/3,036 passages · 600.0 passages/s · "
        "less than a minute left"
    )
    text = IndexProgress(phase="keyword", files_done=120, files_total=155)
    assert rate_line(text, 20, 4.0) == (
        "Reading 120/155 files · 5.0 files/s · less than a minute left"
    )
    slow = step.model_copy(update={"chunks_done": 36})
    assert rate_line(slow, 36, 60.0).endswith("0.6 passages/s · about 83 min left")
    # Nothing done yet (a first batch under way): no rate to give, nor a time.
    assert rate_line(step, 0, 4.0) == "Keyword search ready · embedding 2,400/3,036 passages"


def test_a_log_line_every_few_seconds_with_rate_and_time_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="kb_lsp.runtime.progress")
    clock = Clock()
    monitor = SyncMonitor(clock)

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records]

    assert not monitor.step(SyncProgress(0, 0, None, "scanning"))
    clock.now += 0.5
    monitor.step(SyncProgress(0, 155, None, "keyword"))
    assert lines() == ["indexer: 155 files in this sync"]
    # Many files in under LOG_EVERY seconds: no line per file.
    for done in range(1, 151):
        clock.now += 0.02
        monitor.step(SyncProgress(done, 155, f"{done}.md", "keyword"))
    assert len(lines()) == 1
    clock.now = 1000.0 + progress.LOG_EVERY  # 5 s after the start; 4.5 s of reading
    monitor.step(SyncProgress(151, 155, "151.md", "keyword"))
    assert lines()[1:] == [
        "indexer: Reading 151/155 files · 33.6 files/s · less than a minute left"
    ]
    # Embedding: the rate is the phase's, in chunks; one big file, so files stand still.
    clock.now += 1.0
    monitor.step(SyncProgress(0, 155, None, "vectors", 0, 3036))
    clock.now += 2.0
    monitor.step(SyncProgress(0, 155, None, "vectors", 256, 3036))
    assert len(lines()) == 2
    clock.now += 3.0  # LOG_EVERY after the last line, 5 s into the embedding
    monitor.step(SyncProgress(0, 155, None, "vectors", 512, 3036))
    assert lines()[2:] == [
        "indexer: Keyword search ready · embedding 512/3,036 passages · 102.4 passages/s · "
        "less than a minute left"
    ]


def test_the_status_is_re_sent_at_most_every_second_and_at_each_new_phase() -> None:
    clock = Clock()
    monitor = SyncMonitor(clock)
    sent = []
    for tick in range(12):  # 3 s of steps every 0.25 s
        clock.now += 0.25
        if monitor.step(SyncProgress(tick, 12, None, "keyword")):
            sent.append(tick)
    # The first: the total is known (another process shows it at once), then every second.
    assert sent == [0, 4, 8]
    clock.now += 0.25
    assert monitor.step(SyncProgress(0, 12, None, "vectors", 0, 40))  # a new phase: at once
    clock.now += 0.25
    assert not monitor.step(SyncProgress(0, 12, None, "vectors", 8, 40))


def test_the_log_keeps_its_pace_while_one_step_takes_minutes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One batch of vectors can take minutes on a loaded machine: the timer's ticks log
    the latest step meanwhile (and nothing before the sync has counted its files)."""
    caplog.set_level(logging.INFO, logger="kb_lsp.runtime.progress")
    clock = Clock()
    monitor = SyncMonitor(clock)
    monitor.step(SyncProgress(0, 0, None, "scanning"))
    clock.now += progress.LOG_EVERY
    monitor.tick()
    assert caplog.records == []  # still scanning: no count to show
    monitor.step(SyncProgress(0, 155, None, "vectors", 0, 3036))
    clock.now += 10.0
    monitor.step(SyncProgress(0, 155, None, "vectors", 256, 3036))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "indexer: 155 files in this sync",
        "indexer: Keyword search ready · embedding 256/3,036 passages · 25.6 passages/s · "
        "about 2 min left",
    ]
    for _ in range(3):  # the next batch takes 3 x LOG_EVERY: a line each time
        clock.now += progress.LOG_EVERY
        monitor.tick()
    assert len(caplog.records) == 5
    assert (
        caplog.records[-1]
        .getMessage()
        .startswith(
            "indexer: Keyword search ready · embedding 256/3,036 passages · 10.2 passages/s"
        )
    )
    monitor.tick()  # no time passed: no line
    assert len(caplog.records) == 5
