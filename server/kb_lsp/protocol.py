"""The wire contract's payloads: what every kb/* method takes and returns, in one place
(the method names, pools and errors are the operations table, `contract/`).

Both the engine (which builds results) and the LSP layer (which sends them) use these
models. The extension's `vscode-extension/src/protocol.ts` and the contract test's shapes
are generated from this module (`python -m kb_lsp.codegen`; a test fails when they are
stale): a model's docstring and `Field(description=…)` become its TSDoc.
Params models validate what a client sends; their errors become `InvalidParams`
messages, so every constraint below is worded for a person.

Everything here is plain pydantic: this module must not import pygls or lsprotocol.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    model_validator,
)
from pydantic.alias_generators import to_camel

from kb_lsp import globs

MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100
MAX_PATH_CHARS = 4096
MAX_PATHS = 64

SearchMode = Literal["hybrid", "semantic", "keyword"]
Label = Literal["filename match", "context match", "related"]
IndexState = Literal["indexing", "ready", "error"]
IndexPhase = Literal["scanning", "keyword", "vectors", "metadata"]
IndexAction = Literal["pause", "resume", "cancel"]
# "length": the model was cut off (partial answer); "empty": it said nothing (after a retry);
# "degenerate": its text degenerated (repeating itself, writing the prompt's markup back,
# nothing new) and was stopped early, the text before that kept.
StopReason = Literal[
    "answer", "clarify", "step_limit", "length", "degenerate", "empty", "error", "cancelled"
]
# How an answer was made: "agent" (the model called tools), "grounded" (retrieve, grade,
# answer from numbered passages: models without tool calling), "fallback" (no model
# answered: the best passages or an extractive summary).
AskMode = Literal["agent", "grounded", "fallback"]
# The one verdict on an answer: "supported" (the check found the model's text in the
# passages it cites), "unsupported" (it did not: the text is a claim to check), "no_model"
# (no model answered: the best passages). None for a question back, an error, a stop.
AskVerdict = Literal["supported", "unsupported", "no_model"]
LlmProvider = Literal["ollama", "openai"]
# "status": a line about the run itself (mode chosen, waiting for the model), not the model.
# Who set a numbered list the editor did not ask for: the agent's search during an ask,
# the `kb` command line through the server's socket, an MCP client of the same process.
ListOrigin = Literal["agent", "cli", "mcp"]
AskEventKind = Literal[
    "thinking", "tool_call", "tool_result", "answer", "clarify", "error", "status"
]


class _Payload(BaseModel):
    # Clients send camelCase (`conversationId`); Python code uses snake_case.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )


class _Params(_Payload):
    # Unknown keys are ignored rather than refused, so a newer client still works.
    # Numbers and flags are strict (`StrictInt`, `StrictBool`): `limit: true` or
    # `full: 1` is refused, not read as 1 or true (a unit test checks every params model).
    model_config = ConfigDict(
        populate_by_name=True, extra="ignore", str_strip_whitespace=True, defer_build=True
    )


# A gitignore-style glob, checked when it arrives rather than when a search compiles it:
# `globs.check` refuses, naming it, a pattern that is invalid or over the glob limits.
Glob = Annotated[str, Field(max_length=MAX_PATH_CHARS), AfterValidator(globs.check)]
# A workspace path as a client gives it.
PathText = Annotated[str, Field(max_length=MAX_PATH_CHARS)]
# The number of an entry in a numbered list: lists have at most MAX_LIMIT entries.
ResultNumber = Annotated[StrictInt, Field(ge=1, le=MAX_LIMIT)]


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
    # "ollama" (Ollama's API) or "openai" (any OpenAI-compatible server): kb.llm.provider.
    provider: LlmProvider = "ollama"
    # When the model cannot answer: one message naming the host and the fix (for a card
    # with actions: open settings, retry, copy `ollama serve`). None while it can.
    message: str | None = None
    # Whether the model calls tools (agent mode) or not (grounded mode); None: not known yet.
    tools: bool | None = None


class IndexProgress(_Payload):
    """The one progress of a running sync: totals fixed when the sync starts."""

    phase: IndexPhase
    files_done: int
    files_total: int
    chunks_done: int = 0
    chunks_total: int = 0
    chunks_reused: int = Field(
        default=0,
        description=(
            "Of chunksDone, the passages whose vectors were reused (the store's cache of "
            "earlier embeddings, or a team index) rather than embedded."
        ),
    )
    seconds_left: float | None = Field(
        default=None,
        ge=0.0,
        description=(
            "About how many seconds the current phase has left, from the rate of its "
            "recent progress (not the run's average); null until there is a rate."
        ),
    )


class IndexStatus(_Payload):
    state: IndexState
    files: int
    chunks: int
    pending: int = 0
    embedder: str
    store: str
    llm: LlmStatus
    read_only: bool = False
    roots: list[str] = Field(default_factory=list)
    skipped: list[SkippedFile] = Field(default_factory=list)
    # Files indexed with a problem worth fixing (malformed front matter), with its line.
    problems: list[FileProblem] = Field(default_factory=list)
    message: str | None = None
    progress: IndexProgress | None = None
    # Keyword search covers every file once the text pass is done; vectors follow.
    keyword_complete: bool = True
    vectors_ready: float = Field(default=1.0, ge=0.0, le=1.0)
    # The user paused indexing (kb/indexControl): changes queue until it is resumed.
    paused: bool = False
    metadata: MetadataStatus | None = None


class MetadataStatus(_Payload):
    """Metadata a model extracts (`.kb/schema.json`): how far, by which model, or why not."""

    schema_file: str | None = None
    model: str | None = None
    extracted: int = 0  # notes whose extracted fields are current, of `total`
    total: int = 0
    message: str | None = None  # why extraction does not run (no model, a bad schema)


class SkippedFile(_Payload):
    path: str
    reason: str


class FileProblem(_Payload):
    """Something wrong in an indexed file (the file is still indexed)."""

    path: str
    line: int  # 0-based, as LSP positions
    message: str


# --- kb/search ------------------------------------------------------------------------------


class SearchParams(_Params):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description=(
            "What to look for: plain words, a question, or exact terms (identifiers, "
            "error codes, names)."
        ),
    )
    limit: StrictInt = Field(default=10, ge=1, le=MAX_LIMIT, description="At most this many files.")
    paths: list[Glob] | None = Field(
        default=None,
        max_length=MAX_PATHS,
        description=(
            "Only files whose workspace path matches one of these globs (gitignore "
            "style), e.g. ['runbooks/**', 'payments/*.md']."
        ),
    )
    mode: SearchMode = Field(
        default="hybrid",
        description=(
            "'hybrid': meaning and words (best in general); 'semantic': meaning only; "
            "'keyword': exact words (BM25)."
        ),
    )
    filter: str | None = Field(
        default=None,
        max_length=MAX_QUERY_CHARS,
        description=(
            "Keep only files whose metadata match, e.g. 'tag:runbook -status:draft "
            "modified>2026-10-01 folder:payments'; the schema tool lists the fields and "
            "their values."
        ),
    )


class ExtractedValue(_Payload):
    """A value a model read from a note, and where: the note's own words it was checked
    against (a value without such words is never stored)."""

    value: str
    evidence: str  # the note's words the value was read from, as the file has them
    range: Range  # where those words are (0-based lines and code-point columns)
    start: int  # code-point offsets of the words in the file's text
    end: int


class HitMeta(_Payload):
    """A file's key metadata, for display beside a hit."""

    tags: list[str] = Field(default_factory=list)
    status: str | None = None
    modified: str | None = None  # ISO date of the file's last change
    # Fields a model extracted from the note's text (front matter wins), each value with
    # the span it was read from, and which model.
    extracted: dict[str, list[ExtractedValue]] = Field(default_factory=dict)
    extracted_by: str | None = None  # `ollama/qwen2.5:7b`


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
    meta: HitMeta | None = None
    # Words of `snippet` to highlight, as they appear there: the query's distinctive
    # words (no stopwords, no word most passages contain). Clients mark exactly these.
    marks: list[str] = Field(default_factory=list)


