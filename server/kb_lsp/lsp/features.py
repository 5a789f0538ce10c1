"""The LSP life cycle and the kb/* methods: thin handlers (parse → runtime → payload).

Every kb/* request is also a `workspace/executeCommand` command (`kb.search`, …) taking
the same params object as its single argument, for clients without custom requests.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from kb_lsp.knowledge import ReadOnlyStore
from kb_lsp.llm import LlmCancelled, LlmError
from kb_lsp.lsp.errors import ServerError, invalid_params, parse_params
from kb_lsp.lsp.progress import WorkProgress
from kb_lsp.lsp.server import CLIENT, KbLanguageServer, uri_to_path
from kb_lsp.protocol import (
    ASK,
    ASK_EVENT,
    COMMANDS,
    INDEX_CONTROL,
    OPEN_RESULT,
    REINDEX,
    RELATED,
    SCHEMA,
    SEARCH,
    STATUS,
    SUMMARIZE,
    AskEvent,
    AskParams,
    AskResponse,
    IndexControlParams,
    OpenResultParams,
    ReindexParams,
    RelatedParams,
    SchemaParams,
    SearchParams,
    StatusParams,
    Step,
    SummarizeParams,
    dump,
)
from kb_lsp.runtime import InvalidInput, Unavailable

log = logging.getLogger(__name__)

Handler = Callable[[KbLanguageServer, Any], Awaitable[Any]]


# --- kb/* --------------------------------------------------------------------------------


async def search(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    params = parse_params(SearchParams, raw, SEARCH)
    return dump(await ls.read(ls.runtime.search, params, client=CLIENT))


async def schema(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    """`kb/schema`: every metadata field of the indexed files (what a filter can use)."""
    parse_params(SchemaParams, raw, SCHEMA)
    return dump(await ls.read(ls.runtime.schema))


async def open_result(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    params = parse_params(OpenResultParams, raw, OPEN_RESULT)
    # Answered on the loop: this client's numbered list is kept in memory only (the
    # runtime persists lists for the CLI, not for "lsp"), so nothing here touches a disk.
    return dump(ls.runtime.open_result(params.n, client=CLIENT))


async def related(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    """`kb/related`: the files nearest to one file, from stored vectors; with `numbered`
    (the default) they become this client's numbered list, as a search's do."""
    params = parse_params(RelatedParams, raw, RELATED)
    return dump(await ls.read(ls.runtime.related, params, client=CLIENT))


async def status(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    parse_params(StatusParams, raw, STATUS)
    return dump(await ls.read(ls.runtime.status))


async def reindex(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    """Sync every root (`full`: rebuild everything); answers when done. Cancelling the
    request (or the progress bar) stops the sync."""
    params = parse_params(ReindexParams, raw, REINDEX)
    await asyncio.wrap_future(ls.runtime.opened)
    cancel = threading.Event()
    try:
        await asyncio.wrap_future(ls.runtime.reindex(full=params.full, cancel=cancel))
    except asyncio.CancelledError:
        cancel.set()
        raise
    except ReadOnlyStore as err:
        raise ServerError(f"The index is read-only: {err}") from err
    except Unavailable:
        raise
    except Exception as err:
        raise ServerError(f"Reindexing failed: {err}") from err
    return dump(await ls.read(ls.runtime.status))


async def ask(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    """`kb/ask`: the agent, on the runtime's asks pool, streaming every step as a
    `kb/askEvent` (one `askId` per request) and as work-done progress ("Asking…", step
    texts, end).

    "file N" in the question and `n` refer to this client's last numbered list; a list
    the agent shows (its search, or the candidates of a clarification) becomes the new one.

    Cancellation: `$/cancelRequest` sets the agent's cancel event (the model stream and
    the tool loop stop at once) and the request is answered with `RequestCancelled`
    (-32800), like every other request of this server (DESIGN.md: errors). A run stopped
    otherwise — the progress bar's cancel button, or new settings reopening the knowledge
    base under it — is still answered, with `stop: "cancelled"` and the steps so far.
    """
    params = parse_params(AskParams, raw, ASK)
    ask_id = uuid.uuid4().hex[:16]
    cancel = threading.Event()
    progress = await WorkProgress.start(ls, raw, "Asking…", cancel)

    def on_event(step: Step) -> None:  # on the asks pool: the protocol hands it to the loop
        event = AskEvent(
            ask_id=ask_id, kind=step.kind, text=step.text, tool=step.tool, args=step.args
        )
        ls.protocol.notify(ASK_EVENT, dump(event))
        progress.report(_progress_text(step))

    response: AskResponse | None = None
    try:
        response = await ls.agent(
            cancel, ls.runtime.ask, params, client=CLIENT, on_event=on_event, cancel=cancel
        )
    finally:
        progress.end(_STOPPED.get(response.stop, "Done") if response else "Cancelled")
    return dump(response)


_STOPPED = {
    "answer": "Answered",
    "clarify": "Needs a choice",
    "step_limit": "Stopped at the step limit",
    "error": "Stopped: see the answer",
    "cancelled": "Cancelled",
}


def _progress_text(step: Step) -> str:
    if step.kind == "tool_call" and step.tool:
        return f"Calling {step.tool}"
    return step.text


async def summarize(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    """`kb/summarize {file?, n?}`: the cached or a new model summary of one file (an
    extractive one, marked `extractive`, without a model). A bad file or n is
    `InvalidParams`; a cancelled request `RequestCancelled`; a model failure (timeout,
    HTTP error) a server error with the model client's message."""
    params = parse_params(SummarizeParams, raw, SUMMARIZE)
    cancel = threading.Event()
    progress = await WorkProgress.start(ls, raw, "Summarizing…", cancel)
    try:
        result = await ls.agent(cancel, ls.runtime.summarize, params, client=CLIENT, cancel=cancel)
    except LlmCancelled as err:
        raise JsonRpcRequestCancelled(f"{SUMMARIZE}: cancelled") from err
    except LlmError as err:
        raise ServerError(str(err)) from err
    finally:
        progress.end("Done")
    return dump(result)


