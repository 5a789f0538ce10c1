"""`kb`: the terminal front end — serve, index, search, schema, status (and ask).

Every command works on one workspace folder (`-w/--workspace`, default: the current
directory; `kb index PATH` too) and its store (see `--storage`). Errors are one line on
stderr and a non-zero exit, never a traceback; every message is one line per fact, in a
terminal's words (`terminal/words.py`: a setting named with its variable or flag), and
the engine's log stays off stderr unless `--verbose` (`terminal/logs.py`). Progress goes
to stderr — a bar on a terminal, a line every few seconds elsewhere
(`terminal/progress.py`); results to stdout (`--json` for scripts: the same objects as
the `kb/*` LSP methods). A reader that stops reading (`kb search … | head`) ends the
command quietly, with exit 0. Exit codes (`cli/common.py`): 0 done, 1 an error, 2 bad
usage, 3 nothing to show yet (another process is still building the index), 4 `kb index`
where another process (kb index, kb mcp, an editor) keeps the index.

The last numbered list of `kb search` is kept in the store, so `kb ask "summarize file 1"`
right after a search means result 1 of that search, as in the editor.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from collections.abc import Callable, Sequence

from kb_lsp.cli.common import EXIT_USAGE, CliError, _fail, _flags
from kb_lsp.cli.parser import build_parser, command_names, table_commands
from kb_lsp.engine.private import owner_only_umask
from kb_lsp.errors import InvalidInput, KbError
from kb_lsp.terminal.logs import stderr_handler
from kb_lsp.terminal.words import in_terminal_words


def _filter_values(argv: Sequence[str]) -> list[str]:
    """`-f -tag:archived` as `--filter=-tag:archived`: a filter may start with `-` (a
    negation), which argparse would take for an option and refuse."""
    out: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        if token in ("-f", "--filter"):
            value = next(tokens, None)
            if value is not None and value.startswith("-") and any(c in value for c in ":<>=("):
                out.append(f"--filter={value}")
                continue
            out.append(token)
            if value is not None:
                out.append(value)
            continue
        out.append(token)
    return out


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The command line `argv` (without the program name) as `main` reads it; a usage
    error exits 2 with argparse's message on stderr, a mistyped command with the closest
    one (`kb serch`: "did you mean 'search'?")."""
    given = next((token for token in argv if not token.startswith("-")), None)
    in_table = given in table_commands()
    parser = build_parser(only=given if in_table else None)
    if given is not None and not in_table:
        parser = build_parser(derived=True)  # maybe an operation's own command
        _refuse_unknown_command(given, command_names(parser))
    return parser.parse_args(_filter_values(argv))


def _refuse_unknown_command(given: str, commands: Sequence[str]) -> None:
    """Exit 2 naming the command `kb` has instead of an unknown first word. (Python 3.11's
    argparse lists every choice but suggests none.)"""
    if given in commands:
        return
    import difflib  # only for a mistyped command

    close = difflib.get_close_matches(given, commands, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else f"the commands are {', '.join(commands)}"
    _fail(f"no command {given!r}; {hint}", EXIT_USAGE)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if argv is None:  # a process of its own (not a test's in-process call): see private.py
        owner_only_umask()
    # The engine's log stays off stderr but for its notices; everything with -v.
    server = args.command in ("serve", "mcp")
    log_handler = stderr_handler(sys.stderr, verbose=args.verbose, server=server)
    logging.getLogger().addHandler(log_handler)
    try:
        return _run(args)
    finally:
        logging.getLogger().removeHandler(log_handler)
        if argv is None:
            _before_exit()


def _before_exit() -> None:
    """The process ends next, and its memory goes back whole: the objects it made are
    frozen out of the garbage collection the interpreter runs on its way out, which
    walks every one of them (~190 modules' worth after a keyword search: a sixth of a
    one-shot search's time, `bench cli`). Finalizers of what is not in a cycle, `atexit`
    and the handlers' flush still run; every store and file was closed by its command."""
    gc.freeze()


def _run(args: argparse.Namespace) -> int:
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()  # a reader gone shows here rather than at exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except CliError as err:
        _fail(in_terminal_words(str(err), _flags(args)), EXIT_USAGE)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as err:  # the last line of defence: one line, never a traceback
        flags = _flags(args)
        if isinstance(err, InvalidInput):  # a bad filter, result number or file: fix it
            _fail(in_terminal_words(str(err), flags), EXIT_USAGE)
        if isinstance(err, KbError):  # the other kinds, worded for the user already
            _fail(in_terminal_words(str(err), flags))
        logging.getLogger(__name__).debug("unexpected error", exc_info=True)
        message = str(err)
        if len(message) > 300:
            message = message[:300] + "…"
        _fail(f"{type(err).__name__}: {in_terminal_words(message, flags)}")


def _reader_gone() -> int:
    """stdout's reader went away (`kb search … | head`): it has what it wanted, so the
    command ends quietly, with 0. What is still buffered goes nowhere (Python would
    otherwise complain about it at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (tests): nothing left to flush to
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
