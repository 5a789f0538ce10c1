"""`kb serve` (the language server) and `kb mcp` (the MCP server)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

# The default is re-exported for the table of commands (`table.py`), which is no launcher.
from kb_lsp.lsp.limits import DEFAULT_MAX_MESSAGE_BYTES as DEFAULT_MAX_MESSAGE_BYTES
from kb_lsp.lsp.limits import MIN_MESSAGE_BYTES

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    pass
from kb_lsp.cli.common import CliError, _settings, _workspace, model_setting


def cmd_serve(args: argparse.Namespace) -> int:
    from kb_lsp.lsp.setup import serve

    tcp = None
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not port.isdigit():
            raise CliError(f"--tcp wants HOST:PORT, got {args.tcp!r}")
        tcp = (host or "127.0.0.1", int(port))
    serve(tcp=tcp, max_message_bytes=args.max_message_size)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from kb_lsp.mcp.transport import TransportError, parse_address, run

    folders = list(dict.fromkeys(_workspace(path) for path in (args.workspace or ["."])))
    try:
        http = (
            parse_address(
                args.http,
                allow_remote=args.allow_remote,
                allowed_hosts=args.allow_host or (),
                allowed_origins=args.allow_origin or (),
                **{
                    name: value
                    for name, value in (
                        ("max_sessions", args.max_sessions),
                        ("session_idle", args.session_idle),
                    )
                    if value is not None  # else `mcp/sessions.py`'s defaults
                },
            )
            if args.http
            else None
        )
        run(folders, _settings(args, model_setting(args.model)), http)
    except TransportError as err:
        raise CliError(str(err)) from None
    return 0


def _message_size(text: str) -> int:
    if not text.isdigit() or int(text) < MIN_MESSAGE_BYTES:
        raise argparse.ArgumentTypeError(f"a number of bytes of at least {MIN_MESSAGE_BYTES}")
    return int(text)
