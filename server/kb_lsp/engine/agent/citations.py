"""The citations of a grounded answer, checked against the passages the model was given.

A small model cites `[4]` of three passages, or a path it was never shown. Such a
citation points nowhere the user can check, so it is taken out of the answer and named
in `AskResponse.dropped`, as the model wrote it (the client says it under the answer).
The sources of a grounded answer are the passages themselves, numbered as the model saw
them, whatever it cites: they are what it answered from.

The tool loop's answer has no numbered passages: its sources are the files it names by
path, with lines where it gives them (`by_path`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kb_lsp.engine.agent.tools import source_of
from kb_lsp.engine.knowledge import FileInfo
from kb_lsp.protocol import Range, Source

# "[1]", "[1, 3]", "[1][2]", "[Source 2]", "[#2]"
NUMBER_CITATION = re.compile(
    r"\[\s*(?:sources?\s*|#)?(\d{1,3}(?:\s*[,;]\s*(?:#)?\d{1,3})*)\s*\]", re.I
)
# "[payments/mexico.md:9-11]", "[notes.md]"
PATH_CITATION = re.compile(
    r"\[\s*`?(?P<path>[\w./ -]+?\.(?:md|markdown))`?(?:\s*[:#]\s*L?\d+(?:\s*[-–]\s*L?\d+)?)?\s*\]",
    re.I,
)
# "notes/a.md:3-5", "`notes/a.md` lines 3–5", "notes/a.md#L3"
BY_PATH = re.compile(
    r"(?P<path>[\w./-]+\.(?:md|markdown))`?"
    r"(?:\s*[:#]\s*L?(?P<a>\d+)(?:\s*[-–]\s*L?(?P<b>\d+))?"
    r"|,?\s+lines?\s+(?P<c>\d+)(?:\s*[-–]\s*(?P<d>\d+))?)?",
    re.I,
)


class Shown(Protocol):
    """A passage as the model saw it (`grounded.Passage`)."""

    @property
    def n(self) -> int: ...

    @property
    def path(self) -> str: ...


@dataclass
class Checked:
    answer: str  # the answer without the dropped citations
    cited: list[int] = field(default_factory=list)  # passage numbers, first citation first
    dropped: list[str] = field(default_factory=list)  # as the model wrote them


def check(answer: str, passages: Sequence[Shown]) -> Checked:
    """Which passages `answer` cites (by number or by path), and the citations that name
    none of them, taken out of the answer."""
    count = len(passages)
    out = Checked(answer)
    dropped: list[str] = []

    def numbers(match: re.Match[str]) -> str:
        tokens = [int(t) for t in re.findall(r"\d+", match.group(1))]
        kept = [n for n in tokens if 1 <= n <= count]
        for n in kept:
            if n not in out.cited:
                out.cited.append(n)
        if len(kept) == len(tokens):
            return match.group(0)
        dropped.append(match.group(0))
        return "[" + ", ".join(str(n) for n in kept) + "]" if kept else ""

    def paths(match: re.Match[str]) -> str:
        path = match.group("path").strip().lstrip("./")
        shown = [p.n for p in passages if p.path == path]
        if not shown:
            dropped.append(match.group(0))
            return ""
        for n in shown:
            if n not in out.cited:
                out.cited.append(n)
        return match.group(0)

    text = NUMBER_CITATION.sub(numbers, answer)
    text = PATH_CITATION.sub(paths, text)
    if dropped:
        # A citation taken out leaves " ." or a double space behind.
        text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)
        text = re.sub(r"[ \t]{2,}", " ", text)
    out.answer = text.strip()
    out.dropped = list(dict.fromkeys(dropped))
    return out


def merge_sources(sources: Sequence[Source]) -> list[Source]:
    """The sources with duplicates merged: two of one file under the same number (or both
    unnumbered) whose lines overlap or touch become one covering both. Distinct numbers
    stay apart, so each `[n]` still opens its own lines (the client lists each file once)."""
    out: list[Source] = []
    for source in sources:
        for i, kept in enumerate(out):
            if kept.path != source.path or kept.n != source.n:
                continue
            a0, a1 = kept.range.start.line, max(kept.range.start.line, kept.range.end.line - 1)
            b0, b1 = (
                source.range.start.line,
                max(source.range.start.line, source.range.end.line - 1),
            )
            if b0 <= a1 + 1 and a0 <= b1 + 1:
                out[i] = kept.model_copy(update={"range": Range.of_lines(min(a0, b0), max(a1, b1))})
                break
        else:
            out.append(source)
    return out


def by_path(
    answer: str, found: Sequence[Source], file_info: Callable[[str], FileInfo | None]
) -> list[Source]:
    """The sources `answer` cites by path (with lines when it gives them): those `found`
    has where they match, else the file as `file_info` knows it; paths it knows not
    are no sources."""
    out: list[Source] = []
    for match in BY_PATH.finditer(answer):
        path = match.group("path").strip("`[]()").lstrip("./")
        known = [s for s in found if s.path == path]
        info = None if known else file_info(path)
        if not known and info is None:
            continue
        first = match.group("a") or match.group("c")
        last = match.group("b") or match.group("d") or first
        if first is not None and last is not None:
            start, end = int(first) - 1, max(int(first), int(last)) - 1
            base = next(
                (s for s in known if s.range.start.line <= end and s.range.end.line - 1 >= start),
                known[0] if known else None,
            )
            uri = base.uri if base else info.uri if info else ""
            n = base.n if base else None
            lines = Range.of_lines(max(0, start), max(0, end))
            source = Source(n=n, uri=uri, path=path, range=lines)
        elif known:
            source = known[0]
        else:
            assert info is not None
            source = source_of(info, 0, 0)
        if not any(s.path == source.path and s.range == source.range for s in out):
            out.append(source)
    return out
