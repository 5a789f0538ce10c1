"""`kb`: the terminal front end — serve, index, search, schema, status (and ask).

Every command works on one workspace folder (`-w/--workspace`, default: the current
directory; `kb index PATH` too) and its store (see `--storage`). Errors are one line on
stderr and a non-zero exit, never a traceback; every message is one line per fact, in a
terminal's words (`terminal/words.py`: a setting named with its variable or flag), and
the engine's log stays off stderr unless `--verbose` (`terminal/logs.py`). Progress goes
to stderr — a bar on a terminal, a line every few seconds elsewhere
(`terminal/progress.py`); results to stdout (`--json` for scripts: the same objects as
the `kb/*` LSP methods). A reader that stops reading (`kb search … | head`) ends the
command quietly, with exit 0.

The last numbered list of `kb search` is kept in the store, so `kb ask "summarize file 1"`
right after a search means result 1 of that search, as in the editor.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from kb_lsp.engine.private import owner_only_umask
from kb_lsp.lsp.limits import DEFAULT_MAX_MESSAGE_BYTES, MIN_MESSAGE_BYTES
from kb_lsp.runtime.local_socket import CLI_CLIENT
from kb_lsp.runtime.quick_defaults import ERROR_CODES, MAX_LIMIT, METHODS
from kb_lsp.terminal.logs import stderr_handler
from kb_lsp.terminal.words import from_server, in_terminal_words

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    from pydantic import ValidationError

    from kb_lsp.config import Settings
    from kb_lsp.engine.records import SyncReport
    from kb_lsp.protocol import AskResponse
    from kb_lsp.runtime import Hooks, Runtime

EXIT_USAGE = 2
EXIT_ERROR = 1
EXIT_NOT_READY = 3  # nothing to show yet: another process is still building the index
PROBE_SECONDS = 2.0  # `kb status --probe` waits this long for the model's server


class CliError(Exception):
    """A problem the user can fix; printed as one line."""


def _fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    _say(message)
    raise SystemExit(code)


def _say(message: str) -> None:
    """One line on stderr, as the command's own (`kb: …`)."""
    with suppress(OSError, ValueError):  # stderr closed too: nobody to tell
        print(f"kb: {message}", file=sys.stderr, flush=True)


# --- shared plumbing ---------------------------------------------------------------------

# The runtime's name for the command line's numbered list (kept on disk).
CLIENT = CLI_CLIENT


