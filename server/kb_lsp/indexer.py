"""Incremental sync of one workspace root into its store.

`sync` compares the disk with the manifest — size and mtime first, then the sha256 of
the content — re-chunks only files whose content changed, and embeds only chunks whose
text hash the store has never seen: an unchanged paragraph, a renamed file or a moved
folder costs no embedding. Files that disappeared lose their chunks. Work is written in
batches (one SQLite transaction and one Chroma call per batch, see `store.py` for why a
crash in the middle is repaired by the next sync).

A chunk's text hash covers what is embedded: its heading path and its text, not the file
name, so a rename keeps every vector.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kb_lsp.config import Settings
from kb_lsp.embeddings import Embedder
from kb_lsp.markdown import parse_markdown
from kb_lsp.records import SyncProgress, SyncReport
from kb_lsp.store import FileRecord, NewChunk, Store
from kb_lsp.workspace import FileEntry, Skipped, UnreadableFile, WorkspaceRoot

log = logging.getLogger(__name__)

# A batch is flushed to the store at this many chunks or files, whichever comes first:
# big enough for the embedder to batch by length, small enough that progress moves.
BATCH_CHUNKS = 256
BATCH_FILES = 64

ProgressCallback = Callable[[SyncProgress], None]
# Texts embedded per call when a batch needs many: the chunk count moves inside big files.
EMBED_SLICE = 256


class _Counts:
    """The one progress of a sync: files done of a total fixed once the changes are
    known, chunks done of those read so far."""

    def __init__(self, callback: ProgressCallback | None, total: int) -> None:
        self._callback = callback
        self.total = total
        self.done = 0
        self.chunks_done = 0
        self.chunks_total = 0
        self.path: str | None = None

    def report(self) -> None:
        if self._callback is not None:
            self._callback(
                SyncProgress(
                    self.done,
                    self.total,
                    self.path,
                    chunks_done=self.chunks_done,
                    chunks_total=self.chunks_total,
                )
            )


def embedding_text(heading: str, text: str) -> str:
    """What is embedded for a chunk: its heading path gives a short passage its topic."""
    return f"{heading}\n{text}" if heading else text


def text_hash(heading: str, text: str) -> str:
    return hashlib.sha256(embedding_text(heading, text).encode("utf-8")).hexdigest()[:32]


@dataclass
class _Pending:
    record: FileRecord
    headings: list[str]
    texts: list[str]
    lines: list[tuple[int, int]]
    hashes: list[str]


class Indexer:
    """The single writer of one root's store."""

    def __init__(
        self, workspace: WorkspaceRoot, store: Store, embedder: Embedder, settings: Settings
    ) -> None:
        self.workspace = workspace
        self.store = store
        self.embedder = embedder
        self.settings = settings

    def sync(
        self,
        paths: Iterable[Path] | None = None,
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
        full: bool = False,
        report: SyncReport | None = None,
    ) -> SyncReport:
        started = time.perf_counter()
        report = report or SyncReport()
        self.store.repair_vectors()
        manifest = self.store.manifest()

        if paths is None:
            scan = self.workspace.scan()
            entries = scan.files
            skipped = list(scan.skipped)
            present = {entry.path for entry in entries}
            removed = [path for path in manifest if path not in present]
        else:
            entries, skipped, removed = self._targets(paths, manifest)

        # `full`: every file is read and chunked again (its vectors still come from the
        # cache), each replacing its old rows in one step, so searches meanwhile find
        # every file; the vector collection is then rebuilt beside the live one.
        changed = [
            entry
            for entry in entries
            if full
            or (record := manifest.get(entry.path)) is None
            or record.state != "ok"
            or record.size != entry.size
            or record.mtime_ns != entry.mtime_ns
        ]
        report.files_unchanged += len(entries) - len(changed)
        counts = _Counts(progress, len(changed) + len(removed))

        removed_skipped = [s.path for s in skipped if s.path in manifest]
        if removed or removed_skipped:
            report.chunks_removed += self.store.delete_files([*removed, *removed_skipped])
            report.files_removed += len(removed) + len(removed_skipped)
            counts.done += len(removed)
            counts.path = removed[-1] if removed else None
            counts.report()

        batch: list[_Pending] = []
        batch_chunks = 0
        for entry in changed:
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
            pending = self._prepare(entry, manifest, report, skipped, again=full)
            counts.done += 1
            counts.path = entry.path
            if pending is not None:
                batch.append(pending)
                batch_chunks += len(pending.texts)
                counts.chunks_total += len(pending.texts)
                if batch_chunks >= BATCH_CHUNKS or len(batch) >= BATCH_FILES:
                    self._flush(batch, report, counts)
                    batch, batch_chunks = [], 0
            counts.report()
        self._flush(batch, report, counts)
        if full and not report.cancelled:
            self.store.rebuild_vectors()

        if paths is None and not report.cancelled:
            self.store.set_skipped(((s.path, s.reason) for s in skipped), replace_all=True)
            self.store.forget_unused_vectors()
        else:
            # A file that was skipped and is fine again loses its reason; the ones
            # skipped in this sync are recorded again.
            self.store.clear_skipped(entry.path for entry in changed)
            if skipped:
                self.store.set_skipped(((s.path, s.reason) for s in skipped), replace_all=False)
        report.skipped = len(self.store.skipped())
        report.seconds += time.perf_counter() - started
        return report

    def _targets(
        self, paths: Iterable[Path], manifest: dict[str, FileRecord]
    ) -> tuple[list[FileEntry], list[Skipped], list[str]]:
        """Entries, skipped files and removed paths for an explicit list of paths."""
        entries: dict[str, FileEntry] = {}
        skipped: dict[str, Skipped] = {}
        removed: set[str] = set()
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
                removed.update(p for p in manifest if p.startswith(prefix) and p not in under)
                continue
            result = self.workspace.entry(path)
            if isinstance(result, FileEntry):
                entries[result.path] = result
            elif isinstance(result, Skipped):
                skipped[result.path] = result
            else:
                # Gone, or no longer part of the knowledge base; a deleted folder takes
                # every file under it.
                prefix = relative.rstrip("/") + "/"
                removed.update(p for p in manifest if p == relative or p.startswith(prefix))
        return list(entries.values()), list(skipped.values()), sorted(removed)

    def _prepare(
        self,
        entry: FileEntry,
        manifest: dict[str, FileRecord],
        report: SyncReport,
        skipped: list[Skipped],
        *,
        again: bool = False,
    ) -> _Pending | None:
        """Read and chunk one changed file; None when its content did not change (unless
        `again`: a full sync chunks every file anew)."""
        try:
            raw, text = self.workspace.read(entry.path)
        except UnreadableFile as err:
            skipped.append(Skipped(entry.path, err.reason))
            if entry.path in manifest:
                report.chunks_removed += self.store.delete_files([entry.path])
                report.files_removed += 1
            return None
        except OSError as err:
            report.errors.append(f"{entry.path}: {err}")
            return None
        sha = hashlib.sha256(raw).hexdigest()
        old = manifest.get(entry.path)
        if not again and old is not None and old.sha256 == sha and old.state == "ok":
            self.store.touch(entry.path, len(raw), entry.mtime_ns)
            report.files_unchanged += 1
            return None
        doc = parse_markdown(
            text,
            file_name=entry.abs_path.name,
            chunk_size=self.settings.chunk_size,
            chunk_overlap=self.settings.chunk_overlap,
        )
        if old is None:
            report.files_added += 1
        else:
            report.files_changed += 1
        headings = [" > ".join(chunk.heading_path) for chunk in doc.chunks]
        texts = [chunk.text for chunk in doc.chunks]
        return _Pending(
            record=FileRecord(
                path=entry.path,
                size=len(raw),
                mtime_ns=entry.mtime_ns,
                sha256=sha,
                title=doc.title,
                chunk_count=len(doc.chunks),
                state="pending",
            ),
            headings=headings,
            texts=texts,
            lines=[(chunk.start_line, chunk.end_line) for chunk in doc.chunks],
            hashes=[text_hash(h, t) for h, t in zip(headings, texts, strict=True)],
        )

    def _flush(self, batch: list[_Pending], report: SyncReport, counts: _Counts) -> None:
        if not batch:
            return
        all_hashes = [h for pending in batch for h in pending.hashes]
        vectors = self.store.cached_vectors(all_hashes)
        to_embed: dict[str, str] = {}
        for pending in batch:
            for heading, text, digest in zip(
                pending.headings, pending.texts, pending.hashes, strict=True
            ):
                if digest not in vectors and digest not in to_embed:
                    to_embed[digest] = embedding_text(heading, text)
        # Chunks with a cached vector are done at once; the others as they are embedded.
        counts.chunks_done += len(all_hashes) - len(to_embed)
        digests, texts = list(to_embed), list(to_embed.values())
        for start in range(0, len(texts), EMBED_SLICE):
            part = texts[start : start + EMBED_SLICE]
            embedded = self.embedder.embed_documents(part)
            for digest, vector in zip(digests[start : start + EMBED_SLICE], embedded, strict=True):
                vectors[digest] = np.asarray(vector, dtype=np.float32)
            counts.chunks_done += len(part)
            counts.report()
        report.chunks_embedded += len(to_embed)
        report.chunks_reused += len(all_hashes) - len(to_embed)
        self.store.write_files(
            [
                (
                    pending.record,
                    [
                        NewChunk(
                            index=i,
                            text=text,
                            text_hash=digest,
                            heading=heading,
                            start_line=start,
                            end_line=end,
                            vector=vectors[digest],
                        )
                        for i, (heading, text, digest, (start, end)) in enumerate(
                            zip(
                                pending.headings,
                                pending.texts,
                                pending.hashes,
                                pending.lines,
                                strict=True,
                            )
                        )
                    ],
                )
                for pending in batch
            ]
        )
        log.debug("Indexed %d files (%d chunks embedded)", len(batch), len(to_embed))
