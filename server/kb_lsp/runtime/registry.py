"""Each row of `contract/operations.py` bound to its body (`runtime/operations/*.py`).

`bind(row, body)` is generic in the row's params and result models, so mypy checks that
the body takes the row's params and gives its result; a row on the indexing worker
(`pool="worker"`) binds a body that gives a future of it (`bind_deferred`). The front
ends serve what is registered here (`dispatch.py` runs it), so adding a read-only
operation is a module with its body and a row, both registered in `BOUND` below — or,
in a test, with `register` (docs/design.md, "Adding an operation")."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from pydantic import BaseModel

from kb_lsp.contract.operations import (
    ASK,
    INDEX_CONTROL,
    OPEN_RESULT,
    OPERATIONS,
    REINDEX,
    RELATED,
    SCHEMA,
    SEARCH,
    STATUS,
    SUMMARIZE,
    Call,
    Operation,
)
from kb_lsp.runtime.operations import (
    ask,
    index_control,
    open_result,
    reindex,
    related,
    schema,
    search,
    status,
    summarize,
)

if TYPE_CHECKING:
    from kb_lsp.runtime.runtime import Runtime

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class Bound(Generic[P, R]):
    """A row and its body: `run` answers at once, `deferred` with a future."""

    op: Operation[P, R]
    run: Callable[[Runtime, P, Call], R] | None = None
    deferred: Callable[[Runtime, P, Call], concurrent.futures.Future[R]] | None = None


def bind(op: Operation[P, R], run: Callable[[Runtime, P, Call], R]) -> Bound[P, R]:
    if op.pool == "worker":
        raise ValueError(f"{op.method} runs on the worker: bind_deferred")
    return Bound(op, run=run)


def bind_deferred(
    op: Operation[P, R], run: Callable[[Runtime, P, Call], concurrent.futures.Future[R]]
) -> Bound[P, R]:
    if op.pool != "worker":
        raise ValueError(f"{op.method} runs on the {op.pool} pool: bind")
    return Bound(op, deferred=run)


BOUND: dict[str, Bound[Any, Any]] = {
    b.op.method: b
    for b in (
        bind(SEARCH, search.run),
        bind(OPEN_RESULT, open_result.run),
        bind(ASK, ask.run),
        bind(SUMMARIZE, summarize.run),
        bind(STATUS, status.run),
        bind_deferred(REINDEX, reindex.run),
        bind(RELATED, related.run),
        bind(INDEX_CONTROL, index_control.run),
        bind(SCHEMA, schema.run),
    )
}
assert set(BOUND) == {op.method for op in OPERATIONS}, "a row of the table has no body"


def register(bound: Bound[Any, Any]) -> Callable[[], None]:
    """Serve one more operation from now on (a front end made after this call serves it);
    returns its removal. For operations that exist in one process only, such as a test's."""
    if bound.op.method in BOUND:
        raise ValueError(f"{bound.op.method} is served already")
    BOUND[bound.op.method] = bound

    def removal() -> None:
        BOUND.pop(bound.op.method, None)

    return removal


def bound_of(op: Operation[P, R]) -> Bound[P, R]:
    """The body bound to `op`, typed as the row is."""
    return cast("Bound[P, R]", BOUND[op.method])


def served() -> Iterator[Bound[Any, Any]]:
    """Every operation the front ends serve, the table's first."""
    yield from list(BOUND.values())


def by_cli(command: str) -> Bound[Any, Any] | None:
    """The operation whose result `kb COMMAND --json` prints."""
    return next((b for b in BOUND.values() if b.op.cli == command), None)


__all__ = ["BOUND", "Bound", "bind", "bind_deferred", "bound_of", "by_cli", "register", "served"]
