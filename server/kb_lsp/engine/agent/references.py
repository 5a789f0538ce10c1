"""Which files a question points at, found before the model is asked.

A file reference is an explicit one:

* **Numbered**: "file 2", "result 2", "#2", "the second one", "the 2nd result", "the last
  one" — resolved against the client's last numbered list (a search, or the candidates of
  a clarification). A bare "2" counts only as the answer to a clarification.
* **A file name or path** that the knowledge base has ("policy_brief.md"); several files
  of that name get a question back, a name no file has is said not found.
* **A quoted title** ("what does “Mexico payments” say about approvals?"): a file's
  title, alias or name, whole; several get a question back, none is no reference.
* **A named document**: "the mexico payments file", "the detached panes note" — the words
  between "the"/"this"/"that" and "file"/"doc"/"document"/"note"/"page" name one file.
  Where they could be several files the question is not narrowed: every note is searched
  and the candidates are said (`NameRef.explicit` is false).
* **"this file" / "the open file"**: the file given with the question (`file`).

"my X" / "our X" is never a reference ("How do I build my program for release?", "what
happens to my payment after the cut-off?" are questions about programs and payments), and
general questions never match by name. The one exception is a bare summary request whose
object is a file's whole name: "summarize my budget brief" (`summary_target`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from kb_lsp.engine.knowledge import FileInfo
from kb_lsp.engine.search import FILE_WORDS

ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_NOUN = r"(?:one|file|result|hit|doc|document|note|match)"
_NUMBERED = [
    re.compile(r"\b(?:file|result|hit|doc|document)\s*(?:no\.?|number)?\s*#?\s*(\d{1,4})\b", re.I),
    re.compile(r"(?<![\w#])#(\d{1,4})\b"),
    re.compile(rf"\bthe\s+({'|'.join(ORDINALS)}|last)\s+{_NOUN}\b", re.I),
    re.compile(rf"\bthe\s+(\d{{1,4}})(?:st|nd|rd|th)\s+{_NOUN}\b", re.I),
]
_BARE_NUMBER = re.compile(r"^\s*(?:the\s+)?#?(\d{1,4})\s*[.!]?\s*$", re.I)
_BARE_ORDINAL = re.compile(
    rf"^\s*(?:the\s+)?({'|'.join(ORDINALS)}|last)(?:\s+{_NOUN})?\s*[.!]?\s*$", re.I
)

_FILE_NAME = re.compile(r"(?<![\w/.-])([\w./-]+\.(?:md|markdown))\b", re.I)
_WORD = re.compile(r"[a-z0-9]+")
# A title in quotes: “Mexico payments”, "Mexico payments", ‘…’ (not a word's apostrophe).
_QUOTED = re.compile(r"“([^”]{2,120})”|\"([^\"]{2,120})\"|(?<!\w)[‘']([^’']{2,120})[’'](?!\w)")
THIS_FILE = re.compile(
    r"\b(?:this|the\s+(?:open|current|selected))\s+(?:file|doc|document|note|page)\b", re.I
)
_DOC_NOUN = re.compile(
    r"\b(?:the|this|that)\s+([a-z0-9][\w'-]*(?:\s+[a-z0-9][\w'-]*){0,2})\s+"
    r"(?:file|doc|document|note|page)\b",
    re.I,
)
# Words that end a name phrase ("my brief *on* payments") or say nothing about a file.
_STOP = FILE_WORDS | frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "on",
        "in",
        "about",
        "for",
        "from",
        "to",
        "with",
        "and",
        "or",
        "but",
        "is",
        "are",
        "was",
        "what",
        "which",
        "how",
        "why",
        "when",
        "where",
        "who",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "me",
        "my",
        "our",
        "your",
        "please",
        "one",
        "last",
        "latest",
        "recent",
        "new",
        "old",
    ]
)
_GENERIC = FILE_WORDS


@dataclass(frozen=True)
class NumberRef:
    text: str  # as written in the question: "file 2", "the second one"
    n: int | None  # None for "the last one" (resolved against the list's length)
    start: int
    end: int


@dataclass(frozen=True)
class NameRef:
    text: str  # as written: "policy_brief.md", "the mexico payments file"
    candidates: list[FileInfo]
    start: int
    end: int
    # A file name or a quoted title: several candidates get a question back, and a file
    # name none has ends the request. A named document ("the brief file") is not: with
    # several candidates every note is searched.
    explicit: bool = True


def find_numbered(question: str, *, after_clarify: bool = False) -> list[NumberRef]:
    """Every numbered reference in the question, in order, without repeats."""
    if after_clarify:
        bare = _BARE_NUMBER.match(question) or _BARE_ORDINAL.match(question)
        if bare:
            return [_number_ref(bare, question)]
    found: list[NumberRef] = []
    taken: list[tuple[int, int]] = []
    for pattern in _NUMBERED:
        for match in pattern.finditer(question):
            if any(match.start() < e and s < match.end() for s, e in taken):
                continue
            taken.append((match.start(), match.end()))
            found.append(_number_ref(match, question))
    found.sort(key=lambda ref: ref.start)
    return found


def _number_ref(match: re.Match[str], question: str) -> NumberRef:
    token = match.group(1).lower()
    n: int | None
    if token.isdigit():
        n = int(token)
    elif token == "last":
        n = None
    else:
        n = ORDINALS[token]
    return NumberRef(question[match.start() : match.end()].strip(), n, match.start(), match.end())


def name_words(info: FileInfo) -> set[str]:
    """The words a person may use for a file: those of its name, folders, title and
    aliases."""
    path = PurePosixPath(info.path)
    words = set(_WORD.findall(path.stem.lower()))
    words |= set(_WORD.findall(info.title.lower()))
    for alias in info.aliases:
        words |= set(_WORD.findall(alias.lower()))
    for part in path.parts[:-1]:
        words |= set(_WORD.findall(part.lower()))
    return {_singular(w) for w in words}


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def find_by_name(question: str, files: Sequence[FileInfo]) -> list[NameRef]:
    """File references by name (see the module docstring), each with its candidates."""
    refs: list[NameRef] = []
    for match in _FILE_NAME.finditer(question):
        token = match.group(1).lstrip("./").lower()
        candidates = [
            f
            for f in files
            if f.path.lower() == token
            or f.path.lower().endswith("/" + token)
            or PurePosixPath(f.path).name.lower() == PurePosixPath(token).name
        ]
        exact = [f for f in candidates if f.path.lower() == token]
        refs.append(NameRef(match.group(1), exact or candidates, match.start(), match.end()))
    if refs:
        return refs
    for match in _QUOTED.finditer(question):
        said = next(g for g in match.groups() if g is not None)
        titled = [f for f in files if _whole_name(said) in _names(f)]
        if titled:
            refs.append(NameRef(match.group(0), titled, match.start(), match.end()))
    if refs:
        return refs
    for match in _DOC_NOUN.finditer(question):
        if THIS_FILE.match(question, match.start()):
            continue  # "this file": the file given with the question
        ref = _phrase_ref(question, match, files)
        if ref is not None:
            refs.append(ref)
    return refs


def _whole_name(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _names(info: FileInfo) -> set[str]:
    """A file's whole names, as `_whole_name` writes them: title, aliases, file name."""
    names = {_whole_name(info.title), _whole_name(PurePosixPath(info.path).stem)}
    return names | {_whole_name(alias) for alias in info.aliases}


