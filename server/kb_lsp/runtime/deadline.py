"""How long a front end waits for a read (search, status, a file's lines) on the runtime's
reads pool: generous, since a search on a busy machine or behind a reopen takes seconds,
but finite, so that a disk that stops answering (a hung network mount) costs an error,
never a request that waits for ever. The language server and the MCP server share it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import TypeVar

from kb_lsp.errors import Unavailable

T = TypeVar("T")

READ_TIMEOUT = 120.0

log = logging.getLogger(__name__)


class ReadTimedOut(Unavailable):
    """A read did not end within its deadline."""


async def within(future: concurrent.futures.Future[T], seconds: float, what: str) -> T:
    """The result of `future` (a read submitted to the runtime), or `ReadTimedOut` after
    `seconds`: a read still queued is dropped, one running is left to finish on its
    thread — the event loop never waits on it."""
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), seconds)
    except TimeoutError:
        log.warning("a read (%s) gave up after %g s", what, seconds)
        raise ReadTimedOut(
            f"The index did not answer within {seconds:g} s "
            "(a slow disk, or the index being reopened); try again."
        ) from None


def waited(future: concurrent.futures.Future[T], seconds: float, what: str) -> T:
    """`within` for a thread that may block (the local socket's connections): the result
    of `future`, or `ReadTimedOut` after `seconds`, the read left to finish on its own."""
    try:
        return future.result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        future.cancel()  # dropped if still queued
        log.warning("a read (%s) gave up after %g s", what, seconds)
        raise ReadTimedOut(
            f"The index did not answer within {seconds:g} s "
            "(a slow disk, or the index being reopened); try again."
        ) from None
