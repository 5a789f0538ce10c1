"""The user's metadata schema (`.kb/schema.json`) and the model's replies checked
against it: hand-picked cases and properties over arbitrary JSON."""

from __future__ import annotations

import json
import math
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_lsp.engine.metadata.reply import read_reply
from kb_lsp.engine.metadata.user_schema import (
    SCHEMA_FILE,
    SchemaError,
    UserSchema,
    load_schema,
    parse_schema,
)

GOOD = {
    "type": "object",
    "properties": {
        "counterparty": {"type": "string", "description": "who"},
        "amount": {"type": "integer"},
        "systems": {"type": "array", "items": {"type": "string"}},
        "due": {"type": "string", "format": "date"},
        "severity": {"enum": ["low", "high"]},
    },
}


def schema() -> UserSchema:
    return parse_schema(json.dumps(GOOD), "schema.json")


def test_a_good_schema_gives_its_fields_and_a_stable_hash() -> None:
    parsed = schema()
    assert [(f.name, f.kind) for f in parsed.fields] == [
        ("counterparty", "string"),
        ("amount", "number"),
        ("systems", "list"),
        ("due", "date"),
        ("severity", "enum"),
    ]
    assert parsed.digest == schema().digest
    other = parse_schema(json.dumps({"properties": {"owner": {"type": "string"}}}), "x")
    assert other.digest != parsed.digest
    sent = parsed.json_schema()
    assert sent["required"] == list(GOOD["properties"])
    assert sent["properties"]["severity"] == {"enum": ["low", "high", None]}
    assert sent["properties"]["due"]["format"] == "date"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{not json", "not valid JSON (Expecting property name"),
        ("[1, 2]", "holds a list"),
        ('{"type": "array"}', '"type" must be "object"'),
        ("{}", '"properties" must be an object'),
        ('{"properties": {"Due Date": {"type": "string"}}}', "'Due Date'"),
        ('{"properties": {"tag": {"type": "string"}}}', "built-in field"),
        ('{"properties": {"x": {"type": "money"}}}', "'money' is not supported"),
        ('{"properties": {"x": {"type": "array"}}}', '"items": {"type": "string"}'),
        ('{"properties": {"x": {"type": "string", "format": "email"}}}', 'only "date"'),
        ('{"properties": {"x": {"enum": []}}}', '"enum" must be a list'),
        ('{"properties": {"x": {"type": "string", "description": 3}}}', "description"),
        ('{"properties": {"x": "string"}}', "must be an object"),
    ],
)
def test_a_bad_schema_says_what_to_fix(text: str, words: str) -> None:
    with pytest.raises(SchemaError) as caught:
        parse_schema(text, "/w/.kb/schema.json")
    assert str(caught.value).startswith("/w/.kb/schema.json")
    assert words in str(caught.value)


def test_loading_finds_the_default_file_or_the_setting(tmp_path: Path) -> None:
    assert load_schema(tmp_path, None) is None
    (tmp_path / ".kb").mkdir()
    (tmp_path / SCHEMA_FILE).write_text(json.dumps(GOOD), encoding="utf-8")
    found = load_schema(tmp_path, None)
    assert found is not None and found.names[0] == "counterparty"
    with pytest.raises(SchemaError, match="no such file"):
        load_schema(tmp_path, "elsewhere.json")
    (tmp_path / "mine.json").write_text('{"properties": {"owner": {"type": "string"}}}')
    mine = load_schema(tmp_path, "mine.json")
    assert mine is not None and mine.names == ("owner",)


def test_a_reply_is_checked_field_by_field() -> None:
    found = read_reply(
        schema(),
        json.dumps(
            {
                "counterparty": "  Acme   Corp ",
                "amount": "12000",
                "systems": "SPEI",
                "due": "2026-03-04",
                "severity": "High",
                "owner": "Ana",
            }
        ),
    )
    assert {k: [v.text for v in vs] for k, vs in found.fields.items()} == {
        "counterparty": ["Acme Corp"],
        "amount": ["12000"],
        "systems": ["SPEI"],
        "due": ["2026-03-04"],
        "severity": ["high"],
    }
    assert found.fields["amount"][0].number == 12000.0
    assert found.dropped == ("owner: not in the schema",)

    bad = read_reply(
        schema(), '{"amount": "12,000", "due": "next week", "severity": "mid", "systems": [1]}'
    )
    assert bad.fields == {}
    reasons = " | ".join(bad.dropped)
    for name in ("amount", "due", "severity", "systems"):
        assert f"{name}: " in reasons
    assert "not one of low, high" in reasons


def test_replies_that_are_not_json_objects_say_so() -> None:
    for content in ("", "Sure!", "[1]", "null", '{"amount": '):
        found = read_reply(schema(), content)
        assert found.failed and found.fields == {}
        assert "not a JSON object" in found.dropped[0]
    fenced = read_reply(schema(), 'Here:\n```json\n{"amount": 5}\n```')
    assert fenced.fields["amount"][0].number == 5.0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_as_a_schema_is_a_schema_or_a_schema_error(value: Any) -> None:
    try:
        parsed = parse_schema(json.dumps(value), "s.json")
    except SchemaError as err:
        assert str(err).startswith("s.json")
        return
    assert parsed.fields and all(f.name for f in parsed.fields)
    json.dumps(parsed.json_schema())  # what goes to the model is JSON


properties = st.dictionaries(
    st.sampled_from(["counterparty", "amount", "systems", "due", "severity", "x"]),
    json_values,
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(properties | json_values)
def test_any_reply_keeps_only_values_of_the_right_type(reply: Any) -> None:
    found = read_reply(schema(), json.dumps(reply))
    for name, values in found.fields.items():
        spec = schema().field(name)
        assert spec is not None and values
        for value in values:
            assert value.text.strip()
            if spec.kind == "number":
                assert value.number is not None and math.isfinite(value.number)
            elif spec.kind == "date":
                date.fromisoformat(value.text)
            elif spec.kind == "enum":
                assert value.text in spec.options
    # Every key of an object reply is either kept, left empty, or dropped with a reason.
    if isinstance(reply, dict):
        for key, value in reply.items():
            kept = key.strip().lower() in found.fields
            said = any(reason.startswith(f"{key}: ") for reason in found.dropped)
            assert kept or said or value in (None, "", [])
