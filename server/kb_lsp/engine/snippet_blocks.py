"""A chunk's readable blocks (what `snippets.readable_blocks` makes of its text and a
snippet is cut from) and the form the store keeps them in, apart from the rules that make
them: a search reads stored blocks, and a reader of the store checks their version,
without compiling those rules' patterns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Bump with any change to what `snippets.readable_blocks` returns for a text (its rules,
# `markdown/rendered.py`, `links.wiki_display`): stored blocks are made again.
BLOCKS_VERSION = "1"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[*_`]?[A-Z0-9])")


@dataclass(frozen=True)
class Block:
    """One readable unit: a paragraph, a list item, a table row, a title or a code line."""

    text: str
    code: bool = False

    def sentences(self) -> list[str]:
        if self.code:
            return [self.text]
        return [s for s in _SENTENCE_END.split(self.text) if s.strip()]


# The stored form: one block a line, a flag character first (prose or code), `\\` and
# line ends escaped so that any text reads back as written.
_PROSE, _CODE = "p", "c"
_ESCAPED = re.compile(r"\\([\\n])")
_UNESCAPE = {"\\": "\\", "n": "\n"}


def encode_blocks(blocks: Sequence[Block]) -> str:
    """`blocks` as the store keeps them (`parse_blocks` reads them back); no blocks: ""."""
    return "\n".join(
        (_CODE if block.code else _PROSE) + block.text.replace("\\", "\\\\").replace("\n", "\\n")
        for block in blocks
    )


def parse_blocks(stored: str) -> list[Block]:
    """The blocks `encode_blocks` wrote."""
    if not stored:
        return []
    return [
        Block(
            _ESCAPED.sub(lambda m: _UNESCAPE[m.group(1)], line[1:]) if "\\" in line else line[1:],
            code=line[0] == _CODE,
        )
        for line in stored.split("\n")
    ]
