"""The agent's tools: read-only, confined to the knowledge base's files.

Every path a model gives goes through `KnowledgeBase.resolve` (which refuses absolute
paths, `..` leaving the workspace and symbolic links leading out of it) and must then be
an indexed file: a file the knowledge base excludes (`.env`, a 50 MiB log) cannot be
read either. A refused or failed call is not an exception for the loop: it comes back as
a `ToolOutput` with `error=True` and a message for the model and the user.

Document text is handed to the model as data inside `<passage>`/`<document>` tags; a
closing tag inside the text is defused so that a file cannot end its own quotation.
Line numbers shown to the model are 1-based; `Source.range` is 0-based (LSP).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kb_lsp.engine import reading
from kb_lsp.engine.agent import prompts
from kb_lsp.engine.agent.budget import truncate
from kb_lsp.engine.agent.summarize import Summarizer
from kb_lsp.engine.agent.usage import Meter
from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase, StoredChunk
from kb_lsp.engine.llm import LlmCancelled, LlmError
from kb_lsp.engine.metadata.filters import FilterError
from kb_lsp.engine.workspace.files import PathOutsideWorkspace, UnreadableFile
from kb_lsp.globs import GlobRefused
from kb_lsp.protocol import Range, SearchHit, Source

log = logging.getLogger(__name__)

READ_PAGE_LINES = reading.PAGE_LINES
READ_PAGE_CHARS = reading.PAGE_CHARS
SEARCH_SHOWN = 5  # hits of a search whose passages the model sees
# Passages of one file are scored without the file-name part of a file's score, so they
# score lower than files do; half the search threshold drops the same junk.
PASSAGE_THRESHOLD_FACTOR = 0.5
PASSAGE_CHARS = 1_200
ALL_TOOLS = [
    "search_knowledge_base",
    "search_in_document",
    "read_file",
    "summarize_document",
    "list_files",
]
FILE_TOOLS = ["search_in_document", "read_file", "summarize_document"]


class ToolError(Exception):
    """A call that cannot be carried out; the message is for the model and the user."""


@dataclass
class ToolOutput:
    text: str  # what the model is shown
    summary: str  # one line for the user (the tool_result step)
    sources: list[Source] = field(default_factory=list)  # what `text` quotes, citable
    hits: list[SearchHit] | None = None  # a numbered list that was shown
    error: bool = False


def defuse(text: str) -> str:
    """Document text as data: tags that could close or fake our quoting are neutralised."""
    for tag in ("passage", "document"):
        text = text.replace(f"</{tag}", f"<\\/{tag}").replace(f"<{tag}", f"<\\{tag}")
    return text


def source_of(info: FileInfo | SearchHit, start_line: int, end_line: int) -> Source:
    """A citable source, from 0-based inclusive lines."""
    return Source(
        n=info.n if isinstance(info, SearchHit) else None,
        uri=info.uri,
        path=info.path,
        range=Range.of_lines(start_line, end_line),
    )


class Toolbox:
    """The tools of one knowledge base. Thread-safe (it keeps no state between calls)."""

    def __init__(
        self,
        kb: KnowledgeBase,
        summarizer: Summarizer,
        *,
        result_chars: int = READ_PAGE_CHARS,
        threshold: float | None = None,
    ) -> None:
        self.kb = kb
        self.summarizer = summarizer
        self.result_chars = result_chars  # per result, from the context budget
        if threshold is None:
            threshold = kb.settings.search.threshold * PASSAGE_THRESHOLD_FACTOR
        self.threshold = threshold  # for passages of one file

    def schemas(self, names: list[str]) -> list[Any]:
        return prompts.tool_schemas(names, page_lines=READ_PAGE_LINES)

    def run(
        self,
        name: str,
        args: Mapping[str, Any],
        *,
        allowed: list[str],
        cancel: threading.Event,
        meter: Meter | None = None,
    ) -> ToolOutput:
        """Run one call. Problems come back as an error output; only cancellation raises."""
        handlers: dict[
            str, Callable[[Mapping[str, Any], threading.Event, Meter | None], ToolOutput]
        ]
        handlers = {
            "list_files": self._list_files,
            "read_file": self._read_file,
            "search_knowledge_base": self._search_knowledge_base,
            "search_in_document": self._search_in_document,
            "summarize_document": self._summarize_document,
        }
        try:
            if name not in handlers or name not in allowed:
                raise ToolError(f"There is no tool {name!r}; the tools are: {', '.join(allowed)}.")
            if not isinstance(args, Mapping):
                raise ToolError(f"{name}: the arguments must be an object.")
            return handlers[name](args, cancel, meter)
        except LlmCancelled:
            raise
        except ToolError as err:
            return ToolOutput(f"ERROR: {err}", f"Error: {err}", error=True)
        except UnreadableFile as err:
            message = f"{name}: the file cannot be read now ({err.reason})."
            return ToolOutput(f"ERROR: {message}", f"Error: {message}", error=True)
        except LlmError as err:
            return ToolOutput(f"ERROR: {err}", f"Error: {err}", error=True)
        except Exception as err:  # a tool bug must not end the conversation
            log.exception("tool %s failed", name)
            message = f"{name} failed: {err}"
            return ToolOutput(f"ERROR: {message}", f"Error: {message}", error=True)

    # --- arguments ---------------------------------------------------------------------------

    def file(self, path: Any) -> FileInfo:
        """The indexed file at a workspace path, or a `ToolError` saying why not."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError("A path is required, such as 'payments/mexico.md'.")
        try:
            return reading.indexed_file(self.kb, path)
        except PathOutsideWorkspace as err:
            raise ToolError(
                f"Refused: {err}. Only files inside the workspace's knowledge base can be read."
            ) from err
        except reading.NotIndexed as err:
            raise ToolError(
                f"{err} Use list_files or search_knowledge_base to find files."
            ) from err

    @staticmethod
    def _text(args: Mapping[str, Any], key: str) -> str:
        value = args.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ToolError(f"{key!r} is required (a non-empty string).")
        return value.strip()

    @staticmethod
    def _int(args: Mapping[str, Any], key: str) -> int | None:
        value = args.get(key)
        if value is None or value == "":
            return None
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ToolError(f"{key!r} must be a whole number, got {value!r}.") from None

    # --- the tools ---------------------------------------------------------------------------

    def _list_files(
        self, args: Mapping[str, Any], cancel: threading.Event, meter: Meter | None
    ) -> ToolOutput:
        pattern = args.get("pattern")
        glob: str | None = None
        if isinstance(pattern, str) and pattern.strip():
            glob = pattern.strip()
            if not any(c in glob for c in "*?["):
                glob = f"*{glob}*"  # a plain word filters by substring
        try:
            files = self.kb.files(glob)
        except GlobRefused as err:
            raise ToolError(f"{err}. Use a shorter pattern.") from None
        if not files:
            where = f" matching {glob!r}" if glob else ""
            return ToolOutput(f"No files{where}.", f"No files{where}")
        lines = [f"- {f.path} — {f.title}" for f in files]
        text = truncate("\n".join(lines), self.result_chars, note=f"[… {len(files)} files in all]")
        return ToolOutput(f"{len(files)} files:\n{text}", f"{len(files)} files")

    def _read_file(
        self, args: Mapping[str, Any], cancel: threading.Event, meter: Meter | None
    ) -> ToolOutput:
        info = self.file(args.get("path"))
        start = max(1, self._int(args, "start_line") or 1)
        try:
            page = reading.page_of(
                info,
                self.kb.read_text(info.path),
                start,
                self._int(args, "end_line"),
                max_lines=READ_PAGE_LINES,
                max_chars=min(READ_PAGE_CHARS, self.result_chars),
                line_overhead=len(f"{0:>5} | "),
            )
        except reading.LinesOutOfRange as err:
            raise ToolError(str(err)) from err
        if page.total_lines == 0:
            return ToolOutput(f"{info.path} is empty.", f"{info.path} is empty")
        start, end, total = page.start_line, page.end_line, page.total_lines
        body = defuse(
            "\n".join(f"{number:>5} | {line}" for number, line in enumerate(page.lines, start))
        )
        text = (
            f'<document path="{info.path}" lines="{start}-{end}" of="{total}">\n{body}\n</document>'
        )
        if end < total:
            text += (
                f"\nLines {start}-{end} of {total}. To read on, call read_file with "
                f'path "{info.path}" and start_line {end + 1}.'
            )
        return ToolOutput(
            text,
            f"Read {info.path} lines {start}–{end} of {total}",
            sources=[source_of(info, start - 1, end - 1)],
        )

    def _search_knowledge_base(
        self, args: Mapping[str, Any], cancel: threading.Event, meter: Meter | None
    ) -> ToolOutput:
        query = self._text(args, "query")
        given = args.get("filter")
        where = given.strip() if isinstance(given, str) and given.strip() else None
        try:
            hits = self.kb.search(query, limit=self.kb.settings.search.limit, filter=where)
        except FilterError as err:
            raise ToolError(f"Bad filter: {err}") from err
        if not hits:
            return ToolOutput(
                f"No file matches {query!r} well enough (results below the relevance "
                "threshold are not shown).",
                f"No results for “{query}”",
                hits=[],
            )
        per_hit = max(300, min(PASSAGE_CHARS, self.result_chars // min(len(hits), SEARCH_SHOWN)))
        blocks = [f"{len(hits)} results for {query!r}, numbered as the user sees them:"]
        sources: list[Source] = []
        for hit in hits[:SEARCH_SHOWN]:
            start, end = hit.range.start.line, max(hit.range.start.line, hit.range.end.line - 1)
            passage = self._passage(hit.path, start, end) or hit.snippet
            where = f"{hit.title}" + (f" › {hit.heading}" if hit.heading else "")
            blocks.append(
                f"[{hit.n}] {hit.path} ({hit.label}) — {where}\n"
                f'<passage path="{hit.path}" lines="{start + 1}-{end + 1}">\n'
                f"{defuse(truncate(passage, per_hit))}\n</passage>"
            )
            sources.append(source_of(hit, start, end))
        for hit in hits[SEARCH_SHOWN:]:
            blocks.append(f"[{hit.n}] {hit.path} ({hit.label}) — {hit.title}")
        listing = ", ".join(f"{h.n}. {h.path}" for h in hits)
        return ToolOutput(
            "\n".join(blocks),
            f"{len(hits)} results: {listing}",
            sources=sources,
            hits=hits,
        )

    def _search_in_document(
        self, args: Mapping[str, Any], cancel: threading.Event, meter: Meter | None
    ) -> ToolOutput:
        info = self.file(args.get("path"))
        query = self._text(args, "query")
        hits = [
            h
            for h in self.kb.search_in_file(info.path, query, limit=5)
            if h.score >= self.threshold
        ]
        if not hits:
            return ToolOutput(
                f"No passage of {info.path} matches {query!r} well enough. "
                f'Try other words, or read_file with path "{info.path}".',
                f"No passage of {info.path} matches “{query}”",
            )
        per_hit = max(300, min(PASSAGE_CHARS * 2, self.result_chars // len(hits)))
        blocks = [f"{len(hits)} passages of {info.path} for {query!r}, best first:"]
        sources: list[Source] = []
        for hit in hits:
            start, end = hit.range.start.line, max(hit.range.start.line, hit.range.end.line - 1)
            passage = self._passage(info.path, start, end) or hit.snippet
            heading = f" ({hit.heading})" if hit.heading else ""
            blocks.append(
                f'<passage path="{info.path}" lines="{start + 1}-{end + 1}"{heading and " "}'
                f"{heading.strip()}>\n{defuse(truncate(passage, per_hit))}\n</passage>"
            )
            sources.append(source_of(info, start, end))
        return ToolOutput(
            "\n".join(blocks),
            f"{len(hits)} passages of {info.path}: lines "
            + ", ".join(f"{s.range.start.line + 1}–{s.range.end.line}" for s in sources),
            sources=sources,
        )

    def _summarize_document(
        self, args: Mapping[str, Any], cancel: threading.Event, meter: Meter | None
    ) -> ToolOutput:
        info = self.file(args.get("path"))
        summary = self.summarizer.summarize(info, cancel=cancel, meter=meter)
        last = max(0, summary.line_count - 1)
        cached = " (cached)" if summary.cached else ""
        return ToolOutput(
            f'<document path="{info.path}" lines="1-{last + 1}" kind="summary">\n'
            f"{defuse(summary.text)}\n</document>",
            f"Summarized {info.path}{cached}",
            sources=[source_of(info, 0, last)],
        )

    def _passage(self, path: str, start: int, end: int) -> str:
        """The stored text of the chunks covering 0-based lines `start..end`."""
        chunks: list[StoredChunk] = [
            c for c in self.kb.chunks_of(path) if c.start_line <= end and c.end_line >= start
        ]
        return "\n".join(c.text for c in chunks[:2])
