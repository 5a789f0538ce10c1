"""JSON-RPC errors with messages a person can act on, and params parsing."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled

from kb_lsp.errors import Cancelled, InvalidInput, KbError, Unavailable
from kb_lsp.runtime.errors import describe

__all__ = ["ServerError", "describe", "invalid_params", "parse_params", "rpc_error"]

M = TypeVar("M", bound=BaseModel)


class ServerError(JsonRpcException):
    """The request was fine but the server cannot do it now (read-only store, no index,
    a read past its deadline): the contract's `Unavailable`."""

    CODE = Unavailable.code
    MESSAGE = "Server error"


def rpc_error(err: KbError) -> JsonRpcException:
    """One of the contract's error kinds as pygls' exception with that kind's code."""
    message = str(err) or type(err).__name__
    if isinstance(err, InvalidInput):
        return JsonRpcInvalidParams(message=message)
    if isinstance(err, Cancelled):
        return JsonRpcRequestCancelled(message=message)
    if isinstance(err, Unavailable):
        return ServerError(message=message)
    return JsonRpcException(message=message, code=err.code)


def invalid_params(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message)


def parse_params(model: type[M], raw: Any, method: str) -> M:
    """Validate what a client sent; anything wrong is an `InvalidParams` naming the field.

    `workspace/executeCommand` passes its arguments as a list: the first one is the params.
    """
    if isinstance(raw, (list, tuple)):
        raw = raw[0] if raw else None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid_params(f"{method}: params must be an object, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        raise invalid_params(f"{method}: {describe(err)}") from err
