"""`kb ask`: a question to the agent, its steps on stderr, the answer on stdout."""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection
from functools import partial
from typing import TYPE_CHECKING, Any

from kb_lsp.terminal.text import err, out, visible
from kb_lsp.terminal.words import in_terminal_words

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    from kb_lsp.protocol import AskResponse
from kb_lsp.cli.common import (
    CLIENT,
    EXIT_ERROR,
    READ_ONLY,
    CliError,
    _flags,
    _invalid,
    _runtime,
    _say,
    _sync,
    _workspace,
    model_setting,
)
from kb_lsp.cli.output import print_result


def _print_step(flags: Collection[str], step: Any) -> None:
    """A step of the agent as the panel shows it, on stderr while it works."""
    if step.kind == "thinking":
        line = f"Thinking: {step.text}"
    elif step.kind == "tool_call":
        line = f"Calling `{step.tool}` with {json.dumps(step.args or {}, ensure_ascii=False)}"
    elif step.kind == "tool_result":
        line = f"  -> {step.text}"
    elif step.kind == "status":  # the mode chosen, waiting for the model, a retry
        line = f"[{in_terminal_words(step.text, flags)}]"
    else:
        return
    err(line)


class AnswerPrinter:
    """The answer on stdout as its pieces come, then what the final answer adds.

    Printed text cannot be taken back: when a piece replaces what came (the model went
    back to its tools, or its answer was cleaned up) and does not continue it, the new
    text starts on a fresh paragraph; the final answer is printed whole again only when
    it does not continue what was shown."""

    def __init__(self) -> None:
        self.shown = ""

    def _write(self, text: str) -> None:
        out(text, end="", flush=True)

    def piece(self, text: str, *, replace: bool) -> None:
        if not replace:
            self._write(text)
            self.shown += text
            return
        if text.startswith(self.shown):
            self._write(text[len(self.shown) :])
        else:
            if self.shown.strip():
                self._write("\n\n")
            self._write(text)
        self.shown = text

    def final(self, answer: str) -> None:
        if not self.shown.strip():
            out(answer)
        elif answer.startswith(self.shown):
            out(answer[len(self.shown) :])
        else:
            out("\n\n" + answer)


def _on_event(flags: Collection[str], printer: AnswerPrinter, step: Any) -> None:
    if step.kind == "answer" and step.args and step.args.get("piece") is True:
        printer.piece(step.text, replace=step.args.get("replace") is True)
    else:
        _print_step(flags, step)


# How each `stop` reads after the answer ("answer" needs no word).
STOPS = {
    "clarify": "the agent asks a question back: answer it in a new kb ask",
    "step_limit": "stopped at the step limit: raise kb.agent.maxSteps for more",
    "length": "cut off: the model hit its token limit: raise kb.llm.maxTokens for more",
    "degenerate": "stopped early: the model's text degenerated (see the note above)",
    "empty": "the model said nothing, twice; nothing was cached",
    "cancelled": "cancelled",
    "error": "failed",
}


MODES = {
    "agent": "agent mode (the model called tools)",
    "grounded": "grounded mode (the model answered from passages)",
    "fallback": "no model answered: the best passages instead",
}

# The one verdict, said first (`AskResponse.verdict`); the mode is its small print.
VERDICTS = {
    "supported": "SUPPORTED by your notes",
    "unsupported": "NOT SUPPORTED by your notes: check it against the passages",
    "no_model": "NO MODEL: the best passages",
}


def format_ask_footer(response: AskResponse, flags: Collection[str] = ()) -> str:
    """`[NOT SUPPORTED by your notes: …; grounded mode (smollm2 does not call tools); stop:
    length — cut off: …]` (the settings it names said as this command's `flags` and
    variables set them)."""
    parts = [VERDICTS[response.verdict]] if response.verdict else []
    if response.mode == "fallback":
        parts = parts or [MODES["fallback"]]
    elif response.mode_reason:
        parts.append(f"{response.mode} mode ({response.mode_reason})")
    else:
        parts.append(MODES.get(response.mode, f"{response.mode} mode"))
    stop = f"stop: {response.stop}"
    parts.append(f"{stop} — {STOPS[response.stop]}" if response.stop in STOPS else stop)
    return in_terminal_words(f"[{'; '.join(parts)}]", flags)


def cmd_ask(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    question = " ".join(args.question).strip()
    if not question:
        raise CliError('give a question, e.g. kb ask "summarize file 1"')
    overrides = model_setting(args.model)
    from pydantic import ValidationError

    from kb_lsp.protocol import AskParams

    try:
        params = AskParams(question=question, file=args.file)
    except ValidationError as err:
        raise CliError(_invalid(err)) from None
    flags = _flags(args)
    with _runtime(args, folder, overrides) as runtime:
        if _sync(runtime, quiet=True) is None:
            _say(READ_ONLY)
        printer = AnswerPrinter()
        steps = None if args.json else partial(_on_event, flags, printer)
        response = runtime.ask(params, client=CLIENT, on_event=steps)
    if args.json:
        print_result("ask", response)
    else:
        printer.final(response.answer)
        # The agent's answers end with their sources; list them when one does not.
        listed = all(f"`{source.path}`" in response.answer for source in response.sources)
        if response.sources and not listed:
            out()
            for source in response.sources:
                first = source.range.start.line + 1
                last = max(first, source.range.end.line)
                out(f"- {visible(source.path)} L{first}-L{last}")
        out()
        out(format_ask_footer(response, flags))
    # An answer was printed — the best passages too when no model answered (the footer,
    # the steps and `mode: "fallback"` say so): 0. The model failing mid-answer: 1.
    return EXIT_ERROR if response.stop == "error" else 0