class QueryWarning(_Payload):
    """Something typed that was probably meant otherwise; the search ran anyway, as
    typed: a filter typed in the query with a field no file has (`ownr:priya`, searched
    as words), a parenthesis without its pair (left out), a value no file has where a
    longer one exists (`owner:priya` beside "Priya Raman")."""

    where: Literal["query", "filter"] = Field(description="Which text it is in.")
    position: int = Field(description="The 0-based character of that text it is at.")
    message: str
    suggestion: str | None = Field(
        default=None, description="That whole text as it was probably meant, to search instead."
    )


class SearchResponse(_Payload):
    query: str
    results: list[SearchHit]
    index: IndexStatus
    did_you_mean: str | None = Field(
        default=None,
        description=(
            "The query with each word the index does not know replaced by a word it holds "
            "(titles and file names first, then passages' words), such that the same "
            "search lists something; null when every word is known or no correction finds "
            "anything."
        ),
    )
    warnings: list[QueryWarning] = Field(
        default_factory=list, description="What in the query or filter looks mistyped."
    )


class ListChanged(_Payload):
    """The numbered list "file N" means changed other than by the editor's own search:
    the panel shows it, with the query its numbers belong to."""

    query: str
    results: list[SearchHit]
    origin: ListOrigin
    index: IndexStatus | None = None


