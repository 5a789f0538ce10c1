"""Whether a file on disk is the one the index holds: what a sync reads again
(`Indexer.plan`) and what lets a one-shot keyword search answer without one
(`runtime/quick_search.py`) — one rule for both."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.engine.store.catalog import FileRecord
from kb_lsp.engine.workspace.files import FileEntry, WorkspaceRoot

if TYPE_CHECKING:
    from kb_lsp.engine.store.reader import TextReader


def needs_reading(entry: FileEntry, record: FileRecord | None) -> bool:
    """A sync reads `entry` again: new, changed on disk, or left unfinished."""
    return (
        record is None
        or record.state != "ok"
        or record.size != entry.size
        or record.mtime_ns != entry.mtime_ns
    )


def current(workspace: WorkspaceRoot, reader: TextReader) -> bool:
    """Whether a sync of the whole workspace would find nothing to do: every file on disk
    indexed as it is, complete, none gone, and the same files skipped for the same
    reasons."""
    scan = workspace.scan()
    manifest = reader.manifest()
    if len(scan.files) != len(manifest):
        return False
    if any(needs_reading(entry, manifest.get(entry.path)) for entry in scan.files):
        return False
    return {(item.path, item.reason) for item in scan.skipped} == set(reader.skipped())
