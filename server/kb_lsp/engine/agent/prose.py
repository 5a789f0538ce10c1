"""A passage read as the evidence lead reads it: its sentences, each with what it needs to
be understood on its own (issue 35, point 3).

The text is cut into blocks — paragraphs, list items, code (a fenced block, or a line
that is one code span, as tldr-pages writes commands) — with front matter, headings,
tables, HTML and directives left out. A sentence becomes a `Piece`, kept with:

* the command it introduces: "Lis[t] the contents of a tar [f]ile:" followed by
  `` `tar tvf …` `` is one piece, "List the contents of a tar file: `tar tvf …`" (the
  answer to a how-to question is the command, not the sentence before it);
* the list it introduces: "Payments above the limit need:" followed by items is read with
  its first item;
* its list's introduction: an item under "You can set the following fields:" is read
  with that introduction in front of it;
* the sentence before it, when it opens by pointing back ("It is used…", "This means…").

Each addition is made only while the piece stays short enough to quote (`max_chars`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from kb_lsp.engine.snippets import inline_text

# Markdown that starts a line but is no part of the sentence (list item, block quote).
MARKER = re.compile(r"^\s*(?:[-*+>]\s+|\d{1,3}[.)]\s+)+(?:\[[ xX]\]\s+)?")
_ITEM = re.compile(r"^\s*(?:[-*+]\s+|\d{1,3}[.)]\s+)")
# Lines that are structure, not prose: headings, tables, HTML, directives (pymdown,
# admonitions, mkdocstrings, MyST), FastAPI's code includes, link definitions.
_STRUCTURE = re.compile(
    r"^\s*(?:#|\||<|///|!!!|\?\?\?|:::|\{\*|\[\^?[^\]]+\]:\s)|^\s{0,3}(?:[-=_*]\s*){3,}$"
)
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_CODE_LINE = re.compile(r"^\s*`([^`]+)`\s*$")  # a line that is one code span (tldr)
# A sentence ends at . ! ? before a capital or a digit (after opening marks or
# emphasis): "S.A. de C.V." is not three;
# "e.g. Flask" and "i.e. X" do not end one either.
_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)\s+(?=[\"“'(\[*_`]{0,3}[A-Z0-9À-Þ])"
)
# A sentence that points back at the one before it.
_POINTING = re.compile(r"^(?:it|this|that|these|those|they|such|so)\b", re.I)
# tldr's mnemonic brackets: "Lis[t] the contents of a tar [f]ile".
_MNEMONIC = re.compile(r"\[([A-Za-z])\]")
MAX_COMMAND_LINES = 3
MAX_COMMAND_CHARS = 200

BlockKind = Literal["prose", "item", "code"]


@dataclass
class Block:
    kind: BlockKind
    lines: list[tuple[int, str]]  # (line number, text): prose without its list marker


@dataclass(frozen=True)
class Piece:
    first: int  # line numbers (as given) of what the piece quotes
    last: int
    text: str  # plain text on one line: Markdown rendered, a command in a code span
    markdown: str  # the sentence as written (for what it opens with)
    position: int  # the sentence's place in its passage
    intro: bool = False  # it introduces what the passage leaves out
    command: bool = False  # it holds the command its sentence introduces


def blocks(text: str, first_line: int) -> list[Block]:
    """The blocks of `text`, whose first line is number `first_line`."""
    lines = text.split("\n")
    skip = 0
    if first_line == 0 and lines and lines[0].strip() == "---":
        skip = next((i + 1 for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
    fences = [line.strip() for line in lines[skip:] if _FENCE.match(line)]
    # An odd number of fences, the first one bare: the passage starts inside a code
    # block (its chunk was cut there), which that first fence closes.
    fenced = len(fences) % 2 == 1 and fences[0].strip("`~") == ""
    out: list[Block] = [Block("prose", [])]
    for i, line in enumerate(lines[skip:], skip):
        number = first_line + i
        if _FENCE.match(line):
            fenced = not fenced
            out.append(Block("code", []) if fenced else Block("prose", []))
        elif fenced:
            out[-1].lines.append((number, line.rstrip()))
        elif _CODE_LINE.match(line):
            out.append(Block("code", [(number, line.strip())]))
            out.append(Block("prose", []))
        elif not line.strip() or _STRUCTURE.match(line):
            out.append(Block("prose", []))
        elif MARKER.match(line):
            kind: BlockKind = "item" if _ITEM.match(line) else "prose"
            out.append(Block(kind, [(number, MARKER.sub("", line))]))
        else:
            out[-1].lines.append((number, line.strip()))
    return [block for block in out if block.lines]


def sentences(lines: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """(first line, last line, Markdown) of each sentence of a paragraph."""
    starts: list[int] = []
    joined = ""
    for _, line in lines:
        starts.append(len(joined))
        joined += line + " "

    def line_at(offset: int) -> int:
        return lines[max(i for i, s in enumerate(starts) if s <= offset)][0]

    out: list[tuple[int, int, str]] = []
    begin = 0
    for end in [m.start() for m in _SENTENCE_END.finditer(joined)] + [len(joined)]:
        piece = joined[begin:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((line_at(begin + lead), line_at(begin + len(piece.rstrip()) - 1), piece))
        begin = end
    return out


def plain(markdown: str) -> str:
    """A sentence as plain text, tldr's mnemonic brackets taken out."""
    return _MNEMONIC.sub(r"\1", inline_text(markdown)).strip()


