"""The LSP front end: the only package that imports pygls and lsprotocol.

`serve()` runs the server on stdio (`kb serve`, `python -m kb_lsp`) or TCP (`--tcp`).
"""

from __future__ import annotations


def serve(tcp: tuple[str, int] | None = None) -> int:
    """Run the language server until the client exits; returns the exit code."""
    from kb_lsp.lsp.setup import serve as _serve

    return _serve(tcp)


__all__ = ["serve"]
