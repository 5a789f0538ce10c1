"""What a note's body says about it besides its text: inline `#tags` and outgoing links.

Tags follow Obsidian's rules: `#` at the start of a line or after whitespace, then
letters, digits, `_`, `-` and `/` (nesting: `#area/payments`), with at least one
character that is not a digit (`#1984` is not a tag); never inside code (fenced or
indented blocks, `inline code`) or HTML blocks. A heading's `#` marks are not tags (they
are followed by a space), but a tag written in a heading's text is one. The attribute
lists of Pandoc, kramdown and MkDocs (`## Steps { #steps .class key=value }`, `{: #id}`)
name anchors and classes: their `#id` is not a tag.

Links: wiki links `[[Name]]`, `[[Name|text]]`, `[[Name#Heading]]`, `[[Name#^block]]`,
embeds `![[Name]]`, and Markdown links `[text](other.md)` / `[text](<a b.md>)` to
relative targets (web links, `mailto:` and pure `#anchors` are not links between notes).
Where a link points is resolved later, against the files of the workspace
(`metadata/links.py`); here it is only read.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from kb_lsp.engine.markdown.attr_lists import ATTR_LIST
from kb_lsp.engine.metadata.links import is_external, markdown_links, wiki_links

_TAG = re.compile(r"(?:(?<=\s)|^)#([\w/\-]*[^\W\d][\w/\-]*)", re.UNICODE)
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_LINKS = 2_000
MAX_TAGS = 500


@dataclass(frozen=True)
class Link:
    kind: str  # "wiki" | "embed" | "markdown"
    target: str  # as written, without `#heading` and `|text`: "Pop-out windows", "../a.md"
    text: str  # the anchor text: `[[T|text]]` → "text", `[text](a.md)` → "text", else ""
    heading: str  # `[[T#Heading]]` → "Heading"
    line: int  # 0-based line of the file


@dataclass(frozen=True)
class BodyFacts:
    tags: tuple[str, ...]  # as first written, without `#`, in order of appearance
    links: tuple[Link, ...]
    words: int


def normalise_tag(tag: str) -> str:
    """How tags compare: without `#`, lower case, no leading/trailing `/`, runs of
    whitespace as one space."""
    return " ".join(tag.strip().lstrip("#").strip("/").lower().split())


def read_body(
    lines: Sequence[str], body_start: int, code_ranges: Sequence[tuple[int, int]]
) -> BodyFacts:
    """Tags, links and the word count of the body (`lines[body_start:]`)."""
    starts = sorted(code_ranges)
    range_starts = [start for start, _ in starts]
    tags: dict[str, str] = {}
    links: list[Link] = []
    words = 0
    for number in range(body_start, len(lines)):
        i = bisect_right(range_starts, number) - 1
        if i >= 0 and starts[i][0] <= number < starts[i][1]:
            continue
        line = _INLINE_CODE.sub(" ", lines[number])
        if "{" in line:
            line = ATTR_LIST.sub(" ", line)
        # Counted one match at a time: a list of every word of a line held at once is
        # ~60 bytes a word (50 MiB for a 5 MB file without line breaks).
        words += sum(1 for _ in _WORD.finditer(line))
        if len(tags) < MAX_TAGS and "#" in line:
            for match in _TAG.finditer(line):
                tag = match.group(1).strip("/")
                if tag and normalise_tag(tag) not in tags:
                    tags[normalise_tag(tag)] = tag
        if len(links) < MAX_LINKS and "[" in line:
            links.extend(_links(line, number))
    return BodyFacts(tuple(tags.values()), tuple(links[:MAX_LINKS]), words)


def _links(line: str, number: int) -> list[Link]:
    out: list[tuple[int, Link]] = []
    wiki_spans = []
    for match in wiki_links(line):
        wiki_spans.append((match.start, match.end))
        if not match.target and not match.heading:
            continue
        kind = "embed" if match.embed else "wiki"
        heading = match.heading.strip(" ^")
        out.append((match.start, Link(kind, match.target, match.text, heading, number)))
    for match in markdown_links(line):
        if any(start <= match.start < end for start, end in wiki_spans):
            continue
        raw = match.target
        if not raw or is_external(raw):
            continue
        path, _, heading = raw.partition("#")
        path = unquote(path.split("?", 1)[0]).strip()
        if not path:
            continue
        out.append((match.start, Link("markdown", path, match.text, unquote(heading), number)))
    out.sort(key=lambda item: item[0])
    return [link for _, link in out]
