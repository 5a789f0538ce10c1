"""Metadata a model extracts (issue 27), through the knowledge base with the scripted
model: structured replies, malformed replies, a slow model, cancellation, cache hits
after a restart, an edit re-extracting one note, front matter winning, no model."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer, stall
from tests.fakes.openai_server import ScriptedOpenAI

from kb_lsp.config import Settings, load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.link_preview import compute_hover
from kb_lsp.engine.metadata.extractor import response_schema
from kb_lsp.engine.metadata.user_schema import SCHEMA_FILE, parse_schema

SCHEMA = {
    "type": "object",
    "properties": {
        "counterparty": {"type": "string", "description": "the company paid or paying"},
        "amount": {"type": "number", "description": "the payment's amount"},
        "systems": {"type": "array", "items": {"type": "string"}, "description": "systems"},
        "due": {"type": "string", "format": "date", "description": "when it is due"},
        "severity": {
            "type": "string",
            "enum": ["low", "high"],
            "description": "how bad",
            "x-synonyms": {"low": ["small"]},
        },
    },
}


def said(evidence: str, value: Any) -> dict[str, Any]:
    """A field as the model is asked to answer it: the note's words, then the value."""
    return {"evidence": evidence, "value": value}


# What the scripted model "reads" in each note: keyed by a word of its title.
ANSWERS: dict[str, dict[str, Any]] = {
    "Acme": {
        "counterparty": said("Pay Acme Corp", "Acme Corp"),
        "amount": said("Acme Corp 12000", 12000),  # the note writes 12,000
        "systems": said("over SPEI and SAP", ["SPEI", "SAP"]),
        "due": said("by March 4, 2026", "2026-03-04"),
        "severity": said("high priority", "high"),
    },
    "Globex": {
        "counterparty": said("invoice from Globex", "Globex"),
        "amount": said("Globex, 800", 800),
        "systems": None,
        "due": None,
        "severity": said("A small invoice", "LOW"),  # "small" is the schema's word for low
    },
    "Initech": {
        "counterparty": said("Initech wants", "Initech"),
        "amount": said("wants a lot", "a lot"),  # fails validation: rejected with a reason
        "systems": said("via SWIFT", ["SWIFT"]),
        "due": said("next Tuesday", "next Tuesday"),  # not a date: rejected
        "severity": said("Initech wants", "medium"),  # not in the enum: rejected
    },
    # The author wrote another counterparty in the front matter: theirs wins.
    "Umbrella": {"counterparty": said("Acme Corp pays", "Acme Corp")},
}


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def reply(body: dict[str, Any]) -> Turn:
    """The structured reply for the note in the request (by the word in its title)."""
    note = body["messages"][-1]["content"]
    for word, fields in ANSWERS.items():
        if f"Note title: {word}" in note:
            return answer(json.dumps(fields))
    return answer(json.dumps(dict.fromkeys(SCHEMA["properties"])))


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write(root, SCHEMA_FILE, json.dumps(SCHEMA))
    write(
        root,
        "acme.md",
        "# Acme\n\nPay Acme Corp 12,000 over SPEI and SAP by March 4, 2026: high priority.\n",
    )
    write(root, "globex.md", "# Globex\n\nA small invoice from Globex, 800.\n")
    write(root, "initech.md", "# Initech\n\nInitech wants a lot, next Tuesday, via SWIFT.\n")
    write(
        root,
        "written.md",
        "---\ncounterparty: Umbrella\n---\n# Umbrella\n\nThe author wrote it; Acme Corp pays.\n",
    )
    return root


def settings_for(server: ScriptedOllama, **extra: Any) -> Settings:
    return load_settings(
        {"search": {"threshold": 0.0}, "ollama": {"host": server.url}, **extra}
    ).settings


def open_kb(root: Path, settings: Settings, storage: Path) -> KnowledgeBase:
    return KnowledgeBase([root], settings, embedder=HashingEmbedder(), storage=storage)


