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
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, Resource, TextContent, Tool, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from kb_lsp import __version__
from kb_lsp.contract.errors import Cancelled, InvalidInput, KbError, Unavailable
from kb_lsp.mcp_server import files, text
from kb_lsp.protocol import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    AskParams,
    AskResponse,
    FileLines,
    FileListResponse,
    IndexStatus,
    SchemaResponse,
    SearchParams,
    SearchResponse,
    Step,
    SummarizeParams,
    SummarizeResponse,
    dump,
)
from kb_lsp.reading import PAGE_CHARS, PAGE_LINES
from kb_lsp.runtime import Runtime, deadline

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

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)
# `ask` and `summarize_file` call a model: same answers are not guaranteed.
READ_ONLY_MODEL = ToolAnnotations(read_only_hint=True, open_world_hint=False)

Query = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description=(
            "What to look for: plain words, a question, or exact terms (identifiers, "
            "error codes, names)."
        ),
    ),
]
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


M = TypeVar("M", bound=BaseModel)


def _params(model: type[M], **values: Any) -> M:
    """The runtime's params model; what it refuses (beyond the tool's schema) is a tool
    error naming the argument."""
    try:
        return model(**values)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
            for error in err.errors()
        )
        raise ToolError(f"Invalid arguments: {problems}.") from err


# VS Code checks every tool's input schema against the meta-schema
# `https://json-schema.org/draft-07/schema`, which its JSON service downloads: offline (or
# behind a proxy) the download fails and VS Code drops every tool. A schema's own
# `$schema` takes precedence, and VS Code bundles this spelling of draft-07, so declaring
# it means nothing is fetched. pydantic's schemas keep to draft-07's keywords (`$defs` is
# only a `$ref` target, resolved inside the schema), and so they stay self-contained.
JSON_SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"


