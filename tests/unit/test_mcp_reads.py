"""The MCP server's reads answer within a deadline, as the language server's do: a read
that hangs (a disk that stops answering) becomes a tool error the agent can act on, and
the next call is served."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from mcp.client import Client
from mcp.types import TextContent
from tests.helpers.runtime import editor_runtime

from kb_lsp.mcp.server import KbMcpServer
from kb_lsp.runtime import Runtime
from kb_lsp.runtime.deadline import READ_TIMEOUT


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    runtime = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
    runtime.opened.set_result(None)  # operations wait for the opening (`dispatch.py`)
    yield runtime
    runtime.close()


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return " ".join(part.text for part in content if isinstance(part, TextContent))


async def test_a_read_that_never_ends_is_a_tool_error_and_the_next_call_is_served(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = KbMcpServer(runtime)
    assert server.read_timeout == READ_TIMEOUT
    real_status = runtime.status
    stuck = threading.Event()  # set by the read: the timeout below is on a read that started
    release = threading.Event()  # never set before the call gives up: no race

    def hung_status() -> object:
        stuck.set()
        release.wait(300)
        return real_status()

    server.read_timeout = 0.2
    monkeypatch.setattr(runtime, "status", hung_status)
    try:
        async with Client(server) as client:
            failed = await client.call_tool("status", {})
            assert failed.is_error
            assert stuck.is_set()
            message = _text(failed)
            assert "did not answer within 0.2 s" in message
            assert "try again" in message and "status()" in message

            monkeypatch.setattr(runtime, "status", real_status)
            server.read_timeout = READ_TIMEOUT
            served = await client.call_tool("status", {})
            assert not served.is_error, _text(served)
            assert served.structured_content is not None
    finally:
        release.set()
