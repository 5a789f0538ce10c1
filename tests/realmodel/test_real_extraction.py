"""Metadata extraction (issue 27) against a real model: SmolLM2-135M-Instruct behind
llama.cpp's server, constrained by the user's JSON Schema (`response_format:
json_schema`, which llama.cpp turns into a grammar). The assertions are about the
plumbing — the reply is JSON that validates against the schema, the fields land in the
store and filter — not about how well a 135M model reads (that is `bench extract`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.llm import create_llm
from kb_lsp.engine.metadata.extractor import FieldExtractor, prompt
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


def test_the_reply_validates_against_the_schema(llama_server: LlamaServer, tmp_path: Path) -> None:
    settings = load_settings(
        {"llm": {"provider": "openai", "baseUrl": llama_server.base_url, "timeout": 600}}
    ).settings
    model = create_llm(settings)
    schema = parse_schema(json.dumps(SCHEMA), "schema.json")
    # The raw reply, under the grammar: a JSON object with exactly the schema's keys,
    # each value of its type or null.
    raw = model.chat(
        prompt(schema, "Acme wire runbook", NOTE),
        max_tokens=256,
        response_schema=schema.json_schema(),
    )
    reply = json.loads(raw.content)
    assert set(reply) == set(SCHEMA["properties"])
    assert reply["counterparty"] is None or isinstance(reply["counterparty"], str)
    assert reply["amount"] is None or isinstance(reply["amount"], int | float)
    assert reply["kind"] in ("runbook", "postmortem", None)
    found = FieldExtractor(model, schema).extract("Acme wire runbook", NOTE)
    assert not found.failed, found.dropped

    root = tmp_path / "notes"
    (root / ".kb").mkdir(parents=True)
    (root / SCHEMA_FILE).write_text(json.dumps(SCHEMA), encoding="utf-8")
    (root / "acme.md").write_text(NOTE, encoding="utf-8")
    kb = KnowledgeBase([root], settings, embedder=HashingEmbedder(), storage=tmp_path / "s")
    try:
        report = kb.sync(extract=True)
        assert report.notes_extracted == 1 and report.errors == []
        meta = kb.file_meta("acme.md")
        assert meta is not None
        if meta.extracted:  # what a 135M model fills in varies; what it fills in is typed
            assert meta.extracted_by == "openai/smollm2"
            assert set(meta.extracted) <= set(SCHEMA["properties"])
            for field, values in meta.extracted.items():
                hits = kb.search("", filter=f'{field}:"{values[0]}"')
                assert [hit.path for hit in hits] == ["acme.md"]
        assert kb.status().metadata is not None
        assert kb.status().metadata.extracted == 1  # type: ignore[union-attr]
    finally:
        kb.close()
