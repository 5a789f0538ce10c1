"""`kb`'s options come from the params models (`cli/fields.py`, `contract/cli_fields.py`):
each operation's command offers every field a terminal can type, with the field's type,
bounds, default, choices and description, whatever the table (`cli/table.py`) spells
differently; the parser takes anything typed and either parses it or says why (exit 2)."""

from __future__ import annotations

import argparse
import contextlib
import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kb_lsp import cli
from kb_lsp.cli.parser import build_parser
from kb_lsp.cli.table import COMMANDS
from kb_lsp.contract.cli_fields import specs
from kb_lsp.contract.operations import BY_CLI
from kb_lsp.protocol import MAX_LIMIT, SearchParams
from kb_lsp.runtime.quick_defaults import PARAMS


def subparser(name: str) -> argparse.ArgumentParser:
    for action in build_parser()._subparsers._group_actions:  # type: ignore[union-attr]
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]  # type: ignore[no-any-return]
    raise AssertionError("no subcommands")


def test_the_generated_options_are_the_params_models() -> None:
    """What `kb status` parses without pydantic is what the models say now."""
    assert {name: specs(op.params) for name, op in BY_CLI.items()} == PARAMS


@pytest.mark.parametrize("row", [row for row in COMMANDS if row.name in BY_CLI], ids=str)
def test_every_field_a_terminal_can_type_is_an_option(row: object) -> None:
    """Each params field is an option (or the positional) of its command, with the
    field's default and help, unless the table says why not; the table names no field
    the model lacks."""
    name, terminal = row.name, row.terminal  # type: ignore[attr-defined]
    model = BY_CLI[name].params
    assert set(terminal) <= set(model.model_fields), "the table spells a field no model has"
    actions = {action.dest: action for action in subparser(name)._actions}
    for field, spec in specs(model).items():
        if field in terminal and terminal[field].hidden:
            assert field not in actions
            continue
        action = actions[field]
        if field in terminal and terminal[field].help:
            assert action.help == terminal[field].help
        elif spec["help"]:  # in the case of `kb`'s own help: "at most this many files"
            assert action.help == spec["help"][0].lower() + spec["help"][1:].removesuffix(".")
        if spec["kind"] == "choice":
            assert list(action.choices or ()) == spec["choices"]
        if spec["kind"] not in ("list", "bool") and action.nargs is None:
            assert action.default == spec["default"]


def test_the_help_is_the_field_description(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.parse_args(["search", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    mode = SearchParams.model_fields["mode"].description
    assert mode is not None and " ".join(mode.removesuffix(".").split()) in shown
    assert "{hybrid,semantic,keyword}" in shown


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["search", "x", "--limit", "0"],
            f"argument --limit/-n: must be between 1 and {MAX_LIMIT}",
        ),
        (["search", "x", "-n", "ten"], "argument --limit/-n: not a number: 'ten'"),
        (["search", "x", "--mode", "fuzzy"], "argument --mode: invalid choice: 'fuzzy'"),
        (["ask"], "the following arguments are required: question"),
    ],
)
def test_a_bad_value_is_named(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.parse_args(argv)
    assert ended.value.code == 2
    assert said in capsys.readouterr().err


words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
globs = st.from_regex(r"[a-z]{1,8}(/\*\*|/\*\.md)?", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(
    query=st.lists(st.from_regex(r"[a-z][a-z0-9]{0,9}", fullmatch=True), min_size=1, max_size=4),
    limit=st.integers(1, MAX_LIMIT),
    mode=st.sampled_from(["hybrid", "semantic", "keyword"]),
    paths=st.lists(globs, max_size=3),
    short=st.booleans(),
)
def test_what_a_search_parses_is_the_params_it_means(
    query: list[str], limit: int, mode: str, paths: list[str], short: bool
) -> None:
    argv = ["search", *query, "-n" if short else "--limit", str(limit), "--mode", mode]
    for glob in paths:
        argv += ["--path", glob]
    args = cli.parse_args(argv)
    params = SearchParams(
        query=" ".join(args.query), limit=args.limit, mode=args.mode, paths=args.paths
    )
    assert (params.query, params.limit, params.mode) == (" ".join(query), limit, mode)
    assert params.paths == (paths or None)


flags = st.sampled_from(
    ["-n", "--limit", "--mode", "--path", "-f", "--filter", "--json", "-w", "--probe",
     "--extracted", "--full", "--file", "--model", "--sample", "--", "-v"]
)  # fmt: skip
commands = st.sampled_from([row.name for row in COMMANDS if row.name not in ("serve", "mcp")])


@settings(max_examples=200, deadline=None)
@given(command=commands, rest=st.lists(st.one_of(flags, words, st.integers().map(str)), max_size=8))
def test_any_command_line_parses_or_is_refused_with_usage(command: str, rest: list[str]) -> None:
    """Whatever is typed: a namespace whose values the params model takes, or exit 2 with
    argparse's usage and the reason — never a traceback."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            args = cli.parse_args([command, *rest])
    except SystemExit as ended:
        assert ended.code == 2
        # unknown options are the top parser's to name: "kb: error: unrecognized …"
        assert re.search(rf"^kb( {command})?: error: \S", said.getvalue(), re.M)
        return
    if command == "search":
        try:
            SearchParams(query=" ".join(args.query) or "x", limit=args.limit, mode=args.mode,
                         paths=args.paths, filter=args.filter)  # fmt: skip
        except ValidationError as err:  # only what argparse cannot know: a glob's rules
            assert all(error["loc"][0] in ("paths", "query", "filter") for error in err.errors())
