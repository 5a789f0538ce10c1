"""Text for a terminal: what `kb` prints never carries a control character.

Notes, file names, a model's answer and the values it extracted are other people's text,
and a terminal obeys what it is sent: `ESC ] 0 ; title BEL` retitles the window, `ESC [ 2
J` clears it, OSC 52 writes the clipboard, a carriage return or a newline in a file name
forges a result line. Everything the command line prints goes through `visible` (through
`out`, `out_line` and `err`, the only writers of `cli/`: `tests/unit/test_terminal_text.py` checks
it): control characters (C0 but tab and newline, DEL, C1) are shown as escapes (`\\x1b`,
`\\r`, `\\u009b`); a newline is kept only where the text is meant to have lines (an
answer, a listing built line by line), never inside one field (`visible(path)`). `--json`
escapes C0 (JSON must) and C1 and DEL as well (`json_text`), which `json.dumps` leaves
raw unless every non-ASCII character is escaped.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO

# C0 (but tab and newline), DEL and C1; newline apart, for text that has no lines.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS_AND_NEWLINE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_SHORT = {"\n": "\\n", "\r": "\\r"}
# What `json.dumps(ensure_ascii=False)` leaves raw: DEL and C1 (only inside strings).
_JSON_RAW = re.compile("[\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with every control character shown as an escape; `lines`: newlines (and
    CRLF, as a newline) kept, for text meant to have lines."""
    if lines:
        return _CONTROLS.sub(_escape, text.replace("\r\n", "\n"))
    return _CONTROLS_AND_NEWLINE.sub(_escape, text)


def _write(stream: TextIO, text: str, end: str, flush: bool) -> None:
    stream.write(visible(text, lines=True) + end)
    if flush:
        stream.flush()


def out(text: str = "", *, end: str = "\n", flush: bool = False) -> None:
    """`text` on stdout, made visible (its newlines kept)."""
    _write(sys.stdout, text, end, flush)


def out_line(text: str) -> None:
    """One line on stdout: every control character shown, a newline too."""
    out(visible(text))


def err(text: str = "", *, end: str = "\n", flush: bool = True) -> None:
    """`text` on stderr, made visible (its newlines kept)."""
    _write(sys.stderr, text, end, flush)


def json_text(value: Any) -> str:
    """`value` as `--json` prints it: indented, non-ASCII text as it is but for DEL and
    C1, escaped like C0."""
    dumped = json.dumps(value, indent=2, ensure_ascii=False)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)
