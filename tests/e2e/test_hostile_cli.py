"""The third hostile-input campaign (issue 37) through `kb` as a user runs it: a file name
that is not UTF-8, escape sequences in notes, names and a model's words (on a real
pseudo-terminal), a model that never stops, a tool call with a 5,000-digit number, and a
schema that is a link out of the workspace or holds such a number."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from pathlib import Path

import pytest
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer
from tests.fakes.openai_server import ScriptedOpenAI
from tests.helpers.cli import HASHED, KB, run

BAD_NAME = b"bad\xff\xfebytes.md"
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m"
# A raw control character a terminal would obey: C0 but tab and line ends, DEL, C1
# (a pseudo-terminal turns "\n" into "\r\n" itself).
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
DOWN = {"KB_OLLAMA_HOST": "http://127.0.0.1:9", **HASHED}


@pytest.fixture
def wiki(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    root.mkdir()
    (root / "good.md").write_text("# Mexico payments\n\nPayments go by SPEI before 14:30.\n")
    return root


def test_a_file_name_that_is_not_utf8_stops_no_command(wiki: Path, tmp_path: Path) -> None:
    with open(os.path.join(os.fsencode(wiki), BAD_NAME), "w") as out:
        out.write("# Bad\n\nMexico payments too\n")
    storage = tmp_path / "storage"
    ws = ("-w", str(wiki))
    for command in (
        ("index", str(wiki)),
        ("search", "Mexico payments", *ws),
        ("search", "--mode", "keyword", "SPEI", *ws),
        ("schema", *ws),
        ("ask", "When are Mexico payments sent?", *ws),
    ):
        done = run(*command, storage=storage, **DOWN)
        assert done.returncode == 0, (command, done.stderr)
        assert "UnicodeEncodeError" not in done.stderr
    status = run("status", *ws, storage=storage, **DOWN)
    assert "bad\\xff\\xfebytes.md: the path is not valid UTF-8" in status.stdout
    found = run("search", "--mode", "keyword", "SPEI", *ws, "--json", storage=storage, **DOWN)
    assert [hit["path"] for hit in json.loads(found.stdout)["results"]] == ["good.md"]


def on_a_terminal(*args: str, storage: Path, **env: str) -> tuple[bytes, bytes, int]:
    """`kb ARGS` with its stdout on a pseudo-terminal: (what the terminal got, stderr,
    exit status)."""
    leader, follower = pty.openpty()
    full = {**os.environ, "KB_STORAGE": str(storage), "KB_PROGRESS_SECONDS": "3600", **env}
    process = subprocess.Popen([str(KB), *args], stdout=follower, stderr=subprocess.PIPE, env=full)
    os.close(follower)
    shown = b""
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the command ended and closed the terminal
            break
        if not data:
            break
        shown += data
    os.close(leader)
    assert process.stderr is not None
    stderr = process.stderr.read()
    return shown, stderr, process.wait(timeout=300)


def test_the_terminal_gets_text_never_escapes(wiki: Path, tmp_path: Path) -> None:
    (wiki / "hostile.md").write_text(
        f"# Title {ESCAPES}\n\n## Heading {ESCAPES}\n\nMexico payments {ESCAPES} forged\n"
    )
    (wiki / "name\x1b[2J\rforged\nline.md").write_text("# Named\n\nMexico payments by name\n")
    (wiki / ".kb").mkdir()
    schema = {"properties": {"counterparty": {"type": "string"}}}
    (wiki / ".kb" / "schema.json").write_text(json.dumps(schema))
    storage = tmp_path / "storage"
    hostile_answer = f"Payments go by SPEI {ESCAPES}\r\nsecond line [good.md]"
    fields = json.dumps({"counterparty": f"Acme {ESCAPES}"})
    with ScriptedOllama(default=answer(fields)) as model:
        env = {**HASHED, "KB_OLLAMA_HOST": model.url}
        assert run("index", str(wiki), "--extract", storage=storage, **env).returncode == 0
        model.add(answer(hostile_answer))
        ws = ("-w", str(wiki))
        runs = [
            on_a_terminal("search", "Mexico payments", *ws, storage=storage, **env),
            on_a_terminal("status", *ws, storage=storage, **env),
            on_a_terminal("schema", "--extracted", *ws, storage=storage, **env),
            # Grounded: an agent-mode attempt that calls no tool is set aside (issue 35).
            on_a_terminal(
                "ask",
                "When are Mexico payments sent?",
                *ws,
                storage=storage,
                **env,
                KB_LLM_MODE="grounded",
            ),
            on_a_terminal("search", "Mexico payments", *ws, "--json", storage=storage, **env),
        ]
    for shown, stderr, code in runs:
        assert code == 0, stderr
        text = shown.decode("utf-8").replace("\r\n", "\n")
        assert not RAW.search(text), text
        assert not RAW.search(stderr.decode("utf-8").replace("\r\n", "\n"))
    search, _status, schema_shown, asked, as_json = (
        shown.decode().replace("\r\n", "\n") for shown, _, _ in runs
    )
    assert "\\x1b]0;owned\\x07" in search and "\\x1b[2J\\rforged\\nline.md" in search
    assert not any(line.startswith("forged") for line in search.splitlines())
    assert "Acme \\x1b]0;owned" not in schema_shown and "Acme ]0;owned" in schema_shown
    assert "SPEI \\x1b]0;owned\\x07" in asked, asked
    assert "\\u009b" in as_json


def test_an_endless_model_does_not_hold_kb_index_extract(wiki: Path, tmp_path: Path) -> None:
    (wiki / ".kb").mkdir()
    (wiki / ".kb" / "schema.json").write_text('{"properties": {"owner": {"type": "string"}}}')
    with ScriptedOllama(default=Turn(content='{"owner": "a', endless=True)) as model:
        done = run(
            "index",
            str(wiki),
            "--extract",
            storage=tmp_path / "s",
            **HASHED,
            KB_OLLAMA_HOST=model.url,
        )
    assert done.returncode == 0, done.stderr
    assert model.hung_up.is_set()


def test_a_tool_call_with_a_huge_number_does_not_end_kb_ask(wiki: Path, tmp_path: Path) -> None:
    huge = '{"query": 1' + "0" * 5000 + "}"
    call = {"name": "search_knowledge_base", "raw_arguments": huge}
    script = [Turn(tool_calls=[call], chunk_chars=1000), answer("By SPEI [good.md].")]
    with ScriptedOpenAI(script) as model:
        env = {**HASHED, "KB_LLM_PROVIDER": "openai", "KB_LLM_BASE_URL": model.base_url}
        asked = run("ask", "When?", "-w", str(wiki), storage=tmp_path / "s", **env)
    assert asked.returncode == 0, asked.stderr
    assert model.errors == [] and len(model.chat_requests) == 2
    assert "By SPEI" in asked.stdout


@pytest.mark.parametrize("kind", ["link out", "huge number"])
def test_a_schema_that_cannot_be_used_is_said_by_index_and_status(
    wiki: Path, tmp_path: Path, kind: str
) -> None:
    (wiki / ".kb").mkdir()
    schema = wiki / ".kb" / "schema.json"
    if kind == "link out":
        secret = tmp_path / "secret.json"
        secret.write_text('{"properties": {"owner": {"type": "string"}}}')
        schema.symlink_to(secret)
        why = "symbolic link to a file outside the workspace"
    else:
        schema.write_text(
            '{"properties": {"n": {"type": "number", "maximum": 1' + "0" * 5000 + "}}}"
        )
        why = "an integer of 5001 digits"
    storage = tmp_path / "storage"
    with ScriptedOllama(default=answer('{"owner": "Ana"}')) as model:
        env = {**HASHED, "KB_OLLAMA_HOST": model.url}
        done = run("index", str(wiki), "--extract", storage=storage, **env)
        status = run("status", "-w", str(wiki), storage=storage, **env)
    assert done.returncode == 0, done.stderr
    assert model.chat_requests == []  # nothing was extracted with it
    said = f"metadata extraction skipped: {schema}: "
    assert said in done.stderr and why in done.stderr
    assert said in status.stdout and why in status.stdout
