"""The one confined, paged reader of the knowledge base's files: the agent's `read_file`
tool and the runtime's `read_file` (the MCP server's `read_file`, `open_result` and
resources) both read through here.

Only indexed files can be read. A path goes through `KnowledgeBase.resolve`, which
refuses absolute paths, `..` leaving the workspace and symbolic links leading out of it,
and must then be a file of the manifest: a file the knowledge base excludes (`.env`, a
50 MiB log) cannot be read either. The text comes from one confined descriptor
(`KnowledgeBase.read_text`), so a link swapped in after the check leads nowhere.

Lines are numbered from 1 here, as people and models count them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase
from kb_lsp.engine.workspace.files import PathOutsideWorkspace, UnreadableFile
from kb_lsp.errors import InvalidInput

PAGE_LINES = 200  # lines of one page at most
PAGE_CHARS = 12_000  # characters of one page at most (long lines end a page early)
SIMILAR_SHOWN = 5

__all__ = [
    "PAGE_CHARS",
    "PAGE_LINES",
    "LinesOutOfRange",
    "NotIndexed",
    "Page",
    "PathOutsideWorkspace",
    "UnreadableFile",
    "indexed_file",
    "page_of",
    "read_page",
]


class NotIndexed(InvalidInput, LookupError):
    """A path inside the workspace that is not a file of the knowledge base."""

    def __init__(self, path: str, similar: list[str]) -> None:
        if path.strip():
            hint = f" Did you mean: {', '.join(similar)}?" if similar else ""
            message = f"{path!r} is not a file of the knowledge base.{hint}"
        else:
            message = "A path is required, such as 'payments/mexico.md'."
        super().__init__(message)
        self.path = path
        self.similar = similar


class LinesOutOfRange(InvalidInput):
    """Lines the file does not have; the message says how many it has."""


@dataclass(frozen=True)
class Page:
    """Lines `start_line..end_line` (1-based, inclusive) of an indexed file.
    `end_line < start_line` only for an empty file."""

    info: FileInfo
    start_line: int
    end_line: int
    total_lines: int
    lines: tuple[str, ...]

    @property
    def next_start_line(self) -> int | None:
        """Where to read on, or None when the page reaches the end of the file."""
        return self.end_line + 1 if self.end_line < self.total_lines else None


def indexed_file(kb: KnowledgeBase, path: str) -> FileInfo:
    """The indexed file at a workspace path. Raises `PathOutsideWorkspace` (`..`, an
    absolute path, a link leading out) or `NotIndexed` (naming similar files)."""
    given = path.strip()
    if not given:
        raise NotIndexed(path, [])
    shown = kb.display_path(kb.resolve(given))
    info = kb.file_info(shown) if shown is not None else None
    if info is None:
        raise NotIndexed(given, _similar(kb, given))
    return info


def _similar(kb: KnowledgeBase, given: str) -> list[str]:
    stem = PurePosixPath(given.replace("\\", "/")).stem.lower()
    if not stem:
        return []
    return [f.path for f in kb.files() if stem in f.path.lower()][:SIMILAR_SHOWN]


def read_page(
    kb: KnowledgeBase,
    path: str,
    start_line: int = 1,
    end_line: int | None = None,
    *,
    max_lines: int | None = PAGE_LINES,
    max_chars: int | None = PAGE_CHARS,
    line_overhead: int = 0,
) -> Page:
    """A page of the indexed file at `path`, read from disk now. Raises what
    `indexed_file` raises, `UnreadableFile` (no longer a readable regular file inside the
    workspace, or over `kb.maxFileSize`), `OSError`, and `LinesOutOfRange`."""
    info = indexed_file(kb, path)
    return page_of(
        info,
        kb.read_text(info.path),
        start_line,
        end_line,
        max_lines=max_lines,
        max_chars=max_chars,
        line_overhead=line_overhead,
    )


def page_of(
    info: FileInfo,
    text: str,
    start_line: int = 1,
    end_line: int | None = None,
    *,
    max_lines: int | None = PAGE_LINES,
    max_chars: int | None = PAGE_CHARS,
    line_overhead: int = 0,
) -> Page:
    """Lines `start_line..end_line` of `text`, at most `max_lines` lines and `max_chars`
    characters (each line counted with `line_overhead` more, for the number a caller puts
    before it); a single longer line is cut. None: no limit."""
    lines = text.splitlines()
    total = len(lines)
    if total == 0:
        return Page(info, 1, 0, 0, ())
    if start_line < 1 or start_line > total:
        raise LinesOutOfRange(
            f"{info.path} has {total} lines; start_line {start_line} is past the end."
            if start_line > total
            else f"start_line {start_line} does not exist: lines are numbered from 1."
        )
    last = total if end_line is None else min(end_line, total)
    if last < start_line:
        raise LinesOutOfRange(f"end_line {end_line} is before start_line {start_line}.")
    if max_lines is not None:
        last = min(last, start_line + max_lines - 1)
    shown: list[str] = []
    size = 0
    for number in range(start_line, last + 1):
        line = lines[number - 1]
        cost = len(line) + line_overhead + 1
        if max_chars is not None and shown and size + cost > max_chars:
            last = number - 1
            break
        shown.append(line if max_chars is None else line[: max(1, max_chars - line_overhead)])
        size += cost
    return Page(info, start_line, last, total, tuple(shown))
