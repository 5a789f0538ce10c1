"""A chunk's Markdown as the plain text a person reads: what a one-line snippet is cut from.

A snippet is shown on one line in a narrow panel, a quick pick and a terminal, so only
the words a reader would see in the rendered page may appear in it:

* inline markup is parsed with markdown-it-py (the parser the chunker uses): emphasis,
  code spans, links (their text), images (their alt text) and inline HTML tags
  (`<abbr title="…">ORM</abbr>` → "ORM") become their text; entities are decoded;
* block markup is dropped line by line: headings (the hit shows its heading apart),
  list and quote markers, table rules (a row reads `a · b`), code fences (their code
  lines stay, one block each), HTML-only lines, and the directives of the Markdown
  dialects docs are written in — pymdown blocks (`/// tip | Title`), admonitions
  (`!!! note "Title"`), mkdocstrings (`::: fastapi.WebSocket` and its indented
  `options:`), MyST colon fences and options (`:::{note}`, `:class: tip`) and roles
  (`` {ref}`target` `` → "target"). A directive's title or target is kept as text;
* prose lines of one paragraph are joined, so a hard-wrapped paragraph reads as one
  block and a snippet can start at a sentence rather than at a wrapped line.

The blocks are made once, when a chunk is indexed: the store keeps them beside its text
(`blocks_text`; `snippet_blocks.py` holds the `Block` and its stored form), so a search's
snippets neither render nor load markdown-it. `snippet_blocks.BLOCKS_VERSION` names these
rules: bump it with any change to what `readable_blocks` returns, and a store whose
blocks were made by other rules makes them again from the chunks' text
(`store/chunks.py`); a chunk without them (a store written before, until its next sync)
is rendered at query time.
"""

from __future__ import annotations

import re
from typing import Any

from kb_lsp.engine.metadata.links import wiki_display
from kb_lsp.engine.snippet_blocks import Block, encode_blocks

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*(\{[\w-]+\})?")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_RULE = re.compile(r"^\s{0,3}([-=_*]\s*){3,}$")
_PYMDOWN_BLOCK = re.compile(r"^\s{0,3}/{3,}\s*(?:[\w-]+)?\s*(?:\|\s*(?P<title>.*?))?\s*$")
_ADMONITION = re.compile(r'^\s{0,3}(?:!!!|\?\?\?\+?)\s+[\w-]+(?:\s+"(?P<title>[^"]*)")?\s*$')
_MKDOCSTRINGS = re.compile(r"^:::\s+(?P<target>[\w.:-]+)\s*$")
_COLON_FENCE = re.compile(r"^\s{0,3}:{3,}\s*(?:\{[\w-]+\})?\s*(?P<title>.*?)\s*$")
_MYST_OPTION = re.compile(r"^\s*:[\w-]+:(\s|$)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")
_MYST_ROLE = re.compile(r"\{[\w:-]+\}(`[^`]*`)")
_CODE_INCLUDE = re.compile(r"\{\*.*?\*\}")  # FastAPI docs' `{* ../src/app.py hl[3] *}`
_ATTR_LIST = re.compile(r"\s*\{\s*[#.:][^}]*\}\s*$")


def blocks_text(text: str) -> str:
    """What the store keeps of a chunk's `text` for its snippets: its readable blocks."""
    return encode_blocks(readable_blocks(text))


def inline_text(source: str) -> str:
    """One line of Markdown as the text it renders to (see the module docstring)."""
    # Each pattern needs a `{` or a `[[`, which most lines do not have.
    if "{" in source:
        source = _MYST_ROLE.sub(r"\1", source)
        source = _CODE_INCLUDE.sub("", source)
    if "[[" in source:
        source = wiki_display(source)
    if "{" in source:
        source = _ATTR_LIST.sub("", source)
    plain = _plain_inline(source)
    if plain is not None:
        return plain
    # Loaded on the first line that needs the parser: a one-shot keyword search whose
    # snippets are plain text never loads markdown-it.
    from kb_lsp.engine.markdown.rendered import rendered_text

    return rendered_text(source)


# What starts an inline rule of markdown-it's CommonMark preset: code spans (`` ` ``),
# autolinks and HTML (`<`), emphasis (`*`, `_`), entities (`&`), escapes (`\`), links and
# images (`[`). Line breaks, `\r` and NUL are rewritten by its normalisation first.
_INLINE_START = re.compile(r"[`<*_&\\\[]")
_LINE_BREAK = re.compile(r"[\n\r\0]")
_BACKTICKS = re.compile(r"`+")
# An autolink whose text is its address as written: http(s), printable ASCII without
# percent escapes (decoded in the text), `@`, `[` or `]` (a user part or an IPv6 host
# that the URL parser rewrites), and no punycode host (shown in Unicode).
_PLAIN_AUTOLINK = re.compile(r"<(https?://[!-$&-;=?A-Z\\^-~]*)>")


