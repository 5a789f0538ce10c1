"""Markdown → sections → chunks, with line ranges into the original file.

Decisions, so the next reader does not have to reverse-engineer them:

* Parsing is markdown-it-py's block parser (CommonMark) plus the front-matter plugin. Only
  the block structure is used: each top-level block token's `map` gives its line range.
  Inline parsing is skipped for the whole document (it is most of the cost on a 2 MiB
  file) and run only on heading text. The table extension is left off for the same
  reason: a table then parses as a paragraph, whose lines are split the same way, and
  a table line can never look like a heading underline, so no boundary changes.
* Line endings: CRLF and lone CR are normalised to LF before parsing. Both count as one
  line break, as in LSP, so line numbers stay those of the file as an editor shows it.
  A leading BOM is dropped (it is not part of the first line's text).
* A chunk is a run of whole lines of the original file — `text` equals
  `"\\n".join(lines[start_line : end_line + 1])` — except for a line longer than
  `chunk_size` (below). Leading and trailing blank lines are trimmed; a chunk that would
  be blank is not emitted. No chunk is longer than `chunk_size` characters.
* Sections: every top-level heading (ATX or setext) starts a section that runs to the
  next top-level heading; text before the first heading is a section with an empty
  heading path. Headings inside code fences, lists or block quotes do not start sections.
  A section holding nothing but its heading is joined to the section after it when that
  one is a subsection (so "# Payments" directly followed by "## Mexico" gives one chunk
  starting at "# Payments" with heading path ("Payments", "Mexico")).
* Splitting a section longer than `chunk_size` characters: the chunk ends at the last
  break point that keeps it within `chunk_size`, preferring, in order, the start of a
  top-level block (paragraph, list, fence, table...), the start of a nested block (a
  list item, a paragraph in a quote), then any line.
* A single line longer than `chunk_size` (minified HTML, a pasted log, a file with no
  line breaks) is cut into pieces of at most `chunk_size` characters at word boundaries
  (anywhere, in a word longer than half a chunk), each overlapping the previous one by
  up to `min(chunk_overlap, chunk_size / 2)` characters; every piece has that line as
  its start and end line. Without this a 5 MB one-line file was one 5-million-character
  chunk: its vector saw the first 256 tokens only, and every search that touched it
  re-read all of it.
* Overlap: the next chunk of the same section starts with the last whole lines of the
  previous one, at most `chunk_overlap` characters, and never so many that the next
  chunk could not fit its first new piece within `chunk_size`. Chunks of different
  sections never overlap.
* Front matter (YAML between `---` lines at the very top) is kept out of chunks; its
  `title:` (a plain or quoted scalar, read with a regular expression rather than a YAML
  parser) is the document title. Otherwise the title is the first top-level H1's text,
  else the file name's stem with `-`/`_` turned into spaces.
* Heading text is the heading's inline content with markup stripped
  (`## The *fast* path` → "The fast path"; images give their alt text, HTML is dropped),
  cut to `MAX_HEADING` characters (a heading is repeated in every chunk of its section).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from markdown_it import MarkdownIt
from mdit_py_plugins.front_matter import front_matter_plugin

from kb_lsp.engine.markdown.attr_lists import ATTR_LIST
from kb_lsp.engine.markdown.chunker import Chunker, capped, trim_blank
from kb_lsp.engine.markdown.rendered import rendered_text


@dataclass(frozen=True)
class Chunk:
    index: int  # 0.. within the file
    text: str  # the chunk's Markdown source: whole original lines joined with "\n"
    heading_path: tuple[str, ...]  # e.g. ("Mexico payments", "Monthly wire run")
    start_line: int  # 0-based, inclusive, line of the original file
    end_line: int  # 0-based, inclusive


@dataclass(frozen=True)
class ParsedDocument:
    title: str
    chunks: list[Chunk]
    # What the metadata extractor (`kb_lsp.engine.metadata`) reads besides the chunks: the
    # file's lines (line breaks normalised), its front matter's YAML and the line that
    # YAML starts on, the first body line, and the [start, end) line ranges of code and
    # HTML blocks (no tags or links in there).
    lines: tuple[str, ...] = ()
    front_matter: str | None = None
    front_matter_line: int = 0
    body_start: int = 0
    code_ranges: tuple[tuple[int, int], ...] = ()


@dataclass
class _Section:
    start: int  # first line, inclusive (the heading's line)
    end: int  # last line, exclusive
    level: int  # heading level, 0 for the text before the first heading
    path: tuple[str, ...]
    body_start: int  # first line after the heading


_block_parser = MarkdownIt("commonmark").disable("inline").use(front_matter_plugin)

_TITLE_RE = re.compile(r"^title\s*:\s*(.*?)\s*$", re.MULTILINE)
# Heading and title text beyond this is cut (at a word boundary, with "…").
MAX_HEADING = 200
_LINE_BREAKS_RE = re.compile(r"\r\n?")


def parse_markdown(
    text: str, *, file_name: str, chunk_size: int = 800, chunk_overlap: int = 200
) -> ParsedDocument:
    """Parse `text` (the file's content) into a title and heading-aware chunks."""
    text = _LINE_BREAKS_RE.sub("\n", text.removeprefix("\ufeff"))
    lines = text.split("\n")
    tokens = _block_parser.parse(text) if text.strip() else []

    front_title, body_start = _front_matter(tokens)
    sections, first_h1 = _sections(tokens, body_start, len(lines))
    title = front_title or first_h1 or _readable_stem(file_name)

    chunker = Chunker(lines, tokens, max(1, chunk_size), max(0, chunk_overlap))
    chunks: list[Chunk] = []
    size, overlap = max(1, chunk_size), max(0, chunk_overlap)
    for section in sections:
        for start, end in chunker.split(section.start, section.end):
            first, last = trim_blank(lines, start, end)
            if first > last:
                continue
            if chunker.chars(first, last + 1) <= size:
                pieces = [(first, last, "\n".join(lines[first : last + 1]))]
            else:
                pieces = capped(lines, first, last, size, overlap)
            for piece_first, piece_last, piece_text in pieces:
                chunks.append(
                    Chunk(
                        index=len(chunks),
                        text=piece_text,
                        heading_path=section.path,
                        start_line=piece_first,
                        end_line=piece_last,
                    )
                )
    code = tuple(
        (int(t.map[0]), int(t.map[1]))
        for t in tokens
        if t.map and t.type in ("fence", "code_block", "html_block")
    )
    front = tokens[0] if tokens and tokens[0].type == "front_matter" else None
    return ParsedDocument(
        title=_cut(title, MAX_HEADING),
        chunks=chunks,
        lines=tuple(lines),
        front_matter=front.content if front is not None else None,
        front_matter_line=1 if front is not None else 0,
        body_start=body_start,
        code_ranges=code,
    )


def _cut(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at a word boundary, marked with "…"."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip() + "…"


def _front_matter(tokens: list[Any]) -> tuple[str | None, int]:
    """The front matter's title, and the first line after the front matter."""
    if not tokens or tokens[0].type != "front_matter" or not tokens[0].map:
        return None, 0
    token = tokens[0]
    match = _TITLE_RE.search(token.content)
    title = None
    if match:
        value = match.group(1)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        # A block scalar (`title: |`) or an empty value is not worth a YAML parser.
        if value and value not in ("|", ">", "|-", ">-"):
            title = value.strip()
    return title or None, int(token.map[1])


def _sections(tokens: list[Any], body_start: int, line_count: int) -> tuple[list[_Section], str]:
    """Split the body into heading sections; also return the first H1's text."""
    sections = [_Section(body_start, line_count, 0, (), body_start)]
    stack: list[tuple[int, str]] = []  # (level, text) of the enclosing headings
    first_h1 = ""
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or token.level != 0 or not token.map:
            continue
        level = int(token.tag[1:])
        heading = _heading_text(tokens[i + 1].content if i + 1 < len(tokens) else "")
        if level == 1 and not first_h1:
            first_h1 = heading
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        start, heading_end = int(token.map[0]), int(token.map[1])
        sections[-1].end = start
        path = tuple(text for _, text in stack if text)
        sections.append(_Section(start, line_count, level, path, heading_end))
    block_starts = sorted(
        int(t.map[0]) for t in tokens if t.map and t.level == 0 and t.nesting in (0, 1)
    )
    return _join_empty_sections(sections, block_starts), first_h1


def _join_empty_sections(sections: list[_Section], block_starts: list[int]) -> list[_Section]:
    """Fold a section that holds only its heading into the subsection that follows it."""
    out: list[_Section] = []
    pending_start: int | None = None
    for section, following in zip(sections, [*sections[1:], None], strict=True):
        i = bisect_left(block_starts, section.body_start)
        has_body = i < len(block_starts) and block_starts[i] < section.end
        start = section.start if pending_start is None else pending_start
        if section.level and not has_body and following and following.level > section.level:
            pending_start = start
            continue
        pending_start = None
        out.append(_Section(start, section.end, section.level, section.path, section.body_start))
    return out


# A heading's attribute list is not part of its words (`attr_lists.py`).
_TRAILING_ATTR_LIST = re.compile(r"\s*" + ATTR_LIST.pattern + r"\s*$")


def _heading_text(inline_source: str) -> str:
    # Markup cannot make a heading's text longer than its source: parse only what is kept.
    source = _TRAILING_ATTR_LIST.sub("", inline_source[: MAX_HEADING * 8])
    return _cut(rendered_text(source), MAX_HEADING)


def _readable_stem(file_name: str) -> str:
    stem = PurePath(file_name).stem or file_name
    readable = " ".join(re.sub(r"[-_]+", " ", stem).split())
    if not readable:
        return file_name
    return readable[0].upper() + readable[1:]
