"""The table of operations (`contract/operations.py`) → the list of wire methods in
`docs/protocol.md`, between two marker comments: what another editor's client may call."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from kb_lsp.codegen.settings_page import between
from kb_lsp.contract.operations import NOTIFICATIONS, OPERATIONS

PATH = "docs/protocol.md"
BEGIN = (
    "<!-- methods: generated from server/kb_lsp/contract/operations.py "
    "by `python -m kb_lsp.codegen` -->"
)
END = "<!-- end of methods -->"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _params(model: type[BaseModel]) -> list[str]:
    """`name` or `name?` (has a default) per wire field, with its description."""
    out = []
    for name, info in model.model_fields.items():
        wire = info.alias or name
        mark = "" if info.is_required() else "?"
        meaning = _cell(info.description or "")
        out.append(f"`{wire}{mark}`: {meaning}" if meaning else f"`{wire}{mark}`")
    return out


def _codes(errors: tuple[Any, ...]) -> str:
    return ", ".join(f"`{kind.code}` {kind.__name__}" for kind in errors)


def methods_page() -> str:
    rows = [
        "| method | result | may fail with | also |",
        "| --- | --- | --- | --- |",
    ]
    for op in OPERATIONS:
        also = [f"command `{op.command}`"]
        if op.cli:
            also.append(f"`kb {op.cli} … --json`")
        if op.local:
            also.append("local socket")
        rows.append(
            f"| `{op.method}` | `{op.result.__name__}` | {_codes(op.errors)} | {'; '.join(also)} |"
        )
    out = "\n".join(rows) + "\n"
    for op in OPERATIONS:
        out += f"\n**`{op.method}`** — {_cell(op.summary)} Params (`?`: may be left out):\n"
        params = _params(op.params)
        out += "".join(f"\n* {line}" for line in params) + ("\n" if params else "")
    out += "\nNotifications from the server:\n\n"
    out += "| notification | payload | when |\n| --- | --- | --- |\n"
    for note in NOTIFICATIONS:
        out += f"| `{note.method}` | `{note.payload.__name__}` | {_cell(note.summary)} |\n"
    return out


def protocol_md(current: str) -> str:
    """`current` with the text between the markers replaced by the list of methods."""
    return between(current, BEGIN, END, methods_page(), PATH)
