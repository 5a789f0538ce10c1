"""`lsp/framing.FrameParser` and `lsp/jsonrpc.parse_json` on their own: every framing case
gives the events the module docstrings promise, however the bytes are split into reads."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from kb_lsp.lsp.framing import Body, Event, FrameParser, FramingError
from kb_lsp.lsp.jsonrpc import MAX_DEPTH, MessageError, parse_json

GOOD = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "kb/status", "params": {}}).encode()


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def run(chunks: Iterable[bytes], max_bytes: int = 1 << 20) -> list[Event]:
    """Feed `chunks` one by one; a body that is not JSON resyncs, as the protocol does."""
    parser = FrameParser(max_bytes)
    events: list[Event] = []
    for chunk in chunks:
        parser.feed(chunk)
        for event in parser.events():
            events.append(event)
            if isinstance(event, Body):
                try:
                    parse_json(event.data)
                except MessageError:
                    parser.resync()
    return events


def splits(data: bytes) -> list[list[bytes]]:
    """The same bytes in one read, byte by byte, and in reads of 7."""
    return [
        [data],
        [data[i : i + 1] for i in range(len(data))],
        [data[i : i + 7] for i in range(0, len(data), 7)],
    ]


def kinds(events: list[Event]) -> list[str]:
    """ "body" for the good message, "error" for what is answered -32700: a framing error
    or a body that is not JSON (which of the two can depend on how the bytes arrive)."""
    return ["body" if isinstance(e, Body) and e.data == GOOD else "error" for e in events]


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (frame(GOOD), ["body"]),
        (b"\r\n\r\n" + frame(GOOD), ["body"]),  # stray line breaks between messages
        (b"content-length: %d\r\n\r\n" % len(GOOD) + GOOD, ["body"]),
        (b"Content-Length: %d\n\n" % len(GOOD) + GOOD, ["body"]),
        (b"Content-Type: x\r\nContent-Length: %d\r\n\r\n" % len(GOOD) + GOOD, ["body"]),
        (b"Content-Length: %d\r\n\r\n" % (len(GOOD) - 9) + GOOD, ["error"]),  # too short
        (b"Content-Length: %d\r\n\r\n" % (len(GOOD) + 9) + GOOD, ["error"]),
        (b"Content-Length: 0\r\n\r\n" + GOOD, ["error"]),
        (b"Content-Length: -4\r\n\r\n" + GOOD, ["error"]),
        (b"Content-Length: four\r\n\r\n" + GOOD, ["error"]),
        (b"Content-Length: 99999999999999\r\n\r\n" + GOOD, ["error"]),
        (b"Content-Type: x\r\n\r\n" + GOOD, ["error"]),
        (b"\x00\xff\xfe garbage \x01" * 50, ["error"]),
        (GOOD + b"\r\n", ["error"]),  # JSON without a header
        (b"X" * 9000, ["error"]),  # a header line that never ends
    ],
)
def test_each_case_then_the_next_message(bad: bytes, expected: list[str]) -> None:
    for chunks in splits(bad + frame(GOOD)):
        assert kinds(run(chunks)) == [*expected, "body"]


def test_an_oversized_body_is_skipped_without_being_kept() -> None:
    parser = FrameParser(max_bytes=1000)
    parser.feed(b"Content-Length: 5000000\r\n\r\n")
    (error,) = list(parser.events())
    assert isinstance(error, FramingError)
    assert "a message of 5000000 bytes is larger than the limit of 1000 bytes" in error.message
    for _ in range(50):  # 5 MB of body, 100 KB at a time
        parser.feed(b'{"q": "' + b"x" * 100_000)
        assert list(parser.events()) == []
        assert parser.buffered <= 64
    parser.feed(b'"}' + frame(GOOD))
    assert kinds(list(parser.events())) == ["body"]


def test_the_limit_message_for_the_default_limit() -> None:
    parser = FrameParser()
    parser.feed(b"Content-Length: 1000000000000\r\n\r\n")
    (error,) = list(parser.events())
    assert isinstance(error, FramingError)
    assert "larger than the limit of 64 MiB" in error.message


def test_a_body_declared_too_long_is_cut_at_the_next_header() -> None:
    events = run([b"Content-Length: 500\r\n\r\n" + GOOD, frame(GOOD)])
    assert kinds(events) == ["error", "body"]
    error = events[0]
    assert isinstance(error, FramingError)
    assert f"started after {len(GOOD)} bytes" in error.message


def test_many_messages_in_one_read() -> None:
    assert kinds(run([frame(GOOD) * 100])) == ["body"] * 100


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{", "not valid JSON"),
        (b'{"a": NaN}', "NaN is not JSON"),
        (b'{"a": -Infinity}', "-Infinity is not JSON"),
        (b'{"a": 1' + b"0" * 20 + b"}", "an integer of 21 digits"),
        (b'{"a": -' + b"9" * 5000 + b"}", "an integer of 5000 digits"),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), f"nested more than {MAX_DEPTH}"),
        (b"[" * 100_000, f"nested more than {MAX_DEPTH}"),
        (b'{"a": "\xff"}', "not valid UTF-8"),
    ],
)
def test_parse_errors(body: bytes, reason: str) -> None:
    with pytest.raises(MessageError, match=reason):
        parse_json(body)


def test_what_parses() -> None:
    deep = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert parse_json(deep) is not None
    # Brackets inside strings do not count as nesting; digits inside strings are text.
    text = '{"text": "' + "[[[{" * 1000 + "9" * 100 + '"}'
    assert parse_json(text.encode())["text"].startswith("[[[{")
    assert parse_json(b'{"n": -' + b"9" * 20 + b', "f": 1e400}') == {
        "n": -int("9" * 20),
        "f": float("inf"),
    }
