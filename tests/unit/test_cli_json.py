"""`kb <command> --json` prints the result of the command's row in the operations table,
in wire form, whether the result was made here (a model) or came from a running server
(already wire form)."""

from __future__ import annotations

import argparse
import io
import json
from contextlib import redirect_stdout

import pytest

from kb_lsp.cli.output import print_result, wire_result
from kb_lsp.cli.parser import build_parser
from kb_lsp.contract.operations import BY_CLI, OPERATIONS
from kb_lsp.protocol import IndexStatus, LlmStatus, SchemaResponse, dump
from kb_lsp.runtime.quick_defaults import COMMANDS


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    return dict(found.choices)


def test_each_row_with_a_command_is_a_kb_command_with_json() -> None:
    commands = _subcommands()
    assert set(BY_CLI) == {"search", "ask", "status", "index", "schema"}
    for name, op in BY_CLI.items():
        options = {flag for action in commands[name]._actions for flag in action.option_strings}
        assert "--json" in options, name
        assert COMMANDS[name] == op.method  # the pydantic-free copy is the table's
    assert len({op.cli for op in OPERATIONS if op.cli}) == len(BY_CLI)


def test_a_model_prints_as_the_wire_carries_it() -> None:
    status = IndexStatus(
        state="ready",
        files=2,
        chunks=5,
        pending=0,
        embedder="hashing",
        store="/tmp/x",
        llm=LlmStatus(host="http://127.0.0.1:11434", model="qwen"),
    )
    out = io.StringIO()
    with redirect_stdout(out):
        print_result("index", status)
    printed = json.loads(out.getvalue())
    assert printed == dump(status)
    assert "readOnly" in printed and "read_only" not in printed


def test_wire_form_passes_through_unchanged() -> None:
    answer = {"query": "café", "results": [], "index": {"state": "ready"}}
    assert wire_result("search", answer) is answer
    out = io.StringIO()
    with redirect_stdout(out):
        print_result("search", answer)
    assert json.loads(out.getvalue()) == answer


def test_the_wrong_model_or_command_is_refused() -> None:
    with pytest.raises(TypeError, match="IndexStatus"):
        wire_result("status", SchemaResponse(files=0, fields=[]))
    with pytest.raises(KeyError, match="serve"):
        wire_result("serve", {})
