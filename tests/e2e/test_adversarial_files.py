"""A workspace holding files that once stopped the whole index, beside the example
workspace: `kb index` indexes every good file and exits 0, `kb status` and `kb/status`
list the bad ones with their reasons, and dates a filter cannot compare are filter
errors on the command line (exit 2) and on the wire (-32602)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException
from tests.helpers.cli import HASHED, run

from .conftest import running_server

ADVERSARIAL_TEXT = {
    "pasted/huge-int.md": "---\nn: 1" + "0" * 320 + "\n---\n# Huge\n\nbody\n",
    "pasted/huge-hex.md": "---\nn: 0x" + "f" * 256 + "\n---\n# Hex\n\nbody\n",
    "pasted/ansi.md": '---\ntitle: "\x1b[1;31mDeploy log\x1b[0m"\n---\n# Log\n\nquokkas sighted\n',
    "pasted/bell.md": "---\nstatus: ok\x07\n---\n# Bell\n\nbody\n",
    "pasted/del.md": "---\ntags: [a\x7fb]\n---\n# Del\n\nbody\n",
    "pasted/start-of-heading.md": "---\nowner: \x01Ana\n---\n# Soh\n\nbody\n",
    "stubs/redirect.md": "---\ntitle: Moved\nredirect: /elsewhere/\n---\n",
}
ADVERSARIAL_BYTES = {
    "pasted/latin1.md": "# Caf\xe9\n".encode("latin-1"),
    "pasted/utf16.md": "# Hi\n".encode("utf-16"),
}
# `kb status`'s lines for them: problems as `path:line: message` (lines from 1).
PROBLEMS = [
    "  pasted/ansi.md:2: front matter holds the control character U+001B, which YAML "
    "does not allow; it is read without it",
    "  pasted/bell.md:2: front matter holds the control character U+0007, which YAML "
    "does not allow; it is read without it",
    "  pasted/del.md:2: front matter holds the control character U+007F, which YAML "
    "does not allow; it is read without it",
    "  pasted/huge-hex.md:2: a number of 309 digits is too large to compare as a number; "
    "it is kept as text",
    "  pasted/huge-int.md:2: a number of 321 digits is too large to compare as a number; "
    "it is kept as text",
    "  pasted/start-of-heading.md:2: front matter holds the control character U+0001, "
    "which YAML does not allow; it is read without it",
]


def add_adversarial_files(workspace: Path) -> None:
    for rel, text in ADVERSARIAL_TEXT.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text, encoding="utf-8")
    for rel, data in ADVERSARIAL_BYTES.items():
        (workspace / rel).write_bytes(data)


def test_kb_index_indexes_every_good_file_and_kb_status_lists_the_bad_ones(
    workspace: Path, storage: Path
) -> None:
    good = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*.md"))
    add_adversarial_files(workspace)
    index = run("index", str(workspace), storage=storage, **HASHED)
    assert index.returncode == 0, index.stderr
    assert "Traceback" not in index.stderr
    status = run("status", "-w", str(workspace), "--json", storage=storage, **HASHED)
    payload = json.loads(status.stdout)
    assert payload["state"] == "ready"
    assert payload["files"] == len(good) + len(ADVERSARIAL_TEXT)
    assert {s["path"]: s["reason"] for s in payload["skipped"]} == {
        "pasted/latin1.md": "not valid UTF-8",
        "pasted/utf16.md": "not valid UTF-8 (it looks like UTF-16)",
    }
    text = run("status", "-w", str(workspace), storage=storage, **HASHED).stdout.splitlines()
    at = text.index("problems:  6 files indexed with a problem to fix")
    assert text[at + 1 : at + 7] == PROBLEMS
    # Every good file is searchable, and so are the bad ones' texts.
    listed = run(
        "search", "-f", "words>=0", "-n", "100", "-w", str(workspace), storage=storage, **HASHED
    )
    assert listed.returncode == 0, listed.stderr
    for rel in [*good, *ADVERSARIAL_TEXT]:
        assert f", {rel} (" in listed.stdout, rel
    found = run(
        "search", "quokka", "--mode", "keyword", "-w", str(workspace), storage=storage, **HASHED
    )
    assert found.stdout.startswith("1, pasted/ansi.md ("), found.stdout


@pytest.mark.parametrize(
    ("expression", "position"),
    [("modified>-9999y", 10), ("date:9999", 6), ("date<=9999-12-31", 7)],
)
def test_an_out_of_range_date_is_a_filter_error_on_the_command_line(
    workspace: Path, storage: Path, expression: str, position: int
) -> None:
    result = run(
        "search", "payments", "-f", expression, "-w", str(workspace), storage=storage, **HASHED
    )
    assert result.returncode == 2, result.stderr
    assert f"kb: filter, character {position}: " in result.stderr
    assert "is out of range: a date filter takes days from 0001-01-01 to 9999-12-30" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr and "OverflowError" not in result.stderr


async def test_kb_status_and_filters_over_the_wire(workspace: Path, storage: Path) -> None:
    add_adversarial_files(workspace)
    async with running_server([workspace], storage) as kb:
        status = await kb.status()
        assert status["state"] == "ready"
        problems = {(p["path"], p["line"]) for p in status["problems"]}
        assert ("pasted/ansi.md", 1) in problems and ("pasted/huge-int.md", 1) in problems
        assert {s["path"] for s in status["skipped"]} == set(ADVERSARIAL_BYTES)
        for expression, position in (("modified>-9999y", 10), ("date<=9999-12-31", 7)):
            with pytest.raises(JsonRpcException) as err:
                await kb.search("payments", filter=expression)
            assert err.value.code == -32602
            assert f"filter, character {position}: " in str(err.value)
            assert "out of range" in str(err.value)
        with pytest.raises(JsonRpcException) as err:
            await kb.search("payments modified>-9999y")
        assert err.value.code == -32602 and "query, character 19" in str(err.value)
        assert (await kb.search("has:redirect"))["results"][0]["path"] == "stubs/redirect.md"
