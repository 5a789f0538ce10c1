"""`python -m bench NAME [options]`, or `python -m bench all [--quick] [--keep DIR]`.

Each benchmark prints its tables and writes `bench/results/NAME.json`; `python -m bench
NAME --help` says what it measures. `all` runs them in an order that lets later ones reuse
earlier indexes (one temporary work folder: index → quality → resync on fastapi-docs,
search → live on tldr-pages), then draws `bench/results/scaling.png`. `--quick` shrinks
the corpora for a smoke run; quality always uses the whole FastAPI docs (its query set
needs them).
"""

from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

# name -> module; each module has `main(argv)`.
BENCHMARKS = {
    "index": "bench.index",
    "quality": "bench.quality",
    "resync": "bench.resync",
    "search": "bench.search_latency",
    "live": "bench.live",
    "editor": "bench.editor",
    "scaling": "bench.scaling",
    "embed": "bench.embed_speed",
    "related": "bench.related",
    "timeline": "bench.timeline",
    "memory": "bench.memory",
    "filters": "bench.filter_latency",
    "speed": "bench.search_speed",
    "cli": "bench.cli",
    "ask": "bench.ask",
    "quotes": "bench.quotes",
    "mcp": "bench.mcp_tokens",
    "bigfile": "bench.bigfile",
    "globs": "bench.globs",
    "save": "bench.save",
    "extract": "bench.extract",
    "gemm": "bench.gemm_bound",
    "stages": "bench.stages",
    "storage": "bench.storage",
}


def run_all(quick: bool, keep: Path | None) -> None:
    work = keep or Path(tempfile.mkdtemp(prefix="kb-bench-all-"))
    fastapi, tldr = str(work / "fastapi"), str(work / "tldr")
    q = ["--quick"] if quick else []
    plan = [
        ("index", [*q, "--store", fastapi]),
        # A quick index trims the copy, so quality then builds its own full one.
        ("quality", ["--grid"] if quick else ["--grid", "--store", fastapi]),
        ("related", ["--store", fastapi]),
        ("resync", [*q, "--store", fastapi]),
        ("editor", []),
        ("search", [*q, "--store", tldr]),
        ("live", [*q, "--store", tldr]),
        ("scaling", ["--draw"]),
    ]
    took: dict[str, float] = {}
    started = time.perf_counter()
    try:
        for name, args in plan:
            print(f"\n===== {name} {' '.join(args)} =====", flush=True)
            t0 = time.perf_counter()
            importlib.import_module(BENCHMARKS[name]).main(args)
            took[name] = time.perf_counter() - t0
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    total = time.perf_counter() - started
    print("\n" + ", ".join(f"{k} {v / 60:.1f} min" for k, v in took.items()))
    print(f"python -m bench all{' --quick' if quick else ''}: {total / 60:.1f} min")


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in (*BENCHMARKS, "all"):
        print(__doc__)
        print("benchmarks: " + ", ".join(BENCHMARKS) + ", all")
        sys.exit(0 if argv and argv[0] in ("-h", "--help") else 2)
    name, rest = argv[0], argv[1:]
    if name == "all":
        keep = Path(rest[rest.index("--keep") + 1]) if "--keep" in rest else None
        run_all("--quick" in rest, keep)
    else:
        importlib.import_module(BENCHMARKS[name]).main(rest)


main(sys.argv[1:])
