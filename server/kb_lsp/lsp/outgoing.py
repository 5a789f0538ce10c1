"""Outgoing messages capped like incoming ones (`framing.py`: `--max-message-size`, 64 MiB
by default).

A model's reply is bounded where it is read (`engine/llm/bounds.py`), but an answer is
more than the reply (sources, steps), and a client that reads a 105 MB message (what a
50 MB stream once became) stalls or dies. A message is serialised here, as pygls would,
and measured before it is written: a response over the cap is answered with an error
naming its size instead (-32001, the request was tried and failed), a notification or a
request of ours over it is not sent, and both are logged. Nothing is serialised twice.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
from typing import Any

from kb_lsp.errors import Failed
from kb_lsp.lsp.limits import DEFAULT_MAX_MESSAGE_BYTES

log = logging.getLogger(__name__)

_WRITING: set[asyncio.Future[Any]] = set()


def _envelope(data: Any) -> tuple[Any, bool]:
    """(the message's id, whether it names a method: a request or a notification)."""
    if isinstance(data, dict):
        return data.get("id"), "method" in data
    return getattr(data, "id", None), getattr(data, "method", None) is not None


def _too_large(data: Any, size: int, max_bytes: int) -> Any | None:
    """What is sent instead of `data` (`size` bytes serialised): an error answering the
    same request, or None (nothing)."""
    msg_id, has_method = _envelope(data)
    what = f"{size:,} bytes, over the {max_bytes:,} a message may have (--max-message-size)"
    if msg_id is None or has_method:
        log.warning("not sent: a message (%s) of %s", getattr(data, "method", "?"), what)
        return None
    log.warning("the answer to request %s is %s: answered with an error", msg_id, what)
    error = {"code": Failed.code, "message": f"The answer is {what}."}
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def write_capped(protocol: Any, data: Any, max_bytes: int) -> None:
    """pygls' `JsonRPCProtocol._send_data` with the cap: `data` serialised, measured,
    framed and written to the protocol's writer (or what the cap sends instead)."""
    writer = protocol.writer
    if not data or writer is None:
        return
    body = json.dumps(data, default=protocol._serialize_message)
    if len(body) > max_bytes:  # ASCII (json.dumps escapes the rest): characters are bytes
        data = _too_large(data, len(body), max_bytes)
        if data is None:
            return
        body = json.dumps(data)
    framed = body
    if protocol._include_headers:
        framed = (
            f"Content-Length: {len(body)}\r\n"
            f"Content-Type: {protocol.CONTENT_TYPE}; charset={protocol.CHARSET}\r\n\r\n{body}"
        )
    written = writer.write(framed.encode(protocol.CHARSET))
    if inspect.isawaitable(written):  # an async writer: held until it is done
        task = asyncio.ensure_future(written)
        _WRITING.add(task)
        task.add_done_callback(_WRITING.discard)


class CappedWriter:
    """The writing side of `jsonrpc.KbProtocol`: every message through `write_capped`, on
    the event loop's thread (a worker's message is handed to it)."""

    loop: asyncio.AbstractEventLoop | None = None
    _loop_thread: int | None = None
    max_message_bytes = DEFAULT_MAX_MESSAGE_BYTES  # set by `framing.start_io`/`start_tcp`

    def _send_data(self, data: Any) -> None:
        loop = self.loop
        if loop is None or threading.get_ident() == self._loop_thread or loop.is_closed():
            self._write(data)
            return
        try:
            loop.call_soon_threadsafe(self._write, data)
        except RuntimeError:  # the loop closed in between: the client is gone
            log.debug("dropping a message sent after the event loop closed")

    def _write(self, data: Any) -> None:
        try:
            write_capped(self, data, self.max_message_bytes)
        except BrokenPipeError:
            raise
        except Exception:  # as pygls does: a message that cannot be sent is logged
            log.exception("could not send a message")