def _command(block: Block) -> str | None:
    """A short code block as one inline code span, or None when it is not short."""
    code = [line.strip() for _, line in block.lines if line.strip()]
    text = " ; ".join(_CODE_LINE.sub(r"\1", line) for line in code)
    if not code or len(code) > MAX_COMMAND_LINES or len(text) > MAX_COMMAND_CHARS:
        return None
    return f"`{text}`"


def pieces(text: str, first_line: int, max_chars: int) -> list[Piece]:
    """Every sentence of `text` as a piece, with what it needs (see the module
    docstring) while it fits `max_chars`."""
    found = blocks(text, first_line)
    out: list[Piece] = []
    intro_of_list = ""  # the sentence introducing the list being read
    position = 0
    for index, block in enumerate(found):
        if block.kind == "code":
            continue
        after = found[index + 1] if index + 1 < len(found) else None
        said = sentences(block.lines)
        if block.kind == "prose":
            intro_of_list = ""
        previous = ""
        for number, (first, last, markdown) in enumerate(said):
            text_of = plain(markdown)
            piece = Piece(first, last, text_of, markdown, position)
            ending = number == len(said) - 1
            if ending and text_of.endswith(":") and after is not None:
                piece = _introducing(piece, after, max_chars)
                if block.kind == "prose" and after.kind == "item":
                    intro_of_list = text_of
            elif number == 0 and block.kind == "item" and intro_of_list:
                joined = f"{intro_of_list} {text_of}"
                if len(joined) <= max_chars:
                    piece = Piece(first, last, joined, markdown, position)
            elif previous and _POINTING.match(text_of):
                joined = f"{previous} {text_of}"
                if len(joined) <= max_chars:
                    piece = Piece(first, last, joined, markdown, position)
            out.append(piece)
            previous = text_of
            position += 1
    return out


def _introducing(piece: Piece, after: Block, max_chars: int) -> Piece:
    """A sentence ending with ":" read with what it introduces: a short command, the
    first item of a list; else marked an introduction (`evidence.INTRO_PENALTY`)."""
    if after.kind == "code":
        command = _command(after)
        if command is not None:
            text = f"{piece.text} {command}"
            return Piece(piece.first, after.lines[-1][0], text, piece.markdown, piece.position,
                         command=True)  # fmt: skip
    elif after.kind == "item":
        _, last, markdown = sentences(after.lines)[0]
        text = f"{piece.text} {plain(markdown)}"
        if len(text) <= max_chars:
            return Piece(piece.first, last, text, piece.markdown, piece.position)
    return Piece(piece.first, piece.last, piece.text, piece.markdown, piece.position, intro=True)
