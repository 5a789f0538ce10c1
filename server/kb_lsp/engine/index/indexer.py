"""Incremental sync of one workspace root into its store, in two phases.

`plan` compares the disk with the manifest — size and mtime first, then the sha256 of
the content — and re-chunks only files whose content changed; `KnowledgeBase.sync` runs
the phases below over every root, with one tally.

* Phase 1 ("keyword"): every changed file is read, chunked and written — manifest row,
  chunks, FTS5 rows — with no embedding, a few dozen files per transaction. Keyword
  search covers the whole workspace when this phase ends (seconds, even for thousands
  of files), and files that disappeared have lost their chunks.
* Phase 2 ("vectors", `vector_pass.py`): the chunks of every file still `pending` are
  embedded in batches across files, files open in the editor first
  (`KnowledgeBase.sync`'s `first`), then the newest; only text never embedded is. A file
  is `ok` once all its vectors are.

`store/__init__.py` says why a crash in either phase is repaired by the next sync.

One file never stops a sync: what a file's text becomes is `prepare.prepare_file`, and
whatever it raises for one file (or the store refuses of that file's rows) skips that
file, with the reason, listed by `kb status` beside the files it did not read; a
metadata failure only costs the file its fields (a problem with its line). Only an error
of the store itself (SQLite, Chroma, the disk) stops the sync.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kb_lsp.config import Settings
from kb_lsp.engine.embed.embeddings import Embedder
from kb_lsp.engine.index.fresh import needs_reading
from kb_lsp.engine.index.prepare import embedding_text as embedding_text  # its old home
from kb_lsp.engine.index.prepare import failure, prepare_file
from kb_lsp.engine.index.prepare import text_hash as text_hash
from kb_lsp.engine.index.reports import SyncReport
from kb_lsp.engine.index.sync_tally import ProgressCallback, SyncTally
from kb_lsp.engine.index.vector_pass import VectorPass
from kb_lsp.engine.metadata.extract import FileMetadata
from kb_lsp.engine.records import ReadOnlyStore
from kb_lsp.engine.store import FileRecord, NewChunk, Store
from kb_lsp.engine.workspace import glob_memo
from kb_lsp.engine.workspace.files import FileEntry, Skipped, UnreadableFile, WorkspaceRoot

log = logging.getLogger(__name__)

# Phase 1 commits at this many files or chunks, whichever comes first: progress moves and
# keyword search sees files early, without one transaction per file.
BATCH_FILES = 64
BATCH_CHUNKS = 2048


@dataclass(frozen=True)
class SyncPlan:
    """What one root's sync does, from comparing the disk with the manifest."""

    manifest: dict[str, FileRecord]
    whole: bool  # every file was scanned (not only some paths)
    full: bool  # every file is read again
    unchanged: int
    changed: list[FileEntry]
    removed: list[str]
    removed_skipped: list[str]  # indexed before, skipped now
    skipped: list[Skipped]
    files: frozenset[str]  # every file this sync reads, removes or finishes

    @property
    def to_read(self) -> int:
        return len(self.changed) + len(self.removed)


@dataclass
class _Written:
    record: FileRecord
    chunks: list[NewChunk]
    metadata: FileMetadata
    card: tuple[str, str] | None = None  # (hash, text) of the note card


