"""pygls' LSP protocol, hardened: every message gets the answer JSON-RPC 2.0 says it gets.

Bodies come from `framing.py` (which answers framing errors) through `receive`:

* **Parsing** (-32700 `Parse error`, `id: null`): not UTF-8, not JSON, `NaN`/`Infinity`.
  Nesting deeper than `MAX_DEPTH` (64) and an integer of more than `MAX_INT_DIGITS` (20)
  digits are not parsed either, but a request's top-level id is found without parsing
  (`json_bounds.request_id`) and the request answered under it: -32600 for too deep,
  -32602 for a number too large (-32700 `id: null` only when no id can be found). Only
  the top-level object is turned into a message: a dict shaped like a message inside
  params is just data.
* **The envelope** (-32600 `Invalid Request`, with the request's id when it has a valid
  one, else `id: null`): not an object (a batch array too: LSP has no batches), no
  `"jsonrpc": "2.0"`, a `method` that is not a string, an `id` that is not an integer or
  a string, `params` that are neither an object nor an array (null is taken as absent),
  neither a `method` nor a `result`/`error`. A *notification method sent with an id*
  (`textDocument/didSave` with `"id": 1`) is answered -32600 and not run: a message with
  an id is a request, and this one cannot be carried out as one. A *request method sent
  without an id* is a notification, which JSON-RPC forbids answering: it is logged and
  ignored. Malformed responses from the client are logged and dropped (a response is
  never answered).
* **Params** (-32602 `Invalid params`, naming the method): an LSP request whose params do
  not fit its lsprotocol type (pygls would log and never answer); `kb/*` params are
  checked by `contract/params.py`. A notification whose params do not fit is logged
  and dropped.
* **Life cycle**: a request before `initialize` gets `ServerNotInitialized` (-32002);
  notifications before it are dropped (except `exit`); a request after `shutdown` gets
  -32600.
* **Errors never carry a traceback** (`error.data` is always left out): an exception in
  a handler is logged with its traceback and answered -32603 with one line naming the
  method and the exception. Every rejected message is logged as one line: the method,
  the code, the message and the size in bytes, with params cut to `LOGGED_PARAMS`.
* Custom messages (`kb/*`) keep their params as plain JSON (dicts and lists); pygls'
  default turns them into namedtuples, which lose keys and cannot be validated.
* Messages from other threads (the indexing worker, the watcher) are handed to the event
  loop before they are written, so two writers never interleave on stdout.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

import attrs
from cattrs import Converter
from lsprotocol import converters, types
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)

from kb_lsp.contract.operations import BY_METHOD
from kb_lsp.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_NOT_INITIALIZED,
    Cancelled,
    InvalidInput,
)
from kb_lsp.json_bounds import MAX_DEPTH as MAX_DEPTH
from kb_lsp.json_bounds import MAX_INT_DIGITS as MAX_INT_DIGITS
from kb_lsp.json_bounds import MessageError, parse_json, request_id
from kb_lsp.lsp.outgoing import CappedWriter

log = logging.getLogger(__name__)

INVALID_PARAMS = InvalidInput.code
REQUEST_CANCELLED = Cancelled.code

LOGGED_PARAMS = 200  # characters of params in a log line
_SHOWN = 80  # characters of a method name or a bad value in a message

_ALWAYS_ALLOWED = {types.INITIALIZE, types.EXIT}


def plain_converter() -> Converter:
    """lsprotocol's converter, with custom messages' params and results left as JSON."""
    converter = converters.get_converter()

    def keep(obj: dict[str, Any], cls: type[Any]) -> Any:
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep)
    return converter


# --- parsing ----------------------------------------------------------------------------


def _excerpt(value: Any, limit: int = LOGGED_PARAMS) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else _excerpt(value, _SHOWN)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


@dataclass
class _Unparseable:
    """A request whose params could not be read; answered with `error`."""

    id: int | str
    method: str
    error: str
    jsonrpc: str = "2.0"


class KbProtocol(CappedWriter, LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialize_seen = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        # For the log line of each answer: the method and size of requests in flight.
        self._inflight: dict[int | str, tuple[str, int]] = {}

    # --- reading ----------------------------------------------------------------------

    def framing_error(self, message: str, size: int = 0) -> None:
        """A framing problem found by `framing.FrameParser`: -32700 with `id: null`."""
        self._reject(None, PARSE_ERROR, f"Parse error: {message}", size=size)

    def receive(self, body: bytes) -> bool:
        """Handle one framed body; False when it was not JSON at all (the framing layer
        then skips to the next header: the body was probably cut short)."""
        self._note_loop()
        try:
            data = parse_json(body)
        except MessageError as err:
            return self._unparsed(body, err)
        message = self._check_envelope(data, len(body))
        if message is not None:
            self.handle_message(message)
        return True

    def _unparsed(self, body: bytes, err: MessageError) -> bool:
        """A body `parse_json` refused: a request too deep or with too large a number is
        answered under its id when the id can be found; anything else -32700, `id: null`."""
        if err.code != PARSE_ERROR:
            msg_id, method = request_id(body)
            if msg_id is not None and method is not None:
                what = "Invalid Request" if err.code == INVALID_REQUEST else "Invalid params"
                self._reject(msg_id, err.code, f"{what}: {err}", method, len(body))
                return True
        self._reject(None, PARSE_ERROR, f"Parse error: {err}", size=len(body))
        return False

    def _check_envelope(self, data: Any, size: int) -> Any:
        """The message `data` is, structured; None when it was answered or dropped."""
        if not isinstance(data, dict):
            what = (
                "batches (arrays of messages) are not supported: send one message at a time"
                if isinstance(data, list)
                else f"a message must be a JSON object, got {type(data).__name__}"
            )
            self._reject(None, INVALID_REQUEST, f"Invalid Request: {what}", size=size)
            return None
        has_id = "id" in data
        msg_id = data["id"] if has_id and _valid_id(data.get("id")) else None
        method = data.get("method")
        shown = method if isinstance(method, str) else None

        def invalid(why: str, reply_id: int | str | None = msg_id) -> None:
            self._reject(reply_id, INVALID_REQUEST, f"Invalid Request: {why}", shown, size, data)

        is_response = "method" not in data and ("result" in data or "error" in data)
        if is_response:
            return self._check_response(data, size)
        if data.get("jsonrpc") != "2.0":
            return invalid('a message must say "jsonrpc": "2.0"')
        if "method" not in data:
            return invalid('a message needs a "method" (or a "result" or "error")')
        if not isinstance(method, str):
            return invalid(f'"method" must be a string, got {_shown(method)}')
        if has_id and msg_id is None:
            return invalid(f'"id" must be an integer or a string, got {_shown(data["id"])}')
        params = data.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return invalid(f'"params" must be an object or an array, got {_shown(params)}')
        kind = self._kind(method)
        if has_id and kind == "notification":
            return invalid(f"{shown!r} is a notification: send it without an id")
        if not has_id and kind == "request":
            log.warning(
                "ignored %s sent as a notification (no id): it is a request [%d bytes]",
                _shown(method),
                size,
            )
            return None
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if has_id:
            assert msg_id is not None
            self._inflight[msg_id] = (method, size)
            message["id"] = msg_id
        return self.structure_message(message)  # other members are not JSON-RPC's: dropped

    def _check_response(self, data: dict[str, Any], size: int) -> Any:
        if data.get("jsonrpc") != "2.0" or not _valid_id(data.get("id")):
            log.warning("dropped a malformed response from the client [%d bytes]", size)
            return None
        response = {"jsonrpc": "2.0", "id": data["id"]}
        if "error" not in data:
            response["result"] = data.get("result")
            return self.structure_message(response)
        error = data["error"]
        code = error.get("code") if isinstance(error, dict) else None
        if not (
            isinstance(code, int)
            and not isinstance(code, bool)
            and isinstance(error.get("message"), str)
        ):
            log.warning("a malformed error response for %s [%d bytes]", data["id"], size)
            error = {"code": INTERNAL_ERROR, "message": "the client sent a malformed error"}
        response["error"] = {"code": error["code"], "message": error["message"]}
        return self.structure_message(response)

    def _kind(self, method: str) -> str | None:
        """ "request" or "notification" for methods this server knows, else None."""
        if method in BY_METHOD:
            return "request"
        message_type = self.get_message_type(method)
        if message_type is None or not attrs.has(message_type):
            return None
        return "request" if "id" in attrs.fields_dict(message_type) else "notification"

    def structure_message(self, data: dict[str, Any]) -> Any:
        """The top-level message of `data` (already checked by `_check_envelope`)."""
        method = data.get("method")
        try:
            if "method" not in data:
                if "error" in data:
                    return self._converter.structure(data, types.ResponseErrorMessage)
                response_type = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
                return self._converter.structure(data, response_type)
            if "id" in data:
                request_type = self.get_message_type(method) or JsonRPCRequestMessage
                return self._converter.structure(data, request_type)
            notification_type = self.get_message_type(method) or JsonRPCNotification
            return self._converter.structure(data, notification_type)
        except Exception as err:  # cattrs raises several types for data that does not fit
            detail = _first_line(err)
            if "id" in data and isinstance(method, str):
                return _Unparseable(
                    id=data["id"], method=method, error=f"Invalid params for {method}: {detail}"
                )
            log.warning("dropped %s: its params do not fit (%s)", method or "a response", detail)
            return None

    def handle_message(self, message: Any) -> None:
        self._note_loop()
        if message is None:
            return
        if isinstance(message, _Unparseable):
            self._reject(message.id, INVALID_PARAMS, message.error, message.method)
            return
        method = getattr(message, "method", None)
        msg_id: Any = getattr(message, "id", None)
        is_request = method is not None and msg_id is not None
        if not self.initialize_seen and method not in _ALWAYS_ALLOWED:
            if is_request:
                self._reject(
                    msg_id,
                    SERVER_NOT_INITIALIZED,
                    f"The server is not initialized: send `initialize` before {method!r}",
                    method,
                )
            return
        if self._shutdown and is_request:
            self._reject(msg_id, INVALID_REQUEST, "The server is shutting down", method)
            return
        if method == types.INITIALIZE:
            self.initialize_seen = True
        super().handle_message(message)

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        try:
            self._get_handler(method_name)
        except JsonRpcMethodNotFound:
            self._reject(
                msg_id, METHOD_NOT_FOUND, f"Method not found: {_shown(method_name)}", method_name
            )
            return
        super()._handle_request(msg_id, method_name, params)

    def _note_loop(self) -> None:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()

    # --- answering ----------------------------------------------------------------------

    def _reject(
        self,
        msg_id: int | str | None,
        code: int,
        message: str,
        method: str | None = None,
        size: int | None = None,
        data: Any = None,
    ) -> None:
        """Answer `msg_id` (None: `id: null`) with an error, and log it as one line."""
        if msg_id is not None and msg_id in self._inflight:
            known_method, known_size = self._inflight.pop(msg_id)
            method, size = method or known_method, known_size if size is None else size
        params = data.get("params") if isinstance(data, dict) else None
        shown = message if len(message) <= LOGGED_PARAMS else message[:LOGGED_PARAMS] + "…"
        log.warning(
            "rejected %s (id %s): %d %s%s%s",
            _shown(method) if method else "a message",
            _shown(msg_id) if msg_id is not None else "null",
            code,
            shown,
            f" [{size} bytes]" if size is not None else "",
            f" params={_excerpt(params)}" if params is not None else "",
        )
        self._send_error(msg_id, code, message)

    def _send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        if msg_id is None:
            # lsprotocol leaves a None id out; JSON-RPC wants `"id": null`.
            error = {"code": code, "message": message}
            self._send_data({"jsonrpc": "2.0", "id": None, "error": error})
            return
        self._send_response(msg_id, error=types.ResponseError(code=code, message=message))

    def _send_response(
        self,
        msg_id: Any,
        result: Any | None = None,
        error: types.ResponseError | None = None,
    ) -> None:
        if error is not None and error.data is not None:
            error = types.ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """Answer a request from its handler's future: pygls' version logs a traceback
        for every error and puts one in `error.data` for unexpected exceptions."""
        self._request_futures.pop(msg_id, None)
        method, _ = self._inflight.get(msg_id, ("a request", 0))
        if future.cancelled():
            self._inflight.pop(msg_id, None)
            log.info("%s (id %s) cancelled", method, _shown(msg_id))
            self._send_error(msg_id, REQUEST_CANCELLED, f"{method}: the request was cancelled")
            return
        err = future.exception()
        if err is None:
            self._inflight.pop(msg_id, None)
            self._send_response(msg_id, result=future.result())
        elif isinstance(err, JsonRpcException):
            code = err.code if isinstance(err.code, int) else INTERNAL_ERROR
            message = str(err.message) if err.message else type(err).__name__
            if code == REQUEST_CANCELLED:
                self._inflight.pop(msg_id, None)
                log.info("%s (id %s) cancelled", method, _shown(msg_id))
                self._send_error(msg_id, code, message)
            else:
                self._reject(msg_id, code, message)
        else:
            self._inflight.pop(msg_id, None)
            log.error("internal error in %s (id %s)", method, _shown(msg_id), exc_info=err)
            self._send_error(
                msg_id,
                INTERNAL_ERROR,
                f"Internal error in {method}: {type(err).__name__}: {_first_line(err)} "
                "(the details are in the kb-lsp log)",
            )


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    line = text[0] if text else type(err).__name__
    return line if len(line) <= 300 else line[:300] + "…"
