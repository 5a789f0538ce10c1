"""Confined, paged reads of the knowledge base's files, the file scan, and the `kb://`
resource addresses. Functions of a `KnowledgeBase` (run them through `Runtime.read`).

Only indexed files can be read: every path goes through `KnowledgeBase.resolve`, which
refuses absolute paths, `..` leaving the workspace and symbolic links leading out of it,
and must then be a file of the manifest — so a file the knowledge base excludes (`.env`,
a 50 MiB log) cannot be read either. The text is read through one confined descriptor
(`KnowledgeBase.read_text`), so a link swapped in after the check leads nowhere.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import PurePosixPath
from urllib.parse import quote, unquote, urlsplit

import pathspec

from kb_lsp.knowledge import FileInfo, KnowledgeBase
from kb_lsp.protocol import FileEntry, FileLines, FileListResponse, Range, SkippedFile
from kb_lsp.workspace import PathOutsideWorkspace, UnreadableFile

PAGE_LINES = 200  # lines of one read_file page at most
PAGE_CHARS = 12_000  # characters of one page at most (long lines end a page early)
SCHEME = "kb"


class Refused(ValueError):
    """A path or range the caller can fix; the message says how."""


def indexed_file(kb: KnowledgeBase, path: str) -> FileInfo:
    """The indexed file at a workspace path, or `Refused` saying why not."""
    given = path.strip()
    if not given:
        raise Refused("Give a workspace path such as 'payments/mexico.md' (see list_files).")
    try:
        real = kb.resolve(given)
    except PathOutsideWorkspace as err:
        raise Refused(
            f"Refused: {err}. Only files inside the workspace's knowledge base can be read; "
            "give a path relative to the workspace, as search and list_files show them."
        ) from err
    shown = kb.display_path(real)
    info = kb.file_info(shown) if shown is not None else None
    if info is None:
        raise Refused(f"{given!r} is not a file of the knowledge base.{_similar(kb, given)}")
    return info


def _similar(kb: KnowledgeBase, given: str) -> str:
    stem = PurePosixPath(given.replace("\\", "/")).stem.lower()
    matches = [f.path for f in kb.files() if stem and stem in f.path.lower()][:5]
    if matches:
        return f" Did you mean: {', '.join(matches)}?"
    return " Use list_files or search to find files."


def read_page(
    kb: KnowledgeBase,
    info: FileInfo,
    start_line: int = 1,
    end_line: int | None = None,
    *,
    n: int | None = None,
) -> FileLines:
    """Lines `start_line..end_line` (1-based, inclusive) of an indexed file, at most
    `PAGE_LINES` lines and `PAGE_CHARS` characters; `next_start_line` says where to go on."""
    lines = read_text(kb, info).splitlines()
    total = len(lines)
    if total == 0:
        return FileLines(
            uri=info.uri, path=info.path, range=Range.of_lines(0, 0), start_line=1,
            end_line=0, total_lines=0, text="", n=n,
        )  # fmt: skip
    if start_line > total:
        raise Refused(f"{info.path} has {total} lines; start_line {start_line} is past the end.")
    last = total if end_line is None else min(end_line, total)
    if last < start_line:
        raise Refused(f"end_line {end_line} is before start_line {start_line}.")
    last = min(last, start_line + PAGE_LINES - 1)
    shown: list[str] = []
    size = 0
    for number in range(start_line, last + 1):
        line = lines[number - 1]
        if shown and size + len(line) + 1 > PAGE_CHARS:
            last = number - 1
            break
        shown.append(line[:PAGE_CHARS])
        size += len(line) + 1
    return FileLines(
        uri=info.uri,
        path=info.path,
        range=Range.of_lines(start_line - 1, last - 1),
        start_line=start_line,
        end_line=last,
        total_lines=total,
        text="\n".join(shown),
        next_start_line=last + 1 if last < total else None,
        n=n,
    )


def read_text(kb: KnowledgeBase, info: FileInfo) -> str:
    """The file as it is on disk now, through one confined descriptor."""
    try:
        return kb.read_text(info.path)
    except (PathOutsideWorkspace, UnreadableFile) as err:
        raise Refused(f"{info.path} cannot be read: {err}") from err
    except OSError as err:
        raise Refused(f"{info.path} cannot be read now: {err.strerror or err}") from err


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
    kb: KnowledgeBase, glob: str | None, since: datetime | None, skipped: list[SkippedFile]
) -> FileListResponse:
    """The scan: indexed files (matching `glob`, changed at or after `since`) and the
    skipped files matching `glob`, with their reasons."""
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
        for info in kb.files(pattern)
        if cutoff is None or info.mtime_ns >= cutoff
    ]
    if pattern is not None:
        spec = pathspec.GitIgnoreSpec.from_lines([pattern])
        skipped = [item for item in skipped if spec.match_file(item.path)]
    return FileListResponse(files=entries, skipped=skipped)


# --- kb:// resources ----------------------------------------------------------------------


def resource_uri(info: FileInfo) -> str:
    """`kb://<root folder name>/<path inside that root>`, percent-encoded."""
    root = PurePosixPath(info.root).name or "root"
    return f"{SCHEME}://{quote(root, safe='')}/{quote(_inside(info), safe='/')}"


def file_of_resource(kb: KnowledgeBase, uri: str) -> FileInfo | None:
    """The indexed file a `kb://` address names, or None."""
    parts = urlsplit(uri)
    if parts.scheme != SCHEME:
        return None
    wanted = f"{SCHEME}://{parts.netloc}{quote(unquote(parts.path), safe='/')}"
    return next((info for info in kb.files() if resource_uri(info) == wanted), None)


def _inside(info: FileInfo) -> str:
    """The file's path relative to its own root (without a multi-root prefix)."""
    absolute = unquote(urlsplit(info.uri).path)
    root = PurePosixPath(info.root).as_posix().rstrip("/") + "/"
    return absolute[len(root) :] if absolute.startswith(root) else info.path