class Indexer:
    """The single writer of one root's store."""

    def __init__(
        self, workspace: WorkspaceRoot, store: Store, embedder: Embedder, settings: Settings
    ) -> None:
        self.workspace = workspace
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self._vectors = VectorPass(store, embedder)

    # --- phase 1: text, chunks, FTS -------------------------------------------------------

    def plan(self, paths: Iterable[Path] | None, *, full: bool = False) -> SyncPlan:
        """Compare the disk (every file, or only `paths`) with the manifest: what this
        sync reads, removes, and finishes. Only a whole sync reads the whole manifest; a
        save reads the records of its paths (and of the files under a folder) and the
        unfinished ones."""
        self.store.repair_vectors()
        self.store.writer.fill_derived()

        if paths is None:
            manifest = self.store.reader.manifest()
            scan = self.workspace.scan()
            entries = scan.files
            skipped = list(scan.skipped)
            present = {entry.path for entry in entries}
            removed = [path for path in manifest if path not in present]
        else:
            entries, skipped, removed, manifest = self._targets(paths)

        # `full`: every file is read and chunked again, each replacing its old rows in one
        # step, so searches meanwhile find every file (the knowledge base then rebuilds
        # the vector collection beside the live one: `Store.rebuild_vectors`).
        changed = [
            entry for entry in entries if full or needs_reading(entry, manifest.get(entry.path))
        ]
        listed = {e.path for e in entries}  # an escaped name (`names.py`) may spell one of them
        removed_skipped = [s.path for s in skipped if s.path in manifest and s.path not in listed]
        # Files whose vectors an earlier sync left pending are finished by this one.
        unfinished = {path for path, record in manifest.items() if record.state != "ok"}
        files = {e.path for e in changed} | set(removed) | set(removed_skipped) | unfinished
        return SyncPlan(
            manifest=manifest,
            whole=paths is None,
            full=full,
            unchanged=len(entries) - len(changed),
            changed=changed,
            removed=removed,
            removed_skipped=removed_skipped,
            skipped=skipped,
            files=frozenset(files),
        )

    def write_texts(
        self,
        plan: SyncPlan,
        *,
        tally: SyncTally,
        cancel: threading.Event | None,
        report: SyncReport,
    ) -> None:
        """Phase 1 of `plan`: read, chunk and write the changed files, drop the removed."""
        manifest, changed, skipped = plan.manifest, plan.changed, list(plan.skipped)
        report.files_unchanged += plan.unchanged
        removed, removed_skipped = plan.removed, plan.removed_skipped
        if removed or removed_skipped:
            report.chunks_removed += self.store.writer.delete_files([*removed, *removed_skipped])
            report.files_removed += len(removed) + len(removed_skipped)
            tally.read(len(removed), removed[-1] if removed else None)

        batch: list[_Written] = []
        batch_chunks = 0
        for entry in changed:
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
            written = self._prepare(entry, manifest, report, skipped, again=plan.full)
            if written is not None:
                batch.append(written)
                batch_chunks += len(written.chunks)
                if batch_chunks >= BATCH_CHUNKS or len(batch) >= BATCH_FILES:
                    self._write(batch, manifest, report, skipped)
                    batch, batch_chunks = [], 0
            tally.read(1, entry.path)
        self._write(batch, manifest, report, skipped)
        # Links resolve by name: a change can move anchor text between notes. A save
        # re-resolves only the links its files can re-target (`metadata/anchors.py`).
        changes = report.files_added or report.files_changed or report.files_removed
        self.store.writer.refresh_anchors(everywhere=plan.whole and bool(changes))

        if plan.whole and not report.cancelled:
            self.store.writer.set_skipped(((s.path, s.reason) for s in skipped), replace_all=True)
            # What the next one-shot scan asks pathspec, answered (`glob_memo.py`).
            self.store.writer.save_glob_memo(glob_memo.saved(self.workspace.patterns()))
            self.store.writer.forget_unused_vectors()
        else:
            # A file that was skipped and is fine again loses its reason; the ones
            # skipped in this sync are recorded again.
            self.store.writer.clear_skipped(entry.path for entry in changed)
            if skipped:
                self.store.writer.set_skipped(
                    ((s.path, s.reason) for s in skipped), replace_all=False
                )
        report.skipped = len(self.store.reader.skipped())

    def _targets(
        self, paths: Iterable[Path]
    ) -> tuple[list[FileEntry], list[Skipped], list[str], dict[str, FileRecord]]:
        """Entries, skipped files and removed paths for an explicit list of paths, and
        the manifest records they are compared with (`_records`)."""
        entries: dict[str, FileEntry] = {}
        skipped: dict[str, Skipped] = {}
        folders: dict[str, set[str]] = {}  # a folder's prefix -> the files under it now
        gone: list[str] = []
        scan = None
        for path in paths:
            relative = self.workspace.relative(path)
            if relative is None:
                continue
            if path.is_dir():
                # A folder appeared, moved in or changed: compare everything under it.
                if scan is None:
                    scan = self.workspace.scan()
                prefix = "" if relative in ("", ".") else relative.rstrip("/") + "/"
                under = {e.path: e for e in scan.files if e.path.startswith(prefix)}
                entries.update(under)
                skipped.update({s.path: s for s in scan.skipped if s.path.startswith(prefix)})
                folders.setdefault(prefix, set()).update(under)
                continue
            result = self.workspace.entry(path)
            if isinstance(result, FileEntry):
                entries[result.path] = result
            elif isinstance(result, Skipped):
                skipped[result.path] = result
            else:
                # Gone, or no longer part of the knowledge base; a deleted folder takes
                # every file under it.
                gone.append(relative)
        manifest = self._records([*entries, *skipped, *gone], folders, gone)
        removed: set[str] = set()
        for prefix, now in folders.items():
            removed.update(p for p in manifest if p.startswith(prefix) and p not in now)
        for relative in gone:
            prefix = relative.rstrip("/") + "/"
            removed.update(p for p in manifest if p == relative or p.startswith(prefix))
        return list(entries.values()), list(skipped.values()), sorted(removed), manifest

    def _records(
        self, paths: list[str], folders: dict[str, set[str]], gone: list[str]
    ) -> dict[str, FileRecord]:
        """What an explicit plan compares with: the records of `paths`, of the files under
        each folder (and under each gone path: it may have been one), and the unfinished
        records (their vectors are finished by this sync)."""
        reader = self.store.reader
        manifest = {record.path: record for record in reader.pending_files()}
        manifest.update(reader.records(paths))
        for prefix in {*folders, *(g.rstrip("/") + "/" for g in gone)}:
            manifest.update(reader.manifest() if prefix == "" else reader.records_under(prefix))
        return manifest

    def _prepare(
        self,
        entry: FileEntry,
        manifest: dict[str, FileRecord],
        report: SyncReport,
        skipped: list[Skipped],
        *,
        again: bool = False,
    ) -> _Written | None:
        """Read and chunk one changed file; None when its content did not change (unless
        `again`: a full sync chunks every file anew)."""
        try:
            raw, text = self.workspace.read(entry.path)
        except UnreadableFile as err:
            skipped.append(Skipped(entry.path, err.reason))
            if entry.path in manifest:
                report.chunks_removed += self.store.writer.delete_files([entry.path])
                report.files_removed += 1
            return None
        except OSError as err:
            report.errors.append(f"{entry.path}: {err}")
            return None
        sha = hashlib.sha256(raw).hexdigest()
        old = manifest.get(entry.path)
        if not again and old is not None and old.sha256 == sha:
            # Same content: only its size/mtime moved, or (pending) its rows are written
            # and phase 2 finishes its vectors.
            self.store.writer.touch(entry.path, len(raw), entry.mtime_ns)
            report.files_unchanged += 1
            return None
        try:
            prepared = prepare_file(text, entry.path, self.settings)
        except Exception as err:  # one file's bug must not stop the others (module doc)
            log.warning("indexer: %s could not be indexed", entry.path, exc_info=True)
            self._skip(
                entry.path, f"could not be indexed ({failure(err)})", manifest, report, skipped
            )
            return None
        del text
        if old is None:
            report.files_added += 1
        else:
            report.files_changed += 1
        record = FileRecord(
            path=entry.path,
            size=len(raw),
            mtime_ns=entry.mtime_ns,
            sha256=sha,
            title=prepared.title,
            chunk_count=len(prepared.chunks),
            state="pending",
        )
        return _Written(record, prepared.chunks, prepared.metadata, prepared.card)

    def _skip(
        self,
        path: str,
        reason: str,
        manifest: dict[str, FileRecord],
        report: SyncReport,
        skipped: list[Skipped],
    ) -> None:
        """Leave `path` out of the index, with `reason` for `kb status`."""
        skipped.append(Skipped(path, reason))
        if path in manifest:
            report.chunks_removed += self.store.writer.delete_files([path])
            report.files_removed += 1

    def _write(
        self,
        batch: list[_Written],
        manifest: dict[str, FileRecord],
        report: SyncReport,
        skipped: list[Skipped],
    ) -> None:
        """Write `batch` in one transaction; when SQLite refuses a value of one of its files
        (the transaction is rolled back), each file alone, skipping the ones refused."""
        if not batch:
            return
        try:
            self._write_files(batch)
        except Exception as err:
            if _store_error(err):
                raise
            for written in batch:
                try:
                    self._write_files([written])
                except Exception as one:
                    if _store_error(one):
                        raise
                    path = written.record.path
                    log.warning("indexer: the store refused %s", path, exc_info=True)
                    reason = f"could not be stored ({failure(one)})"
                    report.files_added -= path not in manifest
                    report.files_changed -= path in manifest
                    self._skip(path, reason, manifest, report, skipped)
            return
        log.debug("Wrote the text of %d files", len(batch))

    def _write_files(self, batch: list[_Written]) -> None:
        self.store.writer.write_texts(
            [(w.record, w.chunks) for w in batch],
            metadata={w.record.path: w.metadata for w in batch},
            cards={w.record.path: w.card for w in batch if w.card is not None},
        )

    # --- phase 2: vectors -----------------------------------------------------------------

    def pending_files(self, first: frozenset[str] = frozenset()) -> list[FileRecord]:
        """The files phase 2 has to finish, in the order it does them: those of `first`
        (root-relative paths: open in the editor), then the newest."""
        files = self.store.reader.pending_files()
        files.sort(key=lambda r: (r.path not in first, -r.mtime_ns, r.path))
        return files

    @property
    def vectors_in_flight(self) -> int:
        """Chunks whose vectors reached the index in files not complete yet (status)."""
        return self._vectors.in_flight

    def embed_pending(
        self,
        *,
        files: list[FileRecord] | None = None,
        tally: SyncTally | None = None,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
        report: SyncReport | None = None,
    ) -> SyncReport:
        """Phase 2 for every pending file (or `files`, from `pending_files`): the
        vectors, in bounded batches across files (`vector_pass.py`), counted on `tally`
        (else a tally of its own reports to `progress`). Stops between batches when
        `cancel` is set."""
        files = self.pending_files() if files is None else files
        return self._vectors.run(files, tally or progress, cancel, report or SyncReport())


def _store_error(err: BaseException) -> bool:
    """An error of the store itself (the disk, a locked or damaged database), which stops
    a sync, rather than SQLite refusing a value of one file (a string it cannot encode,
    a number it cannot hold, a constraint), which skips that file (`Indexer._write`)."""
    if isinstance(err, OSError | ReadOnlyStore | sqlite3.OperationalError | sqlite3.InternalError):
        return True
    return type(err) is sqlite3.DatabaseError  # "database disk image is malformed"
