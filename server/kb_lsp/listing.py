"""The numbered list in its text form, as `kb search` prints it and `kb mcp`'s `search`
returns it: `1, path (filename match)`, then the heading, lines and passage."""

from __future__ import annotations

from collections.abc import Sequence

from kb_lsp.protocol import SearchHit

__all__ = ["format_hits"]


def format_hits(hits: Sequence[SearchHit]) -> str:
    if not hits:
        return "No matching files."
    lines = []
    for hit in hits:
        lines.append(f"{hit.n}, {hit.path} ({hit.label})")
        heading = hit.heading.rsplit(" > ", 1)[-1] if hit.heading else hit.title
        first, last = hit.range.start.line + 1, max(hit.range.end.line, hit.range.start.line + 1)
        lines.append(f'   ## {heading} — L{first}-L{last}: "{hit.snippet}"')
    return "\n".join(lines)
