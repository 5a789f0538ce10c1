"""The LSP base protocol's framing (`Content-Length: N\\r\\n\\r\\n` + N bytes of JSON), read
so that no input can kill the server or desynchronise the stream.

pygls' reader reads the declared length in one call (`Content-Length: 10^12` is a
`MemoryError`) and loses its place on any malformed header. This one is a small state
machine over a byte buffer, fed with whatever the transport has read:

* A header block is `Name: value` lines ended by an empty line. Names are case-insensitive
  (`content-length` is fine) and lines may end with `\\n` as well as `\\r\\n`; other
  headers (`Content-Type`) are ignored; blank lines between messages are skipped.
* `Content-Length` must be a whole number of bytes no larger than `max_bytes` (64 MiB by
  default, `--max-message-size`). Anything else is a `FramingError` (answered -32700 by
  the protocol), after which the parser *resynchronises*: it drops bytes until the next
  `Content-Length: N` line. A header never occurs inside a valid JSON body (a raw line
  break cannot be in a JSON string, and a bare word cannot be outside one), so this
  finds the next message, never a place inside one, and it keeps only a few bytes while
  skipping: an oversized body is never held in memory.
* A body that contains the next message's header was declared too long: the part before
  that header is reported as a `FramingError` and the next message is read normally,
  without waiting for bytes that will never come.
* Bytes where a header is due (binary garbage, JSON without a header) are one
  `FramingError`, and everything up to the next header is skipped. After a body the
  protocol could not parse (declared too short, so its tail follows), `resync()` skips
  that tail silently: one bad message, one error.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from kb_lsp.lsp.limits import DEFAULT_MAX_MESSAGE_BYTES, MIB

if TYPE_CHECKING:
    from kb_lsp.lsp.jsonrpc import KbProtocol

# pygls' JsonRPCServer, whose private fields (`_stop_event`, `_server`) these functions set
# as pygls' own start_io/start_tcp do; typed Any because pygls leaves them untyped.
JsonRPCServer = Any

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024
MAX_HEADER_LINE = 8 * 1024
MAX_HEADER_LINES = 32

# A whole Content-Length line, wherever it starts: where a resynchronisation stops.
_NEXT_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*\d{1,20}[ \t]*\r?\n", re.IGNORECASE)
# Long enough to hold any `_NEXT_HEADER` match that straddles two reads.
_KEEP = 64
# RFC 9110 token characters: what a header name is made of.
_HEADER_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([ -~\t]*?)[ \t]*")
_PARTIAL_HEADER = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]*(?::[ -~\t]*)?\r?")


@dataclass(frozen=True)
class Body:
    """A framed message body (not yet parsed)."""

    data: bytes


@dataclass(frozen=True)
class FramingError:
    """A framing problem, worded for the client's log; answered with -32700."""

    message: str
    size: int = 0  # bytes dropped with it, when known


Event = Body | FramingError


def _human(size: int) -> str:
    return f"{size // MIB} MiB" if size >= MIB and size % MIB == 0 else f"{size} bytes"


