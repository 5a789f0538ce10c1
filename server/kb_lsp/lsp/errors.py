"""JSON-RPC errors with messages a person can act on, and params parsing."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from kb_lsp.runtime.errors import describe

__all__ = ["SERVER_ERROR", "ServerError", "describe", "invalid_params", "parse_params"]

M = TypeVar("M", bound=BaseModel)

# JSON-RPC's implementation-defined server errors (-32000 to -32099).
SERVER_ERROR = -32000


class ServerError(JsonRpcException):
    """The request was fine but the server cannot do it now (read-only store, no index)."""

    CODE = SERVER_ERROR
    MESSAGE = "Server error"


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
