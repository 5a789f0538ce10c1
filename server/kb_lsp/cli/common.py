"""What every command shares: errors as one line, settings from the flags, the
workspace folder, a one-shot runtime, a sync, and asking the running server first.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from kb_lsp.runtime.local_socket import CLI_CLIENT
from kb_lsp.runtime.quick_defaults import ERROR_CODES
from kb_lsp.terminal.text import err
from kb_lsp.terminal.words import from_server

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    from pydantic import ValidationError

    from kb_lsp.config import Settings
    from kb_lsp.engine.index.reports import SyncReport
    from kb_lsp.runtime import Hooks, Runtime


EXIT_USAGE = 2


EXIT_ERROR = 1


EXIT_NOT_READY = 3  # nothing to show yet: another process is still building the index


# `kb index` where another process (kb index, kb mcp, an editor) writes the index: not
# bad usage (2) — the same command works once that process is done.
EXIT_HELD = 4


class CliError(Exception):
    """A problem the user can fix; printed as one line."""


def _fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    _say(message)
    raise SystemExit(code)


def _say(message: str) -> None:
    """One line on stderr, as the command's own (`kb: …`)."""
    with suppress(OSError, ValueError):  # stderr closed too: nobody to tell
        err(f"kb: {message}")


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
    args: argparse.Namespace,
    folder: Path,
    overrides: dict[str, Any] | None = None,
    *,
    syncs: bool = True,
) -> Iterator[Runtime]:
    """The runtime on `folder`, opened (not synced), without a watcher; closed after.
    `syncs`: the command syncs it next (a long first index is announced)."""
    from kb_lsp.runtime import Runtime

    # One command, then exit: no watcher, no model probe, no takeover, exact vectors (Chroma
    # would take longer to import and open than the search; `store/exact.py`), its
    # numbered list kept on disk for the next command.
    runtime = Runtime.one_shot(_hooks())
    try:
        settings = _settings(args, overrides)
        runtime.open([folder], settings, index=False).result()
        if syncs:
            _say_first_index(args, folder, runtime, settings)
        yield runtime
    finally:
        runtime.close()


# Who may hold the index, as a terminal user knows them (not "kb-lsp process").
HOLDERS = "another kb index, kb mcp or an editor"

# A first index of this many files takes more than a few seconds (about 0.2 s a file
# with the default embedder on a laptop: 429 files took 90 s).
FIRST_INDEX_FILES = 50


def _say_first_index(
    args: argparse.Namespace, folder: Path, runtime: Runtime, settings: Settings
) -> None:
    """Before a long first index of a folder nobody named (no -w: the current one), which
    folder and how many files: `kb search` in the wrong folder would otherwise index it
    silently, for minutes."""
    if getattr(args, "workspace", None) or getattr(args, "path", None):
        return
    status = runtime.status()
    if status.files or status.read_only:
        return  # indexed before (only what changed is read), or another process does it
    from kb_lsp.engine.workspace.files import WorkspaceRoot

    count = len(WorkspaceRoot(folder, settings).scan().files)
    if count >= FIRST_INDEX_FILES:
        _say(
            f"indexing {folder} for the first time: {count:,} Markdown files, which takes "
            "a while (-w FOLDER names another folder)"
        )


READ_ONLY = f"{HOLDERS} keeps this folder's index: answering from it read-only"

HELD = (
    f"{HOLDERS} is indexing this folder and keeps its index up to date; "
    "wait for it (kb status shows how far it is), stop it, or index into another --storage"
)


def _sync(
    runtime: Runtime, *, full: bool = False, quiet: bool = False, extract: bool = False
) -> SyncReport | None:
    """Bring the index up to date and say what it took; None when another process
    writes the index (the command says so, in its words). `extract`: the model's
    metadata phase too (`kb index`; a search never waits for a model)."""
    from kb_lsp.engine.records import ReadOnlyStore
    from kb_lsp.runtime import Unavailable
    from kb_lsp.terminal.progress import took

    try:
        syncing = runtime.reindex(full=full, extract=extract)
    except Unavailable:  # read-only: another process writes the index
        return None
    try:
        report = syncing.result()
    except ReadOnlyStore:  # it became read-only meanwhile; a broken embedder is no such case
        return None
    if not quiet or report.chunks_embedded or report.files_removed:
        err(
            f"Indexed {report.files_added + report.files_changed} changed files, "
            f"removed {report.files_removed}, {report.files_unchanged} unchanged; "
            f"{report.chunks_embedded} chunks embedded, {report.chunks_reused} reused"
            + (f" ({report.chunks_shared} from the team index)" if report.chunks_shared else "")
            + (
                f", {report.notes_extracted} notes' metadata extracted"
                if report.notes_extracted
                else ""
            )
            + f" ({took(report.seconds)})"
        )
    for error in report.errors:
        _say(error)
    if report.team_error:
        _say(report.team_error)
    return report


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
