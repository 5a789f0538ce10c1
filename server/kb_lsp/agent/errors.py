"""The agent's refusal of a request (a module of its own: front ends catch it without
loading the agent)."""

from __future__ import annotations


class InvalidInput(ValueError):
    """Bad `file`/`n` for `kb/summarize`; the message is worded for the user
    (the LSP layer answers it as `InvalidParams`)."""
