"""Hover on a workspace link in Markdown: the linked file's title, its key metadata (tags,
status, last change), heading path and the passage that best matches the link text.

A link is `[text](other.md)` (also `<other.md>`, `#anchors`, `"titles"`) or a bare
`other.md` / `notes/other.md` in prose. Targets resolve against the document's folder, a
leading `/` against its workspace folder, and a bare name also as a workspace path.
Web links and files outside the workspace get no hover.

Nothing here touches the disk on the event loop: a document the editor has not opened is
read on the query pool through `KnowledgeBase.read_text` (one confined descriptor, never
blocking on a named pipe), and the whole hover gives up after `HOVER_TIMEOUT` seconds
with no hover rather than hold anything up.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument

from kb_lsp.knowledge import FileInfo, KnowledgeBase
from kb_lsp.lsp.server import KbLanguageServer, uri_to_path
from kb_lsp.workspace import PathOutsideWorkspace, UnreadableFile

log = logging.getLogger(__name__)

HOVER_TIMEOUT = 10.0  # seconds: a hover that takes longer is not worth showing

MARKDOWN_SUFFIXES = (".md", ".markdown")
_LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\(\s*(?:<(?P<angled>[^>]+)>|(?P<plain>[^)\s]+))[^)]*\)")
_BARE = re.compile(r"(?<![\w/.\-(\[])(?P<path>[\w.\-/]*[\w\-]\.(?:md|markdown))(?![\w/])")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")


@dataclass(frozen=True)
class LinkAt:
    target: str
    text: str
    start: int  # code-point columns on the line
    end: int


def link_at(line: str, column: int) -> LinkAt | None:
    """The workspace link under `column` on `line`, if any."""
    for match in _LINK.finditer(line):
        if match.start() <= column < match.end():
            target = match.group("angled") or match.group("plain") or ""
            return LinkAt(target, match.group("text").strip(), match.start(), match.end())
    for match in _BARE.finditer(line):
        if match.start() <= column < match.end():
            return LinkAt(match.group("path"), "", match.start(), match.end())
    return None


def resolve_target(kb: KnowledgeBase, document: Path, target: str) -> str | None:
    """The workspace path a link points at, or None (web link, outside, not indexed)."""
    if _SCHEME.match(target) or target.startswith("#"):
        return None
    target = unquote(target.split("#", 1)[0].split("?", 1)[0]).strip()
    if not target.lower().endswith(MARKDOWN_SUFFIXES):
        return None
    candidates: list[Path] = []
    if target.startswith("/"):
        for root in kb.roots:
            if document == root or root in document.parents:
                candidates.append(root / target.lstrip("/"))
    else:
        candidates.append(document.parent / target)
    for candidate in candidates:
        path = kb.display_path(Path(candidate).resolve())
        if path is not None and kb.file_info(path) is not None:
            return path
    try:  # a bare `notes/other.md`: a workspace path
        kb.resolve(target)
    except Exception:
        return None
    return target if kb.file_info(target) is not None else None


def hover_text(kb: KnowledgeBase, info: FileInfo, query: str) -> str:
    lines = [f"**{info.title}** · `{info.path}`"]
    meta = kb.file_meta(info.path)
    if meta is not None:
        facts = [" ".join(f"`#{tag}`" for tag in meta.tags)] if meta.tags else []
        facts += [f"status: {meta.status}"] if meta.status else []
        facts += [f"modified {meta.modified}"] if meta.modified else []
        lines.append(" · ".join(facts))
    best = kb.search_in_file(info.path, query or info.title, limit=1)
    if best:
        hit = best[0]
        if hit.heading:
            lines.append(f"*{hit.heading}*")
        snippet = hit.snippet.strip()
        if snippet:
            lines.append("\n".join("> " + row for row in snippet.splitlines()))
    return "\n\n".join(lines)


def compute_hover(
    kb: KnowledgeBase, document: Path, line: str, column: int
) -> tuple[str, LinkAt] | None:
    link = link_at(line, column)
    if link is None:
        return None
    path = resolve_target(kb, document, link.target)
    if path is None:
        return None
    info = kb.file_info(path)
    if info is None:
        return None
    return hover_text(kb, info, link.text), link


def read_unopened(kb: KnowledgeBase, document: Path) -> str | None:
    """The text of a workspace document the editor has not opened, read confined; None
    for a document outside the workspace or one that is not a readable regular file."""
    shown = kb.display_path(document)
    if shown is None:
        return None
    try:
        return kb.read_text(shown)
    except (PathOutsideWorkspace, UnreadableFile) as err:
        log.info("no hover in %s: %s", shown, getattr(err, "reason", err))
        return None


async def hover(ls: KbLanguageServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    path = uri_to_path(uri)
    if path is None or path.suffix.lower() not in MARKDOWN_SUFFIXES:
        return None
    if not ls.runtime.opened.done():
        return None
    try:
        return await asyncio.wait_for(_hover(ls, params, uri, path), HOVER_TIMEOUT)
    except TimeoutError:
        log.warning("hover in %s gave up after %g s", path.name, HOVER_TIMEOUT)
        return None


async def _hover(
    ls: KbLanguageServer, params: types.HoverParams, uri: str, path: Path
) -> types.Hover | None:
    document = ls.workspace.text_documents.get(unquote(uri))
    if document is None:  # not open in the editor: read it, off the event loop
        text = await ls.read(ls.runtime.read, lambda kb: read_unopened(kb, path))
        if text is None:
            return None
        document = TextDocument(uri, text, position_codec=ls.workspace.position_codec)
    lines = document.lines
    if params.position.line >= len(lines):
        return None
    position = document.position_codec.position_from_client_units(lines, params.position)
    line = lines[position.line].rstrip("\r\n")
    found = await ls.read(
        ls.runtime.read, lambda kb: compute_hover(kb, path, line, position.character)
    )
    if found is None:
        return None
    text, link = found
    start = types.Position(line=params.position.line, character=link.start)
    end = types.Position(line=params.position.line, character=link.end)
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
        range=document.position_codec.range_to_client_units(
            lines, types.Range(start=start, end=end)
        ),
    )


def register(server: KbLanguageServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
