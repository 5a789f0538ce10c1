"""A workspace file for a caller: the file a path or URI names, a page of its lines or
its whole text read confined (`engine/reading.py`), the files related to it; the
engine's refusals as `InvalidInput` worded for the caller."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urlsplit

from kb_lsp.engine import reading
from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase, NotIndexed
from kb_lsp.engine.workspace.files import PathOutsideWorkspace, UnreadableFile
from kb_lsp.errors import InvalidInput
from kb_lsp.protocol import SearchHit

T = TypeVar("T")


@dataclass(frozen=True)
class FileText:
    """Some lines of a workspace file (`Runtime.read_file`)."""

    path: str
    uri: str
    start_line: int  # 1-based, inclusive
    end_line: int
    total_lines: int
    text: str

    @property
    def next_start_line(self) -> int | None:
        """Where to read on, or None when these lines reach the end of the file."""
        return self.end_line + 1 if self.end_line < self.total_lines else None


def confined(path: str, read: Callable[[], T]) -> T:
    """`read()`, with the reader's refusals as `InvalidInput` worded for the caller."""
    try:
        return read()
    except PathOutsideWorkspace as err:
        raise InvalidInput(
            f"Refused: {err}. Only files inside the workspace's knowledge base can be read; "
            "give a path relative to the workspace, as search shows them."
        ) from err
    except (reading.NotIndexed, reading.LinesOutOfRange) as err:
        raise InvalidInput(str(err)) from err
    except UnreadableFile as err:
        raise InvalidInput(f"{path} cannot be read: {err.reason}") from err
    except OSError as err:
        raise InvalidInput(f"{path} cannot be read now: {err.strerror or err}") from err


def page(
    kb: KnowledgeBase,
    path: str,
    start_line: int | None,
    end_line: int | None,
    *,
    max_lines: int | None,
    max_chars: int | None,
) -> FileText:
    """`Runtime.read_file` on an open knowledge base."""
    lines = confined(
        path,
        lambda: reading.read_page(
            kb,
            path,
            1 if start_line is None else start_line,
            end_line,
            max_lines=max_lines,
            max_chars=max_chars,
        ),
    )
    return FileText(
        path=lines.info.path,
        uri=lines.info.uri,
        start_line=lines.start_line,
        end_line=lines.end_line,
        total_lines=lines.total_lines,
        text="\n".join(lines.lines),
    )


def whole(kb: KnowledgeBase, path: str) -> tuple[FileInfo, str]:
    """`Runtime.file_text` on an open knowledge base."""

    def read() -> tuple[FileInfo, str]:
        info = reading.indexed_file(kb, path)
        return info, kb.read_text(info.path)

    return confined(path, read)


def given_file(path: str | None, uri: str | None) -> str | Path:
    """The file a caller names: a workspace path as search shows it, else a file: URI
    (`InvalidInput` for anything else)."""
    if path:
        return path
    if uri:
        parts = urlsplit(uri)
        if parts.scheme != "file":
            raise InvalidInput(f"{uri}: only file: URIs are in the workspace")
        from urllib.request import url2pathname  # 40 ms to import: only here

        return Path(url2pathname(unquote(parts.path)))
    raise InvalidInput("kb/related: give the file as `uri` or `path`")


def related(
    kb: KnowledgeBase, given: str | Path, *, limit: int, exclude_linked: bool
) -> tuple[str, list[SearchHit]]:
    """The workspace path of `given` and the files nearest to it (`Runtime.related`)."""
    path = given if isinstance(given, str) else kb.display_path(given.resolve())
    if path is None:
        raise InvalidInput(f"{given} is not inside the workspace")
    try:
        hits = kb.related(path, limit=limit, exclude_linked=exclude_linked)
    except (NotIndexed, PathOutsideWorkspace) as err:
        raise InvalidInput(str(err)) from err
    return path, hits
