"""Adding a read-only operation is one module with its body and one row (docs/design.md,
"Adding an operation"): a toy operation, made in this test only, is served on the LSP,
the local socket, MCP and the command line, with its params checked on each."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.client.client import Client
from mcp.types import TextContent
from pydantic import BaseModel, Field
from pygls.exceptions import JsonRpcInvalidParams
from tests.helpers.cli import HASHING
from tests.helpers.runtime import editor_runtime

from kb_lsp import cli
from kb_lsp.config import load_settings
from kb_lsp.contract.operations import Call, Operation
from kb_lsp.engine.storage import store_dir_for
from kb_lsp.listener import Listener
from kb_lsp.lsp import features
from kb_lsp.lsp.server import KbLanguageServer
from kb_lsp.mcp import tools
from kb_lsp.mcp.server import KbMcpServer
from kb_lsp.mcp.tools import READ_ONLY, ToolRow
from kb_lsp.runtime import Runtime, registry
from kb_lsp.runtime.registry import bind

# --- the operation: its params and result, its body, its row ---------------------------


class EchoParams(BaseModel):
    text: str = Field(min_length=1, max_length=40, description="What to say back.")
    times: int = Field(default=1, ge=1, le=3, description="How many times.")
    shout: bool = Field(default=False, description="Say it in capitals.")


class EchoResult(BaseModel):
    echo: str
    files: int


def echo(rt: Runtime, params: EchoParams, call: Call) -> EchoResult:
    """The body (in the product, a module of `runtime/operations/`): reads the index."""
    files = rt.read(lambda kb: len(kb.files()))
    said = " ".join([params.text] * params.times)
    return EchoResult(echo=said.upper() if params.shout else said, files=files)


ECHO = Operation(
    "kb/toyEcho",
    EchoParams,
    EchoResult,
    "reads",
    "Say the text back, with how many files are indexed.",
    local=True,
    cli="toy-echo",
)
ECHO_TOOL = ToolRow(
    "toy_echo",
    ECHO,
    "Echo",
    "Say the text back (a test's operation).",
    READ_ONLY,
    lambda result, _: result.echo,
)


@pytest.fixture
def served() -> Iterator[None]:
    unbind = registry.register(bind(ECHO, echo))
    untool = tools.register(ECHO_TOOL)
    yield
    untool()
    unbind()


@pytest.fixture
def runtime(
    served: None, workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Runtime]:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    runtime = editor_runtime(watch=False, probe_llm=False, take_over=False, log_file=False)
    runtime.open([workspace], load_settings({"storage": str(storage)}).settings).result()
    runtime.reindex().result()
    yield runtime
    runtime.close()


def indexed(runtime: Runtime) -> int:
    return runtime.status().files


async def test_served_on_the_lsp(runtime: Runtime) -> None:
    server = KbLanguageServer()
    server.runtime.close()
    server.runtime = runtime
    features.register(server)
    handler = server.protocol.fm.features["kb/toyEcho"]
    assert await handler({"text": "hi", "times": 2}) == {"echo": "hi hi", "files": indexed(runtime)}
    with pytest.raises(JsonRpcInvalidParams, match="kb/toyEcho: times"):
        await handler({"text": "hi", "times": 9})
    command = server.protocol.fm.commands["kb.toyEcho"]
    assert (await command({"text": "yo"}))["echo"] == "yo"


def test_served_on_the_local_socket(runtime: Runtime, workspace: Path, storage: Path) -> None:
    listener = Listener(runtime, store_dir_for(workspace, storage))
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "kb/toyEcho", "params": {"text": "a"}})
    answer = listener.answer(line.encode())
    assert answer is not None and answer["result"] == {"echo": "a", "files": indexed(runtime)}
    bad = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "kb/toyEcho", "params": {}})
    refused = listener.answer(bad.encode())
    assert refused is not None and refused["error"]["code"] == -32602
    assert "text" in refused["error"]["message"]


async def test_served_on_mcp(runtime: Runtime) -> None:
    async with Client(KbMcpServer(runtime)) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert "toy_echo" in listed
        result = await client.call_tool("toy_echo", {"text": "ok", "times": 3})
        assert not result.is_error
        assert result.structured_content == {"echo": "ok ok ok", "files": indexed(runtime)}
        texts = [part.text for part in result.content if isinstance(part, TextContent)]
        assert texts == ["ok ok ok"]


def test_served_on_the_command_line(
    served: None,
    workspace: Path,
    storage: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    where = ["-w", str(workspace), "--storage", str(storage)]
    assert cli.main(["toy-echo", "--text", "cli", "--times", "2", *where]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["echo"] == "cli cli" and printed["files"] > 0
    with pytest.raises(SystemExit) as refused:
        cli.main(["toy-echo", "--text", "cli", "--times", "7", *where])
    assert refused.value.code == 2
    assert "times" in capsys.readouterr().err


def test_a_new_field_is_a_flag_of_its_command(
    served: None,
    workspace: Path,
    storage: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`shout`, a field of the toy's params only, is `kb toy-echo --shout`, described as
    the field is, with nothing in `cli/` naming it."""
    with pytest.raises(SystemExit) as helped:
        cli.main(["toy-echo", "--help"])
    assert helped.value.code == 0
    shown = capsys.readouterr().out
    assert "--shout" in shown and "say it in capitals" in shown
    assert "--times TIMES" in shown and "how many times" in shown
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    where = ["-w", str(workspace), "--storage", str(storage)]
    assert cli.main(["toy-echo", "--text", "hey", "--shout", *where]) == 0
    assert json.loads(capsys.readouterr().out)["echo"] == "HEY"
