"""`kb index`: bring the index up to date (`--full`: read and embed everything again)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    pass
from kb_lsp.cli.common import CliError, _runtime, _sync, _workspace
from kb_lsp.cli.output import print_result


def cmd_index(args: argparse.Namespace) -> int:
    if args.path and args.workspace and _workspace(args.path) != _workspace(args.workspace):
        raise CliError(f"two workspaces given ({args.path} and -w {args.workspace}): give one")
    folder = _workspace(args.path or args.workspace)
    with _runtime(args, folder) as runtime:
        if runtime.status().read_only:
            raise CliError(
                "another kb-lsp process (an editor window, kb mcp) is indexing this "
                "workspace and keeps it current; close it, or index into another --storage"
            )
        _sync(runtime, full=args.full)
        status = runtime.status()
    if args.json:
        print_result("index", status)
    else:
        print(f"{status.files} files, {status.chunks} chunks in {status.store}")
    return 0
