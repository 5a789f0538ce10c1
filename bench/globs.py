"""Glob matching: pathspec's own matcher (Python's `re`, what kb-lsp used before
`kb_lsp/globs.py`) beside `GlobList` (the same translations on RE2).

    python -m bench globs [--quick]

Two measurements, each the median of rounds that alternate the two matchers so that
machine load hits them alike:

* **ordinary**: every path of both corpora (FastAPI docs and tldr-pages, as the
  workspace scan sees them) decided against a typical `.gitignore` of 12 patterns;
* **hostile**: `*a*a*…*a*b` (14 `a`s) against a name of N `a`s, the campaign's cloned
  repository; the backtracking matcher is timed only up to the N where one match takes
  about a second (each further `a` roughly doubles it), RE2 up to 40.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from pathspec import GitIgnoreSpec

from bench import corpora
from bench.report import table, write_json
from kb_lsp.globs import GlobList

GITIGNORE = [
    "**/*.md", "**/*.markdown", "node_modules/", "*.pyc", "build/", "dist/", ".venv/",
    "!keep.md", "docs/**/img/", "*.log", "site/", "__pycache__/",
]  # fmt: skip
HOSTILE = "*a" * 14 + "*b"


def corpus_paths() -> list[str]:
    paths = []
    for top in (corpora.require(corpora.FASTAPI), corpora.require(corpora.TLDR_PAGES.parent)):
        for current, _, files in os.walk(top):
            for name in files:
                paths.append(os.path.relpath(os.path.join(current, name), top.parent))
    return paths


def _median_rounds(runs: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    took: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            took[name].append(time.perf_counter() - started)
    return {name: statistics.median(samples) for name, samples in took.items()}


def ordinary(rounds: int) -> dict[str, Any]:
    paths = corpus_paths()
    backtracking = GitIgnoreSpec.from_lines(GITIGNORE, backend="simple")
    linear = GlobList(GITIGNORE)
    for path in paths:  # the same decisions, or the timing means nothing
        assert backtracking.check_file(path).include == linear.decide(path), path
    medians = _median_rounds(
        {
            "pathspec (re)": lambda: [backtracking.check_file(p).include for p in paths],
            "GlobList (RE2)": lambda: [linear.decide(p) for p in paths],
        },
        rounds,
    )
    return {"paths": len(paths), "patterns": len(GITIGNORE), "seconds": medians}


def hostile(rounds: int, slow_limit: float, longest: int) -> list[dict[str, Any]]:
    backtracking = GitIgnoreSpec.from_lines([HOSTILE], backend="simple")
    linear = GlobList([HOSTILE])
    rows = []
    slow_done = False
    for n in range(16, longest + 1, 2):
        name = "a" * n
        runs: dict[str, Callable[[], object]] = {
            "GlobList (RE2)": lambda name=name: linear.decide(name)
        }
        if not slow_done:
            runs["pathspec (re)"] = lambda name=name: backtracking.match_file(name)
        medians = _median_rounds(runs, rounds)
        slow = medians.get("pathspec (re)")
        slow_done = slow_done or (slow is not None and slow > slow_limit)
        rows.append({"a": n, "re": slow, "re2": medians["GlobList (RE2)"]})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench globs", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, shorter names")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 7
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    common = ordinary(rounds)
    seconds = common["seconds"]
    ratio = seconds["GlobList (RE2)"] / seconds["pathspec (re)"]
    table(
        ["matcher", "median (ms)", "/ pathspec"],
        [
            ["pathspec (re)", seconds["pathspec (re)"] * 1e3, 1.0],
            ["GlobList (RE2)", seconds["GlobList (RE2)"] * 1e3, ratio],
        ],
        f"ordinary: {common['paths']} corpus paths x {common['patterns']} patterns",
    )
    rows = hostile(rounds, 0.25 if args.quick else 1.0, 24 if args.quick else 40)
    table(
        ["a's", "pathspec (re) ms", "GlobList (RE2) us", "re / RE2"],
        [
            [
                row["a"],
                "-" if row["re"] is None else row["re"] * 1e3,
                row["re2"] * 1e6,
                "-" if row["re"] is None else row["re"] / row["re2"],
            ]
            for row in rows
        ],
        f"hostile: {HOSTILE} against a name of N a's",
    )
    write_json("globs", {"load": load, "ordinary": common, "hostile": rows, "ratio": ratio})
    return 0
