"""JSON-RPC bodies read within bounds, shared by the LSP stream (`lsp/jsonrpc.py`) and the
local socket (`listener.py`), which must not import pygls.

A body nesting deeper than `MAX_DEPTH` or holding an integer of more than
`MAX_INT_DIGITS` digits is not parsed (Python's parser would recurse, or build a huge
number). Such a request is still a request: `request_id` finds its top-level `"id"` (and
`"method"`) without parsing the rest, so the answer goes to the request the client waits
for — -32600 for too deep, -32602 for a number too large — rather than to `id: null`,
which leaves the client's request pending for ever.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from kb_lsp.errors import INVALID_REQUEST, PARSE_ERROR, InvalidInput

INVALID_PARAMS = InvalidInput.code

MAX_DEPTH = 64
MAX_INT_DIGITS = 20

_LONG_NUMBER = re.compile(rb"\d{%d}" % (MAX_INT_DIGITS + 1))
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
# The tokens `request_id` walks: a string, a run of opening or of closing brackets, or
# anything else up to the next of those (colons, commas, numbers, literals, blanks).
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{]+|[\]}]+|[^"\[\]{}]+', re.DOTALL)
_INT = re.compile(rf"-?\d{{1,{MAX_INT_DIGITS}}}")


class MessageError(ValueError):
    """A body that cannot be read as one JSON value within the bounds; `code` is what a
    request with a recoverable id is answered (-32700 when there is none)."""

    def __init__(self, message: str, code: int = PARSE_ERROR) -> None:
        super().__init__(message)
        self.code = code


def _too_deep() -> MessageError:
    return MessageError(f"arrays and objects nested more than {MAX_DEPTH} deep", INVALID_REQUEST)


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise MessageError(
            f"an integer of {digits} digits (at most {MAX_INT_DIGITS})", INVALID_PARAMS
        )
    return int(text)


def _no_constant(name: str) -> Any:
    raise MessageError(f"{name} is not JSON")


def max_depth(body: bytes) -> int:
    """How deep arrays and objects nest in `body` (strings left out), at C speed."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    deepest = level = 0
    step = 1 << 20
    for start in range(0, len(brackets), step):
        part = np.frombuffer(brackets, np.uint8, min(step, len(brackets) - start), start)
        # '[' 0x5B and '{' 0x7B have bit 1 set; ']' 0x5D and '}' 0x7D do not.
        moves = ((part >> 1) & 1).astype(np.int64) * 2 - 1
        levels = np.cumsum(moves) + level
        deepest = max(deepest, int(levels.max()))
        level = int(levels[-1])
    return deepest


def parse_json(body: bytes) -> Any:
    """One JSON value within the bounds; `MessageError` if not."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MessageError(f"the message is not valid UTF-8 (byte {err.start})") from None
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and max_depth(body) > MAX_DEPTH:
        raise _too_deep()
    parse_int = _bounded_int if _LONG_NUMBER.search(body) else int
    try:
        return json.loads(text, parse_int=parse_int, parse_constant=_no_constant)
    except MessageError:
        raise
    except RecursionError:
        raise _too_deep() from None
    except ValueError as err:
        raise MessageError(f"not valid JSON ({err})") from None


def _scalar(text: str) -> Any:
    """A top-level member's value written as `text` (a string token, or what follows a
    colon up to the next comma): str, int, or None for anything else."""
    text = text.strip().removesuffix(",").strip()
    if text.startswith('"'):
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, str) else None
    return int(text) if _INT.fullmatch(text) else None


def request_id(body: bytes) -> tuple[int | str | None, str | None]:
    """The top-level `"id"` (a string, or an integer within the bounds) and `"method"` of
    an object `body` that could not be parsed, or None for each not found. One pass over
    the tokens, never recursing however deep the rest nests."""
    found: dict[str, Any] = {}
    depth = 0
    key: str | None = None  # a top-level key whose value comes next
    expect_key = False
    for match in _TOKEN.finditer(body):
        token = match.group()
        first = token[:1]
        if first in (b"[", b"{"):
            if depth == 0 and first != b"{":
                return None, None  # not an object at the top
            depth += len(token)
            expect_key = depth == 1
            key = None
            continue
        if first in (b"]", b"}"):
            depth -= len(token)
            if depth <= 0:
                break
            expect_key = False
            continue
        if depth != 1:
            continue
        text = token.decode("utf-8", errors="replace")
        if first == b'"':
            if key is not None:  # the value of the key just read
                found[key] = _scalar(text)
                key = None
            elif expect_key:
                try:
                    key = json.loads(text)
                except ValueError:
                    key = None
                expect_key = False
            continue
        # Between tokens at the top: `:` after a key (maybe with a number or literal
        # value), `,` before the next key.
        stripped = text.strip()
        if key is not None and stripped.startswith(":"):
            rest = stripped[1:].strip()
            if rest:
                found[key] = _scalar(rest.split(",", 1)[0])
                key = None
                expect_key = "," in rest
            continue
        if stripped.endswith(","):
            expect_key = True
            key = None
    found_id = found.get("id")
    method = found.get("method")
    return found_id, method if isinstance(method, str) else None
