"""`KbLanguageServer.read`: the reads pool behind every disk-touching handler (search,
status, hover's lookups) answers within a deadline, whatever the read is waiting on."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from kb_lsp.lsp.errors import ServerError
from kb_lsp.lsp.server import KbLanguageServer
from kb_lsp.runtime.deadline import READ_TIMEOUT


@pytest.fixture
def server() -> Iterator[KbLanguageServer]:
    server = KbLanguageServer()
    server.runtime.opened.set_result(None)
    yield server
    server.runtime.close()


async def test_a_read_that_never_ends_is_answered_with_an_error(
    server: KbLanguageServer,
) -> None:
    stuck = threading.Event()  # never set by the read: it stands for a disk that hangs
    release = threading.Event()
    server.read_timeout = 0.2  # the read below cannot end before release: no race

    def hung_read() -> str:
        stuck.set()
        release.wait(300)
        return "late"

    try:
        with pytest.raises(ServerError) as caught:
            await server.read(hung_read)
        assert stuck.is_set()
        assert "did not answer within 0.2 s" in str(caught.value)
        # The other reads keep being answered meanwhile.
        server.read_timeout = READ_TIMEOUT
        assert await server.read(lambda: 42) == 42
    finally:
        release.set()


async def test_a_read_within_the_deadline_returns_its_value(server: KbLanguageServer) -> None:
    assert server.read_timeout == READ_TIMEOUT
    assert await server.read(lambda x, y: x + y, 2, y=3) == 5
