"""The agent's refusal of a request (a module of its own: front ends catch it without
loading the agent): bad `file`/`n` for `kb/summarize`, worded for the user. It is the
contract's `InvalidInput` (`errors.py`)."""

from __future__ import annotations

from kb_lsp.errors import InvalidInput

__all__ = ["InvalidInput"]