@pytest.fixture
def model() -> Iterator[ScriptedOllama]:
    with ScriptedOllama(default=reply) as server:
        yield server


def paths(kb: KnowledgeBase, filter: str) -> set[str]:
    return {hit.path for hit in kb.search("", filter=filter, limit=50)}


def test_structured_replies_become_filterable_fields(
    notes: Path, model: ScriptedOllama, tmp_path: Path
) -> None:
    kb = open_kb(notes, settings_for(model), tmp_path / "storage")
    try:
        report = kb.sync(extract=True)
        assert report.notes_extracted == 4
        assert model.errors == []
        # The schema went to Ollama as the reply's format, every field present: null,
        # or the note's words and the value; the enum in the order shown for that note.
        sent = model.chat_requests[0]["format"]
        note = (notes / "acme.md").read_text(encoding="utf-8")
        assert sent == response_schema(parse_schema(json.dumps(SCHEMA), "x"), note)
        assert set(sent["required"]) == set(SCHEMA["properties"])
        assert all(p["anyOf"][0] == {"type": "null"} for p in sent["properties"].values())

        assert paths(kb, 'counterparty:"acme corp"') == {"acme.md"}
        assert paths(kb, "amount>10000") == {"acme.md"}
        assert paths(kb, "amount<1000") == {"globex.md"}
        assert paths(kb, "systems:swift") == {"initech.md"}
        assert paths(kb, "due:2026-03") == {"acme.md"}
        assert paths(kb, "severity:low") == {"globex.md"}  # "LOW" is the enum's "low"
        # Invalid values were dropped, the valid ones of the same reply kept.
        assert paths(kb, "has:amount") == {"acme.md", "globex.md"}
        assert paths(kb, "has:severity") == {"acme.md", "globex.md"}
        # Front matter wins: the author's counterparty, not the model's.
        assert paths(kb, "counterparty:umbrella") == {"written.md"}
        assert "written.md" not in paths(kb, 'counterparty:"acme corp"')

        meta = kb.file_reads.file_meta("acme.md")
        assert meta is not None
        assert meta.extracted_by == "ollama/qwen2.5:7b"
        assert [v.value for v in meta.extracted["counterparty"]] == ["Acme Corp"]
        assert [v.value for v in meta.extracted["systems"]] == ["SPEI", "SAP"]
        amount = meta.extracted["amount"][0]
        assert (amount.value, amount.evidence) == ("12000", "Acme Corp 12,000")  # its words
        assert amount.range.start.line == 2
        # A link's hover says which values a model read, which model (not the author's)
        # and where in the note each was read.
        line = "See [the Acme note](acme.md)."
        hover = compute_hover(kb, notes / "written.md", line, line.index("Acme"))
        assert hover is not None
        assert "extracted by ollama/qwen2.5:7b:" in hover[0]
        assert "counterparty: Acme Corp — from line 3: “Pay Acme Corp”" in hover[0]
        assert "systems: SPEI — from line 3: “over SPEI and SAP”" in hover[0]

        schema = {f.name: f for f in kb.schema().fields}
        assert schema["counterparty"].files == 4 and schema["counterparty"].extracted == 3
        assert schema["amount"].extracted == 2

        status = kb.status().metadata
        assert status is not None
        assert (status.extracted, status.total) == (4, 4)
        assert status.model == "ollama/qwen2.5:7b" and status.message is None
    finally:
        kb.close()


