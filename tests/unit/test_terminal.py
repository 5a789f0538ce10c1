"""The command line's own words (`kb_lsp/terminal/`): progress on stderr — a bar on a
terminal, lines every few seconds elsewhere, rated over the recent past — settings named
as a terminal sets them, and which log records reach stderr. A clock the test moves, no
sleeps."""

from __future__ import annotations

import io
import logging
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_lsp.protocol import IndexProgress
from kb_lsp.runtime.progress import RATE_WINDOW, RecentRate
from kb_lsp.terminal.logs import stderr_handler
from kb_lsp.terminal.progress import (
    DEFAULT_SECONDS,
    ENV,
    TerminalProgress,
    line_seconds,
    took,
)
from kb_lsp.terminal.words import COMMANDS, VARIABLES, in_terminal_words


@given(st.floats(min_value=0.0, max_value=1e6, allow_nan=False))
def test_a_duration_is_never_shown_as_nothing(seconds: float) -> None:
    """A no-op sync takes milliseconds: shown in them, never as `0.0s`."""
    shown = took(seconds)
    if seconds < 1.0:
        assert re.fullmatch(r"[1-9]\d* ms", shown), shown
        assert int(shown.split()[0]) <= 1000
    else:
        assert shown == f"{seconds:.1f}s"
    assert took(0.043) == "43 ms"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def reading(done: int, total: int = 155) -> IndexProgress:
    return IndexProgress(phase="keyword", files_done=done, files_total=total)


def embedding(chunks: int, files: int = 0) -> IndexProgress:
    return IndexProgress(
        phase="vectors", files_done=files, files_total=155, chunks_done=chunks, chunks_total=3036
    )


