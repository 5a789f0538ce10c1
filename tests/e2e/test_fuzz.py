"""A bounded fuzz of the real server over stdio: about 1,000 hostile and normal messages
from a fixed seed, written back to back. Each message that is due an answer gets exactly
one, with the code JSON-RPC 2.0 says (`Case.expect`); notifications get none; the server
stays up and answers a normal `kb/search` afterwards.

Run with `-s` to see the figures (messages sent, answers by code).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import DEADLINE
from .rawlsp import frame, raw_server

SEED = 20260601
MESSAGES = 1000

PARSE_ERROR = -32700
RESULT = 0  # `expect` for a request answered with a result
NONE = None  # `expect` for a message that must get no answer


@dataclass
class Case:
    data: bytes  # exactly what is written
    expect: int | None  # RESULT, an error code, or NONE
    reply_id: Any = None  # the id the answer carries (None: `id: null`)
    what: str = ""
    # False for bytes that do not start with a `Content-Length: N` line (garbage, a
    # negative length): right after a -32700 they are skipped as the rest of that bad
    # message, so the one error covers both (lsp/framing.py).
    framed: bool = True


class Fuzzer:
    def __init__(self, rng: random.Random, workspace: Path) -> None:
        self.rng = rng
        self.uri = (workspace / "glossary.md").as_uri()
        self.count = 0

    def new_id(self) -> Any:
        self.count += 1
        return self.count if self.rng.random() < 0.5 else f"f{self.count}"

    def request(
        self, method: Any, params: Any, expect: int, *, envelope: dict[str, Any] | None = None
    ) -> Case:
        msg_id = self.new_id()
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, **(envelope or {})}
        if params is not ...:
            message["params"] = params
        return Case(frame(json.dumps(message)), expect, msg_id, f"{method!r} {params!r}"[:120])

    def notification(self, method: str, params: Any) -> Case:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        return Case(frame(json.dumps(message)), NONE, None, f"notification {method}")

    def null_reply(self, body: bytes | str, code: int, what: str) -> Case:
        return Case(frame(body), code, None, what)

    # --- generators, one per kind of message -------------------------------------------

    def valid(self) -> Case:
        choice = self.rng.randrange(4)
        if choice == 0:
            return self.request("kb/status", self.rng.choice([{}, ..., None]), RESULT)
        if choice == 1:
            words = ["Mexico", "payments", "incident", "glossary", "SPEI", "ünïcødé", "🙂"]
            params: dict[str, Any] = {"query": " ".join(self.rng.sample(words, 2))}
            if self.rng.random() < 0.5:
                params["limit"] = self.rng.randint(1, 100)
            if self.rng.random() < 0.3:
                params["mode"] = self.rng.choice(["hybrid", "semantic", "keyword"])
            if self.rng.random() < 0.3:
                params["paths"] = self.rng.choice([["**/*.md"], ["payments/"], ["!x", "*"]])
            if self.rng.random() < 0.3:  # a message-shaped dict inside params is data
                params["extra"] = {"jsonrpc": "2.0", "id": 1, "method": "kb/status"}
            return self.request("kb/search", params, RESULT)
        if choice == 2:
            position = {"line": self.rng.randint(0, 50), "character": self.rng.randint(0, 80)}
            params = {"textDocument": {"uri": self.uri}, "position": position}
            return self.request("textDocument/hover", params, RESULT)
        command = {"command": "kb.status", "arguments": [{}]}
        return self.request("workspace/executeCommand", command, RESULT)

    def bad_params(self) -> Case:
        big = 10**18
        method, params = self.rng.choice(
            [
                ("kb/search", {"query": "x", "limit": True}),
                ("kb/search", {"query": "x", "limit": 0}),
                ("kb/search", {"query": "x", "limit": 101}),
                ("kb/search", {"query": "x", "limit": 2.5}),
                ("kb/search", {"query": "x", "limit": "3"}),
                ("kb/search", {"query": "x", "limit": big}),
                ("kb/search", {"query": ""}),
                ("kb/search", {"query": 5}),
                ("kb/search", {"query": "x" * 2001}),
                ("kb/search", {"query": "x", "paths": ["!"]}),
                ("kb/search", {"query": "x", "paths": ["\\"]}),
                ("kb/search", {"query": "x", "paths": "notes/"}),
                ("kb/search", {"query": "x", "mode": "psychic"}),
                ("kb/search", {}),
                ("kb/search", ["not", "an", "object"]),
                ("kb/openResult", {"n": 0}),
                ("kb/openResult", {"n": True}),
                ("kb/openResult", {"n": big}),
                ("kb/openResult", {"n": "1"}),
                ("kb/ask", {"question": "why", "n": big}),
                ("kb/ask", {"question": "why", "n": True}),
                ("kb/ask", {"question": ""}),
                ("kb/ask", {}),
                ("kb/summarize", {"n": True}),
                ("kb/summarize", {"n": big}),
                ("kb/reindex", {"full": 1}),
                ("kb/reindex", {"full": "yes"}),
                ("textDocument/hover", {"textDocument": 42}),
                ("textDocument/hover", {"textDocument": {"uri": self.uri}}),
                ("textDocument/hover", []),
                ("workspace/executeCommand", {"command": "kb.search", "arguments": [{}]}),
            ]
        )
        return self.request(method, params, -32602)

    def unknown_method(self) -> Case:
        name = self.rng.choice(["kb/nothing", "", "textDocument/nope", "$/x", "a" * 300])
        return self.request(name, {}, -32601)

    def bad_envelope(self) -> Case:
        kind = self.rng.randrange(9)
        if kind == 0:
            method = self.rng.choice([123, None, [], {}, True, 1.5])
            return self.request(method, {}, -32600)
        if kind == 1:
            bad_id = self.rng.choice([{}, [], True, 1.5, None, {"id": 1}])
            body = {"jsonrpc": "2.0", "id": bad_id, "method": "kb/status", "params": {}}
            return self.null_reply(json.dumps(body), -32600, f"id {bad_id!r}")
        if kind == 2:
            version = self.rng.choice([..., "1.0", 2, None, "2"])
            envelope = {} if version is ... else {"jsonrpc": version}
            case = self.request("kb/status", {}, -32600, envelope=envelope)
            if version is ...:
                message = json.loads(case.data.split(b"\r\n\r\n", 1)[1])
                del message["jsonrpc"]
                case.data = frame(json.dumps(message))
            return case
        if kind == 3:
            params = self.rng.choice(["text", 5, True, 1.5])
            return self.request("kb/status", params, -32600)
        if kind == 4:
            msg_id = self.new_id()
            body = {"jsonrpc": "2.0", "id": msg_id, "params": {}}
            return Case(frame(json.dumps(body)), -32600, msg_id, "no method")
        if kind == 5:
            body = self.rng.choice(["[]", "[{}]", json.dumps([{"jsonrpc": "2.0", "id": 1}])])
            return self.null_reply(body, -32600, "batch")
        if kind == 6:
            body = self.rng.choice(['"text"', "5", "null", "true", "1.5"])
            return self.null_reply(body, -32600, f"scalar {body}")
        if kind == 7:
            method = self.rng.choice(
                ["$/cancelRequest", "initialized", "textDocument/didSave", "$/setTrace", "exit"]
            )
            return self.request(method, {}, -32600)
        body = {"jsonrpc": "2.0", "id": "x", "method": "kb/status", "unknown": {"a": [1]}}
        body["id"] = self.new_id()
        return Case(frame(json.dumps(body)), RESULT, body["id"], "extra member")

    def parse_error(self) -> Case:
        kind = self.rng.randrange(7)
        # Too deep or too large to parse, but the id is found: answered under it.
        if kind == 0:
            depth = self.rng.choice([65, 1000, 100_000])
            params = "[" * depth + "]" * depth
            msg_id = self.new_id()
            body = f'{{"jsonrpc":"2.0","id":{json.dumps(msg_id)},"method":"kb/search","params":'
            return Case(frame(body + params + "}"), -32600, msg_id, f"nested {depth}")
        if kind == 1:
            digits = self.rng.choice([21, 4301, 100_000])
            msg_id = self.new_id()
            body = '{"jsonrpc":"2.0","method":"kb/search","params":{"query":"x",'
            body += f'"limit":{"9" * digits}}},"id":{json.dumps(msg_id)}}}'
            return Case(frame(body), -32602, msg_id, f"big int ({digits} digits)")
        if kind == 2:
            return self.null_reply(
                self.rng.choice(["{", '{"a":', "}", "[1,]", "{'a':1}"]), -32700, "bad json"
            )
        if kind == 3:
            return self.null_reply(
                '{"jsonrpc":"2.0","id":1,"method":"kb/search","params":{"limit":NaN}}',
                -32700,
                "NaN",
            )
        if kind == 4:
            return self.null_reply(b'{"jsonrpc":"2.0","method":"\xff\xfe"}', -32700, "not utf-8")
        if kind == 5:
            noise = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 200)))
            return self.null_reply(b"{" + noise, -32700, "noise")
        return self.null_reply(b"", -32700, "empty body")

    def framing(self) -> Case:
        kind = self.rng.randrange(4)
        if kind == 0:
            return Case(b"Content-Length: 99999999999\r\n\r\n", -32700, None, "huge length")
        if kind == 1:
            return Case(b"Content-Length: -3\r\n\r\n{}", -32700, None, "negative", False)
        if kind == 2:
            noise = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 300)))
            garbage = b"\x00" + noise.replace(b"ontent", b"xxxxxx")
            return Case(garbage, -32700, None, "garbage", False)
        body = json.dumps({"jsonrpc": "2.0", "id": "cut", "method": "kb/status"}).encode()
        return Case(b"Content-Length: %d\r\n\r\n" % (len(body) - 5) + body, -32700, None, "short")

    def silent(self) -> Case:
        kind = self.rng.randrange(5)
        if kind == 0:
            return self.notification("$/cancelRequest", {"id": "never-sent"})
        if kind == 1:
            return self.notification("$/setTrace", {"value": "off"})
        if kind == 2:  # a request method without an id: a notification, never answered
            return self.notification("kb/search", {"query": "x"})
        if kind == 3:  # a notification whose params do not fit: dropped
            return self.notification("textDocument/didSave", {"textDocument": 5})
        response = {"jsonrpc": "2.0", "id": "not-mine", "result": None}
        return Case(frame(json.dumps(response)), NONE, None, "a stray response")

    def cases(self, count: int) -> list[Case]:
        weighted: list[tuple[Callable[[], Case], int]] = [
            (self.valid, 20),
            (self.bad_params, 25),
            (self.unknown_method, 5),
            (self.bad_envelope, 20),
            (self.parse_error, 12),
            (self.framing, 6),
            (self.silent, 12),
        ]
        makers = [maker for maker, weight in weighted for _ in range(weight)]
        cases = [self.rng.choice(makers)() for _ in range(count)]
        skipping = False  # is the server dropping bytes up to the next header?
        for case in cases:
            if skipping and not case.framed:
                case.expect, case.what = NONE, f"{case.what} (after an error: one error)"
            skipping = case.expect == PARSE_ERROR or (skipping and not case.framed)
        return cases


def code_of(reply: dict[str, Any]) -> int:
    return RESULT if "result" in reply else int(reply["error"]["code"])


@pytest.mark.timeout(600)
async def test_fuzz_every_message_gets_the_answer_it_is_due(workspace: Path, storage: Path) -> None:
    cases = Fuzzer(random.Random(SEED), workspace).cases(MESSAGES)
    due = {
        case.reply_id: case
        for case in cases
        if case.expect is not NONE and case.reply_id is not None
    }
    null_due = Counter(
        case.expect for case in cases if case.expect is not NONE and case.reply_id is None
    )
    async with raw_server(workspace, storage) as server:
        for case in cases:
            await server.send_bytes(case.data)
        answers: dict[Any, list[dict[str, Any]]] = {}
        nulls: Counter[int] = Counter()
        expected = len(due) + sum(null_due.values())
        received = 0
        loop = asyncio.get_running_loop()
        end = loop.time() + DEADLINE * 3
        while received < expected and loop.time() < end:
            try:
                message = await server.read_message(timeout=DEADLINE)
            except TimeoutError:
                break  # the assertions below say which answers are missing
            if "method" in message:
                server.notifications.append(message)
                continue
            received += 1
            if message.get("id") is None:
                nulls[code_of(message)] += 1
            else:
                answers.setdefault(message["id"], []).append(message)
            assert "data" not in message.get("error", {}), message
        # Then a normal search is answered, after everything sent before it.
        final = await server.request("kb/search", {"query": "Mexico payments"})
        alive = server.process.returncode is None

    by_code: Counter[int] = Counter(nulls)
    wrong = []
    for msg_id, case in due.items():
        got = answers.get(msg_id, [])
        if len(got) != 1 or code_of(got[0]) != case.expect:
            wrong.append((case.what, case.expect, got))
        for reply in got:
            by_code[code_of(reply)] += 1
    extra = [msg_id for msg_id in answers if msg_id not in due]
    no_replies = sum(1 for msg_id in due if msg_id not in answers)
    answers_due = len(due) + sum(null_due.values())
    codes = ", ".join(f"{'result' if c == RESULT else c}: {n}" for c, n in sorted(by_code.items()))
    print(
        f"\nfuzz (seed {SEED}): {len(cases)} messages sent, {answers_due} answers due, "
        f"{len(cases) - answers_due} due none; answered by code: {codes}; "
        f"crashes: {0 if alive else 1}; no-replies: {no_replies}"
    )
    assert not wrong, wrong[:5]
    assert not extra, extra[:5]
    assert dict(nulls) == dict(null_due), (sorted(nulls.items()), sorted(null_due.items()))
    assert alive
    assert final["result"]["results"]
