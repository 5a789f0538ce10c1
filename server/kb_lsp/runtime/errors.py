"""What the runtime raises for a request it cannot serve; each front end translates
these into its own terms (JSON-RPC error codes, an exit status, an MCP tool error)."""

from __future__ import annotations

from kb_lsp.agent import InvalidInput


class InvalidRequest(InvalidInput):
    """The request itself is wrong and the client can fix it ("No result 7: …")."""


class Unavailable(RuntimeError):
    """The request is fine but cannot be served now: the knowledge base is not open, or
    it is read-only because another process writes it."""


__all__ = ["InvalidInput", "InvalidRequest", "Unavailable"]
