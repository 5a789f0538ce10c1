"""The numbered list in its text form, as `kb search` prints it and `kb mcp`'s `search`
returns it: `1, path (filename match)`, then the heading, lines and passage, then the
values a model extracted from the file, each with the line and words it was read from.
`kb search` has each field shown as one line of visible text (`terminal/text.visible`): a
newline or an escape sequence in a file name, a note's text or a model's value never
makes a line of its own or reaches a terminal."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb_lsp.protocol import SearchHit

__all__ = ["format_hits", "format_wire_hits", "quote_words"]


def format_hits(hits: Sequence[SearchHit]) -> str:
    from kb_lsp.protocol import dump

    return format_wire_hits([dump(hit) for hit in hits])


def format_wire_hits(hits: Sequence[Mapping[str, Any]], shown: Callable[[str], str] = str) -> str:
    """The same from hits as the wire has them (`kb search` answered by a server), each
    field as `shown` makes it."""
    if not hits:
        return "No matching files."
    lines = []
    for hit in hits:
        lines.append(f"{hit['n']}, {shown(hit['path'])} ({shown(hit['label'])})")
        heading = hit["heading"].rsplit(" > ", 1)[-1] if hit["heading"] else hit["title"]
        start, end = hit["range"]["start"]["line"], hit["range"]["end"]["line"]
        first, last = start + 1, max(end, start + 1)
        snippet = shown(hit["snippet"])
        lines.append(f'   ## {shown(heading)} — L{first}-L{last}: "{snippet}"')
        meta = hit.get("meta") or {}
        for name, values in (meta.get("extracted") or {}).items():
            for value in values:
                line = value["range"]["start"]["line"] + 1
                by = shown(str(meta.get("extractedBy")))
                lines.append(
                    f"   {shown(name)}: {shown(str(value['value']))} (extracted by {by}, "
                    f"from L{line}: {shown(quote_words(value['evidence']))})"
                )
    return "\n".join(lines)


def quote_words(words: str, limit: int = 120) -> str:
    """A note's words as a short quote on one line."""
    flat = " ".join(words.split())
    return f"“{flat if len(flat) <= limit else flat[: limit - 1] + '…'}”"
