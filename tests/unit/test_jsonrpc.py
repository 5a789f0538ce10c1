"""`lsp/jsonrpc.KbProtocol` on its own: what each malformed message is answered with (the
answers are captured where they would be written)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from kb_lsp.json_bounds import request_id
from kb_lsp.lsp.jsonrpc import KbProtocol, plain_converter


class Captured:
    """A protocol whose answers are written, as JSON bodies, into `sent`."""

    def __init__(self) -> None:
        server = LanguageServer(
            "test", "0", protocol_cls=KbProtocol, converter_factory=plain_converter
        )
        self.protocol: KbProtocol = server.protocol  # type: ignore[assignment]
        self.protocol.initialize_seen = True
        self.sent: list[dict[str, Any]] = []
        self.protocol.set_writer(self, include_headers=False)

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def close(self) -> None:
        pass

    def receive(self, message: Any) -> list[dict[str, Any]]:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.sent.clear()
        self.protocol.receive(body)
        return list(self.sent)


@pytest.fixture
def rpc() -> Captured:
    return Captured()


def answers(sent: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    return [(reply["error"]["code"], reply["id"]) for reply in sent]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ([], [(-32600, None)]),
        ([{"jsonrpc": "2.0", "id": 1, "method": "kb/status"}], [(-32600, None)]),
        ("text", [(-32600, None)]),
        (None, [(-32600, None)]),
        ({"jsonrpc": "2.0", "id": 5, "method": 123}, [(-32600, 5)]),
        ({"jsonrpc": "2.0", "method": 123}, [(-32600, None)]),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "kb/status"}, [(-32600, None)]),
        ({"jsonrpc": "2.0", "id": True, "method": "kb/status"}, [(-32600, None)]),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "kb/status"}, [(-32600, None)]),
        ({"jsonrpc": "2.0", "id": None, "method": "kb/status"}, [(-32600, None)]),
        ({"id": "a", "method": "kb/status"}, [(-32600, "a")]),
        ({"jsonrpc": "1.0", "id": "a", "method": "kb/status"}, [(-32600, "a")]),
        ({"jsonrpc": "2.0", "id": "a", "method": "kb/status", "params": 5}, [(-32600, "a")]),
        ({"jsonrpc": "2.0", "id": "a"}, [(-32600, "a")]),
        ({"foo": "bar"}, [(-32600, None)]),
        (
            {"jsonrpc": "2.0", "id": 9, "method": "textDocument/didSave", "params": {}},
            [(-32600, 9)],
        ),
        ({"jsonrpc": "2.0", "id": 9, "method": "exit"}, [(-32600, 9)]),
        ({"jsonrpc": "2.0", "id": 9, "method": "textDocument/hover", "params": {}}, [(-32602, 9)]),
        ({"jsonrpc": "2.0", "id": 9, "method": "kb/nothing"}, [(-32601, 9)]),
        # Not answered: a request method sent as a notification, a stray response, a
        # notification whose params do not fit.
        ({"jsonrpc": "2.0", "method": "kb/search", "params": {"query": "x"}}, []),
        ({"jsonrpc": "2.0", "id": "not-mine", "result": 1}, []),
        ({"jsonrpc": "2.0", "id": "not-mine", "error": "broken"}, []),
        ({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": 5}}, []),
        (b"{", [(-32700, None)]),
        (b"[" * 70 + b"]" * 70, [(-32700, None)]),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"kb/search","params":{"limit":'
            + b"9" * 5000
            + b"}}",
            [(-32602, 1)],  # too large to parse, but answered under its id
        ),
    ],
)
async def test_each_malformed_message_gets_what_json_rpc_says(
    rpc: Captured, message: Any, expected: list[tuple[int, Any]]
) -> None:
    sent = rpc.receive(message)
    assert answers(sent) == expected
    for reply in sent:
        assert reply["jsonrpc"] == "2.0" and "data" not in reply["error"]
        assert "id" in reply  # `id: null` is written out, not left out


async def test_a_message_shaped_dict_in_params_is_data(rpc: Captured) -> None:
    seen: list[Any] = []

    @rpc.protocol.fm.feature("kb/echo")
    def echo(params: Any) -> Any:
        seen.append(params)
        return params

    inner = {"jsonrpc": "2.0", "id": 1, "method": "kb/status"}
    rpc.receive({"jsonrpc": "2.0", "id": "e", "method": "kb/echo", "params": {"inner": inner}})
    assert seen == [{"inner": inner}]


def request(msg_id: int, method: str, params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


async def test_internal_errors_carry_no_traceback(
    rpc: Captured, caplog: pytest.LogCaptureFixture
) -> None:
    @rpc.protocol.fm.feature("kb/search")
    def search(params: Any) -> Any:
        raise ZeroDivisionError("boom")

    with caplog.at_level(logging.INFO, logger="kb_lsp"):
        (reply,) = rpc.receive(request(7, "kb/search", {"query": "x"}))
    assert reply["id"] == 7
    assert reply["error"] == {
        "code": -32603,
        "message": "Internal error in kb/search: ZeroDivisionError: boom "
        "(the details are in the kb-lsp log)",
    }
    assert any(r.exc_info for r in caplog.records)  # the traceback is in the log


async def test_errors_with_data_lose_it_and_are_logged_as_one_line(
    rpc: Captured, caplog: pytest.LogCaptureFixture
) -> None:
    @rpc.protocol.fm.feature("kb/search")
    def search(params: Any) -> Any:
        raise JsonRpcException("no", code=-32602, data={"traceback": ["x"]})

    body = request(8, "kb/search", {"query": "x" * 60})
    with caplog.at_level(logging.INFO, logger="kb_lsp"):
        sent = rpc.receive(body)
    assert sent == [{"jsonrpc": "2.0", "id": 8, "error": {"code": -32602, "message": "no"}}]
    (record,) = [r for r in caplog.records if "rejected" in r.getMessage()]
    assert record.getMessage() == f"rejected kb/search (id 8): -32602 no [{len(body)} bytes]"
    assert record.exc_info is None


async def test_requests_after_shutdown_are_refused(rpc: Captured) -> None:
    assert rpc.receive({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}) == [
        {"jsonrpc": "2.0", "id": 2, "result": None}
    ]
    sent = rpc.receive({"jsonrpc": "2.0", "id": 3, "method": "kb/status"})
    assert answers(sent) == [(-32600, 3)]
    assert sent[0]["error"]["message"] == "The server is shutting down"


# --- too deep or too large to parse, yet answered under the request's id ---------------------


async def test_a_request_too_deep_is_answered_under_its_id(rpc: Captured) -> None:
    deep = b"[" * 100 + b"]" * 100
    body = b'{"jsonrpc": "2.0", "id": 41, "method": "kb/search", "params": {"q": ' + deep + b"}}"
    sent = rpc.receive(body)
    assert answers(sent) == [(-32600, 41)]
    assert "nested more than 64 deep" in sent[0]["error"]["message"]


async def test_a_number_too_large_is_answered_under_its_id(rpc: Captured) -> None:
    body = b'{"params": {"limit": ' + b"7" * 25 + b'}, "method": "kb/search", "id": "x-1", '
    body += b'"jsonrpc": "2.0"}'
    sent = rpc.receive(body)
    assert answers(sent) == [(-32602, "x-1")]
    assert "25 digits" in sent[0]["error"]["message"]


async def test_an_id_too_large_itself_cannot_be_answered_under_it(rpc: Captured) -> None:
    body = b'{"jsonrpc": "2.0", "id": ' + b"1" * 25 + b', "method": "kb/status"}'
    assert answers(rpc.receive(body)) == [(-32700, None)]


JSON_SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)
IDS = st.integers(-(10**19), 10**19) | st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    members=st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4),
    msg_id=IDS,
    method=st.text(max_size=12),
    order=st.randoms(use_true_random=False),
    spaced=st.booleans(),
)
def test_request_id_finds_what_a_parser_would(
    members: dict[str, Any], msg_id: int | str, method: str, order: Any, spaced: bool
) -> None:
    message = {**members, "id": msg_id, "method": method}
    items = list(message.items())
    order.shuffle(items)
    separators = (", ", ": ") if spaced else (",", ":")
    body = json.dumps(dict(items), separators=separators, ensure_ascii=order.random() < 0.5)
    assert request_id(body.encode()) == (msg_id, method)