def _plain_inline(source: str) -> str | None:
    """`rendered_text(source)` for a line whose only markup is code spans and plain web
    autolinks, without the parser (most lines of a snippet; parsing them was a third of
    a search); None for any other markup. It follows markdown-it's rules for those: a
    run of n backticks opens a code span closed by the next run of exactly n, else it is
    literal text; the span's content loses one space on each side when it has one on
    both and is not all spaces; nothing inside a span is markup; `<https://…>` shows its
    address. `tests/unit/test_snippets.py` checks it against the parser on the
    repository's Markdown and on random lines."""
    if _LINE_BREAK.search(source):
        return None  # line ends are normalised before a span's spaces are trimmed
    parts: list[str] = []
    pos = 0
    while True:
        found = _INLINE_START.search(source, pos)
        if found is None:
            break
        at = found.start()
        parts.append(source[pos:at])
        if source[at] == "<":
            link = _PLAIN_AUTOLINK.match(source, at)
            if link is None or "xn--" in link.group(1).lower():
                return None
            parts.append(link.group(1))
            pos = link.end()
            continue
        if source[at] != "`":
            return None
        opener = source[at : len(source) - len(source[at:].lstrip("`"))]
        after = at + len(opener)
        closer = next((m for m in _BACKTICKS.finditer(source, after) if m.group() == opener), None)
        if closer is None:
            parts.append(opener)  # unmatched: literal backticks
            pos = after
            continue
        content = source[after : closer.start()]
        if content.startswith(" ") and content.endswith(" ") and content.strip(" "):
            content = content[1:-1]
        parts.append(content)
        pos = closer.end()
    parts.append(source[pos:])
    return " ".join("".join(parts).split())


def readable_blocks(text: str) -> list[Block]:
    """The chunk's text as readable blocks, in order (see the module docstring)."""
    blocks: list[Block] = []
    paragraph: list[str] = []
    fence: str | None = None  # the open fence's marker
    fence_is_prose = False
    in_options = False  # the indented YAML under a mkdocstrings `::: target`

    def flush() -> None:
        if paragraph:
            line = inline_text(" ".join(paragraph))
            if any(char.isalnum() for char in line):
                blocks.append(Block(line))
            paragraph.clear()

    def add(line: str, *, code: bool = False) -> None:
        flush()
        line = line.strip() if code else inline_text(line)
        if any(char.isalnum() for char in line):
            blocks.append(Block(line, code=code))

    lines = text.splitlines()
    fences = [m for m in (_FENCE.match(line) for line in lines) if m]
    if len(fences) % 2 == 1 and fences[0].group(0).strip() == fences[0].group(1):
        # An odd number of fence lines, the first one bare: the chunk starts inside a
        # code block (it was split there), so that first fence closes it.
        fence = fences[0].group(1)
    for raw in lines:
        line = raw.rstrip()
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
                flush()
            elif fence_is_prose:
                _prose_line(line, paragraph, flush, add)
            else:
                add(line, code=True)
            continue
        if in_options:
            if not line.strip() or line[:1].isspace():
                continue
            in_options = False
        opened = _FENCE.match(line)
        if opened:
            flush()
            fence = opened.group(1)
            fence_is_prose = opened.group(2) is not None  # ```{note} is a MyST directive
            continue
        target = _MKDOCSTRINGS.match(line)
        if target:
            add(target.group("target"))
            in_options = True
            continue
        titled = _PYMDOWN_BLOCK.match(line) or _ADMONITION.match(line) or _COLON_FENCE.match(line)
        if titled:
            flush()
            if titled.group("title"):
                add(titled.group("title"))
            continue
        _prose_line(line, paragraph, flush, add)
    flush()
    return blocks


def _prose_line(line: str, paragraph: list[str], flush: Any, add: Any) -> None:
    stripped = line.strip()
    if not stripped or _HEADING.match(line) or _RULE.match(line) or _MYST_OPTION.match(line):
        flush()
        return
    if _TABLE_RULE.match(line):
        flush()
        return
    if stripped.startswith("|"):
        cells = [cell.strip() for cell in stripped.strip("|").split("|")]
        add(" · ".join(cell for cell in cells if cell))
        return
    item = _LIST_ITEM.match(line)
    if item:
        flush()
        paragraph.append(line[item.end() :])
        return
    paragraph.append(_QUOTE.sub("", line))
