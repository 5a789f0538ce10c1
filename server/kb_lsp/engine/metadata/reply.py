"""A model's structured reply, validated field by field against the user's schema.

Structured output constrains what a model may send, but not every server enforces it
(an OpenAI-compatible server may ignore `response_format`, a small model may stop
early), so the reply is checked again here with pydantic: each field's value against
its type, and a value that fails is rejected with the reason, never stored. A reply that
is not a JSON object at all gives no fields and says why.

Each field is asked for as `{"evidence": <the note's words>, "value": <the value>}` or
`null` (`extractor.py`); what this reads are *claims* (`claims.py`), which `verify.py`
then checks against the note. A bare value (a server that ignored the schema) is a
claim without evidence; an enum's "none of these", like `null`, is no value.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date
from functools import cache
from typing import Annotated, Any

from pydantic import StringConstraints, TypeAdapter, ValidationError

from kb_lsp.engine.metadata.claims import Claim, Rejected, Reply
from kb_lsp.engine.metadata.user_schema import (
    MAX_VALUE,
    NONE_OF_THESE,
    FieldKind,
    FieldSpec,
    UserSchema,
)
from kb_lsp.engine.metadata.values import Value
from kb_lsp.json_bounds import JsonRefused, load_json

MAX_TEXT = MAX_VALUE
MAX_ITEMS = 32
_FENCE = re.compile(r"^\s*```[\w-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)

_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT)]


@cache
def _adapter(kind: FieldKind) -> TypeAdapter[Any]:
    if kind == "number":
        return TypeAdapter(float)
    if kind == "date":
        return TypeAdapter(date)
    if kind == "list":
        return TypeAdapter(list[_Text])
    return TypeAdapter(_Text)


def read_reply(schema: UserSchema, content: str) -> Reply:
    """The claims in a model's reply `content`, each value checked against `schema`."""
    raw = json_object(content)
    if raw is None:
        shown = " ".join(content.split())[:80]
        return Reply((), (), (f"the reply was not a JSON object: {shown!r}",), failed=True)
    claims: list[Claim] = []
    rejected: list[Rejected] = []
    dropped: list[str] = []
    for name, answer in raw.items():
        spec = schema.field(str(name).strip().lower())
        if spec is None:
            dropped.append(f"{name}: not in the schema")
            continue
        value, evidence = _parts(answer)
        if _no_value(spec, value):
            continue  # the note does not say
        try:
            values = _typed(spec, value)
        except (ValidationError, ValueError) as err:
            shown = json.dumps(value, ensure_ascii=False)[:60]
            rejected.append(Rejected(spec.name, shown, _reason(err), evidence or "", valid=False))
            continue
        if values:
            claims.append(Claim(spec.name, tuple(values), evidence))
    return Reply(tuple(claims), tuple(rejected), tuple(dropped))


def _parts(answer: Any) -> tuple[Any, str | None]:
    """A field's (value, evidence): `{"evidence": …, "value": …}` as asked, else a bare
    value with no evidence."""
    if isinstance(answer, dict) and "value" in answer:
        evidence = answer.get("evidence")
        return answer["value"], evidence if isinstance(evidence, str) else None
    return answer, None


def _no_value(spec: FieldSpec, value: Any) -> bool:
    if value is None or value == "" or value == []:
        return True
    return (
        spec.kind == "enum"
        and isinstance(value, str)
        and " ".join(value.split()).lower() == NONE_OF_THESE
    )


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
