"""The wire contract of DESIGN.md: method names and payload shapes, in one place.

Both the engine (which builds results) and the LSP layer (which sends them) use these
models; `vscode-extension/src/protocol.ts` mirrors them and a test keeps the two in step.
Params models validate what a client sends; their errors become `InvalidParams`
messages, so every constraint below is worded for a person.

Everything here is plain pydantic: this module must not import pygls or lsprotocol.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# --- method, notification and command names -------------------------------------------

SEARCH = "kb/search"
OPEN_RESULT = "kb/openResult"
ASK = "kb/ask"
SUMMARIZE = "kb/summarize"
STATUS = "kb/status"
REINDEX = "kb/reindex"

INDEX_CHANGED = "kb/indexChanged"
ASK_EVENT = "kb/askEvent"

REQUESTS = (SEARCH, OPEN_RESULT, ASK, SUMMARIZE, STATUS, REINDEX)
NOTIFICATIONS = (INDEX_CHANGED, ASK_EVENT)

# `workspace/executeCommand` names: `kb.search` for `kb/search`, and so on.
COMMANDS = {name.replace("/", "."): name for name in REQUESTS}

MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100

SearchMode = Literal["hybrid", "semantic", "keyword"]
Label = Literal["filename match", "context match"]
IndexState = Literal["indexing", "ready", "error"]
StopReason = Literal["answer", "clarify", "step_limit", "error", "cancelled"]
AskEventKind = Literal["thinking", "tool_call", "tool_result", "answer", "clarify", "error"]


class _Payload(BaseModel):
    # Clients send camelCase (`conversationId`); Python code uses snake_case.
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class _Params(_Payload):
    # Unknown keys are ignored rather than refused, so a newer client still works.
    model_config = ConfigDict(populate_by_name=True, extra="ignore", str_strip_whitespace=True)


# --- shared shapes ------------------------------------------------------------------------


class Position(_Payload):
    line: int
    character: int


class Range(_Payload):
    start: Position
    end: Position

    @classmethod
    def of_lines(cls, start_line: int, end_line: int) -> Range:
        """A range covering whole lines `start_line..end_line` (0-based, inclusive)."""
        return cls(
            start=Position(line=start_line, character=0),
            end=Position(line=end_line + 1, character=0),
        )


class LlmStatus(_Payload):
    host: str
    model: str
    reachable: bool | None = None


class IndexStatus(_Payload):
    state: IndexState
    files: int
    chunks: int
    pending: int = 0
    embedder: str
    store: str
    llm: LlmStatus
    read_only: bool = Field(default=False, alias="readOnly")
    roots: list[str] = Field(default_factory=list)
    skipped: list[SkippedFile] = Field(default_factory=list)
    message: str | None = None


class SkippedFile(_Payload):
    path: str
    reason: str


# --- kb/search ------------------------------------------------------------------------------


class SearchParams(_Params):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT)
    paths: list[str] | None = None
    mode: SearchMode = "hybrid"


class SearchHit(_Payload):
    n: int
    uri: str
    path: str
    root: str
    title: str
    label: Label
    score: float
    snippet: str
    heading: str
    range: Range


class SearchResponse(_Payload):
    query: str
    results: list[SearchHit]
    index: IndexStatus


# --- kb/openResult --------------------------------------------------------------------------


class OpenResultParams(_Params):
    n: int = Field(ge=1)


class OpenResultResponse(_Payload):
    uri: str
    path: str
    range: Range


# --- kb/ask and kb/summarize ------------------------------------------------------------------


class AskParams(_Params):
    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS * 4)
    file: str | None = None
    n: int | None = Field(default=None, ge=1)
    conversation_id: str | None = Field(default=None, alias="conversationId")


class Source(_Payload):
    n: int | None = None
    uri: str
    path: str
    range: Range


class Step(_Payload):
    kind: AskEventKind
    text: str
    tool: str | None = None
    args: dict[str, Any] | None = None


class Usage(_Payload):
    calls: int = 0
    prompt_tokens: int = Field(default=0, alias="promptTokens")
    completion_tokens: int = Field(default=0, alias="completionTokens")
    seconds: float = 0.0


class AskResponse(_Payload):
    answer: str
    sources: list[Source]
    stop: StopReason
    steps: list[Step]
    usage: Usage
    conversation_id: str | None = Field(default=None, alias="conversationId")


class AskEvent(_Payload):
    ask_id: str = Field(alias="askId")
    kind: AskEventKind
    text: str
    tool: str | None = None
    args: dict[str, Any] | None = None


class SummarizeParams(_Params):
    file: str | None = None
    n: int | None = Field(default=None, ge=1)


class SummarizeResponse(_Payload):
    path: str
    summary: str
    cached: bool
    extractive: bool = False


# --- kb/status and kb/reindex -------------------------------------------------------------------


class StatusParams(_Params):
    pass


class ReindexParams(_Params):
    full: bool = False


def dump(model: BaseModel) -> dict[str, Any]:
    """A payload as it goes on the wire: camelCase aliases, JSON types."""
    return model.model_dump(mode="json", by_alias=True)


IndexStatus.model_rebuild()
