"""Keep the index live: file-system events → debounced, coalesced batches → the indexer.

`Watcher` runs a watchdog observer over the workspace roots and hands the indexer one
`Batch` at a time through a callback (the LSP layer puts it on its indexing queue):

* **Debounce and coalesce.** Events are collected into a set of absolute paths; a batch
  is handed over once nothing new arrived for `debounce` seconds (or `max_delay` after
  the first event, so a steady stream of writes still gets indexed). An atomic save
  (write `note.md.tmp`, rename it over `note.md`) therefore becomes one batch naming both
  paths, and a file written ten times becomes one path.
* **Bursts.** More than `burst_threshold` paths in one batch (a `git checkout`, an
  unzip) become a single rescan (`Batch.rescan`): the indexer's full sync compares size
  and mtime with its manifest first, so that is cheaper than hundreds of single syncs.
* **Deletes and moves** name both ends (a moved folder names both folders); the indexer's
  `sync(paths)` removes what no longer exists and indexes what now does.
* **Excluded directories are not watched.** watchdog's recursive inotify watch would add a
  watch for every folder below a root, `node_modules` and `.git` included. Instead the
  watcher plans its watches: a folder whose subtree holds no excluded folder gets one
  recursive watch; a folder that does gets a non-recursive watch and its children are
  planned in turn, so excluded folders get none. Folders created later are watched as
  they appear. When a tree would need more than `max_watches` watches (each is a thread
  in watchdog), the watcher falls back to one recursive watch per root; either way every
  event is also filtered, so nothing from an excluded folder ever reaches the indexer.
* **Reconcile.** Every `reconcile_seconds` a rescan batch is handed over anyway, which
  catches whatever the OS dropped (inotify queue overflow, network file systems).

Events whose content did not change cost nothing downstream: the indexer compares size and
mtime, then the sha256, before it re-chunks or embeds anything.

This module is engine-side: no pygls, no lsprotocol.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch

from kb_lsp.engine.workspace.change_queue import Batch as Batch  # re-exported: its home before
from kb_lsp.engine.workspace.change_queue import ChangeQueue

log = logging.getLogger(__name__)

# What the log says (DEBUG) as a watch is scheduled and removed: with the folder and
# whether the watch is recursive, so a log reader can tell which folders are watched.
WATCHING = "watcher: watching %s (recursive: %s)"
NOT_WATCHING = "watcher: no longer watching %s"

IsIgnoredDir = Callable[[Path], bool]

# Only events that can change what a file contains or where it is.
_EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


def _never_ignored(_: Path) -> bool:
    return False


@dataclass
class _Root:
    path: Path
    is_ignored_dir: IsIgnoredDir
    # Watched folder → is the watch recursive? (the watch objects are kept alongside)
    watched: dict[Path, bool]
    fallback: bool = False  # one recursive watch on the root (too many folders to plan)


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            self._watcher._on_event(event)
        except Exception:  # never let a bad event kill the observer thread
            log.exception("watcher: failed to handle %r", event)


class Watcher:
    """Watch workspace roots and call `on_batch` with coalesced `Batch`es.

    `on_batch` is called from the watcher's own flusher thread and should return quickly
    (put the batch on a queue). `notify(paths)` feeds paths from elsewhere (LSP `didSave`,
    `workspace/didChangeWatchedFiles`) through the same debouncing.
    """

    def __init__(
        self,
        on_batch: Callable[[Batch], None],
        *,
        debounce: float = 0.3,
        max_delay: float | None = None,
        burst_threshold: int = 500,
        reconcile_seconds: float | None = 300.0,
        max_watches: int = 64,
    ) -> None:
        self._queue = ChangeQueue(
            on_batch,
            debounce=debounce,
            max_delay=max_delay,
            burst_threshold=burst_threshold,
            reconcile_seconds=reconcile_seconds,
        )
        self._max_watches = max_watches
        self._lock = threading.Lock()
        self._roots: dict[Path, _Root] = {}
        self._watches: dict[Path, ObservedWatch] = {}
        self._handler = _Handler(self)
        self._observer = Observer()
        self._observer.daemon = True
        self._started = False

    # --- life cycle -------------------------------------------------------------------

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._observer.start()
        self._queue.start()

    def stop(self) -> None:
        """Stop watching; pending events are dropped (the next start reconciles)."""
        self._queue.close()
        if self._started:
            try:
                self._observer.stop()
                self._observer.join(timeout=5)
            except Exception:
                log.exception("watcher: error while stopping the observer")
            self._queue.join()

    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # --- roots ------------------------------------------------------------------------

    @property
    def roots(self) -> list[Path]:
        with self._lock:
            return list(self._roots)

    def add_root(self, root: Path, is_ignored_dir: IsIgnoredDir | None = None) -> None:
        """Watch `root` (an absolute folder); `is_ignored_dir(abs_dir)` says which folders
        below it are excluded. A root that does not exist is logged and skipped."""
        root = Path(os.path.abspath(root))
        with self._lock:
            if root in self._roots:
                return
            entry = _Root(root, is_ignored_dir or _never_ignored, {})
            self._roots[root] = entry
        if not root.is_dir():
            log.warning("watcher: %s is not a folder; not watching it", root)
            return
        plan = self._plan(entry)
        if plan is None:
            entry.fallback = True
            log.info(
                "watcher: %s has more than %d folders to watch separately; "
                "watching it recursively and filtering excluded folders",
                root,
                self._max_watches,
            )
            plan = [(root, True)]
        for folder, recursive in plan:
            self._schedule(entry, folder, recursive)
        log.info("watcher: watching %s with %d watch(es)", root, len(plan))

    def remove_root(self, root: Path) -> None:
        root = Path(os.path.abspath(root))
        with self._lock:
            entry = self._roots.pop(root, None)
        self._queue.drop(lambda path: _is_within(path, root))
        if entry is None:
            return
        for folder in list(entry.watched):
            self._unschedule(entry, folder)

    # --- input ------------------------------------------------------------------------

    def notify(self, paths: Iterable[Path]) -> None:
        """Queue paths changed according to someone else (the editor): same debouncing."""
        self._queue.add(Path(os.path.abspath(p)) for p in paths)

    def pending(self) -> frozenset[Path]:
        """The paths gathered for the next batch so far."""
        return self._queue.pending()

    def flush(self) -> None:
        """Hand the gathered paths over now rather than after the quiet period (someone
        who knows that a burst has ended; tests, which must not wait on time)."""
        self._queue.flush()

    # --- planning watches --------------------------------------------------------------

    def _plan(self, entry: _Root) -> list[tuple[Path, bool]] | None:
        """The watches for `entry`: [(folder, recursive)], or None when over budget."""
        ignored_below: dict[Path, bool] = {}
        folders: list[Path] = []
        # Walk bottom-up so each folder knows whether any excluded folder lies below it.
        for dirpath, dirnames, _ in os.walk(entry.path, topdown=True, onerror=None):
            here = Path(dirpath)
            folders.append(here)
            kept = []
            for name in dirnames:
                child = here / name
                if child.is_symlink():
                    continue
                if entry.is_ignored_dir(child):
                    ignored_below[here] = True
                else:
                    kept.append(name)
            dirnames[:] = kept
        for folder in reversed(folders):  # children come after parents in a top-down walk
            if ignored_below.get(folder):
                parent = folder.parent
                while _is_within(parent, entry.path):
                    if ignored_below.get(parent):
                        break
                    ignored_below[parent] = True
                    if parent == entry.path:
                        break
                    parent = parent.parent

        plan: list[tuple[Path, bool]] = []

        def visit(folder: Path) -> bool:
            if len(plan) > self._max_watches:
                return False
            if not ignored_below.get(folder):
                plan.append((folder, True))
                return True
            plan.append((folder, False))
            try:
                children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
            except OSError:
                return True
            for child in children:
                if entry.is_ignored_dir(child):
                    continue
                if not visit(child):
                    return False
            return True

        if not visit(entry.path) or len(plan) > self._max_watches:
            return None
        return plan

    def _schedule(self, entry: _Root, folder: Path, recursive: bool) -> None:
        try:
            watch = self._observer.schedule(
                self._handler, str(folder), recursive=recursive, event_filter=_EVENT_FILTER
            )
        except OSError as err:
            log.warning("watcher: cannot watch %s: %s", folder, err)
            return
        with self._lock:
            self._watches[folder] = watch
            entry.watched[folder] = recursive
        log.debug(WATCHING, folder, recursive)

    def _unschedule(self, entry: _Root, folder: Path) -> None:
        with self._lock:
            watch = self._watches.pop(folder, None)
            entry.watched.pop(folder, None)
        if watch is not None:
            with contextlib.suppress(KeyError, OSError):
                self._observer.unschedule(watch)
            log.debug(NOT_WATCHING, folder)

    def _covered_recursively(self, entry: _Root, folder: Path) -> bool:
        for watched, recursive in entry.watched.items():
            if recursive and _is_within(folder, watched):
                return True
        return False

    # --- events -------------------------------------------------------------------------

    def _root_of(self, path: Path) -> _Root | None:
        best: _Root | None = None
        for root, entry in self._roots.items():
            if _is_within(path, root) and (best is None or len(root.parts) > len(best.path.parts)):
                best = entry
        return best

    def _excluded(self, entry: _Root, path: Path, is_dir: bool) -> bool:
        """Is `path` inside (or, for a folder, itself) an excluded folder of its root?"""
        if path == entry.path:
            return False
        folder = path if is_dir else path.parent
        while folder != entry.path and _is_within(folder, entry.path):
            if entry.is_ignored_dir(folder):
                return True
            folder = folder.parent
        return False

    def _on_event(self, event: FileSystemEvent) -> None:
        ends = [_decode(event.src_path)]
        if isinstance(event, (FileMovedEvent, DirMovedEvent)) and event.dest_path:
            ends.append(_decode(event.dest_path))
        keep: list[Path] = []
        for raw in ends:
            path = Path(os.path.abspath(raw))
            with self._lock:
                entry = self._root_of(path)
            if entry is None or self._excluded(entry, path, event.is_directory):
                continue
            keep.append(path)
            if event.is_directory:
                self._follow_folder(entry, path, event)
        if keep:
            self._queue.add(keep)

    def _follow_folder(self, entry: _Root, folder: Path, event: FileSystemEvent) -> None:
        """Keep watches in step with folders that appear, move or vanish."""
        if entry.fallback:
            return
        exists = folder.is_dir()
        if not exists:
            for watched in [w for w in list(entry.watched) if _is_within(w, folder)]:
                if watched != entry.path:
                    self._unschedule(entry, watched)
            return
        if isinstance(event, (DirCreatedEvent, DirMovedEvent)):
            with self._lock:
                covered = self._covered_recursively(entry, folder) or folder in entry.watched
            if not covered:
                # A new folder below a non-recursive watch: plan it like a root of its own.
                sub = _Root(folder, entry.is_ignored_dir, {})
                plan = self._plan(sub) or [(folder, True)]
                for path, recursive in plan:
                    self._schedule(entry, path, recursive)


def _decode(path: str | bytes) -> str:
    return os.fsdecode(path)


def _is_within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
