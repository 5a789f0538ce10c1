"""The one error taxonomy of every kb/* operation, and the JSON-RPC codes.

Whatever goes wrong in an operation is one of four kinds, each with one JSON-RPC code;
every front end translates the kind, never the cause (an LSP error, a tool error with
`isError`, an exit status of `kb`):

* `InvalidInput` — the request is wrong and the caller can fix it ("No result 7: the
  last search returned 3 results"): InvalidParams, -32602.
* `Unavailable` — the request is fine but cannot be served now (the index is not open,
  or another process writes it): -32000.
* `Cancelled` — the caller (or new settings) stopped it: RequestCancelled, -32800.
* `Failed` — it was tried and failed (the model timed out, a sync broke): -32001.

The engine's own exceptions are these kinds (`LlmError` is `Failed`, `ReadOnlyStore`
`Unavailable`, …), so a front end catches `KbError` and reads `code`.
"""

from __future__ import annotations

from typing import ClassVar

# JSON-RPC 2.0's own codes, for messages that are not even a request.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
# LSP's: a request before `initialize` was answered.
SERVER_NOT_INITIALIZED = -32002


class KbError(Exception):
    """An operation's failure, worded for the person who has to act on it."""

    code: ClassVar[int]
    name: ClassVar[str]  # its key in `ERROR_CODES` (the TypeScript `ErrorCodes`)


class InvalidInput(KbError, ValueError):
    code = -32602
    name = "invalidParams"


class Unavailable(KbError, RuntimeError):
    code = -32000
    name = "unavailable"


class Cancelled(KbError):
    code = -32800
    name = "requestCancelled"


class Failed(KbError):
    code = -32001
    name = "failed"


KINDS: tuple[type[KbError], ...] = (InvalidInput, Unavailable, Cancelled, Failed)

# The codes a client may see on a kb/* answer (generated into protocol.ts).
ERROR_CODES = {kind.name: kind.code for kind in KINDS}