def summary_target(question: str, files: Sequence[FileInfo]) -> NameRef | None:
    """The file a bare summary request names by its whole name ("summarize my budget
    brief", "tl;dr of the payment approval policy"), or None."""
    match = _SUMMARIZE.match(question)
    if not match:
        return None
    words = [w for w in _WORD.findall(match.group("rest").lower()) if w not in _FILLER]
    if not words:
        return None
    wanted = {_singular(w) for w in words}
    candidates = [
        f
        for f in files
        if any({_singular(w) for w in name.split()} == wanted for name in _names(f))
    ]
    if len(candidates) != 1:
        return None
    start = match.start("rest")
    return NameRef(question[start:].strip(), candidates, start, len(question), explicit=False)


def _phrase_ref(question: str, match: re.Match[str], files: Sequence[FileInfo]) -> NameRef | None:
    words: list[str] = []
    for word in _WORD.findall(match.group(1).lower()):
        if word in _STOP:
            if words:
                break
            continue
        words.append(word)
    raw = [w for w in words if w not in _GENERIC and len(w) >= 3]
    words = [_singular(w) for w in raw]
    if not words:
        return None
    indexed = [(f, name_words(f)) for f in files]
    # The longest leading run of words that names at least one file; a named document
    # that could be several files narrows nothing (`explicit` false).
    for size in range(len(words), 0, -1):
        wanted = set(words[:size])
        candidates = [f for f, names in indexed if wanted <= names]
        if candidates:
            plural = raw[size - 1] != words[size - 1]
            if plural and len(candidates) > 1:
                return None  # "my runbooks": a search for several files, not one of them
            # Other words of the question may single out one candidate ("my brief on
            # the budget" with budget_brief.md and policy_brief.md).
            if len(candidates) > 1:
                rest = {_singular(w) for w in _WORD.findall(question.lower())} - _STOP - wanted
                narrowed = [f for f, names in indexed if f in candidates and rest & names]
                if len(narrowed) == 1:
                    candidates = narrowed
            text = question[match.start() : match.end()].strip()
            return NameRef(text, candidates, match.start(), match.end(), explicit=False)
    return None


