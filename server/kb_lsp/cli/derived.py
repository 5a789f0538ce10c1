"""`kb` commands made from the operations table: an operation with `cli="NAME"` and no
command of that name in the table (`table.py`) becomes `kb NAME`, its flags read from
the params model as every command's are (`fields.py`), its result printed as JSON. It
runs in this process through the dispatcher, on the index brought up to date."""

from __future__ import annotations

import argparse
import json
from typing import Any

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


__all__ = ["run"]
