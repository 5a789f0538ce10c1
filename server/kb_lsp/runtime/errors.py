"""What the runtime raises for a request it cannot serve; each front end translates
these into its own terms (JSON-RPC error codes, an exit status, an MCP tool error)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.errors import Cancelled, Failed, InvalidInput, KbError, Unavailable

if TYPE_CHECKING:
    from pydantic import ValidationError


class InvalidRequest(InvalidInput):
    """The request itself is wrong and the client can fix it ("No result 7: …")."""


def describe(err: ValidationError) -> str:
    """`query: String should have at most 2000 characters (got 5000); limit: …`: a
    params model's errors, each naming its field (every front end words them so)."""
    parts = []
    for error in err.errors():
        where = ".".join(str(part) for part in error["loc"]) or "params"
        message = error["msg"]
        given = error.get("input")
        if isinstance(given, str) and len(given) > 40:
            message += f" (got {len(given)} characters)"
        elif isinstance(given, (int, float, bool)) and not isinstance(given, bool):
            message += f" (got {given})"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


__all__ = [
    "Cancelled",
    "Failed",
    "InvalidInput",
    "InvalidRequest",
    "KbError",
    "Unavailable",
    "describe",
]
