"""The short texts a calling model reads, one per tool result.

Each tool also returns the same data as `structuredContent` (the pydantic models of
`protocol.py`); the text is for the model's context, so it says what the data means and
what to call next, in as few tokens as will do. Lines shown to the model are numbered
from 1, as `read_file` takes them.
"""

from __future__ import annotations

from kb_lsp.listing import format_hits
from kb_lsp.protocol import (
    AskResponse,
    FileLines,
    FileListResponse,
    IndexStatus,
    SchemaResponse,
    SearchResponse,
    SummarizeResponse,
)

# A model reading a list of hundreds of files learns little more from the rest.
MAX_FILES_SHOWN = 300


def index_note(status: IndexStatus) -> str:
    """One line when the index may not cover everything yet, else ""."""
    if status.state == "error":
        return f"The index has a problem: {status.message or 'see status'}."
    if status.state == "indexing":
        pending = f" ({status.pending} files to go)" if status.pending else ""
        return f"The index is still being built{pending}: results may be incomplete."
    return ""


def search_text(response: SearchResponse) -> str:
    hits = response.results
    if not hits:
        lines = [
            f"No file matches {response.query!r} well enough (files below the relevance "
            "threshold are not listed). Try other words or mode 'keyword'."
        ]
    else:
        lines = [format_hits(hits), ""]
        lines.append(
            "Read a result with open_result(n), summarize it with summarize_file(n=…), "
            "or read any part of a file with read_file(path, start_line)."
        )
    note = index_note(response.index)
    if note:
        lines.append(note)
    return "\n".join(lines)


def lines_text(page: FileLines) -> str:
    """The numbered lines of a page, under a header saying which lines of what."""
    if page.total_lines == 0:
        return f"{page.path} is empty."
    width = len(str(page.end_line))
    body = [
        f"{number:>{width}} | {line}"
        for number, line in enumerate(page.text.split("\n"), start=page.start_line)
    ]
    head = f"{page.path} lines {page.start_line}-{page.end_line} of {page.total_lines}"
    if page.n is not None:
        head = f"Result {page.n}: {head}"
    out = [head + ":", *body]
    if page.next_start_line is not None:
        out.append(f"(more: read_file(path={page.path!r}, start_line={page.next_start_line}))")
    return "\n".join(out)


def files_text(listing: FileListResponse, *, what: str) -> str:
    files = listing.files
    if not files:
        lines = [f"No indexed files{what}."]
    else:
        lines = [f"{len(files)} indexed files{what} (path, bytes, modified, sha256, chunks):"]
        for entry in files[:MAX_FILES_SHOWN]:
            lines.append(
                f"{entry.path}  {entry.size}  {entry.modified}  {entry.sha256}  {entry.chunks}"
            )
        if len(files) > MAX_FILES_SHOWN:
            lines.append(
                f"… and {len(files) - MAX_FILES_SHOWN} more (all are in the structured result; "
                "narrow with glob or changed_since)."
            )
    if listing.skipped:
        lines.append(f"Skipped, not indexed ({len(listing.skipped)}):")
        lines += [f"{item.path}: {item.reason}" for item in listing.skipped[:MAX_FILES_SHOWN]]
    return "\n".join(lines)


def summary_text(result: SummarizeResponse, model: str) -> str:
    if result.extractive:
        kind = (
            "extractive summary (no model reachable: the title and the first sentence of "
            "each section)"
        )
    else:
        kind = f"summary by {model}" + (", from the cache" if result.cached else "")
    return f"{result.path} — {kind}:\n{result.summary}"


def _lines_of(start: int, end: int) -> str:
    return f"L{start + 1}" if end <= start + 1 else f"L{start + 1}-L{end}"


# The one verdict on an answer (`AskResponse.verdict`).
VERDICTS = {
    "supported": "Supported by the notes: the grounding check found it in what it cites.",
    "unsupported": "Not supported by the notes: a claim to check against the passages.",
    "no_model": "No model answered: these are the best passages.",
}


def ask_text(response: AskResponse) -> str:
    out = [response.answer.strip()]
    listed = ("Sources:", "Passages the model was given:")
    if response.sources and not any(heading in response.answer for heading in listed):
        cited = ", ".join(
            f"{s.path}:{_lines_of(s.range.start.line, s.range.end.line)}" for s in response.sources
        )
        out.append(f"Sources: {cited}")
    notes = {
        "clarify": "The agent needs a choice: answer with the number or the file.",
        "step_limit": "Stopped at the step limit: the answer may be partial.",
        "length": "The model was cut off: the answer may be partial.",
        "degenerate": "The model's text degenerated and was stopped early.",
        "empty": "The model gave no answer.",
        "error": "No model answered: these are the best passages (mode fallback).",
        "cancelled": "Cancelled.",
    }
    if response.stop in notes:
        out.append(f"[{response.stop}] {notes[response.stop]}")
    verdict = VERDICTS.get(response.verdict or "")
    if verdict:
        # One verdict, the mode as its small print.
        how = f"{response.mode} mode" + (
            f": {response.mode_reason}" if response.mode_reason else ""
        )
        out.append(f"[{response.verdict}] {verdict} ({how}).")
    return "\n\n".join(part for part in out if part)


def status_text(status: IndexStatus) -> str:
    role = (
        "read-only (another kb-lsp process, e.g. an editor window, writes the index)"
        if status.read_only
        else "writer (this server keeps the index up to date)"
    )
    reachable = {True: "reachable", False: "not reachable", None: "not checked yet"}
    lines = [
        f"state: {status.state}" + (f" — {status.message}" if status.message else ""),
        f"indexed: {status.files} files, {status.chunks} chunks"
        + (f", {status.pending} pending" if status.pending else ""),
        f"index: {role}",
        f"embedder: {status.embedder}",
        f"model: {status.llm.model} at {status.llm.host} ({reachable[status.llm.reachable]})",
        f"workspace: {', '.join(status.roots) or '(none)'}",
    ]
    if status.skipped:
        lines.append(f"skipped: {len(status.skipped)} files (see list_files)")
    return "\n".join(lines)


def schema_text(schema: SchemaResponse) -> str:
    if not schema.fields:
        return f"No metadata fields in the {schema.files} indexed files."
    lines = [f"Metadata fields of {schema.files} files (field: types, files; top values):"]
    for field in schema.fields:
        top = ", ".join(f"{value.value} ({value.count})" for value in field.top)
        types = "/".join(field.types)
        # A value a model extracted is one the note's words were checked to say; what
        # it guessed beyond those is not stored, and counted here.
        models = "".join(
            f"; {m.model} extracted {m.kept} (+{m.rejected} rejected)" for m in field.models
        )
        lines.append(
            f"{field.name}: {types}, {field.files} files" + (f"; {top}" if top else "") + models
        )
    lines.append("Filter a search with e.g. filter='tag:x -status:draft modified>2026-10-01'.")
    return "\n".join(lines)
