"""The one place that runs an operation for any front end: on the row's pool, once the
knowledge base was opened, with the read deadline on the reads pool, ending in a result
or one of the contract's error kinds. The LSP and MCP servers await `served`; the local
socket and the command line, which may block, call `waited`."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from kb_lsp.contract.operations import Call, Operation
from kb_lsp.errors import Unavailable
from kb_lsp.runtime import deadline
from kb_lsp.runtime.registry import Bound, bound_of

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime

DEFAULT_CLIENT = "default"  # whose numbered list a call without a client makes

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


CLOSED = "The knowledge base is closed (the server is shutting down)."


def start(rt: Runtime, bound: Bound[P, R], params: P, call: Call) -> concurrent.futures.Future[R]:
    """The operation running on its pool (once the knowledge base was opened);
    `Unavailable` once the runtime closed."""
    if bound.deferred is not None:  # the indexing worker's: a future of its own
        return bound.deferred(rt, params, call)
    run = bound.run
    assert run is not None
    if bound.op.pool in ("reads", "asks"):
        submit = rt.submit_read if bound.op.pool == "reads" else rt.submit_ask
        try:
            return submit(run, rt, params, call)
        except RuntimeError as err:  # the pool was shut down: the runtime is closing
            raise Unavailable(CLOSED) from err
    done: concurrent.futures.Future[R] = concurrent.futures.Future()
    try:  # inline: memory only, on the caller's thread
        done.set_result(run(rt, params, call))
    except Exception as err:
        done.set_exception(err)
    return done


async def served(rt: Runtime, bound: Bound[P, R], params: P, call: Call, read_timeout: float) -> R:
    """The result, for an event loop that never blocks: reads give up after
    `read_timeout` seconds (`ReadTimedOut`, an `Unavailable`); a cancelled request sets
    `call.cancel` (the model stream and the sync stop)."""
    await asyncio.wrap_future(rt.opened)
    future = start(rt, bound, params, call)
    if bound.op.pool == "reads":
        return await deadline.within(future, read_timeout, bound.op.method)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        call.cancel.set()
        raise


def waited(rt: Runtime, bound: Bound[P, R], params: P, call: Call, read_timeout: float) -> R:
    """`served` for a thread that may block (a socket connection, a terminal)."""
    rt.opened.result()
    future = start(rt, bound, params, call)
    if bound.op.pool == "reads":
        return deadline.waited(future, read_timeout, bound.op.method)
    return future.result()


def answer(
    rt: Runtime,
    op: Operation[P, R],
    params: P,
    call: Call | None = None,
    read_timeout: float = deadline.READ_TIMEOUT,
) -> R:
    """`waited` for the row `op` (a terminal's command, a test): its result, typed."""
    return waited(rt, bound_of(op), params, call or Call(DEFAULT_CLIENT), read_timeout)


__all__ = ["answer", "served", "start", "waited"]
