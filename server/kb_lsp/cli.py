"""`kb`: the terminal front end — serve, index, search, schema, status (and ask).

Every command works on one workspace folder (default: the current directory) and its
store (see `--storage`). Errors are one line on stderr and a non-zero exit, never a
traceback. Progress goes to stderr; results to stdout (`--json` for scripts: the same
objects as the `kb/*` LSP methods).

The last numbered list of `kb search` is kept in the store, so `kb ask "summarize file 1"`
right after a search means result 1 of that search, as in the editor.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from kb_lsp.lsp.limits import DEFAULT_MAX_MESSAGE_BYTES, MIN_MESSAGE_BYTES
from kb_lsp.runtime.local_socket import CLI_CLIENT
from kb_lsp.runtime.logs import BoundedFormatter
from kb_lsp.runtime.quick_defaults import ERROR_CODES, MAX_LIMIT, METHODS

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    from pydantic import ValidationError

    from kb_lsp.config import Settings
    from kb_lsp.protocol import AskResponse, IndexProgress
    from kb_lsp.runtime import Hooks, Runtime

EXIT_USAGE = 2
EXIT_ERROR = 1
EXIT_NOT_READY = 3  # nothing to show yet: another process is still building the index


class CliError(Exception):
    """A problem the user can fix; printed as one line."""


def _fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    print(f"kb: {message}", file=sys.stderr)
    raise SystemExit(code)


# --- shared plumbing ---------------------------------------------------------------------

# The runtime's name for the command line's numbered list (kept on disk).
CLIENT = CLI_CLIENT


def _cli_settings(
    args: argparse.Namespace, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The settings given on the command line, by their wire keys."""
    cli: dict[str, Any] = dict(overrides or {})
    if getattr(args, "storage", None):
        cli["storage"] = str(Path(args.storage).expanduser().resolve())
    return cli


def _settings(args: argparse.Namespace, overrides: dict[str, Any] | None = None) -> Settings:
    """The settings, loaded once a command (their problems said once)."""
    from kb_lsp.config import env_settings, load_settings

    key = json.dumps(overrides, sort_keys=True, default=str)
    loaded_before: dict[str, Settings] = args.__dict__.setdefault("_loaded_settings", {})
    if key not in loaded_before:
        loaded = load_settings(env_settings(), _cli_settings(args, overrides))
        if loaded.message:
            print(loaded.message, file=sys.stderr)
        loaded_before[key] = loaded.settings
    return loaded_before[key]


def _invalid(err: ValidationError) -> str:
    """`query: String should have at most 2000 characters`"""
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'input'}: {error['msg']}"
        for error in err.errors()
    )


def model_setting(model: str | None) -> dict[str, Any]:
    """`--model NAME` (kb ask, kb mcp) as a setting: kb.llm.model, which wins over
    kb.ollama.model for either provider (an empty name sets nothing)."""
    return {"llm.model": model} if model else {}


def _workspace(path: str | None) -> Path:
    folder = Path(path or ".").expanduser()
    if not folder.exists():
        raise CliError(f"no such folder: {folder}")
    if not folder.is_dir():
        raise CliError(f"not a folder: {folder} (give the workspace folder, not a file)")
    return folder.resolve()


