"""What a link in a note points at, for a preview (the editor's hover): the linked file's
title, its key metadata (tags, status, last change), the values a model extracted from
it with the line and words each was read from, heading path and the passage that best
matches the link text.

A link is `[text](other.md)` (also `<other.md>`, `#anchors`, `"titles"`) or a bare
`other.md` / `notes/other.md` in prose (`metadata/links.py`). Targets resolve against
the document's folder, a leading `/` against its workspace folder, and a bare name also
as a workspace path. Web links and files outside the workspace get no preview.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase
from kb_lsp.engine.metadata.links import bare_paths, is_external, markdown_links
from kb_lsp.engine.workspace.files import PathOutsideWorkspace, UnreadableFile
from kb_lsp.protocol import ExtractedValue

log = logging.getLogger(__name__)

MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class LinkAt:
    target: str
    text: str
    start: int  # code-point columns on the line
    end: int


def link_at(line: str, column: int) -> LinkAt | None:
    """The workspace link under `column` on `line`, if any."""
    for match in (*markdown_links(line), *bare_paths(line)):
        if match.start <= column < match.end:
            return LinkAt(match.target, match.text, match.start, match.end)
    return None


def resolve_target(kb: KnowledgeBase, document: Path, target: str) -> str | None:
    """The workspace path a link points at, or None (web link, outside, not indexed)."""
    if is_external(target):
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
    meta = kb.file_reads.file_meta(info.path)
    if meta is not None:
        facts = [" ".join(f"`#{tag}`" for tag in meta.tags)] if meta.tags else []
        facts += [f"status: {meta.status}"] if meta.status else []
        facts += [f"modified {meta.modified}"] if meta.modified else []
        lines.append(" · ".join(facts))
        if meta.extracted:
            lines.append(extracted_lines(meta.extracted, meta.extracted_by))
    best = kb.search_in_file(info.path, query or info.title, limit=1)
    if best:
        hit = best[0]
        if hit.heading:
            lines.append(f"*{hit.heading}*")
        snippet = hit.snippet.strip()
        if snippet:
            lines.append("\n".join("> " + row for row in snippet.splitlines()))
    return "\n\n".join(lines)


def extracted_lines(extracted: dict[str, list[ExtractedValue]], model: str | None) -> str:
    """Which values a model read from the text, which model (not the author's words),
    and where each was read: `counterparty: Banorte — from line 12: “… sent to
    Banorte's H2H …”`."""
    rows = [f"extracted by {model or 'a model'}:"]
    for name, values in extracted.items():
        for value in values:
            line = value.range.start.line + 1
            rows.append(f"- {name}: {value.value} — from line {line}: {_quote(value.evidence)}")
    return "\n".join(rows)


def _quote(words: str, limit: int = 120) -> str:
    # One line, however the note wraps it (`listing.quote_words` is the front ends' own).
    flat = " ".join(words.split())
    return f"“{flat if len(flat) <= limit else flat[: limit - 1] + '…'}”"


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
