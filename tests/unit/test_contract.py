"""The contract: the operations table is whole and true, and each error kind has one code
that every front end answers with."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from kb_lsp import errors
from kb_lsp.contract import operations
from kb_lsp.contract.operations import NOTIFICATIONS, OPERATIONS
from kb_lsp.engine.embed.embeddings import EmbedderError
from kb_lsp.engine.llm.errors import LlmCancelled, LlmError, LlmTimeout
from kb_lsp.engine.records import ReadOnlyStore
from kb_lsp.errors import KINDS, Cancelled, Failed, InvalidInput, KbError, Unavailable
from kb_lsp.lsp.errors import rpc_error
from kb_lsp.runtime import registry

POOLS = {"reads", "asks", "worker", "inline"}


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.method)
def test_each_row_is_whole(op: operations.Operation[BaseModel, BaseModel]) -> None:
    assert op.method.startswith("kb/") and op.command == op.method.replace("/", ".")
    assert issubclass(op.params, BaseModel) and issubclass(op.result, BaseModel)
    assert op.pool in POOLS
    assert op.summary.endswith(".")
    assert set(op.errors) <= set(KINDS) and op.errors
    # Its body is bound in the registry: a module of its own in runtime/operations/,
    # answering at once or, on the worker, with a future.
    bound = registry.BOUND[op.method]
    body = bound.deferred if op.pool == "worker" else bound.run
    assert bound.op is op and body is not None
    assert body.__module__.startswith("kb_lsp.runtime.operations."), body.__module__
    assert (bound.deferred is None) == (op.pool != "worker")


def test_method_names_are_unique_and_notifications_apart() -> None:
    methods = [op.method for op in OPERATIONS]
    assert len(methods) == len(set(methods))
    assert not {n.method for n in NOTIFICATIONS} & set(methods)
    assert {op.method: op for op in OPERATIONS} == operations.BY_METHOD


def test_each_kind_has_one_code() -> None:
    codes = [kind.code for kind in KINDS]
    assert len(codes) == len(set(codes))
    assert {kind.name: kind.code for kind in KINDS} == errors.ERROR_CODES
    assert InvalidInput.code == -32602 and Cancelled.code == -32800  # JSON-RPC's and LSP's
    protocol_codes = {
        errors.PARSE_ERROR,
        errors.INVALID_REQUEST,
        errors.METHOD_NOT_FOUND,
        errors.INTERNAL_ERROR,
    }
    assert not protocol_codes & set(codes)


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (InvalidInput("No result 7: the last search returned 3 results"), InvalidInput),
        (EmbedderError("Ollama cannot be reached at http://127.0.0.1:9"), Unavailable),
        (ReadOnlyStore("another process writes this index"), Unavailable),
        (LlmCancelled("cancelled"), Cancelled),
        (LlmTimeout("the model did not answer within 120 s"), Failed),
        (LlmError("HTTP 500 from the model"), Failed),
    ],
    ids=lambda value: type(value).__name__,
)
def test_the_engines_errors_are_kinds_and_answer_with_their_code(
    raised: KbError, kind: type[KbError]
) -> None:
    assert isinstance(raised, kind)
    answered = rpc_error(raised)
    assert answered.code == kind.code
    assert answered.message == str(raised)


def test_the_stores_outages_are_unavailable_and_its_bugs_are_not() -> None:
    """SQLite that cannot serve is `Unavailable` at the store's boundary; a statement
    the code got wrong stays a bug (an internal error, logged with its traceback)."""
    import sqlite3

    from kb_lsp.engine.store.outage import store_outages

    with pytest.raises(Unavailable, match="database is locked") as caught, store_outages():
        raise sqlite3.OperationalError("database is locked")
    assert rpc_error(caught.value).code == Unavailable.code
    with pytest.raises(Unavailable, match="file is not a database"), store_outages():
        raise sqlite3.DatabaseError("file is not a database")
    with pytest.raises(sqlite3.ProgrammingError), store_outages():
        raise sqlite3.ProgrammingError("Incorrect number of bindings supplied")