def lines_of(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


# --- progress off a terminal: a line every few seconds -------------------------------------


def test_off_a_terminal_a_plain_line_every_few_seconds() -> None:
    clock, out = Clock(), io.StringIO()
    shown = TerminalProgress(out, tty=False, every=5.0, clock=clock, timer=False)
    shown.report(IndexProgress(phase="scanning", files_done=0, files_total=0))
    clock.now += 1.0
    shown.report(reading(0))
    for done in range(1, 100):  # many files within the interval: no line per file
        clock.now += 0.03
        shown.report(reading(done))
    assert out.getvalue() == ""
    clock.now = 1005.0  # 5 s into the sync, 4 s into the reading
    shown.report(reading(100))
    assert lines_of(out) == ["kb: Reading 100/155 files · 25.0 files/s · less than a minute left"]
    clock.now += 5.0  # a scan that takes long: still no line before the total is known
    shown.report(IndexProgress(phase="scanning", files_done=0, files_total=0))
    shown.tick()
    assert len(lines_of(out)) == 1
    assert "\r" not in out.getvalue()  # no bar: a log shows every carriage return


def test_a_step_that_takes_minutes_still_gets_its_lines() -> None:
    clock, out = Clock(), io.StringIO()
    shown = TerminalProgress(out, tty=False, every=5.0, clock=clock, timer=False)
    shown.report(embedding(0))
    clock.now += 6.0
    shown.tick()  # the first batch is not done: the count, no rate (0/s would read as a stall)
    assert lines_of(out) == ["kb: Keyword search ready · embedding 0/3,036 passages"]
    clock.now += 4.0
    shown.report(embedding(256))
    for _ in range(3):  # one batch taking 15 s: the clock's ticks say how it goes
        clock.now += 5.0
        shown.tick()
    assert [line.split(" · ")[-2:] for line in lines_of(out)[1:]] == [
        ["17.1 passages/s", "about 3 min left"],
        ["12.8 passages/s", "about 4 min left"],
        ["10.2 passages/s", "about 5 min left"],
    ]
    shown.tick()  # no time passed: no line
    assert len(lines_of(out)) == 4


def test_the_rate_and_the_time_left_come_from_the_recent_past() -> None:
    """A sync that speeds up (or slows down) says so within the window, where an average
    since the start would keep the early pace."""
    clock, out = Clock(), io.StringIO()
    shown = TerminalProgress(out, tty=False, every=5.0, clock=clock, timer=False)
    shown.report(embedding(0))
    chunks = 0
    for _ in range(24):  # 2 min at 1 chunk/s (the machine was busy)
        clock.now += 5.0
        chunks += 5
        shown.report(embedding(chunks))
    for _ in range(12):  # then 1 min at 20 chunks/s
        clock.now += 5.0
        chunks += 100
        shown.report(embedding(chunks))
    last = lines_of(out)[-1]
    assert last.endswith(
        f"embedding {chunks:,}/3,036 passages · 20.0 passages/s · about 1 min left"
    )
    # Over the whole phase it would have read 7.3 chunks/s and about 4 min left.
    assert round(chunks / 180, 1) == 7.3


def test_recent_rate_counts_from_the_window_start() -> None:
    rate = RecentRate(window=30.0)
    rate.start(0.0, 0)
    rate.add(10.0, 100)
    assert rate.over(20.0, 100) == (100, 20.0)  # younger than the window: the whole phase
    rate.add(100.0, 400)  # one long step: the work it finished spread over its time
    assert rate.over(100.0, 400) == (100, 30.0)  # from 300 at 70 s
    rate.add(110.0, 500)
    # From the count at 90 s: that long step's work, spread over its 90 s.
    assert rate.over(120.0, 500) == pytest.approx((500 - (100 + 300 * 80 / 90), 30.0))
    rate.add(200.0, 500)
    assert rate.over(200.0, 500) == (0, 30.0)  # nothing moved: 0, not a stale pace
    assert RATE_WINDOW >= 4 * DEFAULT_SECONDS  # a line's rate spans several lines


def test_interval_from_the_environment() -> None:
    assert line_seconds({}) == (DEFAULT_SECONDS, None)
    assert line_seconds({ENV: "0"}) == (0.0, None)
    assert line_seconds({ENV: " 30 "}) == (30.0, None)
    for bad in ("soon", "-1", "inf", "nan"):
        every, problem = line_seconds({ENV: bad})
        assert every == DEFAULT_SECONDS
        assert problem is not None and problem.startswith(f"{ENV}={bad!r} is not a number")


# --- on a terminal: one bar, redrawn in place ----------------------------------------------


def test_on_a_terminal_one_bar_redrawn_in_place_then_cleared() -> None:
    clock, out = Clock(), io.StringIO()
    shown = TerminalProgress(out, tty=True, clock=clock)
    shown.report(reading(0, 14))
    clock.now += 1.0
    shown.report(reading(7, 14))
    clock.now += 1.0
    shown.report(
        IndexProgress(
            phase="vectors", files_done=14, files_total=14, chunks_done=67, chunks_total=67
        )
    )
    shown.end("done")
    text = out.getvalue()
    assert "\n" not in text  # redrawn in place: never a new line
    frames = [frame for frame in text.split("\r\x1b[2K") if frame]
    assert frames[0].startswith("[..............................] Reading 0/14 files")
    assert frames[1].startswith("[###############...............] Reading 7/14 files · 7.0 files/s")
    assert frames[2].startswith(
        "[##############################] Keyword search ready · embedding 67/67"
    )
    assert text.endswith("\r\x1b[2K")  # cleared: the summary line takes its place


# --- settings in a terminal's words ---------------------------------------------------------


def test_settings_are_named_with_their_variable_and_flag() -> None:
    ollama = (
        "Ollama is not reachable at http://127.0.0.1:11434: start it with `ollama serve` or "
        "set kb.ollama.host to where it runs."
    )
    assert in_terminal_words(ollama) == ollama.replace(
        "kb.ollama.host", "kb.ollama.host (KB_OLLAMA_HOST)"
    )
    openai = "set kb.llm.baseUrl to where it runs, or kb.llm.provider to ollama"
    assert in_terminal_words(openai) == (
        "set kb.llm.baseUrl (KB_LLM_BASE_URL) to where it runs, or kb.llm.provider "
        "(KB_LLM_PROVIDER) to ollama"
    )
    flags = {"--model", "--settings", "--storage", "-w"}
    assert in_terminal_words("set kb.llm.model to one of a, b", flags) == (
        "set kb.llm.model (--model or KB_LLM_MODEL) to one of a, b"
    )
    # A flag the command does not have is not offered.
    assert in_terminal_words("set kb.llm.model", {"--settings"}) == (
        "set kb.llm.model (KB_LLM_MODEL)"
    )
    assert in_terminal_words("the token limit (kb.llm.maxTokens)", flags) == (
        "the token limit (kb.llm.maxTokens (--settings))"
    )
    # Once per setting; not when the message names the variable already; not what only
    # looks like a setting (a command, a file), nor the editor's own settings.
    assert in_terminal_words("kb.ollama.host twice: kb.ollama.host") == (
        "kb.ollama.host (KB_OLLAMA_HOST) twice: kb.ollama.host"
    )
    said = "kb.storage = '' from KB_STORAGE"
    assert in_terminal_words(said) == said
    for untouched in ("kb.search", "kb.sqlite3", "kb-lsp.log", "kb.server.python", "a.kb.storage"):
        assert in_terminal_words(untouched, flags) == untouched
    assert VARIABLES["ollama.host"] == "KB_OLLAMA_HOST"  # not the OLLAMA_HOST also honoured


def test_wire_methods_are_named_as_the_command_that_does_the_same() -> None:
    """The filter's did-you-mean, as the engine says it to every front end."""
    said = in_terminal_words(
        "no indexed file has the field 'ownr'; did you mean 'owner'? "
        "(the schema lists every field: kb schema, kb/schema)"
    )
    assert said.endswith("(the schema lists every field: kb schema)"), said
    assert in_terminal_words("was the model replaced? Reindex with kb/reindex full.") == (
        "was the model replaced? Reindex with kb index --full."
    )
    for name, command in COMMANDS.items():
        assert in_terminal_words(f"see {name}") == f"see {command}"
    # Only a whole method name: a path that starts like one is left alone.
    for path in ("kb/schemas/x.json", "kb/search/", "kb/schema.json", ".kb/schema.json"):
        assert in_terminal_words(path) == path


@given(st.text().filter(lambda text: "kb/" not in text))
def test_terminal_words_only_ever_add_a_note_after_a_setting(text: str) -> None:
    said = in_terminal_words(text, {"--settings", "--model", "--storage"})
    # Remove the notes: the message is what it was.
    assert re.sub(r" \((?:--\w+|KB_\w+)(?: or (?:--\w+|KB_\w+))?\)", "", said) == re.sub(
        r" \((?:--\w+|KB_\w+)(?: or (?:--\w+|KB_\w+))?\)", "", text
    )
    assert len(said) >= len(text)


# --- the log on stderr ------------------------------------------------------------------------


def _log_through(handler: logging.Handler) -> logging.Logger:
    logger = logging.getLogger("kb_lsp.test_terminal")
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger


def test_only_notices_reach_stderr_unless_verbose() -> None:
    out = io.StringIO()
    quiet = _log_through(stderr_handler(out, verbose=False))
    quiet.warning("The index is being written by another process")
    quiet.info("embedder loaded")
    quiet.info("making the int8 copy of the embedding model", extra={"notice": True})
    assert out.getvalue() == "kb: making the int8 copy of the embedding model\n"

    loud = io.StringIO()
    verbose = _log_through(stderr_handler(loud, verbose=True))
    verbose.warning("The index is being written by another process")
    verbose.debug("details")
    verbose.info("embedder loaded")
    assert loud.getvalue().splitlines() == [
        "WARNING kb_lsp.test_terminal: The index is being written by another process",
        "INFO kb_lsp.test_terminal: embedder loaded",
    ]
