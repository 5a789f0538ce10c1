"""`kb status`: the index's state, from the running server or the store's SQLite alone
(no pydantic, engine or model client loaded: `runtime/quick.py`).
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_lsp.runtime.quick_defaults import METHODS
from kb_lsp.terminal.words import in_terminal_words

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    pass
from kb_lsp.cli.common import _cli_settings, _flags, _from_server, _runtime, _settings, _workspace
from kb_lsp.cli.output import print_result
from kb_lsp.cli.table import PROBE_SECONDS
from kb_lsp.terminal.text import out_line


def cmd_status(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    status = _from_server(args, folder, METHODS["status"], {})
    if status is None:
        status = _stored_status(args, folder)
    if args.probe:
        status["llm"] = _probe(args)
    if args.json:
        print_result("status", status)
    else:
        show_status(folder, status, _flags(args))
    return 0


def show_status(folder: Path, status: Mapping[str, Any], flags: Collection[str] = ()) -> None:
    """A wire status as `kb status` prints it."""
    out_line(f"workspace: {folder}")
    message = f" — {status['message']}" if status["message"] else ""
    out_line(f"state:     {status['state']}{message}")
    out_line(f"store:     {status['store']}{' (read-only)' if status['readOnly'] else ''}")
    out_line(f"embedder:  {status['embedder']}")
    out_line(f"indexed:   {status['files']:,} files, {status['chunks']:,} chunks")
    for name, line in index_progress(status):
        out_line(f"{name + ':':<10} {line}")
    llm = status["llm"]
    out_line(f"llm:       {format_llm(llm)}")
    if llm["message"]:
        out_line(f"  {in_terminal_words(llm['message'], flags)}")
    if status["skipped"]:
        out_line(f"skipped:   {len(status['skipped'])} files")
        for item in status["skipped"]:
            out_line(f"  {item['path']}: {item['reason']}")
    print_problems(status)


def index_progress(status: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The index's progress as `kb status` prints it, each line from the wire status's
    fields (`progress`, `pending`, `keywordComplete`, `vectorsReady`), so the text and
    `--json` say the same: the running sync, then keyword search and vectors apart —
    keyword search covers every file once its text is read, vectors follow."""
    lines = []
    progress = status.get("progress")
    if progress:
        from kb_lsp.terminal.progress import wire_progress_text

        lines.append(("progress", wire_progress_text(progress)))
    if status.get("pending"):
        lines.append(("pending", f"{status['pending']:,} files to index"))
    if status.get("keywordComplete", True):
        keyword = "complete: every indexed file is found by its words"
    elif progress and progress["phase"] == "keyword":
        done, total = progress["filesDone"], progress["filesTotal"]
        keyword = f"{done:,}/{total:,} files read"
    elif progress:
        keyword = "not yet: the files are being counted"
    else:
        keyword = "incomplete: a sync stopped before reading every file (kb index finishes it)"
    lines.append(("keyword", keyword))
    lines.append(("vectors", _vectors_line(status, progress)))
    metadata = status.get("metadata")
    if metadata:
        by = f" by {metadata['model']}" if metadata.get("model") else ""
        line = f"{metadata['extracted']:,}/{metadata['total']:,} notes extracted{by}"
        lines.append(("metadata", metadata.get("message") or line))
    return lines


def _vectors_line(status: Mapping[str, Any], progress: Mapping[str, Any] | None) -> str:
    """The vectors' line, in the running sync's own counts while it makes them (so it
    agrees with the progress line), never "complete" while the sync has any to make."""
    ready = float(status.get("vectorsReady", 1.0))
    chunks = int(status["chunks"])
    phase = progress["phase"] if progress else None
    if phase == "keyword":
        return "after the files are read: the passages they change are embedded then"
    if phase == "scanning" and ready < 1.0:
        return "not yet: the files are being counted"
    if phase == "vectors" and progress and progress["chunksTotal"]:
        done, total = progress["chunksDone"], progress["chunksTotal"]
        if done < total:
            return (
                f"{done:,}/{total:,} passages of this sync embedded; "
                "the rest are found by their words meanwhile"
            )
    if ready >= 1.0:
        vectors = "complete: every chunk is found by its meaning too"
    else:
        vectors = (
            f"{ready:.0%} of {chunks:,} chunks embedded; the rest are found by their words "
            "meanwhile"
        )
    return vectors


def _probe(args: argparse.Namespace) -> dict[str, Any]:
    """The model asked, for at most `PROBE_SECONDS`, whether it answers and calls tools:
    the wire `LlmStatus`."""
    from kb_lsp.engine.llm import create_llm
    from kb_lsp.protocol import dump

    llm = create_llm(_settings(args))  # its client loaded before the clock starts
    answer: list[dict[str, Any]] = []

    def ask() -> None:
        answer.append(dump(llm.status(timeout=PROBE_SECONDS)))

    # A thread, because the client's timeout is per request (a server that accepts and
    # then says nothing would take several); past the limit nobody waits for it.
    probe = threading.Thread(target=ask, name="kb-probe", daemon=True)
    probe.start()
    probe.join(PROBE_SECONDS)
    if answer:
        return answer[0]
    status = dump(llm.configured_status())
    status["reachable"] = False
    status["message"] = (
        f"{llm.label} at {llm.host} did not answer within {PROBE_SECONDS:g} s "
        "(it accepts connections but says nothing: is it busy, or another kind of server?)"
    )
    return status


def _stored_status(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """The status as the wire has it (`kb/status`), from the store when it has an index:
    without pydantic when nobody writes it now, else with the writer's progress laid
    over it; from the runtime, which makes the index, when there is none."""
    from kb_lsp.runtime.quick import quick_settings, quick_status

    quick = quick_settings(_cli_settings(args))
    if quick is not None:
        found = quick_status(folder, quick)
        if found is not None:
            return found
    from kb_lsp.protocol import dump
    from kb_lsp.runtime.stored_status import read_status

    status = read_status(folder, _settings(args))
    if status is None:
        with _runtime(args, folder, syncs=False) as runtime:
            status = runtime.status()
    return dump(status)


def format_llm(llm: Mapping[str, Any]) -> str:
    """`qwen2.5:7b at http://127.0.0.1:11434 (ollama): answers, calls tools` (a wire
    `LlmStatus`)."""
    line = f"{llm['model']} at {llm['host']} ({llm['provider']})"
    if llm["reachable"] is None:
        return f"{line}: not asked (kb status --probe asks it)"
    if not llm["reachable"]:
        return f"{line}: does not answer"
    if llm["tools"] is None:
        return f"{line}: answers"
    return f"{line}: answers, {'calls tools' if llm['tools'] else 'does not call tools'}"


def print_problems(status: Mapping[str, Any]) -> None:
    """Files indexed with a problem (malformed front matter), as `path:line: message`."""
    problems = status["problems"]
    if not problems:
        return
    files = len({problem["path"] for problem in problems})
    out_line(f"problems:  {files} file{'s' * (files != 1)} indexed with a problem to fix")
    for problem in problems:
        out_line(f"  {problem['path']}:{problem['line'] + 1}: {problem['message']}")
