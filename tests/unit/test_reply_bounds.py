"""A model's reply is bounded on our side (`engine/llm/bounds.py`): a server that never
stops streaming, or streams megabytes, ends as a reply cut at the limit — it once held
`kb index --extract` for ever and made a 105 MB LSP answer — and an outgoing LSP message
is capped like an incoming one (`lsp/outgoing.py`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.fakes.ollama_server import ScriptedOllama, Turn
from tests.fakes.openai_server import ScriptedOpenAI

from kb_lsp.config import load_settings
from kb_lsp.engine.llm import ChatModel, create_llm
from kb_lsp.engine.llm.bounds import MIN_BYTES, ReplyBounds
from kb_lsp.engine.llm.stream import LineTooLong, Piece, lines
from kb_lsp.lsp.outgoing import write_capped

USER = [{"role": "user", "content": "hello"}]
DEADLINE = 60.0


def model_for(server: ScriptedOllama, max_tokens: int = 64) -> ChatModel:
    if isinstance(server, ScriptedOpenAI):
        llm = {"provider": "openai", "baseUrl": server.base_url}
    else:
        llm = {"provider": "ollama", "baseUrl": server.url}
    settings = load_settings({"llm": {**llm, "timeout": 30, "maxTokens": max_tokens}})
    return create_llm(settings.settings)


@pytest.fixture(params=["ollama", "openai"])
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedOllama]:
    kind = ScriptedOpenAI if request.param == "openai" else ScriptedOllama
    with kind() as scripted:
        yield scripted
    assert scripted.errors == []


def test_an_endless_stream_ends_cut_at_the_token_bound(server: ScriptedOllama) -> None:
    server.add(Turn(content="more ", chunk_chars=5, endless=True))
    result = model_for(server, max_tokens=64).chat(USER)
    assert result.truncated and result.done_reason == "length"
    assert result.content.startswith("more more")
    assert len(result.content) <= 5 * (2 * 64 + 16)
    assert server.hung_up.wait(DEADLINE)  # the connection was dropped, not read on


def test_a_stream_of_megabytes_ends_cut_at_the_byte_bound(server: ScriptedOllama) -> None:
    deltas: list[str] = []
    server.add(Turn(content="x" * 20_000, chunk_chars=20_000, endless=True))
    result = model_for(server, max_tokens=64).chat(USER, on_delta=lambda d: deltas.append(d.text))
    assert result.truncated
    assert MIN_BYTES - 20_000 < len(result.content) <= MIN_BYTES
    assert sum(len(text) for text in deltas) == len(result.content)  # nothing shown past it
    assert server.hung_up.wait(DEADLINE)


def test_extraction_from_an_endless_stream_ends() -> None:
    """The extractor's call is bounded like an answer: the reply cut, no fields."""
    from kb_lsp.engine.metadata.extractor import FieldExtractor
    from kb_lsp.engine.metadata.user_schema import parse_schema

    schema = parse_schema('{"properties": {"owner": {"type": "string"}}}', "s")
    with ScriptedOllama([Turn(content='{"owner": "a', endless=True)]) as server:
        found = FieldExtractor(model_for(server, max_tokens=2048), schema).extract("T", "text")
    assert found.failed and found.fields == {}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_each_bound_in_turn() -> None:
    clock = Clock()
    bounds = ReplyBounds(tokens=10, timeout=5.0, clock=clock)
    assert (bounds.max_pieces, bounds.max_bytes, bounds.max_seconds) == (36, MIN_BYTES, 15.0)
    for _ in range(36):
        assert bounds.passed(Piece(content="a")) is None
    assert bounds.passed(Piece(content="a")) == "36 pieces (10 tokens were asked for)"

    big = ReplyBounds(tokens=10, timeout=5.0, clock=clock)
    assert big.passed(Piece(content="a" * MIN_BYTES)) is None
    assert big.passed(Piece(fragments=[(0, "id", "f", "{")])) == f"{MIN_BYTES:,} bytes"

    slow = ReplyBounds(tokens=10, timeout=5.0, clock=clock)
    assert slow.passed(Piece(content="a")) is None
    clock.now += 15.5  # a trickle the silence timeout never ends
    assert slow.passed(Piece(content="a")) == "15 seconds"


def test_a_line_longer_than_a_reply_is_refused_as_it_comes() -> None:
    assert list(lines([b"a\r\nb", b"c\n", b"d"], 10)) == ["a", "bc", "d"]
    endless = (b"x" * 1000 for _ in range(10**9))
    with pytest.raises(LineTooLong, match="more than 4,096 bytes"):
        list(lines(endless, 4096))


class Writer:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


class Protocol:
    """What `write_capped` uses of pygls' protocol."""

    CONTENT_TYPE = "application/vscode-jsonrpc"
    CHARSET = "utf-8"
    _include_headers = True

    def __init__(self) -> None:
        self.writer = Writer()

    def _serialize_message(self, data: Any) -> Any:
        return data


def body_of(framed: bytes) -> dict[str, Any]:
    header, _, body = framed.partition(b"\r\n\r\n")
    assert int(header.split(b"\r\n")[0].split(b":")[1]) == len(body)
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def test_an_outgoing_answer_over_the_cap_is_an_error_and_a_notification_is_not_sent() -> None:
    protocol = Protocol()
    small = {"jsonrpc": "2.0", "id": 1, "result": {"answer": "short"}}
    write_capped(protocol, small, 4096)
    huge = {"jsonrpc": "2.0", "id": 2, "result": {"answer": "x" * 10_000}}
    write_capped(protocol, huge, 4096)
    event = {"jsonrpc": "2.0", "method": "kb/askEvent", "params": {"text": "x" * 10_000}}
    write_capped(protocol, event, 4096)
    first, second = (body_of(framed) for framed in protocol.writer.written)
    assert first == small
    assert second["id"] == 2 and second["error"]["code"] == -32001
    assert "over the 4,096 a message may have (--max-message-size)" in second["error"]["message"]
