"""The file scan and the `kb://` resource addresses, in the MCP server's terms.

Reading files is the runtime's (`Runtime.read_file` / `Runtime.file_text`, one confined
reader for every front end: `kb_lsp/reading.py`); this module only shapes what the
runtime returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import PurePosixPath
from urllib.parse import quote, unquote, urlsplit

from kb_lsp.engine.knowledge import FileInfo
from kb_lsp.globs import GlobList
from kb_lsp.protocol import FileEntry, FileLines, FileListResponse, Range, SkippedFile
from kb_lsp.runtime import FileText

SCHEME = "kb"


class Refused(ValueError):
    """An argument the caller can fix; the message says how."""


def file_lines(read: FileText, *, n: int | None = None) -> FileLines:
    """The wire shape of lines the runtime read (`n`: the result they belong to)."""
    # 0-based, as in kb/openResult; an empty file's lines are its line 0.
    first, last = read.start_line - 1, max(read.start_line, read.end_line) - 1
    return FileLines(
        uri=read.uri,
        path=read.path,
        range=Range.of_lines(first, last),
        start_line=read.start_line,
        end_line=read.end_line,
        total_lines=read.total_lines,
        text=read.text,
        next_start_line=read.next_start_line,
        n=n,
    )


def parse_since(text: str) -> datetime:
    """An ISO 8601 date or date-time; a time without a zone is taken as UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise Refused(
            f"changed_since {text!r} is not an ISO 8601 date or date-time; give e.g. "
            "'2026-10-01' or '2026-10-01T14:30:00Z'."
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def modified(mtime_ns: int) -> str:
    """A file's indexed modification time as ISO 8601 in UTC (`…Z`)."""
    moment = datetime.fromtimestamp(mtime_ns / 1e9, UTC).isoformat(timespec="seconds")
    return moment.replace("+00:00", "Z")


def list_files(
    infos: Sequence[FileInfo],
    glob: str | None,
    since: datetime | None,
    skipped: list[SkippedFile],
) -> FileListResponse:
    """The scan: the indexed files (`Runtime.files(glob)`) changed at or after `since`,
    and the skipped files matching `glob`, with their reasons."""
    pattern = glob.strip() if glob and glob.strip() else None
    cutoff = None if since is None else int(since.timestamp() * 1e9)
    entries = [
        FileEntry(
            path=info.path,
            uri=info.uri,
            title=info.title,
            size=info.size,
            modified=modified(info.mtime_ns),
            sha256=info.sha256,
            chunks=info.chunks,
        )
        for info in infos
        if cutoff is None or info.mtime_ns >= cutoff
    ]
    if pattern is not None:
        spec = GlobList([pattern])
        skipped = [item for item in skipped if spec.matches(item.path)]
    return FileListResponse(files=entries, skipped=skipped)


# --- kb:// resources ----------------------------------------------------------------------


def resource_uri(info: FileInfo) -> str:
    """`kb://<root folder name>/<path inside that root>`, percent-encoded."""
    root = PurePosixPath(info.root).name or "root"
    return f"{SCHEME}://{quote(root, safe='')}/{quote(_inside(info), safe='/')}"


def file_of_resource(infos: Sequence[FileInfo], uri: str) -> FileInfo | None:
    """The indexed file a `kb://` address names, or None."""
    parts = urlsplit(uri)
    if parts.scheme != SCHEME:
        return None
    wanted = f"{SCHEME}://{parts.netloc}{quote(unquote(parts.path), safe='/')}"
    return next((info for info in infos if resource_uri(info) == wanted), None)


def _inside(info: FileInfo) -> str:
    """The file's path relative to its own root (without a multi-root prefix)."""
    absolute = unquote(urlsplit(info.uri).path)
    root = PurePosixPath(info.root).as_posix().rstrip("/") + "/"
    return absolute[len(root) :] if absolute.startswith(root) else info.path
