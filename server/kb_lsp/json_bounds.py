"""JSON read within bounds: JSON-RPC bodies, shared by the LSP stream (`lsp/jsonrpc.py`)
and the local socket (`listener.py`), which must not import pygls; and every other JSON
the project parses from outside (`load_json`: a workspace's `.kb/schema.json`, a model's
reply and tool-call arguments, a team server's answers, the int8 model's record), which
raises the project's own input error (`JsonRefused`, an `InvalidInput`) for whatever it
refuses: too many bytes, too deep, an integer of too many digits (Python's own parser
stops at 4,300 with a `ValueError` of its own), or not JSON at all.

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

from kb_lsp.errors import INVALID_REQUEST, PARSE_ERROR, InvalidInput

INVALID_PARAMS = InvalidInput.code

MAX_DEPTH = 64
MAX_INT_DIGITS = 20
# JSON from elsewhere: no real value has more digits (Python's own limit is 4,300).
MAX_NUMBER_DIGITS = 100
MAX_JSON_BYTES = 64 * 1024 * 1024
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# What a model's text may not hold either (`load_json(text_only=True)`): C0 but tab, newline
# and carriage return, DEL, C1 — front matter drops them too (`metadata/frontmatter.py`).
_CONTROLS_OR_SURROGATE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")

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


def _too_deep(depth: int = MAX_DEPTH) -> MessageError:
    return MessageError(f"arrays and objects nested more than {depth} deep", INVALID_REQUEST)


def _no_constant(name: str) -> Any:
    raise MessageError(f"{name} is not JSON")


def max_depth(body: bytes) -> int:
    """How deep arrays and objects nest in `body` (strings left out), at C speed."""
    import numpy as np  # only for a body with many brackets: `kb status` never loads it

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
    return _parse(body, MAX_DEPTH, MAX_INT_DIGITS, constants=False)


def _parse(body: bytes, depth: int, digits: int, *, constants: bool) -> Any:
    """`constants`: `NaN` and `Infinity` read as floats (JSON has no such values; the
    wire refuses them, a model's reply may hold them and each use checks its numbers)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MessageError(f"the message is not valid UTF-8 (byte {err.start})") from None
    if body.count(b"[") + body.count(b"{") > depth and max_depth(body) > depth:
        raise _too_deep(depth)

    def bounded_int(text: str) -> int:
        found = len(text.lstrip("-"))
        if found > digits:
            raise MessageError(f"an integer of {found} digits (at most {digits})", INVALID_PARAMS)
        return int(text)

    long_number = re.search(rb"\d{%d}" % (digits + 1), body) is not None
    try:
        return json.loads(
            text,
            parse_int=bounded_int if long_number else int,
            parse_constant=float if constants else _no_constant,
        )
    except MessageError:
        raise
    except RecursionError:
        raise _too_deep(depth) from None
    except ValueError as err:
        raise MessageError(f"not valid JSON ({err})") from None


class JsonRefused(InvalidInput):
    """JSON from outside that `load_json` does not take; the message names what it was
    and why (too large, too deep, an integer too long, not JSON)."""


def load_json(
    data: str | bytes,
    what: str,
    *,
    max_bytes: int = MAX_JSON_BYTES,
    depth: int = MAX_DEPTH,
    digits: int = MAX_NUMBER_DIGITS,
    text_only: bool = False,
) -> Any:
    """The JSON value in `data` (`what` it is, for the message), within the bounds, its
    strings text (a lone surrogate that a `\\ud800` escape makes, which no UTF-8 store or
    stream takes, becomes U+FFFD); `text_only`: control characters (but tab and line
    breaks) dropped from the values as well, as a model's reply needs before anything
    stores or shows it.
    Raises `JsonRefused`."""
    body = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(body) > max_bytes:
        raise JsonRefused(f"{what}: {len(body):,} bytes of JSON, over the {max_bytes:,} read")
    try:
        value = _parse(body, depth, digits, constants=True)
    except MessageError as err:
        raise JsonRefused(f"{what}: {err}") from None
    if text_only:
        return _clean(value, _CONTROLS_OR_SURROGATE)
    return _clean(value, _SURROGATE) if _SURROGATE_ESCAPE.search(body) else value


def _clean(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(_replacement, value)
    if isinstance(value, list):
        return [_clean(item, pattern) for item in value]
    if isinstance(value, dict):
        # A key is only matched and named, never stored as a value: it keeps its controls
        # (dropped, "a\x00mount" would pass for "amount") and loses only its surrogates.
        return {_clean(key, _SURROGATE): _clean(item, pattern) for key, item in value.items()}
    return value


def _replacement(match: re.Match[str]) -> str:
    return "\ufffd" if "\ud800" <= match.group() <= "\udfff" else ""


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
