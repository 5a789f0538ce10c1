"""The command line's parser: one subcommand each, with the flags messages may name."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kb_lsp.lsp.limits import DEFAULT_MAX_MESSAGE_BYTES

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    pass
from kb_lsp.cli.ask import cmd_ask
from kb_lsp.cli.index import cmd_index
from kb_lsp.cli.schema import cmd_schema
from kb_lsp.cli.search import cmd_search
from kb_lsp.cli.serve import _limit, _message_size, cmd_mcp, cmd_serve
from kb_lsp.cli.status import PROBE_SECONDS, cmd_status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kb", description="A knowledge base for the Markdown in a workspace."
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the log on stderr (INFO and up)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    subs: list[argparse.ArgumentParser] = []

    def command(name: str, handler: Callable[[argparse.Namespace], int], help: str) -> Any:
        sub = commands.add_parser(name, help=help, description=help)
        sub.set_defaults(handler=handler)
        subs.append(sub)
        return sub

    def workspace(sub: argparse.ArgumentParser, *, many: bool = False) -> None:
        if many:
            sub.add_argument(
                "--workspace", "-w", metavar="PATH", action="append",
                help="workspace folder (repeat for several; default: .)",
            )  # fmt: skip
        else:
            sub.add_argument(
                "--workspace", "-w", metavar="PATH", help="workspace folder (default: .)"
            )
        sub.add_argument(
            "--storage", metavar="DIR", help="where indexes live (default: $KB_STORAGE or "
            "~/.cache/kb-lsp)",
        )  # fmt: skip
        sub.add_argument(
            "--settings", metavar="JSON",
            help='kb.* settings as a JSON object, e.g. \'{"ollama.host": "http://gpu:11434"}\'',
        )  # fmt: skip

    serve = command("serve", cmd_serve, "run the language server on stdio")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead (debugging)")
    serve.add_argument(
        "--max-message-size",
        type=_message_size,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        metavar="BYTES",
        help="the largest JSON-RPC message accepted (default 64 MiB); a larger one is "
        "answered with a parse error and skipped",
    )

    index = command("index", cmd_index, "index a workspace folder (incremental)")
    index.add_argument("path", nargs="?", help="workspace folder (default: .; or -w PATH)")
    workspace(index)
    index.add_argument("--full", action="store_true", help="re-index everything")
    index.add_argument("--json", action="store_true", help="print the index status as JSON")
    index.add_argument(
        "--extract",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="extract the schema's fields (.kb/schema.json) with the local model after the "
        "vectors (default: kb.metadata.extract); --no-extract skips it",
    )

    search = command("search", cmd_search, "search the workspace, numbered results")
    search.add_argument(
        "query", nargs="*", help="what to look for (a filter may be typed in it too)"
    )
    workspace(search)
    search.add_argument("--limit", "-n", type=_limit, default=10, help="at most N files")
    search.add_argument(
        "--mode", choices=["hybrid", "semantic", "keyword"], default="hybrid", help="retrieval"
    )
    search.add_argument("--path", action="append", metavar="GLOB", help="only these paths")
    search.add_argument(
        "--filter",
        "-f",
        metavar="EXPR",
        help="only files whose metadata match, e.g. 'tag:runbook -status:draft "
        "modified>2026-10-01' (kb schema lists the fields)",
    )
    search.add_argument("--json", action="store_true", help="print the kb/search result")

    schema = command(
        "schema", cmd_schema, "list the metadata fields a filter can use, with their values"
    )
    workspace(schema)
    schema.add_argument("--json", action="store_true", help="print the kb/schema result")
    schema.add_argument(
        "--discover",
        action="store_true",
        help="propose a .kb/schema.json (front-matter fields, and fields the local model "
        "suggests from a sample of notes) on stdout",
    )
    schema.add_argument(
        "--sample", type=int, default=8, metavar="N", help="notes the model reads (0: none)"
    )
    schema.add_argument(
        "--extracted",
        action="store_true",
        help="list every value the model extracted from each note: kept (with the line and "
        "words of the note it was read from) or rejected (with the reason)",
    )

    status = command("status", cmd_status, "show what is indexed and what was skipped")
    workspace(status)
    status.add_argument(
        "--probe",
        action="store_true",
        help=f"ask the model whether it answers and calls tools (waits up to "
        f"{PROBE_SECONDS:g} s for it)",
    )
    status.add_argument("--json", action="store_true", help="print the kb/status result")

    ask = command("ask", cmd_ask, "ask a question (a local model: Ollama or OpenAI-compatible)")
    ask.add_argument("question", nargs="+", help='e.g. "summarize file 1"')
    workspace(ask)
    ask.add_argument("--file", metavar="PATH", help="focus on this workspace file")
    ask.add_argument(
        "--model", metavar="NAME", help="the chat model, for this question (kb.llm.model)"
    )
    ask.add_argument("--json", action="store_true", help="print the kb/ask result")

    mcp = command(
        "mcp", cmd_mcp, "serve the knowledge base to agents over MCP (stdio; --http for HTTP)"
    )
    workspace(mcp, many=True)
    mcp.add_argument(
        "--http", metavar="HOST:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: any)",
    )  # fmt: skip
    mcp.add_argument(
        "--allow-remote", action="store_true",
        help="allow a non-loopback --http host (requires the KB_MCP_TOKEN bearer token)",
    )  # fmt: skip
    mcp.add_argument(
        "--allow-host", action="append", metavar="NAME[:PORT]",
        help="also accept requests whose Host header names NAME (the bound address is "
        "always accepted; repeatable)",
    )  # fmt: skip
    mcp.add_argument(
        "--allow-origin", action="append", metavar="SCHEME://HOST[:PORT]",
        help="also accept browser requests from this Origin (repeatable)",
    )  # fmt: skip
    mcp.add_argument(
        "--max-sessions", type=int, metavar="N",
        help="HTTP sessions open at once; at the limit the idle one used least recently "
        "is closed for a new one (default 64)",
    )  # fmt: skip
    mcp.add_argument(
        "--session-idle", type=float, metavar="SECONDS",
        help="close an HTTP session idle this long (default 1800)",
    )  # fmt: skip
    mcp.add_argument(
        "--model", metavar="NAME", help="the chat model, either provider (kb.llm.model)"
    )

    for sub in subs:  # what a message may tell the user to use (`terminal/words.py`)
        sub.set_defaults(flags=frozenset(o for a in sub._actions for o in a.option_strings))
    return parser
