"""`kb index --extract/--no-extract`, `kb search --filter` over extracted fields,
`kb schema` (extracted counts, `--discover`) and `kb status`, as a user runs them,
against the scripted model; a value the note does not hold is never stored (issue 36):
no filter finds it, `kb schema` counts it rejected and `--extracted` says why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer
from tests.helpers.cli import HASHED, run

SCHEMA = {
    "type": "object",
    "properties": {
        "counterparty": {"type": "string", "description": "the company paid"},
        "amount": {"type": "number", "description": "the amount"},
    },
}
FIELDS = {
    "Acme": {
        "counterparty": {"evidence": "Pay Acme Corp", "value": "Acme Corp"},
        "amount": {"evidence": "Acme Corp 12,000", "value": 12000},
    },
    "Globex": {
        "counterparty": {"evidence": "The Globex invoice", "value": "Globex"},
        "amount": {"evidence": "invoice: 800", "value": 800},
    },
    # A small model's guess: a bank the note never names, and words it does not have.
    "Hooli": {
        "counterparty": {"evidence": "a call with Bank of America", "value": "Bank of America"},
        "amount": {"evidence": "We talked", "value": 5},
    },
}


def reply(body: dict[str, Any]) -> Turn:
    text = body["messages"][-1]["content"]
    if "Propose up to" in body["messages"][0]["content"]:
        return answer(
            json.dumps(
                {
                    "fields": [
                        {"name": "Counterparty", "type": "string", "description": "who is paid"},
                        {"name": "bad name!", "type": "string", "description": "dropped"},
                    ]
                }
            )
        )
    for word, fields in FIELDS.items():
        if f"Note title: {word}" in text:
            return answer(json.dumps(fields))
    return answer(json.dumps({"counterparty": None, "amount": None}))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    (root / ".kb").mkdir(parents=True)
    (root / ".kb" / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    (root / "acme.md").write_text("# Acme\n\nPay Acme Corp 12,000 by Friday.\n")
    (root / "globex.md").write_text("# Globex\n\nThe Globex invoice: 800.\n")
    (root / "team.md").write_text("---\nowner: Ana\nstatus: draft\n---\n# Team\n\nWho we are.\n")
    (root / "hooli.md").write_text("# Hooli\n\nWe talked about next quarter.\n")
    return root


def test_index_extracts_and_search_filters_on_the_fields(workspace: Path, tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    with ScriptedOllama(default=reply) as model:
        env = {**HASHED, "KB_OLLAMA_HOST": model.url}
        skipped = run("index", str(workspace), "--no-extract", storage=storage, **env)
        assert skipped.returncode == 0, skipped.stderr
        assert model.chat_requests == []

        done = run("index", str(workspace), "--extract", storage=storage, **env)
        assert done.returncode == 0, done.stderr
        assert "4 notes' metadata extracted" in done.stderr
        assert len(model.chat_requests) == 4 and model.errors == []

        found = run(
            "search", "--filter", "amount>10000", "-w", str(workspace), storage=storage, **env
        )
        assert found.returncode == 0, found.stderr
        assert "acme.md" in found.stdout and "globex.md" not in found.stdout
        typed = run(
            "search", 'counterparty:"acme corp"', "-w", str(workspace), storage=storage, **env
        )
        assert typed.returncode == 0, typed.stderr
        assert "acme.md" in typed.stdout and "globex.md" not in typed.stdout

        # The guess is not stored: no filter finds it, and the note has no such field.
        invented = run(
            "search",
            "--filter",
            'counterparty:"Bank of America"',
            "-w",
            str(workspace),
            storage=storage,
            **env,
        )
        assert invented.returncode == 0, invented.stderr
        assert "hooli.md" not in invented.stdout and "No matching files" in invented.stdout
        has = run(
            "search", "--filter", "has:counterparty", "-w", str(workspace), storage=storage, **env
        )
        assert "hooli.md" not in has.stdout and "acme.md" in has.stdout

        schema = run("schema", "-w", str(workspace), storage=storage, **env)
        assert schema.returncode == 0, schema.stderr
        lines = schema.stdout.splitlines()
        at = next(i for i, x in enumerate(lines) if x.strip().startswith("counterparty"))
        assert "2 files (2 extracted by the model)" in lines[at]
        assert "ollama/qwen2.5:7b: 2 kept, 1 rejected" in lines[at + 1]

        listed = run("schema", "--extracted", "-w", str(workspace), storage=storage, **env)
        assert listed.returncode == 0, listed.stderr
        assert "acme.md (ollama/qwen2.5:7b)" in listed.stdout
        assert "kept      counterparty: Acme Corp — from line 3: “Pay Acme Corp”" in listed.stdout
        assert (
            "rejected  counterparty: Bank of America — the evidence is not in the note: "
            "“a call with Bank of America”" in listed.stdout
        )
        assert "rejected  amount: 5 — the evidence does not say it: “We talked”" in listed.stdout

        # `kb search --json`: each extracted value with the note's words and where they are.
        shown = run("search", "--json", "Acme", "-w", str(workspace), storage=storage, **env)
        assert shown.returncode == 0, shown.stderr
        hit = next(h for h in json.loads(shown.stdout)["results"] if h["path"] == "acme.md")
        (amount,) = hit["meta"]["extracted"]["amount"]
        text = (workspace / "acme.md").read_text()
        assert amount["value"] == "12000" and amount["evidence"] == "Acme Corp 12,000"
        assert text[amount["start"] : amount["end"]] == amount["evidence"]
        assert amount["range"]["start"] == {"line": 2, "character": 4}

        status = run("status", "-w", str(workspace), storage=storage, **env)
        assert status.returncode == 0, status.stderr
        assert "metadata:  4/4 notes extracted by ollama/qwen2.5:7b" in status.stdout

        asked = len(model.chat_requests)
        again = run("index", str(workspace), storage=storage, **env)  # the cache answers
        assert again.returncode == 0 and len(model.chat_requests) == asked
        # A search's own sync never waits for the model.
        (workspace / "new.md").write_text("# Initech\n\nInitech owes 5.\n")
        initech = run("search", "Initech", "-w", str(workspace), storage=storage, **env)
        assert initech.returncode == 0, initech.stderr
        assert "new.md" in initech.stdout  # its sync indexed the note, without the model
        assert len(model.chat_requests) == asked

        proposal = run("schema", "--discover", "-w", str(workspace), storage=storage, **env)
        assert proposal.returncode == 0, proposal.stderr
        proposed = json.loads(proposal.stdout)["properties"]
        assert (
            proposed["owner"]["type"] == "string"
            and "written in 1 file" in (proposed["owner"]["description"])
        )
        assert "status" in proposed
        # `counterparty` is extracted, not written: the model's suggestion is kept,
        # marked; the invalid name is dropped.
        assert proposed["counterparty"]["x-suggested"] is True
        assert not any("bad" in name for name in proposed)
        assert "suggested by the model" in proposal.stderr
