"""A note's text folded for comparison with what a model quotes from it, with the way back
to the note's own offsets.

A model copying a sentence changes what does not matter to a reader: case, runs of
spaces and line breaks, typographic quotes and dashes, Markdown's `*` and backticks.
Folding both sides the same way lets those copies match, and `origin` maps every folded
character back to the character of the note it came from, so a match is a span of the
note itself (offsets, lines, and its own words).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

# Characters that stand for another in a copy: curly quotes, primes, dashes, non-breaking
# and thin spaces.
_SAME = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
    }
)
# Markup a copy leaves out: emphasis and code marks.
_MARKUP = frozenset("*`")


@dataclass(frozen=True)
class Folded:
    """`text` folded; `origin[i]` is the offset in the original of folded character `i`
    (one more entry: the original's length)."""

    text: str
    origin: tuple[int, ...]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original offsets of the folded range `[start, end)` (end > start)."""
        return self.origin[start], self.origin[end - 1] + 1


def fold(text: str) -> Folded:
    out: list[str] = []
    origin: list[int] = []
    space = True  # at the start: leading whitespace goes
    for index, char in enumerate(text):
        if char.isspace():
            if not space:
                out.append(" ")
                origin.append(index)
            space = True
            continue
        if char in _MARKUP:
            continue
        for piece in unicodedata.normalize("NFKC", char).translate(_SAME).casefold():
            if piece.isspace():  # NFKC makes some characters spaces (U+00A0)
                if not space:
                    out.append(" ")
                    origin.append(index)
                space = True
                continue
            out.append(piece)
            origin.append(index)
            space = False
    if out and out[-1] == " ":
        out.pop()
        origin.pop()
    origin.append(len(text))
    return Folded("".join(out), tuple(origin))


def folded(text: str) -> str:
    return fold(text).text


def is_word_at(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` is whole words: no letter or digit just outside it."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not before.isalnum() and not after.isalnum()


def find_words(text: str, words: str, *, plural: bool = False) -> int:
    """Where `words` occurs in `text` as whole words (both folded), or -1. `plural`: a
    trailing `s` or `es` on the last word still counts ("postmortems")."""
    if not words:
        return -1
    start = text.find(words)
    while start != -1:
        end = start + len(words)
        if is_word_at(text, start, end):
            return start
        if plural:
            for tail in ("s", "es"):
                if text.startswith(tail, end) and is_word_at(text, start, end + len(tail)):
                    return start
        start = text.find(words, start + 1)
    return -1