def _cli_settings(
    args: argparse.Namespace, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The settings given on the command line (`--settings`, the flags), by their wire
    keys, dotted (`ollama.host`) as both the full and the quick settings take them."""
    cli = _dotted(_settings_option(args))
    cli.update(overrides or {})
    if getattr(args, "storage", None):
        cli["storage"] = str(Path(args.storage).expanduser().resolve())
    return cli


def _settings_option(args: argparse.Namespace) -> dict[str, Any]:
    raw = getattr(args, "settings", None)
    if not raw:
        return {}
    try:
        given = json.loads(raw)
    except ValueError as err:
        raise CliError(f"--settings is not JSON: {err}") from None
    if not isinstance(given, dict):
        raise CliError('--settings wants a JSON object, e.g. {"ollama.host": "http://gpu:11434"}')
    return given


def _dotted(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"ollama": {"host": x}}` as `{"ollama.host": x}` (no setting is itself an object)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping) and value:
            out.update(_dotted(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _settings(args: argparse.Namespace, overrides: dict[str, Any] | None = None) -> Settings:
    """The settings, loaded once a command (their problems said once)."""
    from kb_lsp.config import env_settings, load_settings

    key = json.dumps(overrides, sort_keys=True, default=str)
    loaded_before: dict[str, Settings] = args.__dict__.setdefault("_loaded_settings", {})
    if key not in loaded_before:
        loaded = load_settings(env_settings(), _cli_settings(args, overrides))
        if loaded.message:
            for line in loaded.message.splitlines():
                _say(from_server(line, _flags(args)))
        loaded_before[key] = loaded.settings
    return loaded_before[key]


def _flags(args: argparse.Namespace) -> Collection[str]:
    """The options of the command being run (what a message may tell the user to use)."""
    flags: Collection[str] = getattr(args, "flags", frozenset())
    return flags


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


def _hooks() -> Hooks:
    from kb_lsp.runtime import Hooks
    from kb_lsp.terminal.progress import TerminalProgress, line_seconds

    every, problem = line_seconds()
    if problem:
        _say(problem)
    tty = sys.stderr.isatty()

    # Messages the runtime shows an editor (read-only, a folder gone) are handled by
    # each command here, in the terminal's words.
    return Hooks(
        start_progress=lambda title, cancel: TerminalProgress(sys.stderr, tty=tty, every=every)
    )


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
        # search (`store/exact.py`); it is opened only if the sync writes to it.
        exact_vectors=True,
    )
    try:
        runtime.open([folder], _settings(args, overrides), index=False).result()
        yield runtime
    finally:
        runtime.close()


READ_ONLY = (
    "another kb-lsp process (an editor window, kb mcp) keeps this workspace's index: "
    "answering from it read-only"
)


def _sync(runtime: Runtime, *, full: bool = False, quiet: bool = False) -> SyncReport | None:
    """Bring the index up to date and say what it took; None when another process
    writes the index (the command says so, in its words)."""
    from kb_lsp.engine.records import ReadOnlyStore
    from kb_lsp.runtime import Unavailable

    try:
        report = runtime.reindex(full=full).result()
    except (ReadOnlyStore, Unavailable):
        return None
    if not quiet or report.chunks_embedded or report.files_removed:
        print(
            f"Indexed {report.files_added + report.files_changed} changed files, "
            f"removed {report.files_removed}, {report.files_unchanged} unchanged; "
            f"{report.chunks_embedded} chunks embedded, {report.chunks_reused} reused "
            f"({report.seconds:.1f}s)",
            file=sys.stderr,
        )
    for error in report.errors:
        _say(error)
    return report


# --- commands ----------------------------------------------------------------------------


def cmd_index(args: argparse.Namespace) -> int:
    from kb_lsp.protocol import dump

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
    fields: set[str] | None = None  # the indexed files' fields, when known here
    response = _from_server(args, folder, METHODS["search"], wanted)
    served = response is not None
    if response is None:
        response, fields = _search_here(args, folder, wanted)
    # While another process builds the index (read-only here, or the server that answered
    # is still at it): what it has so far, and say so — once.
    index = response["index"]
    building = (index["readOnly"] or served) and index["state"] == "indexing"
    if building:
        where = (
            "the running server is still indexing this workspace"
            if served
            else "another kb-lsp process is building this workspace's index"
        )
        _say(f"{where}{_so_far(index)}; results are partial until it is done")
    elif index["readOnly"]:
        _say(READ_ONLY)
    if args.filter and not response["results"]:
        _unknown_fields(args, folder, args.filter, fields)
    if args.json:
        print(json.dumps(response, indent=2))
    else:
        from kb_lsp.listing import format_wire_hits

        print(format_wire_hits(response["results"]))
    return EXIT_NOT_READY if building and not response["results"] else 0


def _so_far(index: Mapping[str, Any]) -> str:
    """` (55/155 files · embedding)`: how far the sync is, from a wire `IndexStatus`."""
    progress = index.get("progress")
    if not progress:
        return ""
    from kb_lsp.terminal.progress import wire_progress_text

    return f" ({wire_progress_text(progress)})"


def _unknown_fields(
    args: argparse.Namespace, folder: Path, text: str, fields: set[str] | None
) -> None:
    """Nothing matched a filter that names a field no indexed file has: say which, as the
    filter's own error does for a likely typo (there it is an error; here a filter may name
    a field before any file has it, so it only explains the empty list)."""
    from kb_lsp.engine.metadata.filters import BUILTIN_FIELDS, FilterError, fields_of, parse_filter

    try:
        named = fields_of(parse_filter(text))
    except FilterError:
        return
    unknown = sorted(named - set(BUILTIN_FIELDS))
    if not unknown:
        return
    if fields is None:
        schema = _from_server(args, folder, METHODS["schema"], {})
        if schema is None:
            return
        fields = {field["name"] for field in schema["fields"]}
    known = {name.lower() for name in fields}
    for name in unknown:
        if name.lower() not in known:
            _say(f"no indexed file has the field {name!r} (kb schema lists the fields)")


def _search_here(
    args: argparse.Namespace, folder: Path, wanted: dict[str, Any]
) -> tuple[dict[str, Any], set[str]]:
    """`kb/search` in this process: the index brought up to date, then searched; with
    the fields the indexed files have."""
    from pydantic import ValidationError

    from kb_lsp.protocol import SearchParams, dump

    try:
        params = SearchParams.model_validate(wanted)
    except ValidationError as err:
        raise CliError(_invalid(err)) from None
    with _runtime(args, folder) as runtime:
        _sync(runtime, quiet=True)
        response = dump(runtime.search(params, client=CLIENT))
        fields: set[str] = set()
        if params.filter and not response["results"]:  # to say why, if a field is unknown
            fields = {field.name for field in runtime.schema().fields}
        return response, fields


def _from_server(
    args: argparse.Namespace, folder: Path, method: str, params: dict[str, Any]
) -> Any:
    """`method`'s answer from the server that holds `folder`'s index (an editor's), over
    its local socket (`runtime/local_socket.py`); None when none does, or it cannot
    answer now: the command then opens the index itself."""
    from kb_lsp.engine.storage import default_storage, store_dir_for
    from kb_lsp.runtime.local_socket import NotThisServer, ServerError, connect
    from kb_lsp.runtime.quick import quick_settings

    settings = quick_settings(_cli_settings(args)) or _settings(args)
    store = store_dir_for(default_storage(settings), folder)
    try:
        client = connect(store, folder)
    except NotThisServer as err:
        _say(f"{err}; answering from the index directly")
        return None
    if client is None:
        return None
    with client:
        try:
            return client.request(method, params)
        except ServerError as err:
            if err.code == ERROR_CODES["invalidParams"]:  # the user can fix it, as in this process
                raise CliError(err.message.removeprefix(f"{method}: ")) from None
            _say(
                f"the running server could not answer ({err.message}); "
                "answering from the index directly"
            )
        except (OSError, ValueError) as err:
            _say(f"the running server did not answer ({err}); answering from the index directly")
    return None


def cmd_status(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    status = _from_server(args, folder, METHODS["status"], {})
    if status is None:
        status = _stored_status(args, folder)
    if args.probe:
        status["llm"] = _probe(args)
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    flags = _flags(args)
    print(f"workspace: {folder}")
    message = f" — {status['message']}" if status["message"] else ""
    print(f"state:     {status['state']}{message}")
    print(f"store:     {status['store']}{' (read-only)' if status['readOnly'] else ''}")
    print(f"embedder:  {status['embedder']}")
    print(f"indexed:   {status['files']:,} files, {status['chunks']:,} chunks")
    for name, line in index_progress(status):
        print(f"{name + ':':<10} {line}")
    llm = status["llm"]
    print(f"llm:       {format_llm(llm)}")
    if llm["message"]:
        print(f"  {in_terminal_words(llm['message'], flags)}")
    if status["skipped"]:
        print(f"skipped:   {len(status['skipped'])} files")
        for item in status["skipped"]:
            print(f"  {item['path']}: {item['reason']}")
    print_problems(status)
    return 0


def index_progress(status: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The index's progress as `kb status` prints it, each line from the wire status's
    fields (`progress`, `pending`, `keywordComplete`, `vectorsReady`), so the text and
    `--json` say the same: the running sync, then keyword search and vectors apart —
    keyword search covers every file once its text is read, vectors follow."""
    lines = []
    progress = status.get("progress")
    if progress:
        from kb_lsp.terminal.progress import wire_progress_text

        lines.append(("progress", wire_progress_text(progress)))
    if status.get("pending"):
        lines.append(("pending", f"{status['pending']:,} files to index"))
    if status.get("keywordComplete", True):
        keyword = "complete: every indexed file is found by its words"
    elif progress and progress["phase"] == "keyword":
        done, total = progress["filesDone"], progress["filesTotal"]
        keyword = f"{done:,}/{total:,} files read"
    elif progress:
        keyword = "not yet: the files are being counted"
    else:
        keyword = "incomplete: a sync stopped before reading every file (kb index finishes it)"
    lines.append(("keyword", keyword))
    ready = float(status.get("vectorsReady", 1.0))
    chunks = int(status["chunks"])
    if ready >= 1.0:
        vectors = "complete: every chunk is found by its meaning too"
    else:
        vectors = (
            f"{ready:.0%} of {chunks:,} chunks embedded; the rest are found by their words "
            "meanwhile"
        )
    lines.append(("vectors", vectors))
    return lines


def _probe(args: argparse.Namespace) -> dict[str, Any]:
    """The model asked, for at most `PROBE_SECONDS`, whether it answers and calls tools:
    the wire `LlmStatus`."""
    from kb_lsp.engine.llm import create_llm
    from kb_lsp.protocol import dump

    llm = create_llm(_settings(args))  # its client loaded before the clock starts
    answer: list[dict[str, Any]] = []

    def ask() -> None:
        answer.append(dump(llm.status(timeout=PROBE_SECONDS)))

    # A thread, because the client's timeout is per request (a server that accepts and
    # then says nothing would take several); past the limit nobody waits for it.
    probe = threading.Thread(target=ask, name="kb-probe", daemon=True)
    probe.start()
    probe.join(PROBE_SECONDS)
    if answer:
        return answer[0]
    status = dump(llm.configured_status())
    status["reachable"] = False
    status["message"] = (
        f"{llm.label} at {llm.host} did not answer within {PROBE_SECONDS:g} s "
        "(it accepts connections but says nothing: is it busy, or another kind of server?)"
    )
    return status


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
            if _sync(runtime, quiet=True) is None:
                _say(READ_ONLY)
            schema = dump(runtime.schema())
    if args.json:
        print(json.dumps(schema, indent=2, ensure_ascii=False))
    else:
        print(format_schema(schema))
    return 0


def _print_step(flags: Collection[str], step: Any) -> None:
    """A step of the agent as the panel shows it, on stderr while it works."""
    if step.kind == "thinking":
        line = f"Thinking: {step.text}"
    elif step.kind == "tool_call":
        line = f"Calling `{step.tool}` with {json.dumps(step.args or {}, ensure_ascii=False)}"
    elif step.kind == "tool_result":
        line = f"  -> {step.text}"
    elif step.kind == "status":  # the mode chosen, waiting for the model, a retry
        line = f"[{in_terminal_words(step.text, flags)}]"
    else:
        return
    print(line, file=sys.stderr, flush=True)


# How each `stop` reads after the answer ("answer" needs no word).
STOPS = {
    "clarify": "the agent asks a question back: answer it in a new kb ask",
    "step_limit": "stopped at the step limit: raise kb.agent.maxSteps for more",
    "length": "cut off: the model hit its token limit: raise kb.llm.maxTokens for more",
    "empty": "the model said nothing, twice; nothing was cached",
    "cancelled": "cancelled",
    "error": "failed",
}
MODES = {
    "agent": "agent mode (the model called tools)",
    "grounded": "grounded mode (the model cannot call tools: it answered from passages)",
    "fallback": "no model answered: the best passages instead",
}


def format_ask_footer(response: AskResponse, flags: Collection[str] = ()) -> str:
    """`[grounded mode (…); NOT GROUNDED (…); stop: length — cut off: …]` (the settings
    it names said as this command's `flags` and variables set them)."""
    parts = [MODES.get(response.mode, f"{response.mode} mode")]
    if not response.grounded:
        parts.append("NOT GROUNDED (the answer cites none of its sources: check them)")
    stop = f"stop: {response.stop}"
    parts.append(f"{stop} — {STOPS[response.stop]}" if response.stop in STOPS else stop)
    return in_terminal_words(f"[{'; '.join(parts)}]", flags)


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
    flags = _flags(args)
    with _runtime(args, folder, overrides) as runtime:
        if _sync(runtime, quiet=True) is None:
            _say(READ_ONLY)
        steps = None if args.json else partial(_print_step, flags)
        response = runtime.ask(params, client=CLIENT, on_event=steps)
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
        print(format_ask_footer(response, flags))
    # An answer was printed — the best passages too when no model answered (the footer,
    # the steps and `mode: "fallback"` say so): 0. The model failing mid-answer: 1.
    return EXIT_ERROR if response.stop == "error" else 0


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
    from kb_lsp.mcp_server.transport import TransportError, parse_address, run

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
                    if value is not None  # else `mcp_server/sessions.py`'s defaults
                },
            )
            if args.http
            else None
        )
        run(folders, _settings(args, model_setting(args.model)), http)
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


