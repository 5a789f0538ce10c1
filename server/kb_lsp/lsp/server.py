"""`KbLanguageServer`: the runtime (`kb_lsp.runtime`) behind pygls, and `serve()`.

This is translation only. The event loop (main thread) runs every handler; a handler
parses, hands the work to one of the runtime's pools and awaits it, so `kb/status` is
answered while a cold index runs. pygls' own pool only reads stdin (sized to 2). Messages
sent from other threads (status changes, progress, log records) are written by the
event loop (`jsonrpc.KbProtocol`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from kb_lsp import __version__
from kb_lsp.config import Layer, LoadedSettings, env_settings, load_settings
from kb_lsp.contract.operations import INDEX_CHANGED, LIST_CHANGED
from kb_lsp.listener import Listeners
from kb_lsp.lsp import logs
from kb_lsp.lsp.errors import ServerError
from kb_lsp.lsp.jsonrpc import KbProtocol, plain_converter
from kb_lsp.lsp.progress import IndexProgressBar
from kb_lsp.protocol import IndexStatus, ListChanged, ListOrigin, SearchHit, dump
from kb_lsp.runtime import Hooks, ProgressHandle, Runtime, Severity, deadline
from kb_lsp.runtime.deadline import READ_TIMEOUT

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

CONFIG_TIMEOUT = 5.0
# One client per server process (stdio, or one TCP connection at a time): its numbered
# list is this name's list in the runtime.
CLIENT = "lsp"

_MESSAGE_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
}


def uri_to_path(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(os.path.abspath(path)) if path else None


class KbLanguageServer(LanguageServer):
    protocol: KbProtocol

    def __init__(self) -> None:
        super().__init__(
            "kb-lsp",
            __version__,
            protocol_cls=KbProtocol,
            converter_factory=plain_converter,
            max_workers=2,  # pygls' pool only reads stdin: no handler runs on it
        )
        # `listen`: the `kb` command line asks this server rather than load a second model.
        self.runtime = Runtime.editor(Hooks(tell=self._tell, start_progress=self._start_progress))
        self.runtime.session.follow_writes(Listeners(self.runtime).follow)
        self.runtime.subscribe(self._send_status)
        # One last list: the agent's, the command line's or an MCP client's search becomes
        # this editor's numbered list too, and the panel is told to show it.
        self.runtime.lists.follow(CLIENT, self._send_list)
        self.init_options: Any = None
        # The `kb` settings a client last pushed in workspace/didChangeConfiguration (the
        # VS Code extension pushes all it has on every change): each push replaces the last.
        self.pushed_settings: Any = None
        # Settings are read (workspace/configuration) and applied one load at a time, in
        # the order they were asked for: the first (at `initialized`) opens the knowledge
        # base, each change after it applies on top of the one before.
        self.settings_turn = asyncio.Lock()
        self.roots: list[Path] = []
        self.shutdown_requested = False
        self.read_timeout = READ_TIMEOUT
        logs.to_client(self._log_to_client)

    # --- from the runtime to the client ------------------------------------------------

    def _connected(self) -> bool:
        return self.protocol.writer is not None and not self.runtime.closed

    def _log_to_client(self, params: types.LogMessageParams) -> None:
        if self._connected():
            self.window_log_message(params)

    def _tell(self, message: str, severity: Severity) -> None:
        if self._connected():
            self.window_show_message(
                types.ShowMessageParams(type=_MESSAGE_TYPES[severity], message=message)
            )

    def _send_status(self, status: IndexStatus) -> None:
        if self._connected():
            self.protocol.notify(INDEX_CHANGED.method, dump(status))

    def _send_list(self, query: str, hits: list[SearchHit], origin: ListOrigin) -> None:
        if self._connected():
            index = self.runtime.status()
            changed = ListChanged(query=query, results=hits, origin=origin, index=index)
            self.protocol.notify(LIST_CHANGED.method, dump(changed))

    def _start_progress(self, title: str, cancel: threading.Event) -> ProgressHandle | None:
        return IndexProgressBar.start(self, title, cancel) if self._connected() else None

    # --- settings ------------------------------------------------------------------------

    async def load_settings(self) -> LoadedSettings:
        """Layers, lowest first: env < initializationOptions < pushed settings <
        workspace/configuration (section `kb`). A bad value in one falls back to the layer
        below it (`config.load_settings`), so a typo never moves the store."""
        sources = [
            Layer("the environment", env_settings()),
            Layer("initializationOptions", self.init_options),
            Layer("the settings the editor sent", self.pushed_settings),
        ]
        workspace = self.client_capabilities.workspace
        if workspace is not None and workspace.configuration:
            try:
                config = await asyncio.wait_for(
                    self.workspace_configuration_async(
                        types.ConfigurationParams(items=[types.ConfigurationItem(section="kb")])
                    ),
                    CONFIG_TIMEOUT,
                )
                if config:
                    sources.append(Layer("the editor's settings", config[0]))
            except Exception as err:  # a client that fails here still gets a server
                log.warning("workspace/configuration failed: %s", err)
        loaded = load_settings(*sources)
        if loaded.message:
            self.runtime.tell(loaded.message)
        return loaded

    # --- running the runtime's work off the event loop ------------------------------------

    async def read(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(*args)` on the runtime's reads pool, once the knowledge base was opened;
        a `ServerError` after `read_timeout` seconds (a read still queued is dropped, one
        running is left to finish on its thread: the event loop never waits on it)."""
        await asyncio.wrap_future(self.runtime.opened)
        future = self.runtime.submit_read(fn, *args, **kwargs)
        try:
            return await deadline.within(future, self.read_timeout, _name(fn))
        except deadline.ReadTimedOut as err:
            raise ServerError(str(err)) from None

    async def agent(
        self, cancel: threading.Event, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """`fn(*args)` on the runtime's asks pool; a cancelled request sets `cancel` (the
        agent stops its model stream) and stops waiting at once."""
        await asyncio.wrap_future(self.runtime.opened)
        try:
            return await asyncio.wrap_future(self.runtime.submit_ask(fn, *args, **kwargs))
        except asyncio.CancelledError:
            cancel.set()
            raise

    # --- the end -------------------------------------------------------------------------

    def shutdown(self) -> None:
        """pygls' end of the connection (exit, or stdin closed): close everything without
        waiting for the thread still blocked reading stdin.

        pygls 2.1.1's own `shutdown()` joins its thread pool, where the stdin reader may
        still be blocked, so it is not called; it has no public way to set its stop event
        or close its TCP server, hence `_stop_event` and `_server` (checked against
        pygls 2.1.1)."""
        self.runtime.close()
        if self._stop_event is not None:
            self._stop_event.set()
        self.thread_pool.shutdown(wait=False, cancel_futures=True)
        if self._server is not None:
            self._server.close()


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