# --- kb/openResult --------------------------------------------------------------------------


class OpenResultParams(_Params):
    n: ResultNumber


class OpenResultResponse(_Payload):
    uri: str
    path: str
    range: Range


# --- kb/ask and kb/summarize ------------------------------------------------------------------


# Turns a client may give as the conversation so far (the server keeps 8 of them).
MAX_HISTORY_TURNS = 32


class ChatTurn(_Params):
    """One earlier turn of a conversation, as the client shows it."""

    question: str = Field(max_length=MAX_QUERY_CHARS * 4)
    answer: str = Field(max_length=MAX_QUERY_CHARS * 40)


class LineSpan(_Payload):
    """Lines of a file, 1-based and inclusive, as an editor shows a selection."""

    start: StrictInt = Field(ge=1)
    end: StrictInt = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> LineSpan:
        if self.end < self.start:
            raise ValueError(f"lines {self.start}–{self.end}: the end is before the start")
        return self


class AskParams(_Params):
    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS * 4, description="The question.")
    file: PathText | None = Field(
        default=None, description="Focus on this file (workspace-relative path) only."
    )
    n: ResultNumber | None = Field(
        default=None, description="Or: focus on result n of your last search."
    )
    lines: LineSpan | None = Field(
        default=None,
        description=(
            "With `file`: only these lines of it (the editor's selection); the answer is "
            "made from them alone, as passages given to the model."
        ),
    )
    conversation_id: str | None = Field(default=None, max_length=200)
    history: list[ChatTurn] | None = Field(
        default=None,
        max_length=MAX_HISTORY_TURNS,
        description=(
            "The conversation so far, as the client keeps it, oldest first; it replaces "
            "what the server remembers of `conversation_id`: a conversation reopened from "
            "the client's history (after a restart too), an answer regenerated (the turns "
            "before it), a question edited and sent again (the turns before that question)."
        ),
    )

    @model_validator(mode="after")
    def _lines_of_a_file(self) -> AskParams:
        if self.lines is not None and not self.file:
            raise ValueError("`lines` needs `file`: the lines of which file?")
        return self


class StopAskParams(_Params):
    """Stop the caller's running asks, as the user's Stop does."""


class StopAskResponse(_Payload):
    stopped: int = Field(description="How many asks were told to stop.")


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
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


class AskResponse(_Payload):
    answer: str
    sources: list[Source]
    stop: StopReason
    steps: list[Step]
    usage: Usage
    mode: AskMode = "agent"
    # False when the answer cites none of the passages it was given.
    grounded: bool = True
    conversation_id: str | None = None
    dropped: list[str] = Field(
        default_factory=list,
        description="Citations the model wrote that name no passage it was given (as it "
        "wrote them: `[7]`, `[docs/x.md:3]`), taken out of the answer.",
    )
    verdict: AskVerdict | None = Field(
        default=None,
        description="The one verdict to show: supported / not supported by the notes / no "
        "model; null for a question back, an error or a stop. `mode` is its small print.",
    )
    mode_reason: str | None = Field(
        default=None,
        description="Why the answer was made in its mode: `smollm2 does not call tools`, "
        "`qwen2.5:7b claims to call tools, but it answered without calling a tool`.",
    )
    folded: str | None = Field(
        default=None,
        description="The model's text when the check found it unsupported: it is in "
        "`answer` after the quotes, and a client folds it (\"The model's answer is not "
        'supported by your notes — show it").',
    )


class AskEvent(_Payload):
    """One step of a running `kb/ask`. The answer's text comes as it is written: `answer`
    events with `args.piece` true carry new text (`text`) to add to the pending answer, or
    with `args.replace` true the whole pending answer from now on, about every 100 ms; the
    final `answer` event, without `piece`, is the whole answer."""

    ask_id: str
    kind: AskEventKind
    text: str
    tool: str | None = None
    args: dict[str, Any] | None = None


class SummarizeParams(_Params):
    file: PathText | None = Field(default=None, description="The file's workspace-relative path.")
    n: ResultNumber | None = Field(default=None, description="Or: result n of your last search.")


