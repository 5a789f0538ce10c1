"""`kb <command> --json`: the result of the command's row in the operations table
(`contract/operations.py`, its `cli` field), as the wire carries it — the same object an
editor or a script gets from the server for that method.

A result comes either as the row's result model (answered in this process) or already
in wire form (a running server's answer over the local socket, the stored status read
without pydantic: `runtime/quick.py`); the second never loads the table, whose models
need pydantic, and is checked against its generated copy (`quick_defaults.COMMANDS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kb_lsp.runtime.quick_defaults import COMMANDS
from kb_lsp.terminal.text import json_text, out

if TYPE_CHECKING:
    from pydantic import BaseModel


def wire_result(command: str, result: BaseModel | Mapping[str, Any]) -> Mapping[str, Any]:
    """`result` of `kb <command>` in wire form (camelCase, JSON types)."""
    if command not in COMMANDS:
        raise KeyError(f"kb {command} prints no operation's result (contract/operations.py)")
    if isinstance(result, Mapping):
        return result
    from kb_lsp.contract.operations import BY_CLI

    model = BY_CLI[command].result
    if not isinstance(result, model):
        raise TypeError(f"kb {command} answers {model.__name__}, not {type(result).__name__}")
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json")
    return dumped


def print_result(command: str, result: BaseModel | Mapping[str, Any]) -> None:
    """Print `result` of `kb <command>` as `--json` does."""
    out(json_text(wire_result(command, result)))