def _self_contained(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if schema is None else {"$schema": JSON_SCHEMA_DIALECT, **schema}


def _result(message: str, data: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=message)], structured_content=dump(data)
    )


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

    async def _ask(self, fn: Callable[[], T], cancel: threading.Event) -> T:
        """`fn` on the runtime's asks pool (no deadline of ours: the model's timeout
        ends it); a cancelled call sets `cancel`, which stops the model stream."""
        try:
            return await self._outcome(asyncio.wrap_future(self.runtime.submit_ask(fn)))
        except asyncio.CancelledError:
            cancel.set()
            raise

    @staticmethod
    async def _outcome(work: Awaitable[T]) -> T:
        """The runtime's errors as tool errors."""
        try:
            return await work
        except KbError as err:  # each of the contract's kinds, with what to do about it
            raise ToolError(_tool_message(err)) from err

    # --- tools ------------------------------------------------------------------------------

    def _register_tools(self) -> None:
        runtime = self.runtime

        @self.tool(
            title="Search the knowledge base",
            annotations=READ_ONLY,
            description=(
                "Search the user's Markdown knowledge base (notes, docs, runbooks of the "
                "workspace) by meaning and by words. Returns a numbered list of files, best "
                "first, each marked 'filename match' (the query names the file) or 'context "
                "match', with its best passage and line range. Use it before reading files: "
                "it costs far fewer tokens. The numbers are what open_result(n) and "
                "summarize_file(n=…) refer to, until your next search."
            ),
        )
        async def search(
            ctx: Context,
            query: Query,
            limit: Annotated[
                int, Field(ge=1, le=MAX_LIMIT, description="At most this many files.")
            ] = 10,
            paths: Annotated[
                list[str] | None,
                Field(
                    description=(
                        "Only files whose workspace path matches one of these globs "
                        "(gitignore style), e.g. ['runbooks/**', 'payments/*.md']."
                    )
                ),
            ] = None,
            mode: Annotated[
                Literal["hybrid", "semantic", "keyword"],
                Field(
                    description=(
                        "'hybrid': meaning and words (best in general); 'semantic': "
                        "meaning only; 'keyword': exact words (BM25)."
                    )
                ),
            ] = "hybrid",
            filter: Annotated[
                str | None,
                Field(
                    description=(
                        "Keep only files whose metadata match, e.g. 'tag:runbook "
                        "-status:draft modified>2026-10-01 folder:payments'; the schema "
                        "tool lists the fields and their values."
                    )
                ),
            ] = None,
        ) -> Annotated[CallToolResult, SearchResponse]:
            params = _params(
                SearchParams, query=query, limit=limit, paths=paths or None, mode=mode,
                filter=filter,
            )  # fmt: skip
            client = self.client(ctx)
            response = await self._read(lambda: runtime.search(params, client=client))
            return _result(text.search_text(response), response)

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
                opened = runtime.open_result(n, client=client)
                first = opened.range.start.line + 1
                last = max(first, opened.range.end.line)  # the range's end is exclusive
                return files.file_lines(runtime.read_file(opened.path, first, last, **PAGE), n=n)

            page = await self._read(lines_of_result)
            return _result(text.lines_text(page), page)

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
            return _result(text.lines_text(page), page)

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
            return _result(text.files_text(listing, what=what), listing)

        @self.tool(
            title="Summarize a file",
            annotations=READ_ONLY_MODEL,
            description=(
                "Summarize one file of the knowledge base: give path, or n for result n of "
                "your last search. The user's local model writes it (cached per file "
                "content, so a second call is instant); without a reachable model the "
                "summary is extractive (the title and first sentence of each section) and "
                "says so."
            ),
        )
        async def summarize_file(
            ctx: Context,
            path: Annotated[
                str | None,
                Field(min_length=1, description="The file's workspace-relative path."),
            ] = None,
            n: Annotated[
                int | None, Field(ge=1, description="Or: result n of your last search.")
            ] = None,
        ) -> Annotated[CallToolResult, SummarizeResponse]:
            if (path is None) == (n is None):
                raise ToolError(
                    "Give exactly one of path (a workspace path) or n (a result number)."
                )
            params = _params(SummarizeParams, file=path, n=n)
            client = self.client(ctx)
            cancel = threading.Event()
            result = await self._ask(
                lambda: runtime.summarize(params, client=client, cancel=cancel), cancel
            )
            model = (await self._read(runtime.status)).llm.model
            return _result(text.summary_text(result, model), result)

        @self.tool(
            title="Ask the knowledge base's agent",
            annotations=READ_ONLY_MODEL,
            description=(
                "Ask the knowledge base's own agent a question: the user's local model "
                "(Ollama or an OpenAI-compatible server) searches and reads on its own and "
                "answers with cited sources [path:lines]. Slow (seconds to minutes) and it "
                "needs that model; when you can read passages yourself, search + "
                "open_result is faster. 'file 2' in the question means result 2 of your "
                "last search. Without a model it returns the best passages instead "
                "(mode 'fallback')."
            ),
        )
        async def ask(
            ctx: Context,
            question: Annotated[
                str,
                Field(min_length=1, max_length=MAX_QUERY_CHARS * 4, description="The question."),
            ],
            file: Annotated[
                str | None,
                Field(
                    min_length=1,
                    description="Focus on this file (workspace-relative path) only.",
                ),
            ] = None,
        ) -> Annotated[CallToolResult, AskResponse]:
            params = _params(AskParams, question=question, file=file)
            client = self.client(ctx)
            cancel = threading.Event()
            on_event = _progress_reporter(ctx)
            response = await self._ask(
                lambda: runtime.ask(params, client=client, on_event=on_event, cancel=cancel), cancel
            )
            return _result(text.ask_text(response), response)

        @self.tool(
            title="Index status",
            annotations=READ_ONLY,
            description=(
                "The state of the knowledge base: indexed files and chunks, files still "
                "pending, the embedder, whether the local model answers, and whether this "
                "server writes the index or reads one that an editor window keeps current."
            ),
        )
        async def status() -> Annotated[CallToolResult, IndexStatus]:
            current = await self._read(runtime.status)
            return _result(text.status_text(current), current)

        @self.tool(
            title="Metadata fields",
            annotations=READ_ONLY,
            description=(
                "The metadata fields of the knowledge base's files (front matter, tags, "
                "folder, dates): each field's types, how many files have it and its most "
                "frequent values — what search's filter can use."
            ),
        )
        async def schema() -> Annotated[CallToolResult, SchemaResponse]:
            fields = await self._read(lambda: runtime.read(lambda kb: kb.schema()))
            return _result(text.schema_text(fields), fields)

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
        sent = asyncio.run_coroutine_threadsafe(
            ctx.report_progress(next(count), None, message[:200]), loop
        )
        sent.add_done_callback(_log_failure)

    return report


def _log_failure(sent: concurrent.futures.Future[None]) -> None:
    if not sent.cancelled() and sent.exception() is not None:
        log.debug("progress notification not sent: %s", sent.exception())


def _tool_message(err: KbError) -> str:
    """A runtime error as the model reads it: what went wrong and what to do next."""
    if isinstance(err, InvalidInput):  # the runtime's InvalidRequest, the agent's refusals
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