class SummarizeResponse(_Payload):
    path: str
    summary: str
    cached: bool
    extractive: bool = False


# --- kb/related and kb/schema ----------------------------------------------------------------


class RelatedParams(_Params):
    uri: PathText | None = None
    path: PathText | None = None
    limit: StrictInt = Field(default=10, ge=1, le=MAX_LIMIT)
    # Leave out files the given file already links to.
    exclude_linked: StrictBool = False
    # Make the list this client's numbered list (`kb/openResult`, "file 2" in an ask), as a
    # search does. A panel that refreshes related notes on its own sends false, so the
    # user's last search stays the list "file N" means.
    numbered: StrictBool = True


class RelatedResponse(_Payload):
    path: str
    results: list[SearchHit]
    index: IndexStatus


class SchemaParams(_Params):
    extracted: StrictBool = Field(
        default=False,
        description=(
            "Also list every value a model extracted from each note: kept (with the "
            "note's words it was read from) or rejected (with the reason)."
        ),
    )


# --- kb/examples ---------------------------------------------------------------------------


class ExamplesParams(_Params):
    pass


class ExamplesResponse(_Payload):
    """Examples made from the open index's own titles, paths and metadata (never from a
    sample): what a welcome offers to try. Empty lists where the index has nothing to
    show (no files, no tags)."""

    searches: list[str] = Field(default_factory=list, description="Queries to search for.")
    questions: list[str] = Field(default_factory=list, description="Questions to ask.")
    filters: list[str] = Field(
        default_factory=list, description="Filter terms files of this index have: tag:…"
    )


class SchemaValue(_Payload):
    value: str
    count: int


class FieldExtraction(_Payload):
    """How many values of one field one model gave: kept (the note says them) and
    rejected (not stored)."""

    model: str
    kept: int
    rejected: int


class SchemaField(_Payload):
    name: str
    types: list[str]
    files: int
    top: list[SchemaValue] = Field(default_factory=list)
    extracted: int = 0  # of `files`, how many have a value a model extracted
    models: list[FieldExtraction] = Field(default_factory=list)


class ExtractedClaim(_Payload):
    """One value a model gave for a note: kept, with the span of the note's words it was
    read from, or rejected, with the reason and the words the model gave."""

    field: str
    value: str
    kept: bool
    # For a rejected value: whether it was of the field's type (rejected for its
    # evidence) — a value that is not even that says nothing about the note.
    valid: bool = True
    reason: str | None = None
    evidence: str  # kept: the note's words; rejected: what the model quoted
    range: Range | None = None  # kept: where the words are


class NoteExtraction(_Payload):
    path: str
    model: str
    values: list[ExtractedClaim]


class SchemaResponse(_Payload):
    files: int
    fields: list[SchemaField]
    # With `extracted`: every note's extracted values, kept and rejected.
    notes: list[NoteExtraction] | None = None


# --- MCP-only shapes (`kb mcp`: read_file, open_result, list_files) -------------------------
# The MCP tools without an LSP method of their own return these as `structuredContent`.


class FileLines(OpenResultResponse):
    """A page of one file's lines, numbered from 1: what `read_file` and `open_result`
    return. `range` (0-based, as in `kb/openResult`) covers the lines shown."""

    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive (< start_line: empty file)
    total_lines: int
    text: str  # the lines shown, without their numbers
    # Where to go on reading, or None when the page reaches the end of the file.
    next_start_line: int | None = None
    n: int | None = None  # the result number, for `open_result`


class FileEntry(_Payload):
    path: str
    uri: str
    title: str
    size: int
    modified: str  # ISO 8601 (UTC) modification time of the indexed version
    sha256: str
    chunks: int


class FileListResponse(_Payload):
    files: list[FileEntry]
    skipped: list[SkippedFile] = Field(default_factory=list)


# --- kb/status and kb/reindex -------------------------------------------------------------------


class StatusParams(_Params):
    probe: StrictBool = Field(
        default=False,
        description=(
            "Ask the model server again now (Retry, changed model settings) rather than "
            "answer from the last check; the answer waits for it, a few seconds at most."
        ),
    )


class ReindexParams(_Params):
    full: StrictBool = False


class IndexControlParams(_Params):
    action: IndexAction


def dump(model: BaseModel) -> dict[str, Any]:
    """A payload as it goes on the wire: camelCase aliases, JSON types."""
    return model.model_dump(mode="json", by_alias=True)


IndexStatus.model_rebuild()
