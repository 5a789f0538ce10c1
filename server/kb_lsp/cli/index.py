"""`kb index`: bring the index up to date (`--full`: read and embed everything again)."""

from __future__ import annotations

import argparse

from kb_lsp.cli.common import (
    EXIT_ERROR,
    EXIT_HELD,
    HELD,
    CliError,
    _fail,
    _runtime,
    _say,
    _sync,
    _workspace,
)
from kb_lsp.cli.output import print_result
from kb_lsp.terminal.text import out


def cmd_index(args: argparse.Namespace) -> int:
    if args.path and args.workspace and _workspace(args.path) != _workspace(args.workspace):
        raise CliError(f"two workspaces given ({args.path} and -w {args.workspace}): give one")
    folder = _workspace(args.path or args.workspace)
    # --extract: even where kb.metadata.extract is off; --no-extract: not this time.
    overrides = {"metadata.extract": True} if args.extract else None
    with _runtime(args, folder, overrides) as runtime:
        if runtime.status().read_only:
            _fail(HELD, EXIT_HELD)
        report = _sync(runtime, full=args.full, extract=args.extract is not False)
        if report is None:  # another process took the index between the two
            _fail(HELD, EXIT_HELD)
        status = runtime.status()
    if status.metadata is not None and status.metadata.message:  # a broken schema: why
        _say(status.metadata.message)
    if args.json:
        print_result("index", status)
    else:
        out(f"{status.files} files, {status.chunks} chunks in {status.store}")
    # The local index is complete; a team index is not (a script that fills it must know).
    return EXIT_ERROR if report is not None and report.team_error else 0
