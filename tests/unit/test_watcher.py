"""The watcher with real files and a real watchdog observer."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.helpers.watches import WatchLog, watch_log

from kb_lsp.engine.workspace.watcher import Batch, Watcher

DEADLINE = 15.0


class Collector:
    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self._cond = threading.Condition()

    def __call__(self, batch: Batch) -> None:
        with self._cond:
            self.batches.append(batch)
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[Batch], bool], what: str) -> Batch:
        deadline = time.monotonic() + DEADLINE
        seen = 0
        with self._cond:
            while True:
                for batch in self.batches[seen:]:
                    if predicate(batch):
                        return batch
                seen = len(self.batches)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no batch {what} within {DEADLINE}s: {self.batches}")
                self._cond.wait(timeout=left)

    def containing(self, path: Path) -> list[Batch]:
        with self._cond:
            return [b for b in self.batches if path in b.paths]

    def all_paths(self) -> set[Path]:
        with self._cond:
            return {p for b in self.batches for p in b.paths}


def ignored_by_name(path: Path) -> bool:
    return path.name in {"node_modules", ".git"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "ws"
    (base / "notes" / "deep").mkdir(parents=True)
    (base / "notes" / "a.md").write_text("# A\n")
    (base / "node_modules" / "pkg").mkdir(parents=True)
    (base / "notes" / "node_modules").mkdir()
    (base / ".git").mkdir()
    return base.resolve()


@pytest.fixture
def collector() -> Collector:
    return Collector()


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def gathered(watcher: Watcher, *paths: Path) -> None:
    """Write a marker after `paths` were written and wait until the watcher has it: the
    events of one folder arrive in order, so everything before it is gathered too."""
    marker = paths[0].parent / "zz-marker.md"
    marker.write_text("# marker\n")
    wait_until(lambda: marker in watcher.pending(), "the marker to be gathered")


@pytest.fixture
def holding(root: Path, collector: Collector) -> Iterator[Watcher]:
    """A watcher that hands nothing over by itself (no quiet period is ever long
    enough): the test calls `flush()` once everything it wrote was gathered."""
    w = Watcher(collector, debounce=3600, max_delay=3600, reconcile_seconds=None)
    w.add_root(root, ignored_by_name)
    w.start()
    yield w
    w.stop()


@pytest.fixture
def watches() -> Iterator[WatchLog]:
    with watch_log() as log:
        yield log


@pytest.fixture
def watcher(root: Path, collector: Collector, watches: WatchLog) -> Iterator[Watcher]:
    w = Watcher(collector, debounce=0.3, max_delay=5.0, reconcile_seconds=None)
    w.add_root(root, ignored_by_name)
    w.start()
    yield w
    w.stop()


def test_new_file_arrives_in_a_batch(root: Path, watcher: Watcher, collector: Collector) -> None:
    new = root / "notes" / "deep" / "new.md"
    new.write_text("# New\n")
    batch = collector.wait_for(lambda b: new in b.paths, "with the new file")
    assert not batch.rescan
    assert batch.reason == "changes"


def test_repeated_writes_collapse_into_one_path(
    root: Path, holding: Watcher, collector: Collector
) -> None:
    target = root / "notes" / "a.md"
    for i in range(10):
        target.write_text(f"# A\n\nversion {i}\n")
    gathered(holding, target)
    holding.flush()
    batch = collector.wait_for(lambda b: target in b.paths, "with a.md")
    assert batch.paths.count(target) == 1
    assert len(collector.containing(target)) == 1


def test_atomic_save_is_one_batch_with_both_ends(
    root: Path, holding: Watcher, collector: Collector
) -> None:
    target = root / "notes" / "a.md"
    temp = root / "notes" / ".a.md.tmp123"
    temp.write_text("# A\n\nsaved atomically\n")
    os.replace(temp, target)
    gathered(holding, target)
    holding.flush()
    batch = collector.wait_for(lambda b: target in b.paths, "with a.md")
    assert temp in batch.paths
    assert len(collector.containing(target)) == 1


def test_a_quiet_period_hands_the_batch_over_by_itself(
    root: Path, watcher: Watcher, collector: Collector
) -> None:
    target = root / "notes" / "a.md"
    target.write_text("# A\n\nchanged\n")
    batch = collector.wait_for(lambda b: target in b.paths, "with a.md")
    assert not batch.rescan and watcher.pending() == frozenset()


def test_delete_and_moves_name_both_ends(
    root: Path, watcher: Watcher, collector: Collector
) -> None:
    (root / "notes" / "a.md").unlink()
    collector.wait_for(lambda b: root / "notes" / "a.md" in b.paths, "with the deleted file")

    src = root / "notes" / "deep"
    (src / "b.md").write_text("# B\n")
    collector.wait_for(lambda b: src / "b.md" in b.paths, "with b.md")
    before = len(collector.batches)
    os.rename(src / "b.md", root / "b-moved.md")
    # Across two watches, watchdog reports the far end of a move up to 0.5 s later, so
    # both ends may come in separate batches.
    collector.wait_for(lambda b: root / "b-moved.md" in b.paths, "with the new name")
    collector.wait_for(
        lambda b: b in collector.batches[before:] and src / "b.md" in b.paths, "with the old name"
    )

    dest = root / "moved-folder"
    before = len(collector.batches)
    os.rename(src, dest)
    collector.wait_for(lambda b: dest in b.paths, "with the new folder")
    collector.wait_for(lambda b: b in collector.batches[before:] and src in b.paths, "with the old")
    # The moved folder is still watched under its new name.
    (dest / "after.md").write_text("# After\n")
    collector.wait_for(lambda b: dest / "after.md" in b.paths, "with a file in the moved folder")


def test_excluded_folders_are_not_watched_nor_reported(
    root: Path, watcher: Watcher, collector: Collector, watches: WatchLog
) -> None:
    watched = dict(watches.folders)
    assert watched, "nothing is watched"
    for folder in watched:
        assert "node_modules" not in folder.parts and ".git" not in folder.parts
    # The root and notes/ hold excluded folders: watched non-recursively.
    assert watched[root] is False
    assert watched[root / "notes"] is False
    assert watched[root / "notes" / "deep"] is True

    (root / "node_modules" / "pkg" / "readme.md").write_text("# pkg\n")
    (root / "notes" / "node_modules" / "x.md").write_text("# x\n")
    marker = root / "notes" / "marker.md"
    marker.write_text("# marker\n")
    collector.wait_for(lambda b: marker in b.paths, "with the marker")
    assert not any("node_modules" in p.parts for p in collector.all_paths())


def test_new_folder_is_watched(root: Path, watcher: Watcher, collector: Collector) -> None:
    fresh = root / "fresh"
    fresh.mkdir()
    collector.wait_for(lambda b: fresh in b.paths, "with the new folder")
    (fresh / "inside.md").write_text("# inside\n")
    collector.wait_for(lambda b: fresh / "inside.md" in b.paths, "with a file in the new folder")
    (fresh / "node_modules").mkdir()
    (fresh / "node_modules" / "dep.md").write_text("# dep\n")
    (fresh / "later.md").write_text("# later\n")
    collector.wait_for(lambda b: fresh / "later.md" in b.paths, "with later.md")
    assert not any("node_modules" in p.parts for p in collector.all_paths())


def test_burst_of_writes(root: Path, collector: Collector) -> None:
    with Watcher(collector, debounce=3600, max_delay=3600, burst_threshold=1000) as w:
        w.add_root(root, ignored_by_name)
        files = [root / "notes" / f"burst-{i:03}.md" for i in range(200)]
        for path in files:
            path.write_text(f"# {path.stem}\n")
        gathered(w, *files)
        w.flush()
        batch = collector.wait_for(lambda b: files[-1] in b.paths, "with the last file")
        assert set(files) <= set(batch.paths), "the burst was split"
        assert not batch.rescan


def test_burst_over_threshold_becomes_a_rescan(root: Path, collector: Collector) -> None:
    with Watcher(collector, debounce=3600, max_delay=3600, burst_threshold=50) as w:
        w.add_root(root, ignored_by_name)
        files = [root / "notes" / f"many-{i:03}.md" for i in range(120)]
        for path in files:
            path.write_text("# many\n")
        gathered(w, *files)
        w.flush()
        batch = collector.wait_for(lambda b: b.rescan, "asking for a rescan")
        assert batch.reason == "burst"


def test_reconcile_asks_for_a_rescan(root: Path, collector: Collector) -> None:
    with Watcher(collector, debounce=0.05, reconcile_seconds=0.2) as w:
        w.add_root(root, ignored_by_name)
        batch = collector.wait_for(lambda b: b.reason == "reconcile", "from the reconcile")
        assert batch.rescan


def test_notify_feeds_the_same_queue(root: Path, watcher: Watcher, collector: Collector) -> None:
    saved = root / "notes" / "a.md"
    watcher.notify([saved, saved])
    batch = collector.wait_for(lambda b: saved in b.paths, "with the notified path")
    assert batch.paths.count(saved) == 1


def test_too_many_folders_falls_back_to_one_recursive_watch(
    root: Path, collector: Collector, watches: WatchLog
) -> None:
    for i in range(10):
        (root / "notes" / f"d{i}" / "node_modules").mkdir(parents=True)
    with Watcher(collector, debounce=0.1, max_watches=4) as w:
        w.add_root(root, ignored_by_name)
        assert watches.folders == {root: True}
        (root / "node_modules" / "pkg" / "x.md").write_text("# x\n")
        target = root / "notes" / "d3" / "y.md"
        target.write_text("# y\n")
        collector.wait_for(lambda b: target in b.paths, "with y.md")
        assert not any("node_modules" in p.parts for p in collector.all_paths())


def test_missing_root_is_skipped(tmp_path: Path, collector: Collector, watches: WatchLog) -> None:
    with Watcher(collector, debounce=0.1) as w:
        w.add_root(tmp_path / "nope")
        assert watches.folders == {}
        assert w.roots == [tmp_path / "nope"]


def test_removed_root_is_no_longer_watched(
    root: Path, watcher: Watcher, collector: Collector, watches: WatchLog
) -> None:
    assert root in watches.folders
    watcher.remove_root(root)
    assert watches.folders == {}
    assert watcher.roots == []


def test_rename_inside_one_watch_is_one_batch(
    root: Path, watcher: Watcher, collector: Collector
) -> None:
    deep = root / "notes" / "deep"
    (deep / "c.md").write_text("# C\n")
    collector.wait_for(lambda b: deep / "c.md" in b.paths, "with c.md")
    os.rename(deep / "c.md", deep / "c2.md")
    batch = collector.wait_for(lambda b: deep / "c2.md" in b.paths, "with c2.md")
    assert deep / "c.md" in batch.paths
