"""The transport cannot be killed or desynchronised (`lsp/framing.py`): each malformed
framing gets one -32700 with `id: null` (or, where it is unambiguous, is read as meant),
and the request sent right after it is answered normally."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.conftest import copy_example_workspace

from .rawlsp import RawServer, frame, raw_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

SEARCH = {"query": "Mexico payments", "limit": 3}


def search_body(msg_id: str) -> bytes:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": "kb/search", "params": SEARCH}
    return json.dumps(message).encode()


async def then_a_search_is_answered(server: RawServer, parse_errors: int) -> None:
    """Send a normal kb/search; before its answer exactly `parse_errors` -32700 replies
    with `id: null` must have come, and nothing else."""
    msg_id = server.new_id()
    await server.send(search_body(msg_id))
    replies = await server.replies(msg_id)
    *before, answer = replies
    assert answer["result"]["results"], answer
    assert len(before) == parse_errors, before
    for reply in before:
        assert reply["id"] is None and reply["error"]["code"] == -32700, reply
        assert "Traceback" not in json.dumps(reply) and "data" not in reply["error"]
    assert server.process.returncode is None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RawServer]:
    """One server for the module: each test leaves the stream in step (its last check is
    an answered search), so the next test starts from a clean stream."""
    base = tmp_path_factory.mktemp("framing")
    storage = base / "storage"
    storage.mkdir()
    async with raw_server(copy_example_workspace(base / "workspace"), storage) as running:
        yield running


async def test_a_huge_content_length_does_not_kill_the_server(server: RawServer) -> None:
    await server.send_bytes(b"Content-Length: 1000000000000\r\n\r\n" + search_body("lost"))
    message = await server.next_reply()
    assert message["id"] is None and message["error"]["code"] == -32700
    assert "larger than the limit of 64 MiB" in message["error"]["message"]
    await then_a_search_is_answered(server, 0)


async def test_the_limit_is_a_flag_and_an_oversized_body_is_skipped(
    workspace: Path, storage: Path
) -> None:
    async with raw_server(workspace, storage, "--max-message-size", "4096") as server:
        big = {
            "jsonrpc": "2.0",
            "id": "big",
            "method": "kb/search",
            "params": {"query": "x" * 1000, "paths": ["y" * 100] * 40},
        }
        await server.send(big)
        message = await server.next_reply()
        assert message["id"] is None and message["error"]["code"] == -32700
        assert "4096 bytes" in message["error"]["message"]
        await then_a_search_is_answered(server, 0)


async def test_content_length_too_short(server: RawServer) -> None:
    body = search_body("short")
    await server.send_bytes(b"Content-Length: %d\r\n\r\n" % (len(body) // 2) + body)
    await then_a_search_is_answered(server, 1)


async def test_content_length_too_long(server: RawServer) -> None:
    body = search_body("long")
    await server.send_bytes(b"Content-Length: %d\r\n\r\n" % (len(body) + 40) + body)
    await then_a_search_is_answered(server, 1)


async def test_content_length_zero(server: RawServer) -> None:
    await server.send_bytes(b"Content-Length: 0\r\n\r\n" + search_body("zero"))
    await then_a_search_is_answered(server, 1)


@pytest.mark.parametrize(
    "value", [b"-5", b"abc", b"12abc", b"", b"1e3", b"99999999999999999999999"]
)
async def test_content_length_not_a_number(server: RawServer, value: bytes) -> None:
    await server.send_bytes(b"Content-Length: " + value + b"\r\n\r\n" + search_body("nan"))
    await then_a_search_is_answered(server, 1)


async def test_no_content_length_header(server: RawServer) -> None:
    await server.send_bytes(
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + search_body("no")
    )
    await then_a_search_is_answered(server, 1)


async def test_lf_only_line_ends_are_read_as_meant(server: RawServer) -> None:
    body = search_body("lf")
    await server.send_bytes(b"Content-Length: %d\n\n" % len(body) + body)
    assert (await server.response("lf"))["result"]["results"]
    await then_a_search_is_answered(server, 0)


async def test_a_lowercase_header_is_read_as_meant(server: RawServer) -> None:
    body = search_body("lower")
    await server.send_bytes(
        b"content-length: %d\r\ncontent-type: application/vscode-jsonrpc\r\n\r\n" % len(body) + body
    )
    assert (await server.response("lower"))["result"]["results"]
    await then_a_search_is_answered(server, 0)


async def test_binary_garbage(server: RawServer) -> None:
    garbage = bytes(range(256)) * 64 + b"\r\n\r\n\x00\xff" * 100
    await server.send_bytes(garbage)
    await then_a_search_is_answered(server, 1)


async def test_json_without_a_header(server: RawServer) -> None:
    await server.send_bytes(search_body("bare") + b"\r\n")
    await then_a_search_is_answered(server, 1)


async def test_a_body_that_is_not_json(server: RawServer) -> None:
    await server.send(b"{this is not json")
    await then_a_search_is_answered(server, 1)


async def test_several_bad_frames_in_one_write(server: RawServer) -> None:
    body = search_body("x")
    await server.send_bytes(
        b"Content-Length: -1\r\n\r\n"
        + body
        + frame(b"[1, 2")
        + b"Content-Length: %d\r\n\r\n" % (len(body) + 10)
        + body
    )
    await then_a_search_is_answered(server, 3)
