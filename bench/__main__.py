"""`python -m bench NAME [options]`, or `python -m bench all [--quick]`.

Each benchmark prints its tables and writes `bench/results/NAME.json`; `all` runs them in
the order of the README and then draws `bench/results/scaling.png`.
"""

from __future__ import annotations

import importlib
import sys
import time

# name -> module; each module has `main(argv)`.
BENCHMARKS = {
    "quality": "bench.quality",
    "index": "bench.index",
    "resync": "bench.resync",
    "search": "bench.search_latency",
    "live": "bench.live",
    "scaling": "bench.scaling",
    "embed": "bench.embed_speed",
}
ALL = ("quality", "index", "resync", "search", "live", "scaling")


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in (*BENCHMARKS, "all"):
        print(__doc__)
        print("benchmarks: " + ", ".join(BENCHMARKS) + ", all")
        sys.exit(0 if argv and argv[0] in ("-h", "--help") else 2)
    name, rest = argv[0], argv[1:]
    if name != "all":
        importlib.import_module(BENCHMARKS[name]).main(rest)
        return
    quick = "--quick" in rest
    started = time.perf_counter()
    took = {}
    for each in ALL:
        print(f"\n===== {each} =====", flush=True)
        t0 = time.perf_counter()
        args = ["--quick"] if quick and each != "quality" else []
        if each == "quality":
            args = ["--grid"]
        importlib.import_module(BENCHMARKS[each]).main(args)
        took[each] = time.perf_counter() - t0
    total = time.perf_counter() - started
    print("\n" + ", ".join(f"{k} {v / 60:.1f} min" for k, v in took.items()))
    print(f"python -m bench all: {total / 60:.1f} min")


main(sys.argv[1:])