def test_cache_hits_after_restart_and_an_edit_reextracts_one_note(
    notes: Path, model: ScriptedOllama, tmp_path: Path
) -> None:
    storage = tmp_path / "storage"
    kb = open_kb(notes, settings_for(model), storage)
    kb.sync(extract=True)
    kb.close()
    asked = len(model.chat_requests)
    assert asked == 4

    kb = open_kb(notes, settings_for(model), storage)
    try:
        assert kb.sync(extract=True).notes_extracted == 0
        assert len(model.chat_requests) == asked  # the model is not asked again
        assert paths(kb, "amount>10000") == {"acme.md"}

        write(notes, "globex.md", "# Globex\n\nThe Globex invoice is now 20,000.\n")
        ANSWERS["Globex"] = {**ANSWERS["Globex"], "amount": said("now 20,000", 20000)}
        try:
            report = kb.sync(extract=True)
        finally:
            ANSWERS["Globex"] = {**ANSWERS["Globex"], "amount": said("Globex, 800", 800)}
        assert report.notes_extracted == 1
        assert len(model.chat_requests) == asked + 1
        assert "Globex" in model.chat_requests[-1]["messages"][-1]["content"]
        assert paths(kb, "amount>10000") == {"acme.md", "globex.md"}
        # The cache keeps what some note holds: the old text's extraction went with it.
        write(notes, "globex.md", "# Globex\n\nA small invoice from Globex, 800.\n")
        assert kb.sync(extract=True).notes_extracted == 1
        assert paths(kb, "amount<1000") == {"globex.md"}
    finally:
        kb.close()


def test_a_changed_schema_reextracts_and_a_changed_model_too(
    notes: Path, model: ScriptedOllama, tmp_path: Path
) -> None:
    kb = open_kb(notes, settings_for(model), tmp_path / "storage")
    try:
        kb.sync(extract=True)
        changed = {**SCHEMA, "properties": {**SCHEMA["properties"], "owner": {"type": "string"}}}
        write(notes, SCHEMA_FILE, json.dumps(changed))
        assert kb.sync(extract=True).notes_extracted == 4
    finally:
        kb.close()


