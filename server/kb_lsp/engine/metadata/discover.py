"""`kb schema --discover`: a schema proposed from the corpus, for the user to edit.

Two sources: the front-matter fields the notes already have (their types, how many
files, a few values: authors' own vocabulary), and fields the local model suggests
after reading a sample of notes, each marked `"x-suggested": true` (the schema loader
ignores keys it does not know, so the file works as written). Nothing is saved: the
proposal goes to stdout, and the user keeps what they want in `.kb/schema.json`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kb_lsp.engine.metadata.reply import json_object
from kb_lsp.engine.metadata.user_schema import SchemaError, check_field
from kb_lsp.protocol import SchemaResponse

if TYPE_CHECKING:
    from kb_lsp.engine.llm.base import ChatModel

# Fields every file has, or that the indexer keeps for itself: not worth extracting.
_NOT_PROPOSED = frozenset(
    ["tag", "folder", "words", "modified", "size", "title", "description", "aliases", "alias"]
)
SAMPLE_CHARS = 1_500  # of each sampled note the model reads
MAX_SUGGESTED = 8

_SUGGEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "fields": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "type": {"enum": ["string", "number", "date", "list"]},
                    "description": {"type": "string"},
                },
                "required": ["name", "type", "description"],
            },
        }
    },
    "required": ["fields"],
}

_SUGGEST_PROMPT = (
    "Below are notes from one team's knowledge base. Propose up to {n} metadata fields "
    "that many of these notes state in their text and that a reader would filter by "
    "(a counterparty, a system, an owner, a date, an amount), as JSON: "
    '{{"fields": [{{"name": "snake_case", "type": "string|number|date|list", '
    '"description": "one line"}}]}}. Leave out the title, tags and folder.'
)


def written_fields(schema: SchemaResponse) -> dict[str, dict[str, Any]]:
    """JSON Schema properties for the fields authors wrote (none a model extracted)."""
    out: dict[str, dict[str, Any]] = {}
    for field in schema.fields:
        if field.name in _NOT_PROPOSED or field.extracted >= field.files:
            continue
        kind = field.types[0] if field.types else "string"
        prop: dict[str, Any]
        if kind == "list":
            prop = {"type": "array", "items": {"type": "string"}}
        elif kind == "number":
            prop = {"type": "number"}
        elif kind == "date":
            prop = {"type": "string", "format": "date"}
        else:
            prop = {"type": "string"}
        seen = ", ".join(value.value for value in field.top[:3])
        about = f"written in {field.files} file{'s' * (field.files != 1)}"
        prop["description"] = f"{about}, e.g. {seen}" if seen else about
        try:
            check_field("front matter", field.name, prop)
        except SchemaError:
            continue  # a name the filter language cannot type (`Due Date`)
        out[field.name] = prop
    return out


def suggested_fields(
    model: ChatModel, samples: Sequence[tuple[str, str]], cancel: threading.Event | None = None
) -> dict[str, dict[str, Any]]:
    """Properties the model proposes after reading `samples` ((title, text) pairs)."""
    notes = "\n\n".join(f"## {title}\n{text[:SAMPLE_CHARS]}" for title, text in samples)
    result = model.chat(
        [
            {"role": "system", "content": _SUGGEST_PROMPT.format(n=MAX_SUGGESTED)},
            {"role": "user", "content": notes},
        ],
        cancel=cancel,
        max_tokens=600,
        response_schema=_SUGGEST_SCHEMA,
    )
    raw = json_object(result.content) or {}
    items = raw.get("fields")
    out: dict[str, dict[str, Any]] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or len(out) >= MAX_SUGGESTED:
            continue
        name = "_".join(str(item.get("name", "")).strip().lower().split())
        kind = item.get("type")
        shapes: dict[str, dict[str, Any]] = {
            "list": {"type": "array", "items": {"type": "string"}},
            "number": {"type": "number"},
            "date": {"type": "string", "format": "date"},
        }
        prop = dict(shapes.get(str(kind), {"type": "string"}))
        prop["description"] = " ".join(str(item.get("description", "")).split())[:200]
        prop["x-suggested"] = True
        try:
            check_field("suggestion", name, prop)
        except SchemaError:
            continue
        out.setdefault(name, prop)
    return out


def proposal(written: dict[str, dict[str, Any]], suggested: dict[str, dict[str, Any]]) -> str:
    """The proposed schema file, written fields first."""
    properties = dict(written)
    for name, prop in suggested.items():
        properties.setdefault(name, prop)
    return json.dumps({"type": "object", "properties": properties}, indent=2, ensure_ascii=False)
