"""The numbered list in its text form, as `kb search` prints it and `kb mcp`'s `search`
returns it: `1, path (filename match)`, then the heading, lines and passage. Each field is
one line of visible text (`terminal/text.py`): a newline or an escape sequence in a file
name or a note's text never makes a line of its own or reaches a terminal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kb_lsp.terminal.text import visible

if TYPE_CHECKING:
    from kb_lsp.protocol import SearchHit

__all__ = ["format_hits", "format_wire_hits"]


def format_hits(hits: Sequence[SearchHit]) -> str:
    from kb_lsp.protocol import dump

    return format_wire_hits([dump(hit) for hit in hits])


def format_wire_hits(hits: Sequence[Mapping[str, Any]]) -> str:
    """The same from hits as the wire has them (`kb search` answered by a server)."""
    if not hits:
        return "No matching files."
    lines = []
    for hit in hits:
        lines.append(f"{hit['n']}, {visible(hit['path'])} ({visible(hit['label'])})")
        heading = hit["heading"].rsplit(" > ", 1)[-1] if hit["heading"] else hit["title"]
        start, end = hit["range"]["start"]["line"], hit["range"]["end"]["line"]
        first, last = start + 1, max(end, start + 1)
        snippet = visible(hit["snippet"])
        lines.append(f'   ## {visible(heading)} — L{first}-L{last}: "{snippet}"')
    return "\n".join(lines)
