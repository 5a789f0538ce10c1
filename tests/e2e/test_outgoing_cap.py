"""An answer is capped like a request (`lsp/outgoing.py`, `--max-message-size`): one over
the limit is an error naming its size, never a message the client cannot take (a 50 MB
model stream once became a 105 MB answer), and the server goes on serving."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from .conftest import DEADLINE
from .rawlsp import raw_server

pytestmark = pytest.mark.asyncio(loop_scope="function")


async def test_an_answer_over_the_limit_is_an_error_naming_its_size(
    workspace: Path, storage: Path
) -> None:
    async with raw_server(workspace, storage, "--max-message-size", "4096") as server:
        # Sixty skipped files make a status of several KiB; 4,096 bytes is the limit.
        for n in range(60):
            os.mkfifo(workspace / f"skipped-{n:02d}-{'x' * 40}.md")
        loop = asyncio.get_running_loop()
        end = loop.time() + DEADLINE
        while "result" in (reply := await server.request("kb/status", {})):
            assert loop.time() < end, "no kb/status over the limit was refused"
            await asyncio.sleep(0.05)
        assert reply["error"]["code"] == -32001
        said = reply["error"]["message"]
        assert "bytes, over the 4,096 a message may have (--max-message-size)" in said
        # Still serving: an answer within the limit comes as ever.
        shutdown = await server.request("shutdown")
        assert "result" in shutdown and shutdown["result"] is None, shutdown