def test_malformed_replies_give_no_fields_and_say_why(
    notes: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with ScriptedOllama(default=answer("Sure! The counterparty is Acme.")) as server:
        kb = open_kb(notes, settings_for(server), tmp_path / "storage")
        try:
            with caplog.at_level(logging.INFO, "kb_lsp.engine.index.extraction"):
                report = kb.sync(extract=True)
            assert report.notes_extracted == 4 and not report.cancelled
            assert paths(kb, "has:amount") == set()
            assert "not a JSON object" in caplog.text
            # Written values still filter; the phase does not loop on the bad replies.
            assert paths(kb, "counterparty:umbrella") == {"written.md"}
            assert kb.sync(extract=True).notes_extracted == 0
        finally:
            kb.close()


def test_cancelling_a_slow_model_stops_the_phase_and_the_next_sync_finishes(
    notes: Path, tmp_path: Path
) -> None:
    with ScriptedOllama([stall()], default=reply) as server:
        kb = open_kb(notes, settings_for(server), tmp_path / "storage")
        try:
            cancel = threading.Event()
            # The model goes silent on the first note; cancel once it does.
            threading.Thread(
                target=lambda: server.stalled.wait(30) and cancel.set(), daemon=True
            ).start()
            report = kb.sync(extract=True, cancel=cancel)
            assert report.cancelled
            assert kb.status().metadata is not None
            assert kb.status().metadata.extracted == 0  # type: ignore[union-attr]
            # Keyword rows and vectors were done before the model was asked.
            assert {h.path for h in kb.search("Globex invoice")} >= {"globex.md"}
            server.release()
            assert kb.sync(extract=True).notes_extracted == 4
            assert paths(kb, "amount>10000") == {"acme.md"}
        finally:
            kb.close()


def test_the_phase_gives_way_to_waiting_work_at_once(notes: Path, tmp_path: Path) -> None:
    with ScriptedOllama([stall()], default=reply) as server:
        kb = open_kb(notes, settings_for(server), tmp_path / "storage")
        try:
            waiting = threading.Event()
            # A save arrives while the model is silent on the first note.
            threading.Thread(
                target=lambda: server.stalled.wait(30) and waiting.set(), daemon=True
            ).start()
            report = kb.sync(extract=True, yield_to=waiting)
            assert not report.cancelled and report.notes_extracted == 0
            server.release()
            # Nothing was cached for the dropped call: the next sync asks for all four.
            assert kb.sync(extract=True).notes_extracted == 4
        finally:
            kb.close()


def test_no_model_skips_the_phase_and_says_so_once(
    notes: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = ScriptedOllama().start()
    url = server.url
    server.close()  # nothing answers there now
    settings = load_settings({"ollama": {"host": url}}).settings
    kb = open_kb(notes, settings, tmp_path / "storage")
    try:
        with caplog.at_level(logging.WARNING, "kb_lsp.engine.index.extraction"):
            first = kb.sync(extract=True)
            write(notes, "new.md", "# New\n\nAnother note.\n")
            kb.sync(extract=True)
        assert not first.cancelled and first.files_added == 4
        said = [r for r in caplog.records if "extraction skipped" in r.getMessage()]
        assert len(said) == 1
        status = kb.status().metadata
        assert status is not None and status.message is not None
        assert "extraction skipped" in status.message
        assert status.extracted == 0 and status.total == 5
    finally:
        kb.close()


def test_a_bad_schema_file_is_said_and_indexing_goes_on(
    notes: Path, model: ScriptedOllama, tmp_path: Path
) -> None:
    write(notes, SCHEMA_FILE, '{"properties": {"amount": {"type": "money"}}}')
    kb = open_kb(notes, settings_for(model), tmp_path / "storage")
    try:
        report = kb.sync(extract=True)
        assert report.files_added == 4 and model.chat_requests == []
        status = kb.status().metadata
        assert status is not None and status.message is not None
        assert "'amount'" in status.message and "money" in status.message
    finally:
        kb.close()


def test_without_extract_or_with_the_setting_off_the_model_is_not_asked(
    notes: Path, model: ScriptedOllama, tmp_path: Path
) -> None:
    kb = open_kb(notes, settings_for(model, metadata={"extract": False}), tmp_path / "s1")
    try:
        kb.sync(extract=True)
    finally:
        kb.close()
    kb = open_kb(notes, settings_for(model), tmp_path / "s2")
    try:
        kb.sync()
    finally:
        kb.close()
    assert model.chat_requests == []


def test_an_openai_compatible_server_gets_response_format(notes: Path, tmp_path: Path) -> None:
    with ScriptedOpenAI(default=reply) as server:
        settings = load_settings(
            {"llm": {"provider": "openai", "baseUrl": server.base_url, "model": "smollm2"}}
        ).settings
        kb = open_kb(notes, settings, tmp_path / "storage")
        try:
            assert kb.sync(extract=True).notes_extracted == 4
            body = server.chat_requests[0]
            assert body["response_format"]["type"] == "json_schema"
            assert body["response_format"]["json_schema"]["schema"]["properties"].keys() == (
                SCHEMA["properties"].keys()
            )
            assert paths(kb, "amount>10000") == {"acme.md"}
            meta = kb.file_reads.file_meta("acme.md")
            assert meta is not None and meta.extracted_by == "openai/smollm2"
        finally:
            kb.close()


def test_the_agents_search_tool_filters_on_extracted_fields(
    notes: Path, model: ScriptedOllama, tmp_path: Path
) -> None:
    from kb_lsp.engine.agent.summarize import Summarizer
    from kb_lsp.engine.agent.tools import ALL_TOOLS, Toolbox

    kb = open_kb(notes, settings_for(model), tmp_path / "storage")
    try:
        kb.sync(extract=True)
        box = Toolbox(kb, Summarizer(kb, None))
        out = box.run(
            "search_knowledge_base",
            {"query": "pay", "filter": "amount>10000"},
            allowed=ALL_TOOLS,
            cancel=threading.Event(),
        )
        assert not out.error
        assert "acme.md" in out.text and "globex.md" not in out.text
        # The system prompt's field list names the extracted fields too.
        from datetime import date

        from kb_lsp.engine.agent.prompts import metadata_hint

        hint = metadata_hint(kb.schema(), date(2026, 11, 25))
        assert "counterparty" in hint and "amount" in hint
    finally:
        kb.close()
