"""What `kb` prints never carries a raw control character (`terminal/text.py`): notes,
file names, a model's answer and extracted values are other people's text, and a
terminal obeys escape sequences. Every writer of `cli/` goes through `visible`; a field
never makes a line of its own; `--json` escapes C1 as JSON escapes C0."""

from __future__ import annotations

import ast
import io
import json
import logging
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_lsp.cli.ask import AnswerPrinter
from kb_lsp.cli.common import _say
from kb_lsp.cli.output import print_result
from kb_lsp.cli.schema import format_schema
from kb_lsp.cli.status import show_status
from kb_lsp.listing import format_wire_hits
from kb_lsp.protocol import IndexProgress
from kb_lsp.terminal.logs import stderr_handler
from kb_lsp.terminal.progress import TerminalProgress
from kb_lsp.terminal.text import json_text, out, visible

CLI = Path(__file__).resolve().parents[2] / "server" / "kb_lsp" / "cli"
# A raw control character, as a terminal would obey it: C0 but newline (and tab), DEL, C1.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\r\nforged 9, evil.md\x9b31m\x00"
# Any text, with the control characters drawn often.
TEXT = st.text(
    st.one_of(st.characters(), st.sampled_from([chr(c) for c in [*range(32), *range(127, 160)]]))
)


def test_every_writer_of_the_command_line_goes_through_visible() -> None:
    """No `print` and no `sys.stdout`/`sys.stderr` write in `cli/`: `out`, `out_line`
    and `err` are its writers."""
    found = []
    for module in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id == "print":
                found.append(f"{module.name}:{node.lineno} print")
            if isinstance(func, ast.Attribute) and func.attr in ("write", "writelines"):
                owner = ast.unparse(func.value)
                if owner in ("sys.stdout", "sys.stderr"):
                    found.append(f"{module.name}:{node.lineno} {owner}.{func.attr}")
    assert found == []


@given(TEXT)
def test_visible_leaves_no_control_character(text: str) -> None:
    one_line = visible(text)
    assert not RAW.search(one_line) and "\n" not in one_line
    assert not RAW.search(visible(text, lines=True))
    assert visible(one_line) == one_line  # already visible text is left alone


def test_an_escape_sequence_is_shown_not_obeyed() -> None:
    assert visible("a\x1b[2Jb\r\nc\x9b") == "a\\x1b[2Jb\\r\\nc\\u009b"
    assert visible("a\r\nb\tc", lines=True) == "a\nb\tc"


def hit(n: int, text: str) -> dict[str, Any]:
    position = {"line": 0, "character": 0}
    return {
        "n": n,
        "path": f"{text}.md",
        "label": "context match",
        "title": text,
        "heading": f"Top > {text}",
        "snippet": text,
        "range": {"start": position, "end": position},
    }


def status_with(text: str) -> dict[str, Any]:
    llm = {
        "model": "m",
        "host": "h",
        "provider": "ollama",
        "reachable": False,
        "tools": None,
        "message": text,
    }
    return {
        "state": "ready",
        "message": text,
        "store": "/s",
        "readOnly": False,
        "embedder": "e",
        "files": 1,
        "chunks": 1,
        "llm": llm,
        "skipped": [{"path": text, "reason": text}],
        "problems": [{"path": text, "line": 0, "message": text}],
        "metadata": {"model": text, "extracted": 0, "total": 1, "message": text},
    }


def schema_with(text: str) -> dict[str, Any]:
    top = [{"value": text, "count": 1}, {"value": text + " x", "count": 1}]
    return {"files": 1, "fields": [{"name": text, "types": ["string"], "files": 1, "top": top}]}


def printed(text: str) -> tuple[str, str]:
    """What the command line prints (stdout, stderr) of `text` in each place it shows
    other people's text: a search's list, the status, the schema, an answer streamed and
    whole, a message of its own."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        out(format_wire_hits([hit(1, text), hit(2, text)], visible))
        show_status(Path("/w"), status_with(text))
        out(format_schema(schema_with(text)))
        printer = AnswerPrinter()
        printer.piece(text, replace=False)
        printer.piece(text + text, replace=True)
        printer.final(text + "\n")
        _say(text)
    return stdout.getvalue(), stderr.getvalue()


@given(TEXT)
def test_any_text_the_command_line_prints_has_no_raw_control_character(text: str) -> None:
    stdout, stderr = printed(text)
    assert not RAW.search(stdout) and not RAW.search(stderr)


@given(TEXT)
def test_a_field_never_makes_a_line_of_its_own(text: str) -> None:
    """Two lines a hit; the status as many lines as with plain text, whatever the text
    holds (a newline in a file name once forged a result line)."""
    listing = format_wire_hits([hit(1, text), hit(2, text)], visible)
    assert len(visible(listing, lines=True).split("\n")) == 4

    def status_lines(text: str) -> int:
        stdout = io.StringIO()
        with redirect_stdout(stdout):
            show_status(Path("/w"), status_with("x" + text))
        return len(stdout.getvalue().split("\n"))

    assert status_lines(text) == status_lines("")


@given(TEXT)
def test_json_escapes_c1_and_del_as_well(text: str) -> None:
    dumped = json_text({"text": text, text: [text]})
    assert not RAW.search(dumped)
    assert json.loads(dumped) == {"text": text, text: [text]}


def test_kb_json_prints_c1_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    print_result("schema", schema_with("csi\x9bhere"))
    shown = capsys.readouterr().out
    assert "\x9b" not in shown and "\\u009b" in shown
    assert json.loads(shown)["fields"][0]["name"] == "csi\x9bhere"


def test_progress_and_log_lines_show_controls() -> None:
    stream = io.StringIO()
    progress = TerminalProgress(stream, tty=True, timer=False)
    progress.report(IndexProgress(phase="keyword", files_done=1, files_total=1))
    logger = logging.getLogger("kb_lsp.test.hostile")
    handler = stderr_handler(stream, verbose=True)
    logger.addHandler(handler)
    try:
        logger.warning("a .gitignore says %s", HOSTILE)
    finally:
        logger.removeHandler(handler)
    # The bar's own carriage return and erase are the only escapes written.
    assert not RAW.search(stream.getvalue().replace("\r\x1b[2K", ""))
    assert "\\x1b]0;owned" in stream.getvalue()
