"""`kb` commands made from the operations table: an operation with `cli="NAME"` and no
hand-written command of that name (`parser.py`) becomes `kb NAME`, its flags read from
the params model as MCP's tool arguments are (a field `exclude_linked` is
`--exclude-linked`; a bool a switch, a list repeatable, a literal its choices), its result
printed as JSON. It runs in this process through the dispatcher, on the index brought up
to date."""

from __future__ import annotations

import argparse
import json
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel

from kb_lsp.cli.common import CliError, _runtime, _sync, _workspace
from kb_lsp.contract.operations import Call
from kb_lsp.contract.params import parse_params
from kb_lsp.errors import InvalidInput
from kb_lsp.protocol import dump
from kb_lsp.runtime import dispatch
from kb_lsp.runtime.deadline import READ_TIMEOUT
from kb_lsp.runtime.registry import Bound
from kb_lsp.terminal.text import out

CLIENT = "cli"


def add_flags(sub: argparse.ArgumentParser, model: type[BaseModel]) -> None:
    """One flag per field of `model`, typed and described as the field is."""
    for name, info in model.model_fields.items():
        flag = "--" + name.replace("_", "-")
        kind: Any = info.annotation
        args = typing.get_args(kind)
        if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in args:
            kind = next(a for a in args if a is not type(None))
        help = info.description
        if kind is bool:
            sub.add_argument(flag, dest=name, action="store_true", default=None, help=help)
        elif typing.get_origin(kind) is Literal:
            choices = [str(c) for c in typing.get_args(kind)]
            sub.add_argument(flag, dest=name, choices=choices, help=help)
        elif typing.get_origin(kind) is list:
            sub.add_argument(flag, dest=name, action="append", help=help)
        else:
            number = kind if kind in (int, float) else str
            sub.add_argument(flag, dest=name, type=number, help=help, required=info.is_required())


def run(bound: Bound[Any, Any], args: argparse.Namespace) -> int:
    """`kb NAME`: the operation on this workspace, its result as JSON on stdout."""
    op = bound.op
    values = {
        name: getattr(args, name)
        for name in op.params.model_fields
        if getattr(args, name, None) is not None
    }
    try:
        params = parse_params(op.params, values, f"kb {op.cli}")
    except InvalidInput as err:
        raise CliError(str(err)) from None
    with _runtime(args, _workspace(args.workspace)) as runtime:
        if op.pool != "inline":
            _sync(runtime, quiet=True)
        result = dispatch.waited(runtime, bound, params, Call(CLIENT), READ_TIMEOUT)
    out(json.dumps(dump(result), indent=2, ensure_ascii=False))
    return 0


__all__ = ["add_flags", "run"]
