"""Extracted metadata (issue 27) through `kb mcp`: the editor-kind runtime runs the
metadata phase after indexing, its progress is in the `status` tool, and the `search`
tool's `filter` keeps files by the fields the (scripted) model extracted. The real
`kb mcp` as a subprocess, the official MCP client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer

from .conftest import wait_for
from .mcp_harness import Kb, connect, mcp_env, structured, text_of

pytestmark = pytest.mark.timeout(240)

SCHEMA = {
    "properties": {
        "counterparty": {"type": "string", "description": "the company paid"},
        "amount": {"type": "number", "description": "the amount"},
    }
}
MEXICO = "payments/mexico-payments.md"


def reply(body: dict[str, Any]) -> Turn:
    note = body["messages"][-1]["content"]
    if "Acme Servicios" in note:  # what the Mexico runbook of examples/workspace says
        return answer(
            json.dumps(
                {
                    "counterparty": {
                        "evidence": "subsidiary, Acme Servicios",
                        "value": "Acme Servicios",
                    },
                    "amount": {"evidence": "Two approvers above MXN 2,000,000", "value": 2000000},
                }
            )
        )
    # Elsewhere a guess without the note's words: rejected, never a filter's match.
    return answer(json.dumps({"counterparty": "Banorte", "amount": None}))


async def test_the_search_tool_filters_on_extracted_fields(workspace: Path, storage: Path) -> None:
    (workspace / ".kb").mkdir(exist_ok=True)
    (workspace / ".kb" / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    with ScriptedOllama(default=reply) as ollama:
        env = mcp_env(storage, ollama=ollama.url)
        async with connect("stdio", [workspace], storage, env) as kb:
            await kb.wait_ready()

            async def extracted(kb: Kb = kb) -> dict[str, Any] | None:
                status = await kb.status()
                meta = status.get("metadata")
                done = meta and meta["total"] and meta["extracted"] == meta["total"]
                return status if done else None

            status = await wait_for(extracted, "every note's metadata")
            assert status["metadata"]["model"] == "ollama/qwen2.5:7b"
            result = await kb.ok("search", query="payments", filter="amount>10000")
            found = structured(result)
            assert [hit["path"] for hit in found["results"]] == [MEXICO]
            (value,) = found["results"][0]["meta"]["extracted"]["counterparty"]
            assert value["value"] == "Acme Servicios"
            assert value["evidence"] == "subsidiary, Acme Servicios"
            assert value["range"]["start"]["line"] == 8  # 0-based: the note's line 9
            # The text a calling model reads says the same, with the line from 1.
            assert (
                "counterparty: Acme Servicios (extracted by ollama/qwen2.5:7b, from L9: "
                "“subsidiary, Acme Servicios”)" in text_of(result)
            )
            banorte = structured(
                await kb.ok("search", query="Banorte", filter="counterparty:banorte")
            )
            assert banorte["results"] == []
            schema = structured(await kb.ok("schema"))
            fields = {field["name"]: field for field in schema["fields"]}
            assert fields["counterparty"]["extracted"] == 1
            (counts,) = fields["counterparty"]["models"]
            assert counts["kept"] == 1 and counts["rejected"] == status["metadata"]["total"] - 1
        assert ollama.errors == []