class _ProgressBar:
    """A one-line progress bar on stderr when it is a terminal; silent otherwise."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self._last = 0.0

    def report(self, progress: IndexProgress) -> None:
        from kb_lsp.runtime.progress import progress_text

        done, total = progress.files_done, progress.files_total
        if not self.enabled or total == 0:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and done < total:
            return
        self._last = now
        width = 30
        # Chunks move inside big files: they fill the bar once they are counted.
        chunks = progress.chunks_total
        filled = int(width * (progress.chunks_done / chunks if chunks else done / total))
        bar = "#" * filled + "." * (width - filled)
        sys.stderr.write(f"\r[{bar}] {progress_text(progress)}   ")
        sys.stderr.flush()

    def end(self, message: str) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 79 + "\r")
            sys.stderr.flush()


def _hooks() -> Hooks:
    from kb_lsp.runtime import Hooks

    # Messages the runtime shows an editor (read-only, a folder gone) are handled by
    # each command here, in the terminal's words.
    return Hooks(start_progress=lambda title, cancel: _ProgressBar())


@contextmanager
def _runtime(
    args: argparse.Namespace, folder: Path, overrides: dict[str, Any] | None = None
) -> Iterator[Runtime]:
    """The runtime on `folder`, opened (not synced), without a watcher; closed after."""
    from kb_lsp.runtime import Runtime

    runtime = Runtime(
        _hooks(),
        watch=False,
        probe_llm=False,
        take_over=False,
        log_file=False,
        persist_lists=frozenset({CLIENT}),
        # One command, then exit: Chroma would take longer to import and open than the
        # search (`exact_vectors.py`); it is opened only if the sync writes to it.
        exact_vectors=True,
    )
    try:
        runtime.open([folder], _settings(args, overrides), index=False).result()
        yield runtime
    finally:
        runtime.close()


def _sync(runtime: Runtime, *, full: bool = False, quiet: bool = False) -> None:
    from kb_lsp.records import ReadOnlyStore
    from kb_lsp.runtime import Unavailable

    try:
        report = runtime.reindex(full=full).result()
    except (ReadOnlyStore, Unavailable):
        print(
            "kb: another kb-lsp process is indexing this workspace; "
            "using the index as it is (read-only)",
            file=sys.stderr,
        )
        return
    if not quiet or report.chunks_embedded or report.files_removed:
        print(
            f"Indexed {report.files_added + report.files_changed} changed files, "
            f"removed {report.files_removed}, {report.files_unchanged} unchanged; "
            f"{report.chunks_embedded} chunks embedded, {report.chunks_reused} reused "
            f"({report.seconds:.1f}s)",
            file=sys.stderr,
        )
    for error in report.errors:
        print(f"kb: {error}", file=sys.stderr)


# --- commands ----------------------------------------------------------------------------


def cmd_index(args: argparse.Namespace) -> int:
    from kb_lsp.protocol import dump

    folder = _workspace(args.path)
    with _runtime(args, folder) as runtime:
        if runtime.status().read_only:
            raise CliError(
                "the index of this workspace is locked by another kb-lsp process "
                "(an editor window?); close it or use another --storage"
            )
        _sync(runtime, full=args.full)
        status = runtime.status()
    if args.json:
        print(json.dumps(dump(status), indent=2))
    else:
        print(f"{status.files} files, {status.chunks} chunks in {status.store}")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    query = " ".join(args.query).strip()
    if not query and args.filter:
        # Only a filter: the files it keeps, most recently modified first (the query is
        # the filter itself, as typed inline; --filter keeps its meaning when it names a
        # field no file has yet).
        query = args.filter
    if not query:
        raise CliError('give a query, e.g. kb search "mexico payment files"')
    wanted = {
        "query": query,
        "limit": args.limit,
        "mode": args.mode,
        "paths": args.path or None,
        "filter": args.filter,
    }
    response = _from_server(args, folder, METHODS["search"], wanted)
    served = response is not None
    if response is None:
        response = _search_here(args, folder, wanted)
    # While another process builds the index (read-only here, or the server that answered
    # is still at it): what it has so far, and say so.
    index = response["index"]
    building = (index["readOnly"] or served) and index["state"] == "indexing"
    if building:
        where = (
            "still being indexed by the running server"
            if served
            else f"this workspace's index is {index['message']}"
        )
        print(f"kb: {where}; results are partial until it is done", file=sys.stderr)
    if args.json:
        print(json.dumps(response, indent=2))
    else:
        from kb_lsp.listing import format_wire_hits

        print(format_wire_hits(response["results"]))
    return EXIT_NOT_READY if building and not response["results"] else 0


def _search_here(args: argparse.Namespace, folder: Path, wanted: dict[str, Any]) -> dict[str, Any]:
    """`kb/search` in this process: the index brought up to date, then searched."""
    from pydantic import ValidationError

    from kb_lsp.protocol import SearchParams, dump

    try:
        params = SearchParams.model_validate(wanted)
    except ValidationError as err:
        raise CliError(_invalid(err)) from None
    with _runtime(args, folder) as runtime:
        _sync(runtime, quiet=True)
        return dump(runtime.search(params, client=CLIENT))


def _from_server(
    args: argparse.Namespace, folder: Path, method: str, params: dict[str, Any]
) -> Any:
    """`method`'s answer from the server that holds `folder`'s index (an editor's), over
    its local socket (`runtime/local_socket.py`); None when none does, or it cannot
    answer now: the command then opens the index itself."""
    from kb_lsp.runtime.local_socket import NotThisServer, ServerError, connect
    from kb_lsp.runtime.quick import quick_settings
    from kb_lsp.storage import default_storage, store_dir_for

    settings = quick_settings(_cli_settings(args)) or _settings(args)
    store = store_dir_for(default_storage(settings), folder)
    try:
        client = connect(store, folder)
    except NotThisServer as err:
        print(f"kb: {err}; answering from the index directly", file=sys.stderr)
        return None
    if client is None:
        return None
    with client:
        try:
            return client.request(method, params)
        except ServerError as err:
            if err.code == ERROR_CODES["invalidParams"]:  # the user can fix it, as in this process
                raise CliError(err.message.removeprefix(f"{method}: ")) from None
            print(
                f"kb: the running server could not answer ({err.message}); "
                "answering from the index directly",
                file=sys.stderr,
            )
        except (OSError, ValueError) as err:
            print(
                f"kb: the running server did not answer ({err}); answering from the index directly",
                file=sys.stderr,
            )
    return None


def cmd_status(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    if args.probe:  # the model asked: that needs the runtime and its agent
        from kb_lsp.protocol import dump

        with _runtime(args, folder) as runtime:
            status = dump(runtime.status().model_copy(update={"llm": runtime.llm_status()}))
    else:
        status = _from_server(args, folder, METHODS["status"], {})
        if status is None:
            status = _stored_status(args, folder)
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    print(f"workspace: {folder}")
    message = f" — {status['message']}" if status["message"] else ""
    print(f"state:     {status['state']}{message}")
    print(f"store:     {status['store']}{' (read-only)' if status['readOnly'] else ''}")
    print(f"embedder:  {status['embedder']}")
    print(f"indexed:   {status['files']} files, {status['chunks']} chunks")
    llm = status["llm"]
    print(f"llm:       {format_llm(llm)}")
    if llm["message"]:
        print(f"  {llm['message']}")
    if status["skipped"]:
        print(f"skipped:   {len(status['skipped'])} files")
        for item in status["skipped"]:
            print(f"  {item['path']}: {item['reason']}")
    print_problems(status)
    return 0


def _stored_status(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """The status as the wire has it (`kb/status`), from the store when it has an index:
    without pydantic when nobody writes it now, else with the writer's progress laid
    over it; from the runtime, which makes the index, when there is none."""
    from kb_lsp.runtime.quick import quick_settings, quick_status

    quick = quick_settings(_cli_settings(args))
    if quick is not None:
        found = quick_status(folder, quick)
        if found is not None:
            return found
    from kb_lsp.protocol import dump
    from kb_lsp.runtime.stored_status import read_status

    status = read_status(folder, _settings(args))
    if status is None:
        with _runtime(args, folder) as runtime:
            status = runtime.status()
    return dump(status)


def format_llm(llm: Mapping[str, Any]) -> str:
    """`qwen2.5:7b at http://127.0.0.1:11434 (ollama): answers, calls tools` (a wire
    `LlmStatus`)."""
    line = f"{llm['model']} at {llm['host']} ({llm['provider']})"
    if llm["reachable"] is None:
        return f"{line}: not asked (kb status --probe asks it)"
    if not llm["reachable"]:
        return f"{line}: does not answer"
    if llm["tools"] is None:
        return f"{line}: answers"
    return f"{line}: answers, {'calls tools' if llm['tools'] else 'does not call tools'}"


def print_problems(status: Mapping[str, Any]) -> None:
    """Files indexed with a problem (malformed front matter), as `path:line: message`."""
    problems = status["problems"]
    if not problems:
        return
    files = len({problem["path"] for problem in problems})
    print(f"problems:  {files} file{'s' * (files != 1)} indexed with a problem to fix")
    for problem in problems:
        print(f"  {problem['path']}:{problem['line'] + 1}: {problem['message']}")


def format_schema(schema: Mapping[str, Any]) -> str:
    """One line a field: name, types, how many files have it, its frequent values (a
    wire `SchemaResponse`)."""
    fields = schema["fields"]
    if not fields:
        return f"No metadata fields in the {schema['files']} indexed files."
    width = max(len(field["name"]) for field in fields)
    lines = [f"{schema['files']} files; metadata fields (filter with e.g. tag:x, has:owner):"]
    for field in fields:
        values = ", ".join(
            f"{_filter_value(item['value'])} ({item['count']})" for item in field["top"]
        )
        count = field["files"]
        files = f"{count} file{'s' * (count != 1)}"
        line = f"  {field['name']:<{width}}  {'|'.join(field['types'])}, {files}"
        lines.append(f"{line}: {values}" if values else line)
    return "\n".join(lines)


def _filter_value(value: str) -> str:
    """A value as a filter takes it: quoted when it is empty or holds a space."""
    return json.dumps(value, ensure_ascii=False) if not value or " " in value else value


def cmd_schema(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    schema = _from_server(args, folder, METHODS["schema"], {})
    if schema is None:
        from kb_lsp.protocol import dump

        with _runtime(args, folder) as runtime:
            _sync(runtime, quiet=True)
            schema = dump(runtime.schema())
    if args.json:
        print(json.dumps(schema, indent=2, ensure_ascii=False))
    else:
        print(format_schema(schema))
    return 0


def _print_step(step: Any) -> None:
    """A step of the agent as the panel shows it, on stderr while it works."""
    if step.kind == "thinking":
        print(f"Thinking: {step.text}", file=sys.stderr, flush=True)
    elif step.kind == "tool_call":
        args = json.dumps(step.args or {}, ensure_ascii=False)
        print(f"Calling `{step.tool}` with {args}", file=sys.stderr, flush=True)
    elif step.kind == "tool_result":
        print(f"  -> {step.text}", file=sys.stderr, flush=True)
    elif step.kind == "status":  # the mode chosen, waiting for the model, a retry
        print(f"[{step.text}]", file=sys.stderr, flush=True)


# How each `stop` reads after the answer ("answer" needs no word).
STOPS = {
    "clarify": "the agent asks a question back: answer it in a new kb ask",
    "step_limit": "stopped at the step limit (kb.agent.maxSteps)",
    "length": "cut off: the model hit its token limit (kb.llm.maxTokens)",
    "empty": "the model said nothing, twice; nothing was cached",
    "cancelled": "cancelled",
    "error": "failed",
}
MODES = {
    "agent": "agent mode (the model called tools)",
    "grounded": "grounded mode (the model cannot call tools: it answered from passages)",
    "fallback": "no model answered: the best passages instead",
}


def format_ask_footer(response: AskResponse) -> str:
    """`[grounded mode (…); NOT GROUNDED (…); stop: length — cut off: …]`"""
    parts = [MODES.get(response.mode, f"{response.mode} mode")]
    if not response.grounded:
        parts.append("NOT GROUNDED (the answer cites none of its sources: check them)")
    stop = f"stop: {response.stop}"
    parts.append(f"{stop} — {STOPS[response.stop]}" if response.stop in STOPS else stop)
    return f"[{'; '.join(parts)}]"


def cmd_ask(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    question = " ".join(args.question).strip()
    if not question:
        raise CliError('give a question, e.g. kb ask "summarize file 1"')
    overrides = model_setting(args.model)
    from pydantic import ValidationError

    from kb_lsp.protocol import AskParams, dump

    try:
        params = AskParams(question=question, file=args.file)
    except ValidationError as err:
        raise CliError(_invalid(err)) from None
    with _runtime(args, folder, overrides) as runtime:
        _sync(runtime, quiet=True)
        response = runtime.ask(params, client=CLIENT, on_event=None if args.json else _print_step)
    if args.json:
        print(json.dumps(dump(response), indent=2, ensure_ascii=False))
    else:
        print(response.answer)
        # The agent's answers end with their sources; list them when one does not.
        listed = all(f"`{source.path}`" in response.answer for source in response.sources)
        if response.sources and not listed:
            print()
            for source in response.sources:
                first = source.range.start.line + 1
                last = max(first, source.range.end.line)
                print(f"- {source.path} L{first}-L{last}")
        print()
        print(format_ask_footer(response))
    return 1 if response.stop == "error" else 0


def cmd_serve(args: argparse.Namespace) -> int:
    from kb_lsp.lsp.server import serve

    tcp = None
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not port.isdigit():
            raise CliError(f"--tcp wants HOST:PORT, got {args.tcp!r}")
        tcp = (host or "127.0.0.1", int(port))
    serve(tcp=tcp, max_message_bytes=args.max_message_size)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from kb_lsp.mcp_server.transport import TransportError, parse_address, run

    folders = list(dict.fromkeys(_workspace(path) for path in (args.workspace or ["."])))
    overrides: dict[str, Any] = {}
    if args.settings:
        try:
            overrides = json.loads(args.settings)
        except ValueError as err:
            raise CliError(f"--settings is not JSON: {err}") from None
        if not isinstance(overrides, dict):
            raise CliError('--settings wants a JSON object, e.g. {"ollama.model": "qwen2.5:7b"}')
    overrides.update(model_setting(args.model))
    try:
        http = parse_address(args.http, allow_remote=args.allow_remote) if args.http else None
        run(folders, _settings(args, overrides), http)
    except TransportError as err:
        raise CliError(str(err)) from None
    return 0


# --- parser ------------------------------------------------------------------------------


def _message_size(text: str) -> int:
    if not text.isdigit() or int(text) < MIN_MESSAGE_BYTES:
        raise argparse.ArgumentTypeError(f"a number of bytes of at least {MIN_MESSAGE_BYTES}")
    return int(text)


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_LIMIT}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kb", description="A knowledge base for the Markdown in a workspace."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Callable[[argparse.Namespace], int], help: str) -> Any:
        sub = commands.add_parser(name, help=help, description=help)
        sub.set_defaults(handler=handler)
        return sub

    storage_help = "where indexes live (default: $KB_STORAGE or ~/.cache/kb-lsp)"

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
    index.add_argument("path", nargs="?", help="workspace folder (default: .)")
    index.add_argument("--full", action="store_true", help="re-index everything")
    index.add_argument("--storage", metavar="DIR", help=storage_help)
    index.add_argument("--json", action="store_true", help="print the index status as JSON")

    search = command("search", cmd_search, "search the workspace, numbered results")
    search.add_argument(
        "query", nargs="*", help="what to look for (a filter may be typed in it too)"
    )
    search.add_argument("--workspace", "-w", metavar="PATH", help="workspace folder")
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
    search.add_argument("--storage", metavar="DIR", help=storage_help)
    search.add_argument("--json", action="store_true", help="print the kb/search result")

    schema = command(
        "schema", cmd_schema, "list the metadata fields a filter can use, with their values"
    )
    schema.add_argument("--workspace", "-w", metavar="PATH", help="workspace folder")
    schema.add_argument("--storage", metavar="DIR", help=storage_help)
    schema.add_argument("--json", action="store_true", help="print the kb/schema result")

    status = command("status", cmd_status, "show what is indexed and what was skipped")
    status.add_argument("--workspace", "-w", metavar="PATH", help="workspace folder")
    status.add_argument("--storage", metavar="DIR", help=storage_help)
    status.add_argument(
        "--probe",
        action="store_true",
        help="ask the model whether it answers and calls tools (up to 2 s)",
    )
    status.add_argument("--json", action="store_true", help="print the kb/status result")

    ask = command("ask", cmd_ask, "ask a question (a local model: Ollama or OpenAI-compatible)")
    ask.add_argument("question", nargs="+", help='e.g. "summarize file 1"')
    ask.add_argument("--workspace", "-w", metavar="PATH", help="workspace folder")
    ask.add_argument("--file", metavar="PATH", help="focus on this workspace file")
    ask.add_argument(
        "--model", metavar="NAME", help="the chat model, for this question (kb.llm.model)"
    )
    ask.add_argument("--storage", metavar="DIR", help=storage_help)
    ask.add_argument("--json", action="store_true", help="print the kb/ask result")

    mcp = command(
        "mcp", cmd_mcp, "serve the knowledge base to agents over MCP (stdio; --http for HTTP)"
    )
    mcp.add_argument(
        "--workspace", "-w", metavar="PATH", action="append",
        help="workspace folder (repeat for several; default: .)",
    )  # fmt: skip
    mcp.add_argument(
        "--http", metavar="HOST:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: any)",
    )  # fmt: skip
    mcp.add_argument(
        "--allow-remote", action="store_true",
        help="allow a non-loopback --http host (requires the KB_MCP_TOKEN bearer token)",
    )  # fmt: skip
    mcp.add_argument(
        "--model", metavar="NAME", help="the chat model, either provider (kb.llm.model)"
    )
    mcp.add_argument("--storage", metavar="DIR", help=storage_help)
    mcp.add_argument(
        "--settings", metavar="JSON",
        help='kb.* settings as a JSON object, e.g. \'{"ollama.host": "http://gpu:11434"}\'',
    )  # fmt: skip

    return parser


def _invalid_input(err: BaseException) -> bool:
    """Whether `err` is the engine's InvalidInput. Its class lives with the agent, which
    only a command that opened the runtime has loaded (`kb status` does not)."""
    errors = sys.modules.get("kb_lsp.agent.errors")
    return errors is not None and isinstance(err, errors.InvalidInput)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # The terminal shows warnings (everything with -v), whatever level kb.log.level sets.
    handler_ = logging.StreamHandler(sys.stderr)
    handler_.setLevel(logging.INFO if args.verbose else logging.WARNING)
    handler_.setFormatter(BoundedFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler_)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except CliError as err:
        _fail(str(err), EXIT_USAGE)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as err:  # the last line of defence: one line, never a traceback
        if _invalid_input(err):  # a bad filter, result number or file: the user fixes it
            _fail(str(err), EXIT_USAGE)
        from kb_lsp.embeddings import EmbedderError

        if isinstance(err, EmbedderError):
            _fail(str(err))
        logging.getLogger(__name__).debug("unexpected error", exc_info=True)
        message = str(err)
        if len(message) > 300:
            message = message[:300] + "…"
        _fail(f"{type(err).__name__}: {message}")


if __name__ == "__main__":
    raise SystemExit(main())
