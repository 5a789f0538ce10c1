"""Every JSON the project parses from outside goes through one bounded parser
(`json_bounds.load_json`): a number of thousands of digits, deep nesting or a body too
large is the project's own input error, never Python's `ValueError` (4,300 digits) or a
`RecursionError` that stopped every sync or ended `kb ask` with exit 1."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fakes.ollama_server import Turn
from tests.fakes.openai_server import ScriptedOpenAI

from kb_lsp.config import load_settings
from kb_lsp.engine.llm import create_llm
from kb_lsp.engine.metadata.reply import read_reply
from kb_lsp.engine.metadata.user_schema import SchemaError, parse_schema
from kb_lsp.errors import InvalidInput
from kb_lsp.json_bounds import JsonRefused, load_json

HUGE = "1" + "0" * 5000  # Python's int() stops at 4,300 digits
DEEP = "[" * 100_000 + "]" * 100_000
SCHEMA = parse_schema(
    json.dumps(
        {
            "properties": {
                "counterparty": {"type": "string"},
                "amount": {"type": "number"},
                "systems": {"type": "array", "items": {"type": "string"}},
            }
        }
    ),
    "schema.json",
)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (HUGE, "an integer of 5001 digits (at most 100)"),
        (DEEP, "nested more than 64 deep"),
        ('{"a": ' * 70 + "1" + "}" * 70, "nested more than 64 deep"),
        ("{", "not valid JSON"),
        ("x" * 2000, "2,000 bytes of JSON, over the 1,000 read"),
    ],
)
def test_what_is_refused_is_the_projects_own_input_error(text: str, words: str) -> None:
    with pytest.raises(JsonRefused) as refused:
        load_json(text, "the thing", max_bytes=1000 if text.startswith("x") else 10**6)
    assert isinstance(refused.value, InvalidInput)
    assert str(refused.value).startswith("the thing: ") and words in str(refused.value)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), st.lists))
def test_json_within_the_bounds_reads_as_json_does(value: Any) -> None:
    text = json.dumps(value)
    if "[" * 65 not in text:
        assert load_json(text, "x") == json.loads(text)


def test_strings_are_text_and_a_models_text_has_no_controls() -> None:
    raw = '{"a\\u0000": "x\\u0000y\\ud800z\\u001b[2J\\u009b\\n"}'
    assert load_json(raw, "x") == {"a\x00": "x\x00y\ufffdz\x1b[2J\x9b\n"}
    assert load_json(raw, "x", text_only=True) == {"a\x00": "xy\ufffdz[2J\n"}


@pytest.mark.parametrize(
    "text",
    [
        '{"properties": {"x": {"type": "number", "maximum": ' + HUGE + "}}}",
        '{"properties": ' + DEEP + "}",
    ],
)
def test_a_schema_file_with_a_huge_number_or_deep_nesting_is_a_schema_error(text: str) -> None:
    with pytest.raises(SchemaError, match=r"^schema\.json: "):
        parse_schema(text, "schema.json")


@pytest.mark.parametrize(
    "reply", ['{"amount": ' + HUGE + "}", '{"systems": ' + DEEP + "}", "[" * 5000]
)
def test_an_extraction_reply_with_a_huge_number_or_deep_nesting_gives_no_fields(
    reply: str,
) -> None:
    found = read_reply(SCHEMA, reply)
    assert found.claims == () and found.failed


def test_an_extraction_reply_keeps_no_control_character_and_true_is_not_1() -> None:
    reply = json.dumps(
        {"counterparty": "Acme\x00\x1b]0;x\x07 Corp\x9b", "amount": True, "systems": ["a\x07"]}
    )
    found = read_reply(SCHEMA, reply)
    claims = {claim.field: [v.text for v in claim.values] for claim in found.claims}
    assert claims == {"counterparty": ["Acme]0;x Corp"], "systems": ["a"]}
    assert [(r.field, r.reason, r.valid) for r in found.rejected] == [
        ("amount", "true and false are not numbers", False)
    ]


@pytest.mark.parametrize(
    "arguments", ['{"query": ' + HUGE + "}", '{"query": ' + "[" * 10_000 + "]" * 10_000 + "}"]
)
def test_tool_call_arguments_with_a_huge_number_or_deep_nesting_are_unparsed(
    arguments: str,
) -> None:
    """The tool then reports the problem to the model; `kb ask` once exited 1 here."""
    call = {"name": "search_knowledge_base", "raw_arguments": arguments}
    with ScriptedOpenAI([Turn(tool_calls=[call], chunk_chars=1000)]) as server:
        settings = load_settings(
            {"llm": {"provider": "openai", "baseUrl": server.base_url, "timeout": 10}}
        )
        result = create_llm(settings.settings).chat([{"role": "user", "content": "q"}])
    assert server.errors == []
    [made] = result.tool_calls
    assert made.name == "search_knowledge_base" and made.arguments == {"_unparsed": arguments}
