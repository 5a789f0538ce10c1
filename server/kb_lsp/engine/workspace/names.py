"""File names are bytes until proven text.

git stores names as bytes and checks them out as they are, so a cloned repository can
hold `bad\\xff\\xfebytes.md`. Python hands such a name around as a str holding lone
surrogates (`os.fsdecode`'s "surrogateescape"), which SQLite, JSON and a terminal
cannot take: written to the store, one such name once stopped every sync. A name is
text when it is valid UTF-8; anything else is never stored, sent or printed as it is,
only in its escaped form, which is text and reversible: each byte that is not part of
valid UTF-8 as `\\xNN`, and a backslash as `\\\\` (`escaped`, undone by `name_bytes`).
The scan (`files.py`) skips such a file, with `NOT_TEXT` as the reason, under its
escaped path, like any other file it cannot index; the others are indexed as usual.
"""

from __future__ import annotations

import os
import re

NOT_TEXT = "the path is not valid UTF-8 (shown with \\xNN for the bytes that are not)"

_SURROGATE = re.compile("[\ud800-\udfff]")
# What `escaped` writes: a doubled backslash, or a byte of 0x80 and above.
_ESCAPE = re.compile(r"\\(\\|x[89a-f][0-9a-f])")


def is_text(path: str) -> bool:
    """Whether `path` came from bytes that are valid UTF-8 (no surrogate escapes)."""
    return path.isascii() or _SURROGATE.search(path) is None


def escaped(path: str) -> str:
    """The text form of a path that `is_text` refuses (itself when it is text)."""
    if is_text(path):
        return path
    try:
        raw = path.encode("utf-8", "surrogateescape")  # os.fsdecode's inverse
    except UnicodeEncodeError:  # a surrogate no file system decoding makes
        raw = path.encode("utf-8", "surrogatepass")
    return raw.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


def name_bytes(shown: str) -> bytes:
    """The bytes of the name whose escaped form is `shown` (`escaped`'s inverse for a
    name that is not text)."""

    def byte(match: re.Match[str]) -> str:
        token = match.group(1)
        return "\\" if token == "\\" else chr(0xDC00 + int(token[1:], 16))

    return os.fsencode(_ESCAPE.sub(byte, shown))
