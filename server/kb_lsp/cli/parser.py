"""The command line's parser, built from the table of commands (`table.py`): each
command's own options, then — for one that runs an operation — an option per field of
its params model (`fields.py`), read from the generated `quick_defaults.PARAMS` so that
`kb status` and a keyword search parse without pydantic. With `derived`, also `kb NAME`
for each served operation with `cli="NAME"` that the table has no command for."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from kb_lsp.cli.fields import Option, Terminal, add_fields
from kb_lsp.cli.table import COMMANDS, where
from kb_lsp.contract.cli_fields import Spec
from kb_lsp.runtime.quick_defaults import PARAMS


def command_names(parser: argparse.ArgumentParser) -> list[str]:
    """The subcommands of `parser`, in the order `kb --help` lists them."""
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def table_commands() -> list[str]:
    """The commands of the table (`table.py`), without building a parser."""
    return [row.name for row in COMMANDS]


def build_parser(derived: bool = False, only: str | None = None) -> argparse.ArgumentParser:
    """`kb`'s parser; `derived`: with the commands made from the operations table too
    (`derived.py`; they load pydantic and the runtime, which `kb status` does without);
    `only`: the table's command being run, alone — each command's parser costs argparse's
    formatter and message lookups (gettext), which a one-shot search would pay for six
    commands it does not run."""
    parser = argparse.ArgumentParser(
        prog="kb", description="A knowledge base for the Markdown in a workspace."
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the log on stderr (INFO and up)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    subs: list[argparse.ArgumentParser] = []

    def command(
        name: str,
        handler: Callable[[argparse.Namespace], int],
        help: str,
        fields: dict[str, Spec],
        options: tuple[Option, ...],
        terminal: dict[str, Terminal] | None = None,
    ) -> None:
        if only is not None and name != only:
            return
        sub = commands.add_parser(name, help=help, description=help)
        sub.set_defaults(handler=handler)
        add_fields(sub, fields, terminal or {})
        for option in options:
            sub.add_argument(*option.flags, **option.settings)
        subs.append(sub)

    for row in COMMANDS:
        command(row.name, row.handler, row.help, PARAMS.get(row.name, {}), row.options,
                dict(row.terminal))  # fmt: skip
    if derived:
        _derived_commands(command, set(commands.choices))
    for sub in subs:  # what a message may tell the user to use (`terminal/words.py`)
        sub.set_defaults(flags=frozenset(o for a in sub._actions for o in a.option_strings))
    return parser


def _derived_commands(command: Callable[..., None], in_table: set[str]) -> None:
    """`kb NAME` for each operation with `cli="NAME"` that no command above handles; its
    fields read from the model here, as an operation added at run time (a test's) is in
    no generated table."""
    import functools

    from kb_lsp.cli import derived
    from kb_lsp.contract.cli_fields import specs
    from kb_lsp.runtime import registry

    for bound in registry.served():
        name = bound.op.cli
        if name is None or name in in_table:
            continue
        handler: Any = functools.partial(derived.run, bound)
        command(name, handler, bound.op.summary, specs(bound.op.params), where())