_SUMMARIZE = re.compile(
    r"^\s*(?:please\s+|can you\s+|could you\s+)?"
    r"(?:summari[sz]e|give me a summary of|write a summary of|a summary of|summary of"
    r"|tl;?dr(?:\s+of)?)"
    r"\b(?P<rest>.*)$",
    re.I | re.S,
)
_FILLER = frozenset(
    [
        "the",
        "this",
        "that",
        "a",
        "an",
        "of",
        "for",
        "me",
        "please",
        "file",
        "doc",
        "document",
        "note",
        "it",
        "its",
        "my",
        "our",
        "whole",
        "entire",
        "one",
    ]
)


def is_summarize_only(question: str, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether the question asks only for a summary of the referenced file(s):
    "summarize file 1", "summarize my policy brief", "tl;dr of policy_brief.md"."""
    match = _SUMMARIZE.match(question)
    if not match:
        return False
    rest = question[match.start("rest") :]
    offset = match.start("rest")
    for start, end in sorted(spans, reverse=True):
        if start >= offset:
            rest = rest[: start - offset] + " " + rest[end - offset :]
    leftover = [w for w in _WORD.findall(rest.lower()) if w not in _FILLER]
    return not leftover


def is_reference_only(question: str, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether the question is nothing but a reference ("the first one", "2", "file 2")."""
    rest = question
    for start, end in sorted(spans, reverse=True):
        rest = rest[:start] + " " + rest[end:]
    leftover = [w for w in _WORD.findall(rest.lower()) if w not in _FILLER and w not in _STOP]
    return not leftover


def not_found(name: str, files: Sequence[FileInfo]) -> str:
    """What to say about a file named in the question that the knowledge base lacks,
    with the closest names it has."""
    paths = [f.path for f in files]
    token = name.strip("`'\"").lstrip("./")
    close = difflib.get_close_matches(token, paths, n=3, cutoff=0.6)
    if not close:  # by the file's name alone ("peru-payments.md" for "mexico-payments.md")
        names = {PurePosixPath(p).name: p for p in paths}
        close = [
            names[n] for n in difflib.get_close_matches(PurePosixPath(token).name, list(names), n=3)
        ]
    text = (
        f"`{token}` is not in the knowledge base: no indexed file has that name, so there "
        "is nothing to answer from."
    )
    if close:
        text += " Did you mean " + " or ".join(f"`{c}`" for c in close) + "?"
    return text + " Check the name, or search for what it is about."
