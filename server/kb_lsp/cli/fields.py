"""A `kb` command's options from its operation's params model, as MCP's tool arguments are
made from it: a field `exclude_linked` is `--exclude-linked`, its type, bounds, default,
choices and help the field's own (its JSON schema: a bool a switch, a list of words
repeatable, a literal its choices, a bounded number checked against its bounds). A field
a terminal cannot type (a list of objects) is no option.

`contract/cli_fields.py` reads a model (it needs pydantic); `add_fields` builds the
options from what it read, which is plain data, so the commands that answer without
pydantic (`kb status`, `kb search`, `kb schema`) take it from the generated
`runtime/quick_defaults.py` (`PARAMS`; `python -m kb_lsp.codegen` writes it and a test
keeps it current).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kb_lsp.contract.cli_fields import Spec


@dataclass(frozen=True)
class Terminal:
    """How a terminal spells one field, where its long flag is not enough: a short flag,
    another long name, a positional (its `nargs`), a metavar, words for the help where the
    field's description speaks to an API caller, or `hidden` with the reason."""

    flags: tuple[str, ...] = ()
    nargs: str | None = None  # a positional: "?", "*" or "+"
    metavar: str | None = None
    help: str | None = None
    hidden: str | None = None  # why the command line leaves this field out


@dataclass(frozen=True)
class Option:
    """An option that is the terminal's own rather than a params field (`--json`)."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)


def number(kind: type[float], low: float | None, high: float | None) -> Callable[[str], Any]:
    """An argparse type: `text` as a number within the field's bounds, or the reason not."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if low is not None and high is not None and not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g}")
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:g}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:g}")
        return value

    return parse


def add_fields(
    sub: argparse.ArgumentParser, fields: Mapping[str, Spec], terminal: Mapping[str, Terminal]
) -> None:
    """One option (or positional) per field, as `terminal` spells it where it says."""
    for name, spec in fields.items():
        how = terminal.get(name, Terminal())
        if how.hidden is not None:
            continue
        settings = _settings(spec, how)
        if how.nargs is not None:
            sub.add_argument(name, nargs=how.nargs, **settings)
        else:
            flags = how.flags or ("--" + name.replace("_", "-"),)
            sub.add_argument(*flags, dest=name, **settings)


def _terminal_case(description: str | None) -> str | None:
    """A field's description in the case of `kb`'s own help: "At most this many files."
    as "at most this many files"."""
    if not description:
        return description
    return description[0].lower() + description[1:].removesuffix(".")


def _settings(spec: Spec, how: Terminal) -> dict[str, Any]:
    settings: dict[str, Any] = {"help": how.help or _terminal_case(spec["help"])}
    if how.metavar is not None:
        settings["metavar"] = how.metavar
    kind = spec["kind"]
    if kind == "bool":
        return {**settings, "action": "store_true", "default": bool(spec["default"])}
    if how.nargs is None:
        settings["required"] = spec["required"]
    if kind == "list":  # a default list would be appended to: none given is None
        return {**settings, "action": "append"}
    settings["default"] = spec["default"]
    if kind == "choice":
        settings["choices"] = spec["choices"]
    elif kind in ("int", "float"):
        number_kind: type[float] = int if kind == "int" else float
        settings["type"] = number(number_kind, spec["min"], spec["max"])
    return settings


__all__ = ["Option", "Terminal", "add_fields", "number"]
