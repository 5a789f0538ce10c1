"""`KbMcpServer`: the knowledge base's tools and files for MCP clients, on the SDK's
`MCPServer`, over one runtime shared by every session.

Each tool turns its arguments (validated by the SDK against the tool's JSON schema) into a
call of the runtime, run on the runtime's pools so the event loop never blocks, and its
result into a short text for the model plus `structuredContent` (the `protocol.py`
model, as the LSP methods return it). What the caller can fix — a path outside the
workspace, result 7 of a list of 3, no model for `ask` — comes back as a tool error
(`isError`) whose message says what to do, never as a protocol failure.

Every MCP session has its own numbered list ("result n" means what that session was
shown), kept by the runtime under a client name of its own (see `client`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated, Any, TypeVar

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, Resource, Tool
from pydantic import Field

from kb_lsp import __version__
from kb_lsp.contract.operations import Call, Operation
from kb_lsp.engine.reading import PAGE_CHARS, PAGE_LINES
from kb_lsp.errors import Cancelled, InvalidInput, KbError, Unavailable
from kb_lsp.mcp import files, text
from kb_lsp.mcp.tools import (
    READ_ONLY,
    ToolRow,
    params_of,
    served_tools,
    signature,
    tool_result,
)
from kb_lsp.protocol import (
    FileLines,
    FileListResponse,
    Step,
)
from kb_lsp.runtime import Runtime, deadline, dispatch, registry

log = logging.getLogger(__name__)

T = TypeVar("T")

INSTRUCTIONS = (
    "kb-lsp: the user's Markdown knowledge base (the notes, docs and runbooks of the open "
    "workspace), indexed live for search by meaning and by words. Search first: `search` "
    "returns a numbered list with the best passage of each file, which costs far fewer "
    "tokens than reading files. Then `open_result(n)` for a result's lines, "
    "`read_file(path, start_line)` to read on, `summarize_file` for a whole file's gist. "
    "Numbers refer to the last list of this session. Everything is read-only."
)

PAGE = {"max_lines": PAGE_LINES, "max_chars": PAGE_CHARS}  # one read_file page at most
MAX_SESSIONS = 256  # HTTP sessions whose numbered lists are kept

ResultNumber = Annotated[
    int, Field(ge=1, description="A result number n of your last search in this session.")
]
WorkspacePath = Annotated[
    str,
    Field(
        min_length=1,
        description=(
            "A workspace-relative path with '/', as search and list_files show it, "
            "e.g. 'payments/mexico-payments.md'."
        ),
    ),
]


# VS Code checks every tool's input schema against the meta-schema
# `https://json-schema.org/draft-07/schema`, which its JSON service downloads: offline (or
# behind a proxy) the download fails and VS Code drops every tool. A schema's own
# `$schema` takes precedence, and VS Code bundles this spelling of draft-07, so declaring
# it means nothing is fetched. pydantic's schemas keep to draft-07's keywords (`$defs` is
# only a `$ref` target, resolved inside the schema), and so they stay self-contained.
JSON_SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"


def _self_contained(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if schema is None else {"$schema": JSON_SCHEMA_DIALECT, **schema}


class KbMcpServer(MCPServer[Any]):
    def __init__(self, runtime: Runtime) -> None:
        super().__init__(
            name="kb-lsp",
            title="Knowledge base (kb-lsp)",
            instructions=INSTRUCTIONS,
            version=__version__,
            log_level="WARNING",
        )
        self.runtime = runtime
        self.read_timeout = deadline.READ_TIMEOUT
        self._sessions: OrderedDict[str, None] = OrderedDict()  # least recently seen first
        self._register_tools()

    # --- plumbing ---------------------------------------------------------------------------

    def client(self, ctx: Context) -> str:
        """The runtime's client name of this MCP session (whose numbered list it is).

        Over HTTP a session is named by its `Mcp-Session-Id` header; a stdio server has
        one client, and so does a client without sessions (stateless HTTP). The lists of
        the least recently seen sessions are dropped beyond `MAX_SESSIONS`."""
        headers = ctx.headers
        session_id = headers.get("mcp-session-id") if headers is not None else None
        name = f"mcp-{session_id}" if session_id else "mcp"
        self._sessions[name] = None
        self._sessions.move_to_end(name)
        while len(self._sessions) > MAX_SESSIONS:
            oldest, _ = self._sessions.popitem(last=False)
            self.runtime.lists.forget(oldest)
        return name

    async def _read(self, fn: Callable[[], T]) -> T:
        """`fn` on the runtime's reads pool, given up after `read_timeout` seconds (a hung
        disk costs the agent a tool error, never a call that waits for ever)."""
        future = self.runtime.submit_read(fn)
        return await self._outcome(deadline.within(future, self.read_timeout, "mcp"))

    @staticmethod
    async def _outcome(work: Awaitable[T]) -> T:
        """The runtime's errors as tool errors."""
        try:
            return await work
        except KbError as err:  # each of the contract's kinds, with what to do about it
            raise ToolError(_tool_message(err)) from err

    # --- tools ------------------------------------------------------------------------------

    def _register_tools(self) -> None:
        for row in served_tools():
            self._table_tool(row)
        self._file_tools()

    def _table_tool(self, row: ToolRow) -> None:
        """The tool of one operation of the contract (`tools.py`)."""
        fields = row.fields()

        async def tool(ctx: Context, **arguments: Any) -> CallToolResult:
            values = {fields[name]: value for name, value in arguments.items()}
            refused = row.check(values) if row.check is not None else None
            if refused:
                raise ToolError(refused)
            params = params_of(row.op.params, row.name, **values)
            on_event = _progress_reporter(ctx) if row.op.pool == "asks" else None
            call = Call(self.client(ctx), threading.Event(), on_event)
            result = await self._run(row.op, params, call)
            status = await self._read(self.runtime.status) if row.with_status else None
            return tool_result(row.text(result, status), result)

        tool.__name__ = tool.__qualname__ = row.name
        tool.__signature__ = signature(row)  # type: ignore[attr-defined]
        tool.__annotations__ = {"ctx": Context, "return": CallToolResult}
        self.tool(
            name=row.name,
            title=row.title,
            description=row.description,
            annotations=row.annotations,
        )(tool)

    async def _run(self, op: Operation[Any, Any], params: Any, call: Call) -> Any:
        """The operation, run by the dispatcher (its pool, the read deadline)."""
        bound = registry.BOUND[op.method]
        return await self._outcome(
            dispatch.served(self.runtime, bound, params, call, self.read_timeout)
        )

    def _file_tools(self) -> None:
        """The tools that page through files for a model: not operations of the contract."""
        self._open_result_tool()
        self._read_file_tool()
        self._list_files_tool()

    def _open_result_tool(self) -> None:
        runtime = self.runtime

        @self.tool(
            title="Open a search result",
            annotations=READ_ONLY,
            description=(
                "Read result n of your last search: the lines of its best passage, "
                "numbered from 1, with the file's path. To read around it, call "
                "read_file with that path and a start_line."
            ),
        )
        async def open_result(
            ctx: Context, n: ResultNumber
        ) -> Annotated[CallToolResult, FileLines]:
            client = self.client(ctx)

            def lines_of_result() -> FileLines:
                opened = runtime.lists.get(client, n)
                first = opened.range.start.line + 1
                last = max(first, opened.range.end.line)  # the range's end is exclusive
                return files.file_lines(runtime.read_file(opened.path, first, last, **PAGE), n=n)

            page = await self._read(lines_of_result)
            return tool_result(text.lines_text(page), page)

    def _read_file_tool(self) -> None:
        runtime = self.runtime

        @self.tool(
            title="Read a file",
            annotations=READ_ONLY,
            description=(
                "Read lines of one file of the knowledge base, numbered from 1: at most "
                f"{PAGE_LINES} lines per call (long lines end a page sooner); the "
                "answer says where to go on. Only indexed files inside the workspace can "
                "be read: '..', absolute paths and links leading out are refused."
            ),
        )
        async def read_file(
            path: WorkspacePath,
            start_line: Annotated[
                int, Field(ge=1, description="First line to read (1-based).")
            ] = 1,
            end_line: Annotated[
                int | None,
                Field(ge=1, description="Last line to read (inclusive); default: a page."),
            ] = None,
        ) -> Annotated[CallToolResult, FileLines]:
            read = await self._read(lambda: runtime.read_file(path, start_line, end_line, **PAGE))
            page = files.file_lines(read)
            return tool_result(text.lines_text(page), page)

    def _list_files_tool(self) -> None:
        runtime = self.runtime

        @self.tool(
            title="List the indexed files",
            annotations=READ_ONLY,
            description=(
                "The scan of the knowledge base: every indexed file with its size in "
                "bytes, modification time (UTC), SHA-256 and number of chunks, and the "
                "files that were skipped with the reason. Narrow it with a glob and/or "
                "changed_since to see what changed."
            ),
        )
        async def list_files(
            glob: Annotated[
                str | None,
                Field(
                    description=(
                        "Only paths matching this gitignore-style glob, e.g. 'runbooks/**' "
                        "or '*.md' or 'payments/'."
                    )
                ),
            ] = None,
            changed_since: Annotated[
                str | None,
                Field(
                    description=(
                        "Only files modified at or after this ISO 8601 date or date-time, "
                        "e.g. '2026-10-01' or '2026-10-01T14:30:00Z' (UTC when no zone)."
                    )
                ),
            ] = None,
        ) -> Annotated[CallToolResult, FileListResponse]:
            since = None
            if changed_since:
                try:
                    since = files.parse_since(changed_since)
                except files.Refused as err:
                    raise ToolError(str(err)) from err
            pattern = glob.strip() if glob and glob.strip() else None
            skipped = (await self._read(runtime.status)).skipped
            infos = await self._read(lambda: runtime.files(pattern))
            listing = files.list_files(infos, pattern, since, skipped)
            what = f" matching {glob!r}" if glob else ""
            if since is not None:
                what += f" changed since {changed_since}"
            return tool_result(text.files_text(listing, what=what), listing)

    async def list_tools(self) -> list[Tool]:
        """The tools, each schema declaring its dialect (`JSON_SCHEMA_DIALECT`)."""
        return [
            tool.model_copy(
                update={
                    "input_schema": _self_contained(tool.input_schema),
                    "output_schema": _self_contained(tool.output_schema),
                }
            )
            for tool in await super().list_tools()
        ]

    # --- resources: every indexed file as kb://<root>/<path> --------------------------------

    async def list_resources(self) -> list[Resource]:
        infos = await self._read(self.runtime.files)
        return [
            Resource(
                uri=files.resource_uri(info),
                name=info.path,
                title=info.title,
                mime_type="text/markdown",
                size=info.size,
            )
            for info in infos
        ]

    async def read_resource(self, uri: Any, context: Any = None) -> Iterable[ReadResourceContents]:
        address = str(uri)
        runtime = self.runtime

        def content() -> str | None:
            info = files.file_of_resource(runtime.files(), address)
            return None if info is None else runtime.file_text(info.path)[1]

        try:
            body = await self._read(content)
        except ToolError as err:  # the file went away or cannot be read now
            raise ResourceNotFoundError(str(err)) from err
        if body is None:
            raise ResourceNotFoundError(
                f"No indexed file at {address}: list the resources, or use list_files."
            )
        return [ReadResourceContents(content=body, mime_type="text/markdown")]


