"""Metadata extraction (issues 27, 36) against a real model: SmolLM2-135M-Instruct behind
llama.cpp's server, constrained by the user's JSON Schema (`response_format:
json_schema`, which llama.cpp turns into a grammar). The assertions are about the
plumbing — the reply is JSON that validates against the schema (each field null or the
note's words and a value), a value the note holds lands in the store with its span and
filters, whatever it kept is in the note — not about how well a 135M model reads (that
is `bench extract`). Extraction samples at temperature 0, so the same note and schema
give the same reply from the same llama.cpp build (pinned in pyproject.toml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.llm import create_llm
from kb_lsp.engine.metadata.extractor import (
    MAX_REPLY_TOKENS,
    FieldExtractor,
    prompt,
    response_schema,
)
from kb_lsp.engine.metadata.user_schema import SCHEMA_FILE, parse_schema

from .conftest import LlamaServer

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(1500)]

SCHEMA = {
    "type": "object",
    "properties": {
        "counterparty": {"type": "string", "description": "the company paid"},
        "amount": {"type": "number", "description": "the amount paid, digits only"},
        "kind": {"enum": ["runbook", "postmortem"], "description": "what sort of note"},
    },
}
NOTE = "# Acme wire runbook\n\nEvery quarter we wire Acme Corp 48000 EUR through Ledger.\n"
# A note and a field that SmolLM2 fills at temperature 0: the one date, copied as it is.
DUE = {
    "properties": {
        "due": {"type": "string", "format": "date", "description": "when the wire is due"}
    }
}
FILLABLE = "# Acme wire runbook\n\nThe next wire to Acme Corp is due on 2026-03-31.\n"


def test_the_reply_validates_against_the_schema(llama_server: LlamaServer, tmp_path: Path) -> None:
    settings = load_settings(
        {"llm": {"provider": "openai", "baseUrl": llama_server.base_url, "timeout": 600}}
    ).settings
    model = create_llm(settings)
    schema = parse_schema(json.dumps(SCHEMA), "schema.json")
    # The raw reply, under the grammar: a JSON object with exactly the schema's keys,
    # each null or the note's words and a value of its type.
    raw = model.chat(
        prompt(schema, "Acme wire runbook", NOTE),
        max_tokens=MAX_REPLY_TOKENS,
        temperature=0,
        response_schema=response_schema(schema, NOTE),
    )
    reply = json.loads(raw.content)
    assert set(reply) == set(SCHEMA["properties"])
    for name, answer in reply.items():
        if answer is None:
            continue
        assert set(answer) == {"evidence", "value"} and isinstance(answer["evidence"], str)
        value = answer["value"]
        if name == "counterparty":
            assert isinstance(value, str)
        elif name == "amount":
            assert isinstance(value, int | float)
        else:
            assert value in ("runbook", "postmortem", "none of these")
    found = FieldExtractor(model, schema).extract("Acme wire runbook", NOTE)
    assert not found.failed, found.dropped
    for items in found.kept.values():  # whatever it kept is the note's own words
        for item in items:
            assert NOTE[item.span.start : item.span.end] == item.span.evidence


def test_a_value_the_note_holds_is_stored_with_its_span_and_filters(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    settings = load_settings(
        {"llm": {"provider": "openai", "baseUrl": llama_server.base_url, "timeout": 600}}
    ).settings
    root = tmp_path / "notes"
    (root / ".kb").mkdir(parents=True)
    (root / SCHEMA_FILE).write_text(json.dumps(DUE), encoding="utf-8")
    (root / "acme.md").write_text(FILLABLE, encoding="utf-8")
    kb = KnowledgeBase([root], settings, embedder=HashingEmbedder(), storage=tmp_path / "s")
    try:
        report = kb.sync(extract=True)
        assert report.notes_extracted == 1 and report.errors == []
        meta = kb.file_reads.file_meta("acme.md")
        assert meta is not None and meta.extracted_by == "openai/smollm2"
        (due,) = meta.extracted["due"]
        assert due.value == "2026-03-31"
        assert FILLABLE[due.start : due.end] == due.evidence and "2026-03-31" in due.evidence
        assert due.range.start.line == 2
        assert [hit.path for hit in kb.search("", filter="due:2026-03")] == ["acme.md"]
        fields = {field.name: field for field in kb.schema().fields}
        assert [(m.model, m.kept) for m in fields["due"].models] == [("openai/smollm2", 1)]
        assert kb.status().metadata is not None
        assert kb.status().metadata.extracted == 1  # type: ignore[union-attr]
    finally:
        kb.close()
