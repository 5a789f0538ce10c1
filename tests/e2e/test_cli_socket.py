"""The `kb` command line asks the editor's server over its local socket: the real server
over stdio, the real command in a process of its own. Its answers are the server's (and
the same as it finds alone), it loads neither pydantic nor Chroma to get them (nor Chroma
when it answers alone), a socket
left by a server that died is passed over, and bad messages leave the server serving."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kb_lsp.engine.storage import store_dir_for
from kb_lsp.runtime.local_socket import SUPPORTED, socket_path

from .conftest import DEADLINE, KbClient, running_server, server_env

pytestmark = pytest.mark.skipif(not SUPPORTED, reason="no Unix sockets on this platform")

QUERY = "Mexico payments SPEI cut-off"
# Runs the command as `kb` does, then says on stderr which heavy modules it loaded.
PROBE = (
    "import sys\n"
    "from kb_lsp.cli import main\n"
    "try:\n"
    "    code = main(sys.argv[1:])\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    "heavy = sorted(m for m in ('chromadb', 'onnxruntime', 'pydantic') if m in sys.modules)\n"
    "print('loaded:', heavy, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def kb_command(storage: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    where = ["-w", str(workspace), "--storage", str(storage)]
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args, *where],
        capture_output=True,
        text=True,
        env=server_env(storage),
        timeout=300,
    )


async def run_kb(storage: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(kb_command, storage, workspace, *args)


def loaded(done: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in done.stderr.splitlines() if line.startswith("loaded:"))


def paths(response: dict[str, Any]) -> list[str]:
    return [hit["path"] for hit in response["results"]]


async def test_the_command_asks_the_running_server(workspace: Path, storage: Path) -> None:
    async with running_server([workspace], storage) as kb:
        done = await run_kb(storage, workspace, "search", QUERY, "--json")
        assert done.returncode == 0, done.stderr
        assert loaded(done) == "loaded: []"  # answered by the server: no engine here
        via_server = json.loads(done.stdout)
        expected = await kb.search(QUERY)
        assert via_server["results"] and via_server["results"] == expected["results"]

        text = await run_kb(storage, workspace, "search", QUERY)
        assert text.returncode == 0 and loaded(text) == "loaded: []"
        assert text.stdout.splitlines()[0] == "1, payments/mexico-payments.md (filename match)"

        status = await run_kb(storage, workspace, "status", "--json")
        assert status.returncode == 0 and loaded(status) == "loaded: []"
        assert json.loads(status.stdout) == await kb.status()

        schema = await run_kb(storage, workspace, "schema", "--json")
        assert schema.returncode == 0 and loaded(schema) == "loaded: []"
        assert json.loads(schema.stdout) == await kb.request("kb/schema", {})

        # A request the server refuses is the user's to fix, in the command's words.
        long = await run_kb(storage, workspace, "search", "x" * 2001)
        assert long.returncode == 2
        assert long.stderr.startswith("kb: query: String should have at most 2000 characters")
        # A filter field that looks like a typo: the server's "did you mean", word for word.
        typo = await run_kb(storage, workspace, "search", "payments", "-f", "ownr:x")
        assert typo.returncode == 2
        said = [line for line in typo.stderr.splitlines() if line.startswith("kb: ")]
        assert said == [
            "kb: filter, character 1: no indexed file has the field 'ownr'; did you mean "
            "'owner'? (the schema lists every field: kb schema) (in 'ownr:x')"
        ]
        # Any other field no file has keeps nothing, and the command says which (it asks
        # the server for the fields: still nothing heavy loaded here).
        unknown = await run_kb(storage, workspace, "search", "payments", "-f", "bogusfield:x")
        assert unknown.returncode == 0 and loaded(unknown) == "loaded: []"
        assert "kb: no indexed file has the field 'bogusfield'" in unknown.stderr

        # Several commands at once: each gets its own answer.
        many = await asyncio.gather(
            *(run_kb(storage, workspace, "search", q, "--json") for q in [QUERY, "incident"] * 3)
        )
        for q, one in zip([QUERY, "incident"] * 3, many, strict=True):
            assert one.returncode == 0, one.stderr
            assert json.loads(one.stdout)["query"] == q
            assert paths(json.loads(one.stdout)) == paths(await kb.search(q))

    # The server gone (its socket with it), the command finds the same by itself.
    assert not socket_path(store_dir_for(storage, workspace)).exists()
    alone = await run_kb(storage, workspace, "search", QUERY, "--json")
    assert alone.returncode == 0, alone.stderr
    # Answered in this process: the engine loaded, Chroma not (`store/exact.py`).
    assert "pydantic" in loaded(alone) and "chromadb" not in loaded(alone)
    assert json.loads(alone.stdout)["results"] == via_server["results"]


async def test_a_socket_left_by_a_killed_server_is_passed_over(
    workspace: Path, storage: Path
) -> None:
    path = socket_path(store_dir_for(storage, workspace))
    async with running_server([workspace], storage) as kb:
        expected = paths(await kb.search(QUERY))
        assert path.exists()
        kb.process.kill()
        await asyncio.wait_for(kb.process.wait(), DEADLINE)
    assert path.exists()  # nobody removed it: connecting is refused
    done = await run_kb(storage, workspace, "search", QUERY, "--json")
    assert done.returncode == 0, done.stderr
    assert "pydantic" in loaded(done)  # answered in this process
    assert "Traceback" not in done.stderr
    assert paths(json.loads(done.stdout)) == expected

    # The next server takes the place over and listens again.
    async with running_server([workspace], storage) as kb:
        again = await run_kb(storage, workspace, "status", "--json")
        assert again.returncode == 0 and loaded(again) == "loaded: []"
        assert json.loads(again.stdout) == await kb.status()


async def test_bad_messages_on_the_socket_leave_the_server_serving(
    kb: KbClient, workspace: Path, storage: Path
) -> None:
    path = socket_path(store_dir_for(storage, workspace))

    def exchange() -> list[dict[str, Any]]:
        lines = [
            b"{not json\n",
            b'"a string"\n',
            b'{"jsonrpc": "2.0", "id": 7, "method": "kb/ask", "params": {}}\n',
            b'{"jsonrpc": "2.0", "id": 8, "method": "kb/search", "params": {"limit": "x"}}\n',
            b'{"jsonrpc": "2.0", "id": 9, "method": "kb/status"}\n',
        ]
        with socket.socket(socket.AF_UNIX) as raw, raw.makefile("rb") as answers:
            raw.settimeout(DEADLINE)
            raw.connect(str(path))
            out = []
            for line in lines:
                raw.sendall(line)
                out.append(json.loads(answers.readline()))
            return out

    parse, not_request, no_ask, bad_params, fine = await asyncio.to_thread(exchange)
    assert parse["error"]["code"] == -32700 and parse["id"] is None
    assert not_request["error"]["code"] == -32600
    assert no_ask["id"] == 7 and no_ask["error"]["code"] == -32601
    assert bad_params["id"] == 8 and bad_params["error"]["code"] == -32602
    assert "query" in bad_params["error"]["message"] and "limit" in bad_params["error"]["message"]
    assert fine["result"]["state"] == "ready"
    # The editor's side never noticed, and the command line still gets its answers.
    assert (await kb.status())["state"] == "ready"
    done = await run_kb(storage, workspace, "search", QUERY, "--json")
    assert done.returncode == 0 and loaded(done) == "loaded: []"


async def test_the_command_asks_a_running_mcp_server_too(workspace: Path, storage: Path) -> None:
    from .mcp_harness import stdio_kb, structured

    async with stdio_kb([workspace], storage) as mcp:
        served = await mcp.wait_ready()
        status = await run_kb(storage, workspace, "status", "--json")
        assert status.returncode == 0, status.stderr
        assert loaded(status) == "loaded: []"
        got = json.loads(status.stdout)
        assert (got["files"], got["chunks"], got["readOnly"]) == (
            served["files"],
            served["chunks"],
            False,
        )
        done = await run_kb(storage, workspace, "search", QUERY, "--json")
        assert done.returncode == 0 and loaded(done) == "loaded: []"
        hits = structured(await mcp.ok("search", query=QUERY))
        assert paths(json.loads(done.stdout))[:1] == [hit["path"] for hit in hits["results"]][:1]


async def test_while_the_server_indexes_the_command_says_results_are_partial(
    workspace: Path, storage: Path, tmp_path: Path
) -> None:
    from tests.fakes.embedder import HOLD_DIR_VARIABLE

    from .conftest import GATED_EMBEDDER, wait_for

    holds = tmp_path / "holds"
    holds.mkdir()
    (holds / "c.hold").touch()
    (workspace / "held.md").write_text("# Held\n\nHOLD-c\n")
    env = {HOLD_DIR_VARIABLE: str(holds)}
    async with running_server(
        [workspace], storage, embedder=GATED_EMBEDDER, env=env, wait_ready=False
    ) as kb:

        async def held() -> bool:
            return (holds / "c.waiting").exists()

        await wait_for(held, "the first sync to be held in its embedding")
        done = await run_kb(storage, workspace, "search", QUERY, "--mode", "keyword")
        assert loaded(done) == "loaded: []"
        assert done.returncode in (0, 3), done.stderr
        # One line, with how far the server got.
        said = [line for line in done.stderr.splitlines() if line.startswith("kb: ")]
        assert len(said) == 1, done.stderr
        assert said[0].startswith("kb: the running server is still indexing this workspace (")
        assert "(Keyword search ready · embedding " in said[0]
        assert said[0].endswith("); results are partial until it is done")
        (holds / "c.hold").unlink()
        await kb.wait_until_ready()
        after = await run_kb(storage, workspace, "search", QUERY)
        assert after.returncode == 0 and "partial" not in after.stderr