def _progress_reporter(ctx: Context) -> Callable[[Step], None]:
    """The agent's steps (on a worker thread) as MCP progress notifications, for clients
    that asked for progress: a run takes seconds to minutes."""
    loop = asyncio.get_running_loop()
    count = itertools.count(1)

    def report(step: Step) -> None:
        message = f"Calling {step.tool}" if step.kind == "tool_call" and step.tool else step.text
        if not (step.args and step.args.get("piece") is True):
            message = message[:200]  # a step is a status line; a piece of the answer is whole
        sent = asyncio.run_coroutine_threadsafe(
            ctx.report_progress(next(count), None, message), loop
        )
        sent.add_done_callback(_log_failure)

    return report


def _log_failure(sent: concurrent.futures.Future[None]) -> None:
    if not sent.cancelled() and sent.exception() is not None:
        log.debug("progress notification not sent: %s", sent.exception())


def _tool_message(err: KbError) -> str:
    """A runtime error as the model reads it: what went wrong and what to do next."""
    if isinstance(err, InvalidInput):  # a bad filter or result number, a file refused
        return _actionable(str(err))
    if isinstance(err, Unavailable):
        return f"{err} Call status() to see the index state."
    if isinstance(err, Cancelled):
        return "Cancelled."
    return str(err)


def _actionable(message: str) -> str:
    """A runtime message with what the model should do about it."""
    if message.startswith("No result") and "no search yet" in message:
        return f"{message}: call search first (numbers refer to this session's last list)."
    if message.startswith("No result"):
        return f"{message}: use a number from that list, or search again."
    return message
