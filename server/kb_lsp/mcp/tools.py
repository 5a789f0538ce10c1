"""The MCP tools that are operations of the contract, made from its table: each tool's
arguments are (some of) the operation's params fields, with their descriptions and
limits, its structured result is the operation's result model, and it runs on the
operation's pool. What is MCP's own here is a tool's name, title, description, hints
and the text the model reads (`text.py`).

`open_result`, `read_file` and `list_files` are not operations (they page through files
for a model) and are declared in `server.py`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, cast

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from kb_lsp.contract.operations import ASK, SCHEMA, SEARCH, STATUS, SUMMARIZE, Operation
from kb_lsp.contract.params import parse_params
from kb_lsp.errors import InvalidInput
from kb_lsp.mcp import text
from kb_lsp.protocol import IndexStatus, dump

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)
# `ask` and `summarize_file` call a model: same answers are not guaranteed.
READ_ONLY_MODEL = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@dataclass(frozen=True)
class ToolRow:
    name: str
    op: Operation[Any, Any]
    title: str
    description: str
    annotations: ToolAnnotations
    # The text for the model: from the result (and the status, with `with_status`).
    text: Callable[[Any, IndexStatus | None], str]
    # Tool argument -> params field, in order; None: every field under its own name.
    arguments: Mapping[str, str] | None = None
    with_status: bool = False
    # A rule across arguments the schema cannot say: the refusal, or None.
    check: Callable[[Mapping[str, Any]], str | None] | None = None

    def fields(self) -> dict[str, str]:
        names = self.arguments or {name: name for name in self.op.params.model_fields}
        return dict(names)


def _one_of_path_or_n(values: Mapping[str, Any]) -> str | None:
    if (values.get("file") is None) == (values.get("n") is None):
        return "Give exactly one of path (a workspace path) or n (a result number)."
    return None


TOOLS: tuple[ToolRow, ...] = (
    ToolRow(
        "search",
        SEARCH,
        "Search the knowledge base",
        "Search the user's Markdown knowledge base (notes, docs, runbooks of the workspace) "
        "by meaning and by words. Returns a numbered list of files, best first, each marked "
        "'filename match' (the query names the file) or 'context match', with its best "
        "passage and line range. Use it before reading files: it costs far fewer tokens. "
        "The numbers are what open_result(n) and summarize_file(n=…) refer to, until your "
        "next search.",
        READ_ONLY,
        lambda result, _: text.search_text(result),
    ),
    ToolRow(
        "summarize_file",
        SUMMARIZE,
        "Summarize a file",
        "Summarize one file of the knowledge base: give path, or n for result n of your "
        "last search. The user's local model writes it (cached per file content, so a "
        "second call is instant); without a reachable model the summary is extractive "
        "(the title and first sentence of each section) and says so.",
        READ_ONLY_MODEL,
        lambda result, status: text.summary_text(result, status.llm.model if status else ""),
        arguments={"path": "file", "n": "n"},
        with_status=True,
        check=_one_of_path_or_n,
    ),
    ToolRow(
        "ask",
        ASK,
        "Ask the knowledge base's agent",
        "Ask the knowledge base's own agent a question: the user's local model (Ollama or "
        "an OpenAI-compatible server) searches and reads on its own and answers with "
        "cited sources [path:lines]. Slow (seconds to minutes) and it needs that model; "
        "when you can read passages yourself, search + open_result is faster. 'file 2' in "
        "the question means result 2 of your last search. Without a model it returns the "
        "best passages instead (mode 'fallback').",
        READ_ONLY_MODEL,
        lambda result, _: text.ask_text(result),
        arguments={"question": "question", "file": "file"},
    ),
    ToolRow(
        "status",
        STATUS,
        "Index status",
        "The state of the knowledge base: indexed files and chunks, files still pending, "
        "the embedder, whether the local model answers, and whether this server writes "
        "the index or reads one that an editor window keeps current.",
        READ_ONLY,
        lambda result, _: text.status_text(result),
    ),
    ToolRow(
        "schema",
        SCHEMA,
        "Metadata fields",
        "The metadata fields of the knowledge base's files (front matter, tags, folder, "
        "dates): each field's types, how many files have it and its most frequent values "
        "— what search's filter can use.",
        READ_ONLY,
        lambda result, _: text.schema_text(result),
    ),
)


def signature(row: ToolRow) -> inspect.Signature:
    """The tool function's signature the SDK reads its schemas from: a `Context`, then
    each argument typed and described as its params field is (without the wire's
    camelCase alias), and the operation's result as the structured output."""
    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    for argument, name in row.fields().items():
        info = row.op.params.model_fields[name]
        described = Field(description=info.description)
        annotation = _annotated(info.annotation, *info.metadata, described)
        default = inspect.Parameter.empty if info.is_required() else info.default
        parameters.append(
            inspect.Parameter(
                argument, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    result = _annotated(CallToolResult, row.op.result)
    return inspect.Signature(parameters, return_annotation=result)


def _annotated(kind: Any, *metadata: Any) -> Any:
    """`Annotated[kind, *metadata]`, made at run time."""
    return cast(Any, Annotated)[(kind, *metadata)]


M = TypeVar("M", bound=BaseModel)


_REGISTERED: list[ToolRow] = []


def register(row: ToolRow) -> Callable[[], None]:
    """A tool for one more operation (`runtime/registry.register`'s): an MCP server made
    after this call serves it. Returns its removal."""
    _REGISTERED.append(row)
    return lambda: _REGISTERED.remove(row)


def served_tools() -> tuple[ToolRow, ...]:
    """The operations' tools: the table's, then those registered."""
    return (*TOOLS, *_REGISTERED)


def params_of(model: type[M], tool: str, **values: Any) -> M:
    """The runtime's params model, read by the one params parser (`contract/params.py`);
    what it refuses (beyond the tool's schema) is a tool error naming the argument."""
    try:
        return parse_params(model, values, f"Invalid arguments to {tool}")
    except InvalidInput as err:
        raise ToolError(f"{err}.") from err


def tool_result(message: str, data: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=message)], structured_content=dump(data)
    )
