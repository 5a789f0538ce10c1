"""What one `kb/ask` found on its way to an answer: sources, tool notes and errors, and
how they are said when the request ends before the model answers ("What I found")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb_lsp.engine.agent import citations, grounded
from kb_lsp.engine.agent.tools import ToolOutput
from kb_lsp.protocol import Source

MAX_SOURCES = 8
# A search's tool_result summary ("10 results: a.md, b.md …", "No results for …").
_SEARCH_NOTE = re.compile(r"\d+ results: |No results for ")


def source_lines(source: Source) -> str:
    start, end = (
        source.range.start.line + 1,
        max(source.range.start.line + 1, source.range.end.line),
    )
    return f"line {start}" if start == end else f"lines {start}–{end}"


def sources_line(sources: list[Source]) -> str:
    return "Sources: " + "; ".join(f"`{s.path}` {source_lines(s)}" for s in sources)


@dataclass
class Found:
    sources: list[Source] = field(default_factory=list)
    passages: list[grounded.Passage] = field(default_factory=list)  # grounded mode
    notes: list[str] = field(default_factory=list)  # tool_result summaries, in order
    errors: list[str] = field(default_factory=list)

    def add(self, output: ToolOutput) -> None:
        self.notes.append(output.summary)
        if output.error:
            self.errors.append(output.summary)
        for source in output.sources:
            if not any(s.path == source.path and s.range == source.range for s in self.sources):
                self.sources.append(source)

    def report(self) -> str:
        """What was found, once: how many searches (not each one's list of files, which
        repeat), the other steps, then each file found with its lines."""
        searches = [n for n in self.notes if _SEARCH_NOTE.match(n)]
        others = dict.fromkeys(
            n for n in self.notes if not n.startswith("Error") and not _SEARCH_NOTE.match(n)
        )
        lines = [f"- {len(searches)} search{'es' if len(searches) > 1 else ''}"] if searches else []
        lines += [f"- {note}" for note in others]
        if self.sources:
            merged = citations.merge_sources(
                [s.model_copy(update={"n": None}) for s in self.sources]
            )
            by_file: dict[str, list[str]] = {}
            for source in merged:
                by_file.setdefault(source.path, []).append(source_lines(source))
            shown = list(by_file.items())[:MAX_SOURCES]
            lines.append(
                "- Found in: " + "; ".join(f"`{path}` {', '.join(spans)}" for path, spans in shown)
            )
        return "\n".join(lines) if lines else "- nothing yet"
