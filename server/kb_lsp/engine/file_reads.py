"""A knowledge base's files as the front ends read them: the indexed files and one
file's record, metadata, passages, text on disk and cached summary — each under its
workspace path (`roots.py`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from kb_lsp.engine.metadata.hits import hit_meta
from kb_lsp.engine.records import StoredChunk
from kb_lsp.engine.roots import RootIndex, Roots
from kb_lsp.engine.store import FileRecord
from kb_lsp.engine.workspace.files import PathOutsideWorkspace
from kb_lsp.globs import GlobList
from kb_lsp.protocol import HitMeta


@dataclass(frozen=True)
class FileInfo:
    """An indexed file as the front ends list it."""

    path: str  # workspace-relative (see `KnowledgeBase.display_path`)
    root: str  # absolute root path
    uri: str
    title: str
    chunks: int
    size: int
    sha256: str
    aliases: tuple[str, ...] = ()  # front-matter aliases: names people use for the file
    mtime_ns: int = 0  # of the indexed version (the manifest's), nanoseconds


class FileReads:
    """The files of every root, read from their stores and from the disk."""

    def __init__(self, roots: Roots) -> None:
        self._roots = roots

    def files(self, pattern: str | None = None) -> list[FileInfo]:
        """Indexed files, optionally filtered by a glob on the path."""
        spec = GlobList([pattern]) if pattern else None
        out = []
        for index in self._roots.snapshot():
            reader = index.store.reader
            records = [
                record
                for record in reader.manifest().values()
                if spec is None or spec.matches(index.prefix + record.path)
            ]
            cards = reader.cards(r.path for r in records)
            for record in records:
                card = cards.get(record.path)
                out.append(file_info(index, record, card.aliases if card else ()))
        return sorted(out, key=lambda info: info.path)

    def file_info(self, path: str) -> FileInfo | None:
        try:
            index, relative = self._roots.locate(path)
        except PathOutsideWorkspace:
            return None
        record = index.store.reader.file(relative)
        if record is None:
            return None
        card = index.store.reader.cards([relative]).get(relative)
        return file_info(index, record, card.aliases if card else ())

    def file_meta(self, path: str) -> HitMeta | None:
        """A file's key metadata (tags, status, modified), as search hits carry it."""
        try:
            index, relative = self._roots.locate(path)
        except PathOutsideWorkspace:
            return None
        if index.store.reader.file(relative) is None:
            return None
        return hit_meta(index.store.reader, [relative]).get(relative)

    def chunks_of(self, path: str) -> list[StoredChunk]:
        index, relative = self._roots.locate(path)
        return [
            replace(chunk, path=index.prefix + chunk.path)
            for chunk in index.store.reader.chunks_of(relative)
        ]

    def resolve(self, path: str) -> Path:
        """The real absolute path of a workspace path; raises `PathOutsideWorkspace`
        (from `workspace.py`) for `..`, absolute paths or symlinks leading out."""
        index, relative = self._roots.locate(path)
        return index.workspace.resolve_inside(relative)

    def read_text(self, path: str) -> str:
        """The text of a workspace file as it is on disk now, read from one confined
        descriptor (`WorkspaceRoot.read`: a regular file inside its root, within
        `kb.maxFileSize`). Raises `PathOutsideWorkspace` or `UnreadableFile`."""
        index, relative = self._roots.locate(path)
        index.workspace.resolve_inside(relative)  # its message for `..` and absolute paths
        return index.workspace.read(relative)[1]

    def cached_summary(self, path: str, model: str) -> str | None:
        """A summary stored for this file's current content hash and `model`."""
        index, relative = self._roots.locate(path)
        reader = index.store.reader
        record = reader.file(relative)
        return None if record is None else reader.cached_summary(record.sha256, model)

    def store_summary(self, path: str, model: str, summary: str) -> None:
        index, relative = self._roots.locate(path)
        record = index.store.reader.file(relative)
        if record is not None and not index.store.read_only:
            index.store.writer.store_summary(record.sha256, model, summary)


def file_info(index: RootIndex, record: FileRecord, aliases: tuple[str, ...] = ()) -> FileInfo:
    return FileInfo(
        path=index.prefix + record.path,
        root=str(index.root),
        uri=(index.root / record.path).as_uri(),
        title=record.title,
        chunks=record.chunk_count,
        size=record.size,
        sha256=record.sha256,
        aliases=aliases,
        mtime_ns=record.mtime_ns,
    )
