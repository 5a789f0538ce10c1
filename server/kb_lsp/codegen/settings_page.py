"""`config.py` → the settings table of `docs/configuration.md`, between two marker comments."""

from __future__ import annotations

import json
from typing import Any

from kb_lsp.codegen.manifest import editor_settings
from kb_lsp.config import GROUPS

BEGIN = "<!-- settings: generated from server/kb_lsp/config.py by `python -m kb_lsp.codegen` -->"
END = "<!-- end of settings -->"
PATH = "docs/configuration.md"


def _default(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        return f"`{value}`"
    return f"`{json.dumps(value)}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def settings_table() -> str:
    rows = ["| setting | default | meaning |", "| --- | --- | --- |"]
    group = None
    for setting in editor_settings():
        if setting.meta["group"] != group:
            group = setting.meta["group"]
            rows.append(f"| **{GROUPS[group]}** | | |")
        notes = []
        if setting.meta.get("env"):
            notes.append(f"env `{setting.meta['env']}`")
        if setting.meta.get("clientOnly"):
            notes.append("VS Code only")
        if setting.meta.get("restricted"):
            notes.append("user settings only in an untrusted workspace")
        meaning = _cell(setting.info.description or "")
        if notes:
            meaning += " (" + "; ".join(notes) + ")"
        rows.append(f"| `kb.{setting.key}` | {_default(setting.default)} | {meaning} |")
    return "\n".join(rows) + "\n"


def between(current: str, begin: str, end: str, text: str, path: str) -> str:
    """`current` with what stands between the markers `begin` and `end` replaced by `text`."""
    try:
        start = current.index(begin) + len(begin)
        stop = current.index(end, start)
    except ValueError:
        raise ValueError(f"{path} lacks the markers {begin!r} … {end!r}") from None
    return current[:start] + "\n" + text + current[stop:]


def configuration_md(current: str) -> str:
    """`current` with the text between the markers replaced by the table."""
    return between(current, BEGIN, END, settings_table(), PATH)
