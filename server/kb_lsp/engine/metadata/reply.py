"""A model's structured reply, validated field by field against the user's schema.

Structured output constrains what a model may send, but not every server enforces it
(an OpenAI-compatible server may ignore `response_format`, a small model may stop
early), so the reply is checked again here with pydantic: each field's value against
its type, and a value that fails is dropped with the reason, never stored. A reply that
is not a JSON object at all gives no fields and says why.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Annotated, Any

from pydantic import StringConstraints, TypeAdapter, ValidationError

from kb_lsp.engine.metadata.frontmatter import Value
from kb_lsp.engine.metadata.user_schema import FieldKind, FieldSpec, UserSchema
from kb_lsp.json_bounds import JsonRefused, load_json

MAX_TEXT = 200
MAX_ITEMS = 32
_FENCE = re.compile(r"^\s*```[\w-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)

_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT)]


@dataclass(frozen=True)
class Extraction:
    """What one note's reply gave: typed values per field, and what was dropped, why."""

    fields: dict[str, list[Value]]
    dropped: tuple[str, ...] = ()
    failed: bool = False  # the reply as a whole was unusable (not a JSON object)

    def as_json(self) -> str:
        return json.dumps(
            {
                "fields": {
                    name: [[v.kind, v.text, v.number] for v in values]
                    for name, values in self.fields.items()
                },
                "dropped": list(self.dropped),
                "failed": self.failed,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> Extraction:
        raw = json.loads(text)
        return cls(
            {
                str(name): [Value(str(k), str(t), n) for k, t, n in values]
                for name, values in raw["fields"].items()
            },
            tuple(raw["dropped"]),
            bool(raw["failed"]),
        )


@cache
def _adapter(kind: FieldKind) -> TypeAdapter[Any]:
    if kind == "number":
        return TypeAdapter(float)
    if kind == "date":
        return TypeAdapter(date)
    if kind == "list":
        return TypeAdapter(list[_Text])
    return TypeAdapter(_Text)


def read_reply(schema: UserSchema, content: str) -> Extraction:
    """The fields in a model's reply `content`, checked against `schema`."""
    raw = json_object(content)
    if raw is None:
        shown = " ".join(content.split())[:80]
        return Extraction({}, (f"the reply was not a JSON object: {shown!r}",), failed=True)
    fields: dict[str, list[Value]] = {}
    dropped: list[str] = []
    for name, value in raw.items():
        spec = schema.field(str(name).strip().lower())
        if spec is None:
            dropped.append(f"{name}: not in the schema")
            continue
        if value is None or value == "" or value == []:
            continue  # the note does not say
        try:
            values = _typed(spec, value)
        except (ValidationError, ValueError) as err:
            dropped.append(f"{spec.name}: {_reason(err)} (got {json.dumps(value)[:60]})")
            continue
        if values:
            fields[spec.name] = values
    return Extraction(fields, tuple(dropped))


def _typed(spec: FieldSpec, value: Any) -> list[Value]:
    if spec.kind == "enum":
        if not isinstance(value, str):
            raise ValueError(f"not one of {', '.join(spec.options)}")
        wanted = " ".join(value.split()).lower()
        match = next((o for o in spec.options if o.lower() == wanted), None)
        if match is None:
            raise ValueError(f"not one of {', '.join(spec.options)}")
        return [Value("string", match)]
    if spec.kind == "list" and isinstance(value, str):
        value = [value]  # one item where a list was asked for: still a list of one
    if spec.kind == "date" and not isinstance(value, str):
        raise ValueError("a date is written YYYY-MM-DD")
    if spec.kind == "number" and isinstance(value, bool):  # pydantic's float takes true as 1
        raise ValueError("true and false are not numbers")
    typed = _adapter(spec.kind).validate_python(value)
    if spec.kind == "list":
        items = list(dict.fromkeys(" ".join(item.split()) for item in typed))[:MAX_ITEMS]
        return [Value("list", item) for item in items]
    if spec.kind == "number":
        if not math.isfinite(typed):
            raise ValueError("not a finite number")
        text = str(int(typed)) if float(typed).is_integer() and abs(typed) < 1e15 else repr(typed)
        return [Value("number", text, float(typed))]
    if spec.kind == "date":
        return [Value("date", typed.isoformat())]
    return [Value("string", " ".join(typed.split()))]


def _reason(err: Exception) -> str:
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        return str(first.get("msg", "invalid")).lower()
    return str(err)


def json_object(content: str) -> dict[str, Any] | None:
    """The JSON object in a reply: the whole reply, inside a code fence, or the span
    from its first `{` to its last `}` (a model that talks around its answer)."""
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    for candidate in (text, text[text.find("{") : text.rfind("}") + 1]):
        if not candidate:
            continue
        try:
            value = load_json(candidate, "the model's reply", text_only=True)
        except JsonRefused:
            continue
        if isinstance(value, dict):
            return value
    return None