class FrameParser:
    """Incremental reader of framed messages; see the module docstring for the rules."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._skipping = False  # dropping bytes until the next Content-Length line
        self._length: int | None = None  # the body length once its headers are read
        self._scanned = 0  # how much of a pending body was searched for a header
        self._header_lines = 0
        self._declared: int | None = None
        self._tail = b""  # the end of the last body, for `resync`

    def feed(self, data: bytes) -> None:
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes held until more arrive. A body being skipped is dropped as it comes,
        but for the last few bytes, where the next header may begin."""
        return len(self._buf)

    def resync(self) -> None:
        """Skip, without another error, to the next header (after an unparseable body).

        The search starts in the last bytes of that body: when its Content-Length was a
        little too long, the next header began inside it."""
        self._reset_headers()
        self._buf[:0] = self._tail
        self._tail = b""
        self._skipping = True

    def events(self) -> Iterator[Event]:
        """What the bytes fed so far make up. Lazy: `resync()` between two events
        applies to the bytes after the first."""
        while True:
            if self._skipping and not self._skip():
                return
            if self._length is not None:
                body = self._body()
                if body is None:
                    return
                yield body
                continue
            event = self._header_step()
            if event is False:
                return
            if event is not True:
                yield event

    # --- headers ----------------------------------------------------------------------

    def _reset_headers(self) -> None:
        self._header_lines = 0
        self._declared = None
        self._length = None
        self._scanned = 0

    def _fail(self, message: str, size: int = 0) -> FramingError:
        self._reset_headers()
        self._skipping = True
        return FramingError(message, size)

    def _header_step(self) -> Event | bool:
        """Consume one header line: an event, True (go on) or False (need more bytes)."""
        end = self._buf.find(b"\n", 0, MAX_HEADER_LINE + 1)
        if end < 0:
            if len(self._buf) > MAX_HEADER_LINE:
                return self._fail(f"a header line longer than {MAX_HEADER_LINE} bytes")
            if not _PARTIAL_HEADER.fullmatch(self._buf):
                return self._fail(self._not_a_header(bytes(self._buf)))
            return False
        line = bytes(self._buf[:end]).rstrip(b"\r")
        match = _HEADER_LINE.fullmatch(line)
        if line and match is None:
            # Left in the buffer: the next header may start inside this line.
            return self._fail(self._not_a_header(line))
        del self._buf[: end + 1]
        if match is None:
            if self._header_lines == 0:
                return True  # a stray line break between messages
            if self._declared is None:
                return self._fail("a message without a Content-Length header")
            if self._declared == 0:
                return self._fail("an empty message (Content-Length: 0)")
            self._length = self._declared
            self._header_lines = 0
            return True
        self._header_lines += 1
        if self._header_lines > MAX_HEADER_LINES:
            return self._fail(f"more than {MAX_HEADER_LINES} header lines")
        name, value = match.group(1).lower(), match.group(2)
        if name != b"content-length":
            return True
        if not value.isdigit() or len(value) > 20:
            shown = value[:40].decode("ascii", "replace")
            return self._fail(f"Content-Length must be a whole number of bytes, got {shown!r}")
        declared = int(value)
        if declared > self.max_bytes:
            return self._fail(
                f"a message of {declared} bytes is larger than the limit of "
                f"{_human(self.max_bytes)} (the server's --max-message-size)",
                declared,
            )
        if self._declared is not None and self._declared != declared:
            return self._fail("two different Content-Length headers")
        self._declared = declared
        return True

    @staticmethod
    def _not_a_header(line: bytes) -> str:
        shown = line[:40].decode("utf-8", "replace")
        return f"expected a Content-Length header, got {shown!r}"

    def _skip(self) -> bool:
        """Drop bytes up to the next Content-Length line; False when it is not here yet."""
        match = _NEXT_HEADER.search(self._buf)
        if match is None:
            if len(self._buf) > _KEEP:
                del self._buf[: len(self._buf) - _KEEP]
            return False
        del self._buf[: match.start()]
        self._skipping = False
        return True

    # --- bodies -----------------------------------------------------------------------

    def _body(self) -> Event | None:
        """The pending body once complete, a `FramingError` when the next header turns
        up inside it, or None (need more bytes)."""
        assert self._length is not None
        length = self._length
        # Only a match that starts inside the declared body counts; the search stops at
        # the first match, normally the next message's header right after this body.
        match = _NEXT_HEADER.search(self._buf, max(0, self._scanned - _KEEP))
        if match is not None and match.start() < length:
            cut = match.start()
            del self._buf[:cut]
            self._reset_headers()
            return FramingError(
                f"the message was shorter than its Content-Length ({length} bytes): "
                f"the next message started after {cut} bytes",
                cut,
            )
        self._scanned = len(self._buf)
        if len(self._buf) < length:
            return None
        data = bytes(self._buf[:length])
        del self._buf[:length]
        self._reset_headers()
        self._tail = data[-_KEEP:]
        return Body(data)


# --- the read loop ------------------------------------------------------------------------


async def read_messages(
    read: Callable[[], Awaitable[bytes]],
    protocol: KbProtocol,
    stop_event: threading.Event,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> None:
    """Read chunks with `read` until it returns b"" (end of input) or `stop_event` is
    set, and hand each framed body to `protocol.receive` (framing errors to
    `protocol.framing_error`)."""
    parser = FrameParser(max_bytes)
    while not stop_event.is_set():
        data = await read()
        if not data:
            break
        parser.feed(data)
        for event in parser.events():
            if isinstance(event, FramingError):
                protocol.framing_error(event.message, event.size)
            elif not protocol.receive(event.data):
                parser.resync()


def _stdin_reader(stream: BinaryIO, server: JsonRPCServer) -> Callable[[], Awaitable[bytes]]:
    read1: Callable[[int], bytes] = getattr(stream, "read1", stream.read)

    def read() -> Awaitable[bytes]:
        return asyncio.get_running_loop().run_in_executor(server.thread_pool, read1, READ_CHUNK)

    return read


def start_io(
    server: JsonRPCServer,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> None:
    """pygls' `start_io`, with this module's reader (stdin is read by pygls' pool)."""
    from pygls.io_ import StdoutWriter

    protocol: Any = server.protocol
    server._stop_event = stop_event = threading.Event()
    protocol.max_message_bytes = max_bytes
    protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    reader = _stdin_reader(stdin or sys.stdin.buffer, server)
    try:
        asyncio.run(read_messages(reader, protocol, stop_event, max_bytes))
    except BrokenPipeError:
        log.error("the connection to the client is lost: shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()


def start_tcp(
    server: JsonRPCServer, host: str, port: int, *, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> None:
    """pygls' `start_tcp` (one connection at a time, for debugging), with this reader."""
    protocol: Any = server.protocol
    server._stop_event = stop_event = threading.Event()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        protocol.max_message_bytes = max_bytes
        protocol.set_writer(writer)
        await read_messages(lambda: reader.read(READ_CHUNK), protocol, stop_event, max_bytes)
        server.shutdown()

    async def serve() -> None:
        server._server = await asyncio.start_server(connection, host, port)
        async with server._server:
            await server._server.serve_forever()

    log.info("serving on %s:%s", host, port)
    try:
        asyncio.run(serve())
    except asyncio.CancelledError:
        log.debug("the TCP server was cancelled")
