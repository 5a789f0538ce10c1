"""Examples made from the open index, never from the sample wiki (issue 39, point 3): the
searches and questions a welcome offers, the filters a hint shows, and the term a filter
error gives "for example". Each comes from this index's own titles, paths and metadata —
its most substantial notes, its commonest tag and field values — so a workspace of
FastAPI docs is offered FastAPI words, and an index without tags is never told
`tag:payments`. An empty index has no examples (a front end then shows none).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from kb_lsp.engine.file_reads import FileInfo
from kb_lsp.engine.metadata.filters import BUILTIN_FIELDS
from kb_lsp.protocol import ExamplesResponse, SchemaField, SchemaResponse

# Files whose name says they are about the repository, not a topic of the notes.
_GENERIC_NAMES = frozenset(
    {"readme", "index", "changelog", "changes", "history", "news", "license", "contributing"}
)
_WORD = re.compile(r"[^\W\d_][\w'-]{3,}", re.UNICODE)
# A value a term can show without quotes.
_BARE = re.compile(r'[^\s()"\\]+')


@dataclass(frozen=True)
class IndexExamples:
    searches: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    filters: list[str] = field(default_factory=list)
    # field -> a term of it this index has (`tag:runbook`); "" -> any field's
    terms: dict[str, str] = field(default_factory=dict)

    def term(self, name: str) -> str | None:
        """The example term for a field (`filters.ExampleOf`), or None."""
        return self.terms.get(name)

    def response(self) -> ExamplesResponse:
        return ExamplesResponse(
            searches=self.searches, questions=self.questions, filters=self.filters
        )


def index_examples(schema: SchemaResponse, files: Sequence[FileInfo]) -> IndexExamples:
    """The examples of one index: its schema (fields and their commonest values) and its
    files (the notes with the most passages are its substance)."""
    terms = _terms(schema.fields)
    notes = _central(files)
    words = [_topic_word(note.title) for note in notes]
    searches: list[str] = []
    if notes:
        searches.append(_words_only(notes[0].title))
    if len(notes) > 1:
        searches.append(_words_only(notes[1].title))
    questions: list[str] = []
    if notes:
        questions.append(f"What do my notes say about {notes[0].title}?")
    if len(notes) > 1:
        questions.append(f"Summarize {notes[1].path}")
    if words and words[0]:
        terms.setdefault("title", f"title:{words[0]}")
    filters = [terms[name] for name in ("tag", "custom") if name in terms]
    terms.pop("custom", None)
    return IndexExamples(searches, questions, filters, terms)


def _terms(fields: Sequence[SchemaField]) -> dict[str, str]:
    """field -> its commonest value as a term; "has" and "" (any field) from the
    commonest field a file wrote; "custom" the commonest such field's term."""
    terms: dict[str, str] = {}
    written: list[SchemaField] = []
    for schema_field in sorted(fields, key=lambda f: (-f.files, f.name)):
        value = next((v.value for v in schema_field.top if v.value.strip()), None)
        if schema_field.name not in BUILTIN_FIELDS:
            written.append(schema_field)
        if value is not None and schema_field.name not in ("modified", "size", "words"):
            terms[schema_field.name] = f"{schema_field.name}:{_quoted(value)}"
    if written:
        terms["has"] = f"has:{written[0].name}"
        first = next((f.name for f in written if f.name in terms), None)
        if first is not None:
            terms["custom"] = terms[first]
    anything = terms.get("tag") or terms.get("custom") or terms.get("folder")
    if anything:
        terms[""] = anything
    return terms


def _central(files: Sequence[FileInfo]) -> list[FileInfo]:
    """Two notes with a title of their own, the ones with the most passages first."""
    chosen: list[FileInfo] = []
    for info in sorted(files, key=lambda f: (-f.chunks, f.path)):
        stem = PurePosixPath(info.path).stem.lower()
        if stem in _GENERIC_NAMES or not info.title.strip():
            continue
        if all(info.title.lower() != other.title.lower() for other in chosen):
            chosen.append(info)
        if len(chosen) == 2:
            break
    return chosen


def _topic_word(title: str) -> str:
    """The longest word of a title (lower-case): the one most likely to be its topic."""
    words = _WORD.findall(title.lower())
    return max(words, key=len) if words else ""


def _words_only(title: str) -> str:
    """A title as a query: lower-case, without the marks the filter language reads."""
    return " ".join(re.sub(r'[:()"<>=]', " ", title.lower()).split())


def _quoted(value: str) -> str:
    if _BARE.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
