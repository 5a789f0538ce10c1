"""The language server put together: the server, its features, and the loop that runs it.

Kept apart from `server.py` so the features can import the server's class without the
server importing them (esbonio's setup module does the same).
"""

from __future__ import annotations

import logging
import os
import sys

from kb_lsp.lsp import features, framing, hover
from kb_lsp.lsp.limits import DEFAULT_MAX_MESSAGE_BYTES
from kb_lsp.lsp.server import KbLanguageServer


def create_server() -> KbLanguageServer:
    server = KbLanguageServer()
    features.register(server)
    hover.register(server)
    return server


def serve(
    tcp: tuple[str, int] | None = None, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> int:
    """Run the language server on stdio (or on a TCP port, for debugging).

    On stdio this does not return: when the client exits (or closes stdin) the process
    ends with 0 after `shutdown` + `exit`, else 1 — at once, since pygls' reader thread
    may still be blocked on stdin and would keep the interpreter from exiting. With `tcp`
    it returns that code when the connection ends."""
    server = create_server()
    if tcp is not None:
        framing.start_tcp(server, *tcp, max_bytes=max_message_bytes)
    else:
        framing.start_io(server, max_bytes=max_message_bytes)
    code = 0 if server.shutdown_requested else 1
    logging.shutdown()
    if tcp is None:
        sys.stderr.flush()
        os._exit(code)
    return code
