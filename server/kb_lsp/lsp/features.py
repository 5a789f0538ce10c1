"""The LSP life cycle and the kb/* methods: a handler per row of the operations table
(`contract/operations.py`: parse → the runtime call on its pool → payload).

Every kb/* request is also a `workspace/executeCommand` command (`kb.search`, …) taking
the same params object as its single argument, for clients without custom requests.
Cancellation: `$/cancelRequest` sets the call's cancel event (an ask's model stream and
tool loop stop at once) and the request is answered with `RequestCancelled`. An ask
stopped otherwise — the progress bar's cancel button, or new settings reopening the
knowledge base under it — is still answered, with `stop: "cancelled"`.
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

from kb_lsp.contract.operations import ASK_EVENT, Call
from kb_lsp.contract.params import parse_params
from kb_lsp.errors import KbError
from kb_lsp.lsp.errors import rpc_error
from kb_lsp.lsp.progress import WorkProgress
from kb_lsp.lsp.server import CLIENT, KbLanguageServer, uri_to_path
from kb_lsp.protocol import AskEvent, Step, dump
from kb_lsp.runtime import dispatch, registry
from kb_lsp.runtime.registry import Bound

log = logging.getLogger(__name__)

Handler = Callable[[KbLanguageServer, Any], Awaitable[Any]]


# --- kb/* --------------------------------------------------------------------------------


def _handler(bound: Bound[Any, Any]) -> Handler:
    """The LSP handler of one operation: parse the params, run it (`dispatch.py`: its
    pool, the read deadline), answer its result as a payload."""
    op = bound.op

    async def handle(ls: KbLanguageServer, raw: Any) -> dict[str, Any]:
        params = parse_params(op.params, _arguments(raw), op.method)
        cancel = threading.Event()
        progress = await WorkProgress.start(ls, raw, op.progress, cancel) if op.progress else None
        call = Call(CLIENT, cancel, _ask_events(ls, progress))
        result = None
        try:
            result = await dispatch.served(ls.runtime, bound, params, call, ls.read_timeout)
        finally:
            if progress is not None:
                progress.end(_ended(result))
        return dump(result)

    handle.__name__ = handle.__qualname__ = op.method.removeprefix("kb/")
    return handle


def _arguments(raw: Any) -> Any:
    """The params of a request, or of a `workspace/executeCommand` (its first argument)."""
    if isinstance(raw, (list, tuple)):
        return raw[0] if raw else None
    return raw


def _ask_events(ls: KbLanguageServer, progress: WorkProgress | None) -> Callable[[Step], None]:
    """A running call's steps as `kb/askEvent` notifications (one `askId` per request)
    and as its progress text. Called on the asks pool: the protocol hands them to the
    event loop."""
    ask_id = uuid.uuid4().hex[:16]
    said = [""]  # the progress bar's line: "Answering…" once, not per piece

    def on_event(step: Step) -> None:
        event = AskEvent(
            ask_id=ask_id, kind=step.kind, text=step.text, tool=step.tool, args=step.args
        )
        ls.protocol.notify(ASK_EVENT.method, dump(event))
        text = _progress_text(step)
        piece = bool(step.args and step.args.get("piece") is True)
        if progress is not None and not (piece and said[-1] == text):
            said[-1] = text
            progress.report(text)

    return on_event


_STOPPED = {
    "answer": "Answered",
    "clarify": "Needs a choice",
    "step_limit": "Stopped at the step limit",
    "error": "Stopped: see the answer",
    "cancelled": "Cancelled",
}


def _ended(result: Any) -> str:
    """The progress bar's last words: how an ask stopped, else done or cancelled."""
    if result is None:
        return "Cancelled"
    stop = getattr(result, "stop", None)
    return _STOPPED.get(stop, "Done") if isinstance(stop, str) else "Done"


def _progress_text(step: Step) -> str:
    if step.args and step.args.get("piece") is True:
        return "Answering…"  # the pieces themselves go to the panel as kb/askEvent
    if step.kind == "tool_call" and step.tool:
        return f"Calling {step.tool}"
    return step.text


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
        ls.runtime.session.apply_settings(loaded.settings)


def did_change_workspace_folders(
    ls: KbLanguageServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    added = _folder_paths(list(params.event.added))
    removed = _folder_paths(list(params.event.removed))
    ls.runtime.session.change_roots(added, removed)


def did_open(ls: KbLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    _editor_files(ls)


def did_close(ls: KbLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    _editor_files(ls)


def _editor_files(ls: KbLanguageServer) -> None:
    """pygls has put or dropped the document already: its open ones go first to the
    vector pass; hovers read them as the editor shows them, saved or not."""
    uris = list(ls.workspace.text_documents)
    ls.runtime.editor_files([path for uri in uris if (path := uri_to_path(uri)) is not None])


def did_save(ls: KbLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    path = uri_to_path(params.text_document.uri)
    if path is not None:
        ls.runtime.session.notify_changed([path])


def did_change_watched_files(
    ls: KbLanguageServer, params: types.DidChangeWatchedFilesParams
) -> None:
    paths = [p for change in params.changes if (p := uri_to_path(change.uri)) is not None]
    if paths:
        ls.runtime.session.notify_changed(paths)


async def shutdown(ls: KbLanguageServer, params: Any) -> None:
    ls.shutdown_requested = True
    await asyncio.get_running_loop().run_in_executor(None, ls.runtime.close)


# --- registration ----------------------------------------------------------------------------


def _translated(handler: Handler) -> Handler:
    """The contract's error kinds as JSON-RPC errors, each with its one code
    (`errors.py`): what the caller can fix is `InvalidParams`, a cancelled call
    `RequestCancelled`, the rest a server error of its kind."""

    @functools.wraps(handler)
    async def translated(ls: KbLanguageServer, params: Any) -> Any:
        try:
            return await handler(ls, params)
        except KbError as err:
            raise rpc_error(err) from err

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
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
    for bound in registry.served():
        handler = _handler(bound)
        server.feature(bound.op.method)(_translated(handler))
        server.command(bound.op.command)(_command(handler))
