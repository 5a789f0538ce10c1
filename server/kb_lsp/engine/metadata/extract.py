"""A file's metadata, extracted at index time from its parsed Markdown.

Fields (names lower-cased; see docs/metadata.md):

* every front-matter key, typed (`frontmatter.flatten`): string, number, date, bool, or
  a list of strings; nested mappings as dotted names (`author.name`);
* `tag`: the front matter's `tags`/`tag`/`keywords` as written — each item of a YAML
  list is one tag, spaces and all (`tags: [type aliases]` is the tag "type aliases"),
  and only a plain string is split at commas and spaces (`tags: a, b c`) — and the
  inline `#tags` of the body, without `#`;
* `folder`: the folder the file is in, `""` at the top;
* `words`: the body's word count (code blocks left out);
* `description` (also from `summary`, `excerpt` or Dendron's `desc`) and `aliases`
  (`alias`; a YAML list, or a string of names separated by commas) are fields like any
  other, and also kept apart: search weighs them as what the note says about itself;
* `title`, `modified` and `size` come from the manifest (`files` table), so a `touch`
  that changes no content still moves `modified`.

Outgoing links (`inline.Link`) and problems (malformed front matter, with its line) are
kept beside the fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from kb_lsp.engine.markdown.document import ParsedDocument
from kb_lsp.engine.metadata.cards import ALIAS_KEYS, DESCRIPTION_KEYS
from kb_lsp.engine.metadata.frontmatter import Problem, flatten, load_front_matter
from kb_lsp.engine.metadata.inline import Link, normalise_tag, read_body
from kb_lsp.engine.metadata.values import Value

# Front-matter keys that the built-in fields shadow; `tags`/`tag`/`keywords` feed the
# `tag` field.
SHADOWED = frozenset(["folder", "modified", "size", "words", "has"])
TAG_KEYS = ("tags", "tag", "keywords")
MAX_DESCRIPTION_CHARS = 1000
MAX_ALIASES = 32
_TAG_SPLIT = re.compile(r"[,\s]+")


@dataclass(frozen=True)
class FileMetadata:
    fields: dict[str, list[Value]]  # what filters and the schema read, built-ins included
    tags: tuple[str, ...]  # as written, without `#`, front matter first
    links: tuple[Link, ...]
    problems: tuple[Problem, ...]
    title: str | None  # the front matter's `title` when it is a string
    description: str | None = None
    aliases: tuple[str, ...] = ()


EMPTY = FileMetadata({}, (), (), (), None)


def extract_metadata(doc: ParsedDocument, path: str) -> FileMetadata:
    """Everything `kb_lsp.engine.metadata` stores for the file at workspace path `path`."""
    raw: dict[str, Any] = {}
    problems: tuple[Problem, ...] = ()
    if doc.front_matter is not None:
        front = load_front_matter(doc.front_matter, doc.front_matter_line)
        raw, problems = front.fields, front.problems
    lowered = {str(k).strip().lower(): v for k, v in raw.items()}

    tags: dict[str, str] = {}
    for key in TAG_KEYS:
        for tag in _front_tags(lowered.get(key)):
            tags.setdefault(
                normalise_tag(tag), " ".join(tag.lstrip().lstrip("#").strip("/").split())
            )
    body = read_body(doc.lines, doc.body_start, doc.code_ranges)
    for tag in body.tags:
        tags.setdefault(normalise_tag(tag), tag)
    tags.pop("", None)

    kept = {k: v for k, v in raw.items() if str(k).strip().lower() not in (*TAG_KEYS, *SHADOWED)}
    fields = flatten(kept)
    fields.pop("title", None)  # the title is the manifest's (front matter first, README)
    if tags:
        fields["tag"] = [Value("list", tag) for tag in tags.values()]
    folder = str(PurePosixPath(path).parent)
    fields["folder"] = [Value("string", "" if folder == "." else folder)]
    fields["words"] = [Value("number", str(body.words), float(body.words))]

    title = lowered.get("title")
    return FileMetadata(
        fields=fields,
        tags=tuple(tags.values()),
        links=body.links,
        problems=problems,
        title=" ".join(title.split()) if isinstance(title, str) and title.strip() else None,
        description=_description(lowered),
        aliases=_aliases(lowered),
    )


def _description(fields: dict[str, Any]) -> str | None:
    for key in DESCRIPTION_KEYS:
        value = fields.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())[:MAX_DESCRIPTION_CHARS]
    return None


def _aliases(fields: dict[str, Any]) -> tuple[str, ...]:
    names: list[str] = []
    for key in ALIAS_KEYS:
        value = fields.get(key)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            continue
        for item in items:
            if isinstance(item, str | int | float) and not isinstance(item, bool):
                name = " ".join(str(item).split())
                if name and name not in names:
                    names.append(name)
    return tuple(names[:MAX_ALIASES])


def _front_tags(value: Any) -> list[str]:
    """The tags of one front-matter value: a list's items whole, a string's words."""
    if isinstance(value, str):
        return [t for t in _TAG_SPLIT.split(value) if t.strip("#/")]
    if isinstance(value, list | tuple):
        out: list[str] = []
        for item in value:
            if isinstance(item, str | int | float) and not isinstance(item, bool):
                tag = " ".join(str(item).split())
                if tag.strip("#/ "):
                    out.append(tag)
        return out
    return []