async def index_control(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    """`kb/indexControl {action: pause|resume|cancel}`: the user's say over indexing."""
    params = parse_params(IndexControlParams, raw, INDEX_CONTROL)
    return dump(await ls.read(ls.runtime.index_control, params.action))


METHODS: dict[str, Handler] = {
    SEARCH: search,
    OPEN_RESULT: open_result,
    ASK: ask,
    SUMMARIZE: summarize,
    STATUS: status,
    REINDEX: reindex,
    RELATED: related,
    INDEX_CONTROL: index_control,
    SCHEMA: schema,
}


# --- life cycle ----------------------------------------------------------------------------


def _folder_paths(folders: list[types.WorkspaceFolder] | None) -> list[Path]:
    paths = []
    for folder in folders or []:
        path = uri_to_path(folder.uri)
        if path is not None and path not in paths:
            paths.append(path)
    return paths


def initialize(ls: KbLanguageServer, params: types.InitializeParams) -> None:
    ls.init_options = params.initialization_options
    roots = _folder_paths(list(params.workspace_folders or []))
    if not roots:
        if params.root_uri:
            root = uri_to_path(params.root_uri)
            roots = [root] if root else []
        elif params.root_path:
            roots = [Path(params.root_path).absolute()]
    ls.roots = roots
    if not roots:
        log.warning("no workspace folder: nothing to index until one is added")


async def initialized(ls: KbLanguageServer, params: types.InitializedParams) -> None:
    async with ls.settings_turn:
        loaded = await ls.load_settings()
        ls.runtime.open(ls.roots, loaded.settings)


async def did_change_configuration(
    ls: KbLanguageServer, params: types.DidChangeConfigurationParams
) -> None:
    settings = params.settings
    if isinstance(settings, dict) and "kb" in settings:
        # A client that pushes its settings: the new ones replace what it pushed before
        # (merged into nothing, so a setting it cleared is gone; checked in load_settings).
        ls.pushed_settings = settings["kb"]
    # After the first settings opened the knowledge base, and after the change before it:
    # applied before the opening, a change would reopen a store not opened yet.
    async with ls.settings_turn:
        loaded = await ls.load_settings()
        ls.runtime.apply_settings(loaded.settings)


def did_change_workspace_folders(
    ls: KbLanguageServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    added = _folder_paths(list(params.event.added))
    removed = _folder_paths(list(params.event.removed))
    ls.runtime.change_roots(added, removed)


def did_save(ls: KbLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    path = uri_to_path(params.text_document.uri)
    if path is not None:
        ls.runtime.notify_changed([path])


def did_change_watched_files(
    ls: KbLanguageServer, params: types.DidChangeWatchedFilesParams
) -> None:
    paths = [p for change in params.changes if (p := uri_to_path(change.uri)) is not None]
    if paths:
        ls.runtime.notify_changed(paths)


async def shutdown(ls: KbLanguageServer, params: Any) -> None:
    ls.shutdown_requested = True
    await asyncio.get_running_loop().run_in_executor(None, ls.runtime.close)


# --- registration ----------------------------------------------------------------------------


def _translated(handler: Handler) -> Handler:
    """The runtime's errors as JSON-RPC errors: what the client can fix is
    `InvalidParams`, what cannot be done now a server error."""

    @functools.wraps(handler)
    async def translated(ls: KbLanguageServer, params: Any) -> Any:
        try:
            return await handler(ls, params)
        except InvalidInput as err:
            raise invalid_params(str(err)) from err
        except Unavailable as err:
            raise ServerError(str(err)) from err

    return translated


def _command(handler: Handler) -> Callable[..., Awaitable[Any]]:
    translated = _translated(handler)

    async def command(ls: KbLanguageServer, *args: Any) -> Any:
        return await translated(ls, list(args))

    command.__name__ = f"{handler.__name__}_command"
    return command


def register(server: KbLanguageServer) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.SHUTDOWN)(shutdown)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_workspace_folders)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(did_save)
    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
    for name, handler in METHODS.items():
        server.feature(name)(_translated(handler))
    for command, method in COMMANDS.items():
        if method in METHODS:
            server.command(command)(_command(METHODS[method]))
