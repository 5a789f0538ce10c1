"""Inline Markdown as the words a reader sees, through markdown-it-py's CommonMark inline
parser: a heading's text (`document.py`) and a snippet line with markup (`snippets.py`).
Apart from `document.py` so that a search's snippets load markdown-it alone, not the
block parser's plugins and the chunker."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt

_inline_parser = MarkdownIt("commonmark")


def rendered_text(source: str) -> str:
    """Inline Markdown as the words it renders to: text and code kept, tags and markup
    dropped, runs of whitespace made one space."""
    parts: list[str] = []
    for token in _inline_parser.parseInline(source):
        _plain_text(token.children or [], parts)
    return " ".join("".join(parts).split())


def _plain_text(children: list[Any], parts: list[str]) -> None:
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            _plain_text(child.children or [], parts)
        # html_inline (tags, comments) and the open/close tokens add nothing.
