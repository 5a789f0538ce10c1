"""When is a cold workspace searchable? Keyword search complete vs vectors complete.

    python -m bench timeline [--corpus fastapi|tldr] [--files N] [--old SERVER_DIR]
                             [--deadline S]

The real server indexes a fresh copy from an empty store while `kb/status` is polled
(`bench/coldrun.py`). `--old` runs another commit's server the same way, right after,
for a side-by-side (e.g. `git worktree add /tmp/old <commit>` then `--old /tmp/old/server`);
`--deadline` stops a run that is not complete by then and reports how far it got.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.coldrun import add_cold_run_arguments, cold_run, make_model_cache
from bench.report import table, write_json

if TYPE_CHECKING:
    from kb_lsp.engine.index.reports import SyncProgress
    from kb_lsp.engine.knowledge import KnowledgeBase


def keyword_pass(corpus: str, files: int | None, models: Path, repeat: int = 3) -> list[float]:
    """Seconds of phase 1 alone (scan, read, chunk, FTS; no embedding), in-process, from
    an empty store each time, the model already loaded: the floor under "keyword search
    complete" once the server is up."""
    import shutil

    from bench import corpora
    from kb_lsp.config import load_settings
    from kb_lsp.engine.embed.minilm import MiniLMEmbedder
    from kb_lsp.engine.knowledge import KnowledgeBase

    embedder = MiniLMEmbedder(int8_cache=models)
    embedder.load()
    took = []
    with tempfile.TemporaryDirectory(prefix="kb-bench-kw-") as tmp:
        workspace = Path(tmp) / corpus
        if corpus == "fastapi":
            corpora.copy_fastapi(workspace)
        else:
            workspace.mkdir()
            corpora.copy_tldr(workspace, files)
        for n in range(repeat):
            storage = Path(tmp) / f"store{n}"
            kb = KnowledgeBase(
                [workspace], load_settings().settings, embedder=embedder, storage=storage
            )
            took.append(_keyword_phase(kb))
            kb.close()
            shutil.rmtree(storage)
    return took


def _keyword_phase(kb: KnowledgeBase) -> float:
    """Seconds from the start of a cold sync until keyword search has every file: the
    moment the vectors phase begins (then the sync is stopped)."""
    cancel = threading.Event()
    done: list[float] = []
    started = time.perf_counter()

    def step(update: SyncProgress) -> None:
        if update.phase == "vectors" and not done:
            done.append(time.perf_counter() - started)
            cancel.set()

    kb.sync(progress=step, cancel=cancel)
    return done[0] if done else time.perf_counter() - started


def _fmt(value: float | None, stopped: float) -> str:
    return f"{value:.1f}" if value is not None else f"> {stopped:.0f} (stopped)"


def run(
    corpus: str,
    files: int | None,
    old: Path | None,
    deadline: float,
    cache: Path | None,
    only_old: bool = False,
) -> dict[str, Any]:
    runs: dict[str, dict[str, Any]] = {}
    phase1: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kb-bench-models-") as tmp:
        models = cache or Path(tmp)
        derivation = make_model_cache(models)
        if not only_old:
            phase1 = keyword_pass(corpus, files, models)
            runs["this commit"] = cold_run(
                corpus, model_cache=models, deadline=deadline, files=files
            )
        if old is not None:
            runs["old commit"] = cold_run(corpus, server=old, deadline=deadline, files=files)
    rows = []
    for name, r in runs.items():
        probe = r.get("keyword_probe", {})
        rows.append(
            [
                name,
                r["files"],
                _fmt(r["keyword_complete_s"], r["stopped_at_s"]),
                "yes" if probe.get("found") else "–",
                _fmt(r["vectors_complete_s"], r["stopped_at_s"]),
                f"{r['searchable_files_at_end']}/{r['files']}",
            ]
        )
    table(
        [
            "server",
            "files",
            "keyword search complete (s)",
            "probe found",
            "vectors complete (s)",
            "files searchable at end",
        ],
        rows,
        f"Cold index timeline, {corpus}" + (f" (first {files} pages)" if files else ""),
    )
    print(
        f"int8 copy of the model: {derivation['seconds']:.1f} s to make (once per machine), "
        f"{derivation['identity']}"
    )
    if phase1:
        print(
            "keyword pass alone (phase 1, in-process, model loaded), seconds: "
            + ", ".join(f"{t:.2f}" for t in phase1)
            + f"; median {sorted(phase1)[len(phase1) // 2]:.2f}"
        )
    out = {"corpus": corpus, "derivation": derivation, "keyword_pass_s": phase1, "runs": runs}
    write_json("timeline-old" if only_old else "timeline", out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench timeline", description=__doc__)
    add_cold_run_arguments(parser)
    parser.add_argument("--deadline", type=float, default=3600.0, help="seconds per run")
    parser.add_argument("--models", type=Path, help="keep the int8 model copy here")
    parser.add_argument(
        "--keyword-only",
        action="store_true",
        help="time only the keyword pass (phase 1, in-process), not the servers",
    )
    args = parser.parse_args(argv)
    if args.keyword_only:
        from kb_lsp.engine.knowledge import model_cache

        took = keyword_pass(args.corpus, args.files, args.models or model_cache())
        print(
            f"keyword pass alone, {args.corpus}, seconds: "
            + ", ".join(f"{t:.2f}" for t in took)
            + f"; median {sorted(took)[len(took) // 2]:.2f}"
        )
        return
    run(args.corpus, args.files, args.old, args.deadline, args.models, args.only_old)
