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

from kb_lsp.engine.metadata.claims import Reply
from kb_lsp.engine.metadata.reply import read_reply
from kb_lsp.engine.metadata.user_schema import (
    SCHEMA_FILE,
    SchemaError,
    UserSchema,
    load_schema,
    parse_schema,
)
from kb_lsp.json_bounds import load_json

GOOD = {
    "type": "object",
    "properties": {
        "counterparty": {"type": "string", "description": "who"},
        "amount": {"type": "integer"},
        "systems": {"type": "array", "items": {"type": "string"}},
        "due": {"type": "string", "format": "date"},
        "severity": {"enum": ["low", "high"], "x-synonyms": {"high": ["critical", "sev1"]}},
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
    # Each field: null (the note does not say), or the note's words, then the value.
    null, answer = sent["properties"]["severity"]["anyOf"]
    assert null == {"type": "null"}
    assert answer["required"] == ["evidence", "value"] == list(answer["properties"])
    assert answer["properties"]["value"] == {"enum": ["low", "high", "none of these"]}
    assert sent["properties"]["due"]["anyOf"][1]["properties"]["value"]["format"] == "date"
    # The options in the order asked for (the extractor's, per note).
    reordered = parsed.json_schema(lambda spec: list(reversed(spec.options)))
    assert reordered["properties"]["severity"]["anyOf"][1]["properties"]["value"] == {
        "enum": ["high", "low", "none of these"]
    }
    severity = parsed.field("severity")
    assert severity is not None
    assert severity.words_for("high") == ("high", "critical", "sev1")
    assert severity.words_for("low") == ("low",)
    # Synonyms are part of what a value is checked against: part of the hash.
    fewer = json.loads(json.dumps(GOOD))
    del fewer["properties"]["severity"]["x-synonyms"]
    assert parse_schema(json.dumps(fewer), "schema.json").digest != parsed.digest


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
        ('{"properties": {"x": {"enum": ["a"], "x-synonyms": ["b"]}}}', '"x-synonyms" maps'),
        ('{"properties": {"x": {"enum": ["a"], "x-synonyms": {"b": ["c"]}}}}', "'b', which is"),
        ('{"properties": {"x": {"enum": ["a"], "x-synonyms": {"a": "c"}}}}', "must be a list"),
        ('{"properties": {"x": {"type": "number", "x-units": "EUR"}}}', '"x-units" must be'),
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


def claimed(found: Reply) -> dict[str, tuple[list[str], str | None]]:
    return {c.field: ([v.text for v in c.values], c.evidence) for c in found.claims}


def test_a_reply_is_checked_field_by_field() -> None:
    found = read_reply(
        schema(),
        json.dumps(
            {
                "counterparty": {"evidence": "pay Acme Corp", "value": "  Acme   Corp "},
                "amount": {"evidence": "12000 EUR", "value": "12000"},
                "systems": {"evidence": "over SPEI", "value": "SPEI"},
                "due": {"evidence": "by 2026-03-04", "value": "2026-03-04"},
                "severity": "High",  # a bare value: a server that ignored the schema
                "owner": "Ana",
            }
        ),
    )
    assert claimed(found) == {
        "counterparty": (["Acme Corp"], "pay Acme Corp"),
        "amount": (["12000"], "12000 EUR"),
        "systems": (["SPEI"], "over SPEI"),
        "due": (["2026-03-04"], "by 2026-03-04"),
        "severity": (["high"], None),  # no evidence: verify.py rejects it
    }
    assert found.claims[1].values[0].number == 12000.0
    assert found.dropped == ("owner: not in the schema",)
    assert found.rejected == ()

    bad = read_reply(
        schema(),
        '{"amount": "12,000", "due": {"evidence": "next week", "value": "next week"}, '
        '"severity": "mid", "systems": [1]}',
    )
    assert bad.claims == ()
    reasons = {r.field: r for r in bad.rejected}
    assert set(reasons) == {"amount", "due", "severity", "systems"}
    assert not any(r.valid for r in bad.rejected)  # not even of the field's type
    assert "not one of low, high" in reasons["severity"].reason
    assert reasons["due"].evidence == "next week"


def test_null_and_none_of_these_are_answers_not_values() -> None:
    found = read_reply(
        schema(),
        json.dumps(
            {
                "counterparty": None,
                "amount": {"evidence": "no amount", "value": None},
                "severity": {"evidence": "it is fine", "value": "none of these"},
                "systems": [],
            }
        ),
    )
    assert found.claims == () and found.rejected == () and found.dropped == ()


def test_replies_that_are_not_json_objects_say_so() -> None:
    for content in ("", "Sure!", "[1]", "null", '{"amount": '):
        found = read_reply(schema(), content)
        assert found.failed and found.claims == ()
        assert "not a JSON object" in found.dropped[0]
    fenced = read_reply(schema(), 'Here:\n```json\n{"amount": 5}\n```')
    assert fenced.claims[0].values[0].number == 5.0


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


answers = json_values | st.fixed_dictionaries(
    {"evidence": st.text(max_size=30) | st.none(), "value": json_values}
)
properties = st.dictionaries(
    st.sampled_from(["counterparty", "amount", "systems", "due", "severity", "x"]),
    answers,
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(properties | json_values)
def test_any_reply_keeps_only_values_of_the_right_type(reply: Any) -> None:
    found = read_reply(schema(), json.dumps(reply))
    for claim in found.claims:
        spec = schema().field(claim.field)
        assert spec is not None and claim.values
        for value in claim.values:
            assert value.text.strip()
            if spec.kind == "number":
                assert value.number is not None and math.isfinite(value.number)
            elif spec.kind == "date":
                date.fromisoformat(value.text)
            elif spec.kind == "enum":
                assert value.text in spec.options
    # Every key of an object reply is a claim, left empty, rejected or dropped, with a
    # reason for the last two. Empty as the parser reads it: a model's control
    # characters are dropped first, so "\x08" is no value.
    if isinstance(reply, dict):
        reply = load_json(json.dumps(reply), "the reply", text_only=True)
        claims = {claim.field for claim in found.claims}
        rejected = {r.field for r in found.rejected if r.reason}
        for key, value in reply.items():
            name = key.strip().lower()
            said = any(reason.startswith(f"{key}: ") for reason in found.dropped)
            answer = value.get("value") if isinstance(value, dict) and "value" in value else value
            empty = answer in (None, "", []) or answer == "none of these"
            assert name in claims or name in rejected or said or empty
