"""`kb`'s options come from the params models (`cli/fields.py`, `contract/cli_fields.py`):
each operation's command offers every field a terminal can type, with the field's type,
bounds, default, choices and description, whatever the table (`cli/table.py`) spells
differently; the parser takes anything typed and either parses it or says why (exit 2)."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kb_lsp import cli
from kb_lsp.cli.fields import Terminal
from kb_lsp.cli.table import COMMANDS, Command
from kb_lsp.contract.cli_fields import specs
from kb_lsp.contract.operations import BY_CLI
from kb_lsp.protocol import MAX_LIMIT, SearchParams
from kb_lsp.runtime.quick_defaults import PARAMS


def shown_help(command: str) -> str:
    said = io.StringIO()
    with contextlib.redirect_stdout(said), pytest.raises(SystemExit):
        cli.parse_args([command, "--help"])
    return " ".join(said.getvalue().split())


def test_the_generated_options_are_the_params_models() -> None:
    """What `kb status` parses without pydantic is what the models say now."""
    assert {name: specs(op.params) for name, op in BY_CLI.items()} == PARAMS


@pytest.mark.parametrize(
    "row", [row for row in COMMANDS if row.name in BY_CLI], ids=lambda row: row.name
)
def test_every_field_a_terminal_can_type_is_an_option(row: Command) -> None:
    """Each params field is an option (or the positional) of its command, with the
    field's default, choices and help, unless the table says why not; the table names no
    field the model lacks."""
    model = BY_CLI[row.name].params
    assert set(row.terminal) <= set(model.model_fields), "the table spells a field no model has"
    wanted = [name for name, how in row.terminal.items() if how.nargs == "+"]
    parsed = vars(cli.parse_args([row.name, *(["x"] if wanted else [])]))
    shown = shown_help(row.name)
    for field, spec in specs(model).items():
        how = row.terminal.get(field, Terminal())
        if how.hidden:
            assert field not in parsed
            continue
        assert field in parsed
        if how.nargs is None:
            assert set(how.flags or ["--" + field.replace("_", "-")]) <= parsed["flags"]
            if spec["kind"] == "bool":
                assert parsed[field] is bool(spec["default"])
            elif spec["kind"] != "list":
                assert parsed[field] == spec["default"]
        if how.help:
            assert " ".join(how.help.split()) in shown
        elif spec["help"]:  # in the case of `kb`'s own help: "at most this many files"
            words = spec["help"][0].lower() + spec["help"][1:].removesuffix(".")
            assert " ".join(words.split()) in shown
        if spec["kind"] == "choice":
            assert "{" + ",".join(spec["choices"]) + "}" in shown


def test_the_help_is_the_field_description() -> None:
    shown = shown_help("search")
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
