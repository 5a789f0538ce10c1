"""The `kb` commands, as data: each command's handler and help, the options that are the
terminal's own (`--json`, `-w`), and — for a command that runs an operation — how a
terminal spells the params fields whose long flag is not enough (a short flag, a
positional). Every other option of such a command is its params model's (`fields.py`), so
a new field is a new flag without an edit here. `parser.py` builds the parser from this.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kb_lsp.cli.fields import Option, Terminal
from kb_lsp.cli.serve import DEFAULT_MAX_MESSAGE_BYTES, _message_size

PROBE_SECONDS = 2.0  # `kb status --probe` waits this long for the model's server


@dataclass(frozen=True)
class Command:
    name: str
    handler: Callable[[argparse.Namespace], int]
    help: str
    options: tuple[Option, ...] = ()
    terminal: Mapping[str, Terminal] = field(default_factory=dict)  # by params field


def _cmd(module: str, command: str | None = None) -> Callable[[argparse.Namespace], int]:
    """`kb_lsp.cli.MODULE`'s `cmd_COMMAND` (default: the module's name), loaded when its
    command runs: a command pays for its own module alone (a one-shot keyword search is
    timed against the interpreter's start) — but `serve.py`, whose message limits the
    table's options name."""
    name = f"cmd_{command or module}"

    def run(args: argparse.Namespace) -> int:
        handler: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(f"kb_lsp.cli.{module}"), name
        )
        return handler(args)

    run.__qualname__ = run.__name__ = name
    return run


def _json(operation: str) -> Option:
    return Option(("--json",), {"action": "store_true", "help": f"print the kb/{operation} result"})


def where(*, many: bool = False) -> tuple[Option, ...]:
    """The workspace folder(s), the store and the settings: every command but `serve`."""
    folder = (
        {"action": "append", "help": "workspace folder (repeat for several; default: .)"}
        if many
        else {"help": "workspace folder (default: .)"}
    )
    return (
        Option(("--workspace", "-w"), {"metavar": "PATH", **folder}),
        Option(("--storage",), {
            "metavar": "DIR", "help": "where indexes live (default: $KB_STORAGE or "
            "~/.cache/kb-lsp)",
        }),
        Option(("--settings",), {
            "metavar": "JSON",
            "help": 'kb.* settings as a JSON object, e.g. \'{"ollama.host": '
            '"http://gpu:11434"}\'',
        }),
    )  # fmt: skip


SERVE = Command("serve", _cmd("serve"), "run the language server on stdio", (
    Option(("--tcp",), {"metavar": "HOST:PORT", "help": "listen on TCP instead (debugging)"}),
    Option(("--max-message-size",), {
        "type": _message_size, "default": DEFAULT_MAX_MESSAGE_BYTES, "metavar": "BYTES",
        "help": "the largest JSON-RPC message accepted (default 64 MiB); a larger one is "
        "answered with a parse error and skipped",
    }),
))  # fmt: skip

INDEX = Command("index", _cmd("index"), "index a workspace folder (incremental)", (
    Option(("path",), {"nargs": "?", "help": "workspace folder (default: .; or -w PATH)"}),
    *where(),
    Option(("--json",), {"action": "store_true", "help": "print the index status as JSON"}),
    Option(("--extract",), {
        "action": argparse.BooleanOptionalAction, "default": None,
        "help": "extract the schema's fields (.kb/schema.json) with the local model after "
        "the vectors (default: kb.metadata.extract); --no-extract skips it",
    }),
), {"full": Terminal(help="re-index everything")})  # fmt: skip

SEARCH = Command("search", _cmd("search"), "search the workspace, numbered results", (
    *where(), _json("search"),
), {
    "query": Terminal(nargs="*", help="what to look for (a filter may be typed in it too)"),
    "limit": Terminal(("--limit", "-n"), metavar="N"),
    "paths": Terminal(("--path",), metavar="GLOB", help="only files whose path matches "
                      "this glob (gitignore style; repeat for several)"),
    "filter": Terminal(("--filter", "-f"), metavar="EXPR", help="only files whose metadata "
                       "match, e.g. 'tag:runbook -status:draft modified>2026-10-01' (kb "
                       "schema lists the fields)"),
})  # fmt: skip

SCHEMA = Command(
    "schema", _cmd("schema"), "list the metadata fields a filter can use, with their values", (
    *where(), _json("schema"),
    Option(("--discover",), {
        "action": "store_true",
        "help": "propose a .kb/schema.json (front-matter fields, and fields the local "
        "model suggests from a sample of notes) on stdout",
    }),
    Option(("--sample",), {
        "type": int, "default": 8, "metavar": "N", "help": "notes the model reads (0: none)",
    }),
))  # fmt: skip

STATUS = Command("status", _cmd("status"), "show what is indexed and what was skipped", (
    *where(), _json("status"),
), {
    "probe": Terminal(help=f"ask the model whether it answers and calls tools (waits up "
                      f"to {PROBE_SECONDS:g} s for it)"),
})  # fmt: skip

ASK = Command("ask", _cmd("ask"), "ask a question (a local model: Ollama or OpenAI-compatible)", (
    *where(), _json("ask"),
    Option(("--model",), {
        "metavar": "NAME", "help": "the chat model, for this question (kb.llm.model)",
    }),
), {
    "question": Terminal(nargs="+", help='e.g. "summarize file 1"'),
    "file": Terminal(metavar="PATH"),
    "n": Terminal(hidden='the question says it: "summarize file 2"'),
    "conversation_id": Terminal(hidden="a question on the command line starts afresh"),
})  # fmt: skip

MCP = Command(
    "mcp", _cmd("serve", "mcp"),
    "serve the knowledge base to agents over MCP (stdio; --http for HTTP)", (
    *where(many=True),
    Option(("--http",), {
        "metavar": "HOST:PORT",
        "help": "serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: any)",
    }),
    Option(("--allow-remote",), {
        "action": "store_true",
        "help": "allow a non-loopback --http host (requires the KB_MCP_TOKEN bearer token)",
    }),
    Option(("--allow-host",), {
        "action": "append", "metavar": "NAME[:PORT]",
        "help": "also accept requests whose Host header names NAME (the bound address is "
        "always accepted; repeatable)",
    }),
    Option(("--allow-origin",), {
        "action": "append", "metavar": "SCHEME://HOST[:PORT]",
        "help": "also accept browser requests from this Origin (repeatable)",
    }),
    Option(("--max-sessions",), {
        "type": int, "metavar": "N",
        "help": "HTTP sessions open at once; at the limit the idle one used least recently "
        "is closed for a new one (default 64)",
    }),
    Option(("--session-idle",), {
        "type": float, "metavar": "SECONDS",
        "help": "close an HTTP session idle this long (default 1800)",
    }),
    Option(("--model",), {
        "metavar": "NAME", "help": "the chat model, either provider (kb.llm.model)",
    }),
))  # fmt: skip

# In the order `kb --help` lists them.
COMMANDS: tuple[Command, ...] = (SERVE, INDEX, SEARCH, SCHEMA, STATUS, ASK, MCP)

__all__ = ["COMMANDS", "Command", "where"]