def _invalid_input(err: BaseException) -> bool:
    """Whether `err` is the engine's InvalidInput. Its class lives with the agent, which
    only a command that opened the runtime has loaded (`kb status` does not)."""
    errors = sys.modules.get("kb_lsp.engine.agent.errors")
    return errors is not None and isinstance(err, errors.InvalidInput)


def _filter_values(argv: Sequence[str]) -> list[str]:
    """`-f -tag:archived` as `--filter=-tag:archived`: a filter may start with `-` (a
    negation), which argparse would take for an option and refuse."""
    out: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        if token in ("-f", "--filter"):
            value = next(tokens, None)
            if value is not None and value.startswith("-") and any(c in value for c in ":<>=("):
                out.append(f"--filter={value}")
                continue
            out.append(token)
            if value is not None:
                out.append(value)
            continue
        out.append(token)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_filter_values(sys.argv[1:] if argv is None else argv))
    if argv is None:  # a process of its own (not a test's in-process call): see private.py
        owner_only_umask()
    # The engine's log stays off stderr but for its notices; everything with -v.
    server = args.command in ("serve", "mcp")
    log_handler = stderr_handler(sys.stderr, verbose=args.verbose, server=server)
    logging.getLogger().addHandler(log_handler)
    try:
        return _run(args)
    finally:
        logging.getLogger().removeHandler(log_handler)


def _run(args: argparse.Namespace) -> int:
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()  # a reader gone shows here rather than at exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except CliError as err:
        _fail(in_terminal_words(str(err), _flags(args)), EXIT_USAGE)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as err:  # the last line of defence: one line, never a traceback
        flags = _flags(args)
        if _invalid_input(err):  # a bad filter, result number or file: the user fixes it
            _fail(in_terminal_words(str(err), flags), EXIT_USAGE)
        from kb_lsp.engine.embed.embeddings import EmbedderError

        if isinstance(err, EmbedderError):
            _fail(in_terminal_words(str(err), flags))
        logging.getLogger(__name__).debug("unexpected error", exc_info=True)
        message = str(err)
        if len(message) > 300:
            message = message[:300] + "…"
        _fail(f"{type(err).__name__}: {in_terminal_words(message, flags)}")


def _reader_gone() -> int:
    """stdout's reader went away (`kb search … | head`): it has what it wanted, so the
    command ends quietly, with 0. What is still buffered goes nowhere (Python would
    otherwise complain about it at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (tests): nothing left to flush to
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
