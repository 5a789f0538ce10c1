"""pygls' LSP protocol, hardened for clients that get things wrong.

* A request before `initialize` gets `ServerNotInitialized` (-32002), as the LSP says;
  notifications before it are dropped (except `exit`).
* A request whose params do not fit the LSP type of its method (pygls would log and never
  answer) gets an `InvalidParams` naming the method; a request without `params` is fine.
* Custom messages (`kb/*`) keep their params as plain JSON (dicts and lists); pygls'
  default turns them into namedtuples, which lose keys and cannot be validated.
* Messages from other threads (the indexing worker, the watcher) are handed to the event
  loop before they are written, so two writers never interleave on stdout.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from typing import Any

from cattrs import Converter
from lsprotocol import converters, types
from pygls.exceptions import JsonRpcException
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)

log = logging.getLogger(__name__)

_ALWAYS_ALLOWED = {types.INITIALIZE, types.EXIT}


def plain_converter() -> Converter:
    """lsprotocol's converter, with custom messages' params and results left as JSON."""
    converter = converters.get_converter()

    def keep(obj: dict[str, Any], cls: type[Any]) -> Any:
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep)
    return converter


@dataclass
class _Unparseable:
    """A request whose params could not be read; answered with `error`."""

    id: int | str
    method: str
    error: str
    jsonrpc: str = "2.0"


class KbProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialize_seen = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None

    # --- reading --------------------------------------------------------------------

    def structure_message(self, data: dict[str, Any]) -> Any:
        if not isinstance(data, dict) or "jsonrpc" not in data:
            return data
        method = data.get("method")
        if isinstance(method, str) and "params" not in data:
            data = {**data, "params": None}
        try:
            return super().structure_message(data)
        except JsonRpcException as err:
            if "id" in data and isinstance(method, str):
                cause = err.__cause__
                detail = f": {cause}" if cause is not None else ""
                return _Unparseable(
                    id=data["id"],
                    method=method,
                    error=f"Invalid params for {method}{detail}",
                )
            raise

    def handle_message(self, message: Any) -> None:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
        if isinstance(message, _Unparseable):
            self._send_error(message.id, -32602, message.error)
            return
        method = getattr(message, "method", None)
        if not self.initialize_seen and method not in _ALWAYS_ALLOWED:
            if hasattr(message, "id") and method is not None:
                self._send_error(
                    message.id,
                    -32002,
                    f"The server is not initialized: send `initialize` before {method!r}",
                )
            return
        if method == types.INITIALIZE:
            self.initialize_seen = True
        super().handle_message(message)

    def _send_error(self, msg_id: int | str, code: int, message: str) -> None:
        log.warning("request %s: %s", msg_id, message)
        self._send_response(msg_id, error=types.ResponseError(code=code, message=message))

    # --- writing ----------------------------------------------------------------------

    def _send_data(self, data: Any) -> None:
        loop = self.loop
        if loop is None or threading.get_ident() == self._loop_thread or loop.is_closed():
            super()._send_data(data)
            return
        try:
            loop.call_soon_threadsafe(super()._send_data, data)
        except RuntimeError:  # the loop closed in between: the client is gone
            log.debug("dropping a message sent after the event loop closed")
