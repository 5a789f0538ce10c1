"""`kb mcp` end to end, part 2: what needs a server of its own — a model (the scripted
Ollama stand-in), several HTTP sessions, a bearer token, refused hosts, an editor's
language server beside it. The real `kb mcp` as a subprocess, the official MCP Python
client (`mcp.ClientSession`), a copy of examples/workspace per test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer, call

from .conftest import DEADLINE, running_server
from .mcp_harness import (
    Kb,
    connect,
    http_kb,
    http_server,
    mcp_env,
    stdio_kb,
    structured,
    text_of,
    wait_for,
)

MEXICO = "payments/mexico-payments.md"
TOOLS = {"search", "open_result", "read_file", "list_files", "summarize_file", "ask", "status"}
LABELS = {"filename match", "context match"}

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def ollama() -> Iterator[ScriptedOllama]:
    with ScriptedOllama(models=["qwen2.5:7b", "tiny-summarizer:1b"]) as server:
        yield server


async def _status_if(kb: Kb, condition: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    status = await kb.status()
    return status if condition(status) else None


# --- summarize_file and ask ------------------------------------------------------------------


async def test_summarize_file_with_the_model_then_from_the_cache(
    workspace: Path, storage: Path, ollama: ScriptedOllama
) -> None:
    def summary(request: dict[str, Any]) -> Turn:
        assert "Acme Servicios" in request["messages"][-1]["content"]
        return answer("Mexico is funded monthly by SPEI before the 14:30 cut-off.")

    ollama.add(summary)
    # Settings as the extension passes them: a JSON object of kb.* settings.
    settings = json.dumps({"ollama": {"model": "tiny-summarizer:1b"}})
    env = mcp_env(storage, ollama=ollama.url)
    async with connect("stdio", [workspace], storage, env, ["--settings", settings]) as kb:
        await kb.wait_ready()
        await kb.ok("search", query="mexico payments")
        first = await kb.ok("summarize_file", n=1)
        data = structured(first)
        assert data == {
            "path": MEXICO,
            "summary": "Mexico is funded monthly by SPEI before the 14:30 cut-off.",
            "cached": False,
            "extractive": False,
        }
        assert "summary by tiny-summarizer:1b" in text_of(first)
        assert ollama.chat_requests[0]["model"] == "tiny-summarizer:1b"

        again = structured(await kb.ok("summarize_file", path=MEXICO))
        assert again["cached"] and again["summary"] == data["summary"]
        assert len(ollama.chat_requests) == 1
    assert ollama.errors == []


async def test_ask_answers_with_the_model_and_falls_back_without(
    workspace: Path, storage: Path, ollama: ScriptedOllama
) -> None:
    ollama.add(
        call("search_knowledge_base", query="mexico payment cut-off"),
        answer(f"Before 14:30 Mexico City time [{MEXICO}:9-11]."),
    )
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with connect("stdio", [workspace], storage, mcp_env(storage, ollama=ollama.url)) as kb:
        await kb.wait_ready()
        result = await asyncio.wait_for(
            kb.session.call_tool(
                "ask",
                {"question": "What is the cut-off for payments to Mexico?"},
                progress_callback=on_progress,
            ),
            DEADLINE,
        )
        assert not result.is_error, text_of(result)
        # The agent's steps came as progress notifications while it worked.
        assert "Calling search_knowledge_base" in progress
        data = structured(result)
        # Besides one notification per step, the answer came in pieces as it was written.
        pieces = list(progress)
        for step in data["steps"]:
            pieces.remove(
                f"Calling {step['tool']}" if step["kind"] == "tool_call" else step["text"][:200]
            )
        assert pieces and "".join(pieces) == data["answer"]
        assert data["stop"] == "answer" and "14:30" in data["answer"]
        assert data["sources"][0]["path"] == MEXICO
        assert text_of(result).startswith("Before 14:30 Mexico City time")
    async with connect("stdio", [workspace], storage) as kb:
        # A new session has no numbered list yet, and says what to do.
        message = await kb.error("open_result", n=1)
        assert "no search yet" in message and "call search first" in message
        result = await kb.ok("ask", question="What is the cut-off for payments to Mexico?")
        data = structured(result)
        assert data["mode"] == "fallback" and data["sources"]
        assert "No model answered" in text_of(result)


# --- HTTP: sessions, loopback, token -------------------------------------------------------------


async def test_http_sessions_share_one_runtime_with_their_own_lists(
    workspace: Path, storage: Path
) -> None:
    async with (
        http_server([workspace], storage) as server,
        http_kb(server.url) as one,
        http_kb(server.url) as two,
    ):
        await one.wait_ready()
        first = structured(await one.ok("search", query="mexico payments"))["results"]
        other = structured(await two.ok("search", query="deploy checklist"))["results"]
        assert first[0]["path"] != other[0]["path"]
        assert structured(await one.ok("open_result", n=1))["path"] == first[0]["path"]
        assert structured(await two.ok("open_result", n=1))["path"] == other[0]["path"]
        # One runtime: the second session sees the index the first one waited for.
        assert (await two.status())["files"] == (await one.status())["files"]


async def test_http_requires_the_bearer_token_when_one_is_set(
    workspace: Path, storage: Path
) -> None:
    env = mcp_env(storage, extra={"KB_MCP_TOKEN": "s3cret-token"})
    async with http_server([workspace], storage, env=env) as server:
        async with httpx2.AsyncClient() as client:
            for headers in [{}, {"Authorization": "Bearer wrong"}]:
                response = await client.post(server.url, json={}, headers=headers)
                assert response.status_code == 401
                assert "KB_MCP_TOKEN" in response.text
        async with http_kb(server.url, token="s3cret-token") as kb:
            assert (await kb.status())["roots"] == [str(workspace)]


async def test_http_on_any_loopback_spelling_refuses_dns_rebinding(
    workspace: Path, storage: Path
) -> None:
    # 127.0.0.2 is loopback, but not one of the three spellings the SDK guards itself.
    async with http_server([workspace], storage, address="127.0.0.2:0") as server:
        port = server.url.split(":")[2].split("/")[0]
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient() as client:
            rebound = await client.post(
                server.url, json=body, headers={**headers, "Host": f"evil.example:{port}"}
            )
            assert rebound.status_code == 421
            from_page = await client.post(
                server.url, json=body, headers={**headers, "Origin": "http://evil.example"}
            )
            assert from_page.status_code == 403
        async with http_kb(server.url) as kb:  # the bound address itself is served
            assert (await kb.status())["roots"] == [str(workspace)]


MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


async def _open_session(client: httpx2.AsyncClient, url: str) -> str:
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "never-closes", "version": "1"},
        },
    }  # fmt: skip
    response = await client.post(url, json=initialize, headers=MCP_HEADERS)
    assert response.status_code == 200, response.text
    return str(response.headers["mcp-session-id"])


async def _ping(client: httpx2.AsyncClient, url: str, session: str) -> int:
    headers = {**MCP_HEADERS, "mcp-session-id": session}
    body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    return int((await client.post(url, json=body, headers=headers)).status_code)


async def test_http_sessions_are_capped_closing_the_least_recently_used_idle_one(
    workspace: Path, storage: Path
) -> None:
    async with (
        http_server([workspace], storage, args=["--max-sessions", "2"]) as server,
        httpx2.AsyncClient(timeout=DEADLINE) as client,
    ):
        first = await _open_session(client, server.url)
        second = await _open_session(client, server.url)
        assert await _ping(client, server.url, first) == 200  # `second` is now the idler
        third = await _open_session(client, server.url)  # not 503: room was made
        assert await _ping(client, server.url, second) == 404
        assert await _ping(client, server.url, first) == 200
        assert await _ping(client, server.url, third) == 200


async def test_http_sessions_expire_when_idle(workspace: Path, storage: Path) -> None:
    async with (
        http_server([workspace], storage, args=["--session-idle", "0.5"]) as server,
        httpx2.AsyncClient(timeout=DEADLINE) as client,
    ):
        session = await _open_session(client, server.url)
        gone = False
        for _ in range(int(DEADLINE)):  # polled less often than it expires: each ping waits
            await asyncio.sleep(1.0)
            if await _ping(client, server.url, session) == 404:
                gone = True
                break
        assert gone


async def test_kb_mcp_refuses_a_non_loopback_host(workspace: Path, storage: Path) -> None:
    async def run(*extra: str, env: dict[str, str] | None = None) -> tuple[int, str]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "kb_lsp.cli", "mcp", "-w", str(workspace),
            "--storage", str(storage), *extra,
            env=env or mcp_env(storage), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode is not None  # its own code, not one made up here
        return process.returncode, err.decode()

    code, err = await run("--http", "0.0.0.0:0")
    assert code == 2 and "not a loopback address" in err and "--allow-remote" in err
    code, err = await run("--http", "0.0.0.0:0", "--allow-remote")
    assert code == 2 and "KB_MCP_TOKEN" in err
    code, err = await run("--http", "localhost")
    assert code == 2 and "HOST:PORT" in err
    code, err = await run("--settings", "[1]")
    assert code == 2 and "JSON object" in err


# --- one index, many clients: an editor's language server beside kb mcp -----------------------


async def test_beside_an_editor_mcp_reads_then_takes_over(workspace: Path, storage: Path) -> None:
    async with contextlib.AsyncExitStack() as editor_running:
        editor = await editor_running.enter_async_context(running_server([workspace], storage))
        async with connect("stdio", [workspace], storage) as kb:
            # The editor's server holds the index: kb mcp reads it, and says so.
            status = await wait_for(
                lambda: _status_if(kb, lambda s: s["readOnly"] and s["files"] > 0),
                "kb mcp to open the editor's index read-only",
            )
            assert "index: read-only" in text_of(await kb.ok("status"))
            assert status["files"] == (await editor.status())["files"]
            mcp_hits = structured(await kb.ok("search", query="mexico payments"))["results"]
            lsp_hits = (await editor.search("mexico payments"))["results"]
            assert [h["path"] for h in mcp_hits] == [h["path"] for h in lsp_hits]

            # The editor goes away: kb mcp becomes the writer and follows the disk itself.
            await editor_running.aclose()
            await wait_for(
                lambda: _status_if(kb, lambda s: not s["readOnly"] and s["state"] == "ready"),
                "kb mcp to take the index over",
            )
            (workspace / "runbooks" / "wombat-drill.md").write_text(
                "# Wombat drill\n\nThe wombatword drill runs quarterly.\n", encoding="utf-8"
            )

            async def found() -> bool:
                hits = structured(await kb.ok("search", query="wombatword drill"))["results"]
                return any(h["path"] == "runbooks/wombat-drill.md" for h in hits)

            await wait_for(found, "the new file, indexed by kb mcp")


async def test_hostile_globs_answer_through_mcp(tmp_path: Path) -> None:
    # `*a*…*b` against a name of 40 `a`s: hours for a backtracking matcher (30 took 271 s
    # and each `a` doubles it, with the GIL held: no deadline fired, SIGTERM waited).
    root = tmp_path / "ws"
    root.mkdir()
    hostile = "*a" * 14 + "*b"
    (root / ".gitignore").write_text(hostile + "\n", encoding="utf-8")
    (root / ("a" * 40 + ".md")).write_text("# Refunds\n\nrefund steps\n", encoding="utf-8")
    storage = tmp_path / "storage"
    async with stdio_kb([root], storage) as kb:
        await kb.wait_ready()
        listed = structured(await kb.ok("list_files", glob=hostile + ".md"))
        assert listed["files"] == []
        found = structured(await kb.ok("search", query="refund", paths=[hostile]))
        assert found["results"] == []
        everything = structured(await kb.ok("search", query="refund"))
        assert [hit["path"] for hit in everything["results"]] == ["a" * 40 + ".md"]
        refused = await kb.error("list_files", glob="*a" * 40)
        assert "more than 32 wildcards" in refused
