"""A one-file save on an indexed workspace: the sync of one edited page, timed in-process.

    python -m bench save --store DIR [--old OLD/server] [--saves 15] [--rounds 3]

All of tldr-pages (copied into `DIR` once) is indexed by each code in a store of its own
(kept in `DIR`; the hashing embedder of `tests/fakes`, so a save's time is its plan, its
text and its link refresh, not a model's). Then, `--rounds` times, each code in a fresh
process of its own (the order alternating) appends a line to one page and syncs that page
`--saves` times; the median of every save is reported, and the old code's over this one.
With `--old` (the `server` folder of an older checkout, `git archive COMMIT | tar -x -C
/tmp/old`) the old code runs with `PYTHONPATH=/tmp/old/server:/tmp/old`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PAGE = "pages/common/tar.md"  # a page many others name


def child(workspace: Path, storage: Path, saves: int) -> list[float]:
    """In the code under test: index (untimed), then `saves` one-page saves."""
    from tests.fakes.embedder import HashingEmbedder

    from kb_lsp.config import load_settings
    from kb_lsp.engine.knowledge import KnowledgeBase

    kb = KnowledgeBase(
        [workspace], load_settings().settings, embedder=HashingEmbedder(), storage=storage
    )
    page = workspace / PAGE
    original = page.read_text(encoding="utf-8")
    try:
        kb.sync()
        times = []
        for i in range(saves):
            page.write_text(original + f"\nSaved {i} times.\n", encoding="utf-8")
            start = time.perf_counter()
            report = kb.sync([page])
            times.append(time.perf_counter() - start)
            assert report.files_changed == 1, report
        return times
    finally:
        page.write_text(original, encoding="utf-8")
        kb.sync([page])
        kb.close()


def load() -> str:
    """The 1-minute load average now."""
    return Path("/proc/loadavg").read_text().split()[0]


def run(store: Path, old: Path | None, saves: int, rounds: int) -> dict[str, Any]:
    from bench import corpora

    store.mkdir(parents=True, exist_ok=True)
    workspace = store / "tldr"
    if not workspace.exists():
        corpora.copy_tldr(workspace)
    here = Path(__file__).resolve().parent.parent
    codes = {"this code": here / "server"}
    if old is not None:
        codes["old code"] = old.resolve()
    times: dict[str, list[float]] = {code: [] for code in codes}
    loads = [load()]
    for round_ in range(rounds):
        order = list(codes) if round_ % 2 == 0 else list(reversed(codes))
        for code in order:
            folder = codes[code]
            env = {**os.environ, "PYTHONPATH": f"{folder}:{folder.parent}"}
            storage = store / ("store-old" if code == "old code" else "store-this")
            argv = [sys.executable, __file__, "--child", str(workspace), str(storage)]
            out = subprocess.run(
                [*argv, str(saves)], env=env, check=True, capture_output=True, text=True
            )
            times[code].extend(json.loads(out.stdout.strip().splitlines()[-1]))
        loads.append(load())
    medians = {code: statistics.median(t) * 1000 for code, t in times.items()}
    print(f"one-file save of {PAGE}, {rounds} rounds × {saves} saves; load {loads}")
    for code, median in medians.items():
        print(f"  {code}: median {median:.1f} ms (p90 {_p90(times[code]) * 1000:.1f})")
    if old is not None:
        print(f"  old ÷ this: {medians['old code'] / medians['this code']:.2f}")
    return {"page": PAGE, "medians_ms": medians, "times": times, "load": loads}


def _p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--child"]:
        print(json.dumps(child(Path(args[1]), Path(args[2]), int(args[3]))))
        return
    parser = argparse.ArgumentParser(prog="python -m bench save", description=__doc__)
    parser.add_argument("--store", type=Path, required=True, help="the copy and both stores")
    parser.add_argument("--old", type=Path, help="an older checkout's server folder")
    parser.add_argument("--saves", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parsed = parser.parse_args(args)
    from bench.report import write_json

    write_json("save", run(parsed.store, parsed.old, parsed.saves, parsed.rounds))


if __name__ == "__main__":
    main()
