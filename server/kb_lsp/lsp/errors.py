"""The contract's error kinds as pygls' JSON-RPC errors, messages kept as they are worded."""

from __future__ import annotations

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled

from kb_lsp.errors import Cancelled, InvalidInput, KbError, Unavailable

__all__ = ["ServerError", "rpc_error"]


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
