"""The LSP life cycle and the kb/* methods: thin handlers (parse → engine → payload).

Every kb/* request is also a `workspace/executeCommand` command (`kb.search`, …) taking
the same params object as its single argument, for clients without custom requests.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from kb_lsp.agent import InvalidInput
from kb_lsp.knowledge import ReadOnlyStore
from kb_lsp.llm import LlmCancelled, LlmError
from kb_lsp.lsp.asking import WorkProgress
from kb_lsp.lsp.errors import ServerError, invalid_params, parse_params
from kb_lsp.lsp.indexing import Job
from kb_lsp.lsp.server import KbLanguageServer, uri_to_path
from kb_lsp.protocol import (
    ASK,
    ASK_EVENT,
    COMMANDS,
    OPEN_RESULT,
    REINDEX,
    SEARCH,
    STATUS,
    SUMMARIZE,
    AskEvent,
    AskParams,
    OpenResultParams,
    OpenResultResponse,
    ReindexParams,
    SearchParams,
    SearchResponse,
    StatusParams,
    Step,
    SummarizeParams,
    dump,
)

log = logging.getLogger(__name__)

Handler = Callable[[KbLanguageServer, Any], Awaitable[Any]]


# --- kb/* --------------------------------------------------------------------------------


async def search(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    params = parse_params(SearchParams, raw, SEARCH)
    hits = await ls.query(
        lambda kb: kb.search(params.query, limit=params.limit, paths=params.paths, mode=params.mode)
    )
    ls.results.remember(params.query, hits)
    status = await ls.run_query(ls.index_status)
    return dump(SearchResponse(query=params.query, results=hits, index=status))


async def open_result(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    params = parse_params(OpenResultParams, raw, OPEN_RESULT)
    hit = ls.results.get(params.n)
    return dump(OpenResultResponse(uri=hit.uri, path=hit.path, range=hit.range))


async def status(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    parse_params(StatusParams, raw, STATUS)
    return dump(await ls.run_query(ls.index_status))


async def reindex(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    """Sync every root (`full`: re-embed everything); answers when done. Cancelling the
    request (or the progress bar) stops the sync."""
    params = parse_params(ReindexParams, raw, REINDEX)
    if await ls.query(lambda kb: kb.read_only):
        raise ServerError(
            "This window's index is read-only: another kb-lsp server (another window) is "
            "indexing this workspace. Reindex from that window, or close it and retry."
        )
    title = "Rebuilding the knowledge base" if params.full else "Reindexing the knowledge base"
    job = Job(title=title, full=params.full, progress="always")
    try:
        await asyncio.wrap_future(ls.worker.submit(job))
    except asyncio.CancelledError:
        job.cancel.set()
        raise
    except ReadOnlyStore as err:
        raise ServerError(f"The index is read-only: {err}") from err
    except Exception as err:
        raise ServerError(f"Reindexing failed: {err}") from err
    return dump(await ls.run_query(ls.index_status))


async def ask(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
    """`kb/ask`: the agent, on the `asks` pool, streaming every step as a `kb/askEvent`
    (one `askId` per request) and as work-done progress ("Asking…", step texts, end).

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

    numbered = ls.results.hits or None
    outcome = None
    try:
        outcome = await ls.run_agent(
            lambda agent: agent.ask(params, numbered=numbered, on_event=on_event, cancel=cancel),
            cancel,
        )
    finally:
        progress.end(_STOPPED.get(outcome.response.stop, "Done") if outcome else "Cancelled")
        if outcome is None or outcome.response.stop == "error":
            ls.llm_probe.refresh(ls.agent)  # the model may have gone away: say so soon
    if outcome.numbered is not None:
        ls.results.remember(params.question, outcome.numbered)
    return dump(outcome.response)


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
    numbered = ls.results.hits or None
    try:
        result = await ls.run_agent(
            lambda agent: agent.summarize(params.file, params.n, numbered=numbered, cancel=cancel),
            cancel,
        )
    except InvalidInput as err:
        raise invalid_params(str(err)) from err
    except LlmCancelled as err:
        raise JsonRpcRequestCancelled(f"{SUMMARIZE}: cancelled") from err
    except LlmError as err:
        ls.llm_probe.refresh(ls.agent)
        raise ServerError(str(err)) from err
    finally:
        progress.end("Done")
    return dump(result)


METHODS: dict[str, Handler] = {
    SEARCH: search,
    OPEN_RESULT: open_result,
    ASK: ask,
    SUMMARIZE: summarize,
    STATUS: status,
    REINDEX: reindex,
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
    loaded = await ls.load_settings()
    ls.start_indexing(loaded.settings)


async def did_change_configuration(
    ls: KbLanguageServer, params: types.DidChangeConfigurationParams
) -> None:
    settings = params.settings
    if isinstance(settings, dict) and isinstance(settings.get("kb"), dict):
        # Clients that push settings (instead of answering workspace/configuration).
        ls.init_options = {**(ls.init_options or {}), **settings["kb"]}
    loaded = await ls.load_settings()
    ls.reconfigure(loaded.settings)


def did_change_workspace_folders(
    ls: KbLanguageServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    added = _folder_paths(list(params.event.added))
    removed = _folder_paths(list(params.event.removed))
    ls.change_roots(added, removed)


def did_save(ls: KbLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    path = uri_to_path(params.text_document.uri)
    if path is not None:
        ls.notify_changed([path])


def did_change_watched_files(
    ls: KbLanguageServer, params: types.DidChangeWatchedFilesParams
) -> None:
    paths = [p for change in params.changes if (p := uri_to_path(change.uri)) is not None]
    if paths:
        ls.notify_changed(paths)


async def shutdown(ls: KbLanguageServer, params: Any) -> None:
    ls.shutdown_requested = True
    await asyncio.get_running_loop().run_in_executor(None, ls.close)


# --- registration ----------------------------------------------------------------------------


def _method(handler: Handler) -> Callable[[KbLanguageServer, Any], Awaitable[Any]]:
    async def method(ls: KbLanguageServer, params: Any) -> Any:
        return await handler(ls, params)

    method.__name__ = handler.__name__
    return method


def _command(handler: Handler) -> Callable[..., Awaitable[Any]]:
    async def command(ls: KbLanguageServer, *args: Any) -> Any:
        return await handler(ls, list(args))

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
        server.feature(name)(_method(handler))
    for command, method in COMMANDS.items():
        if method in METHODS:
            server.command(command)(_command(METHODS[method]))
