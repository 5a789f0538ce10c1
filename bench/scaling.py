"""The scaling plot: index time and search p95 against corpus size.

    python -m bench scaling

Draws `bench/results/scaling.png` from `bench/results/search.json` (run `bench search`
first): cumulative index time and `kb/search` p95 over the LSP (with ripgrep's p95 on the
same queries) against the number of chunks, each point labelled with its file count.
Nothing is measured here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.report import RESULTS


def draw(search: dict[str, Any], target: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # no display on a server
    import matplotlib.pyplot as plt

    sizes = search["sizes"]
    chunks = [s["chunks"] for s in sizes]
    files = [s["files"] for s in sizes]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))

    left.plot(chunks, [s["index_seconds_cumulative"] for s in sizes], "o-", label="kb-lsp (LSP)")
    left.set_title("Cold index time (tldr-pages)")
    left.set_xlabel("chunks")
    left.set_ylabel("seconds")
    left.set_ylim(bottom=0)

    right.plot(
        chunks, [s["lsp"]["p95"] * 1000 for s in sizes], "o-", label="kb/search over LSP p95"
    )
    right.plot(
        chunks, [s["lsp"]["p50"] * 1000 for s in sizes], "o--", alpha=0.6, label="kb/search p50"
    )
    if all("rg" in s for s in sizes):
        right.plot(chunks, [s["rg"]["p95"] * 1000 for s in sizes], "s-", label="ripgrep p95")
        right.plot(
            chunks, [s["rg"]["p50"] * 1000 for s in sizes], "s--", alpha=0.6, label="ripgrep p50"
        )
    right.set_title(f"Search latency, {search['queries']} queries")
    right.set_xlabel("chunks")
    right.set_ylabel("milliseconds")
    right.set_ylim(bottom=0)

    for axis in (left, right):
        axis.grid(alpha=0.3)
        axis.legend(loc="upper left")
        for x, n in zip(chunks, files, strict=True):
            axis.annotate(
                f"{n} files",
                (x, 0),
                xycoords=("data", "axes fraction"),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
    cpu = search.get("machine", {})
    fig.suptitle(f"kb-lsp on {cpu.get('cores', '?')} cores: {cpu.get('cpu', '')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target


def run() -> Path:
    source = RESULTS / "search.json"
    if not source.exists():
        raise SystemExit(f"{source} is missing: run `python -m bench search` first")
    target = draw(json.loads(source.read_text()), RESULTS / "scaling.png")
    print(f"-> {target.relative_to(RESULTS.parent.parent)}")
    return target


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench scaling", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="(no effect: nothing is measured)")
    parser.parse_args(argv)
    run()
