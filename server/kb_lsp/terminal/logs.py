"""What of the engine's log reaches a command's stderr.

A one-shot command is not a server (`kb serve` and `kb mcp` keep warnings on stderr,
their client's log): what its log records say (a store opened read-only,
the model's server not answering) the command says itself, once, in its own words, or
it matters only to someone finding out what went wrong — `--verbose` shows every record
from INFO up, as `LEVEL logger: message`. Without it only the notices pass: records an
engine module marks with `extra={"notice": True}` because the person waiting needs them
now (the int8 copy of the embedding model is being made: a minute, once per machine),
as `kb: message`.
"""

from __future__ import annotations

import logging
from typing import TextIO

from kb_lsp.runtime.logs import BoundedFormatter
from kb_lsp.terminal.text import visible

NOTICE = "notice"  # the `extra` key that marks a record for the terminal


def is_notice(record: logging.LogRecord) -> bool:
    return bool(getattr(record, NOTICE, False))


class TerminalFormatter(BoundedFormatter):
    def __init__(self) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        if is_notice(record):
            return f"kb: {visible(record.getMessage(), lines=True)}"
        return visible(super().format(record), lines=True)


def stderr_handler(stream: TextIO, *, verbose: bool, server: bool = False) -> logging.Handler:
    """The handler a command adds to the root logger. A `server` (`kb serve`, `kb mcp`)
    runs until stopped, and its stderr is its client's log: warnings go there too."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TerminalFormatter())
    if verbose:
        handler.setLevel(logging.INFO)
    elif server:
        handler.setLevel(logging.WARNING)
    else:
        handler.setLevel(logging.INFO)
        handler.addFilter(is_notice)
    return handler
