"""How long the `kb` command line takes to answer, from a cold process, against ripgrep.

    python -m bench cli [--store DIR] [--old PATH/server [--old-own-store]] [--runs 5]
                        [--no-server]

Indexes a private copy of fastapi-docs once (in-process, the product's int8 embedder; a
`--store` folder from an earlier run is reused), then times whole processes as a user
starts them, interleaved round by round so that machine load hits every row alike:
`kb status`, `kb search` (hybrid, and keyword), and `rg` listing the files that hold the
query's words. With `--old` (the `server` folder of an older checkout, `git worktree add
/tmp/old <commit>`) the same `kb` commands run under that code too, on the same store —
or, with `--old-own-store`, on a store the old code indexes itself (once, untimed; kept
in the store folder, stamped with that code), for an old code that cannot read this
code's store format.
Then the same `kb` rows again while an editor's server (this code's, over stdio) holds
the index: this code's commands ask it over its local socket, the old code's open the
index read-only beside it (`--no-server` skips these rounds). Medians, and each row's
median against this code's (in the same rounds) and against rg's. The `kb` commands
run from compiled bytecode, as an installed package does (the untimed first round writes
it under the store folder), even where `PYTHONDONTWRITEBYTECODE` is set.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import stamp
from bench.lsp_client import LspClient
from bench.report import table, write_json
from bench.search_speed import REPO, build

QUERY = "how do I add CORS middleware"
RG_WORDS = ["cors", "middleware"]
KB = "import sys; from kb_lsp.cli import main; sys.exit(main())"
FLOOR = "python -c pass (the interpreter alone)"


def commands(workspace: Path, storage: Path) -> dict[str, list[str]]:
    where = ["-w", str(workspace), "--storage", str(storage)]
    return {
        "kb status": ["status", *where],
        "kb search (hybrid)": ["search", QUERY, *where],
        "kb search --mode keyword": ["search", QUERY, "--mode", "keyword", *where],
    }


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        what = " ".join(argv[:4])
        raise SystemExit(f"{what}… failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return took


def rounds(
    jobs: dict[str, tuple[list[str], dict[str, str]]], runs: int, label: str
) -> dict[str, float]:
    """Each job once untimed (page cache, the int8 copy checked), then `runs` timed
    rounds, interleaved; the medians."""
    for argv, env in jobs.values():
        timed(argv, env or dict(os.environ))
    times: dict[str, list[float]] = {name: [] for name in jobs}
    for r in range(runs):
        for name, (argv, env) in jobs.items():
            times[name].append(timed(argv, env or dict(os.environ)))
        print(f"{label}: round {r + 1}/{runs} (load {os.getloadavg()[0]:.1f})", flush=True)
    return {name: statistics.median(t) for name, t in times.items()}


def own_store(store: Path, workspace: Path, old: Path, env: dict[str, str]) -> Path:
    """The old code's own index of `workspace` (`kb index` under that code, untimed),
    in a folder named by its Python files' hash; built once, reused after."""
    folder = store / f"old-store-{stamp.content_hash(old)}"
    built = folder / "bench-built.json"
    if not built.exists():
        stamp.fresh(folder, old)
        print(f"indexing {workspace.name} with the old code into {folder}…", flush=True)
        timed([sys.executable, "-c", KB, "index", str(workspace), "--storage", str(folder)], env)
        built.write_text("{}")
    stamp.ensure(folder, old)
    return folder


def run(
    store: Path, old: Path | None, runs: int, server: bool, old_own_store: bool = False
) -> dict[str, Any]:
    workspace, storage = build(store, "fastapi", None)
    codes = {"this code": REPO / "server"}
    if old is not None:
        codes["old code"] = old.resolve()
    jobs: dict[str, tuple[list[str], dict[str, str]]] = {}
    # As an installed package runs: from compiled bytecode (the untimed first round
    # writes it, outside the checkout), whatever PYTHONDONTWRITEBYTECODE says here.
    compiled = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    compiled["PYTHONPYCACHEPREFIX"] = str(store / "pycache")
    for code, folder in codes.items():
        env = {**compiled, "PYTHONPATH": str(folder)}
        where = storage
        if code == "old code" and old_own_store:
            where = own_store(store, workspace, folder, env)
        for name, args in commands(workspace, where).items():
            jobs[f"{name} — {code}"] = ([sys.executable, "-c", KB, *args], env)
    # The floor of any command: the interpreter starting and stopping (site included).
    jobs[FLOOR] = ([sys.executable, "-c", "pass"], dict(os.environ))
    rg = shutil.which("rg")
    if rg:
        pattern = "|".join(RG_WORDS)
        jobs["rg -l -i (the query's words)"] = ([rg, "-l", "-i", pattern, str(workspace)], {})
    loads = [os.getloadavg()[0]]
    medians = rounds(jobs, runs, "no server")
    if server:
        # The editor's server (this code) holds the index: this code's commands ask it
        # over its socket; the old code's open the index read-only beside it.
        with LspClient([workspace], storage) as lsp:
            lsp.wait_ready()
            with_server = {
                name: job for name, job in jobs.items() if name.startswith("kb ") or name == FLOOR
            }
            loads.append(os.getloadavg()[0])
            found = rounds(with_server, runs, "server running")
            loads.append(os.getloadavg()[0])
        medians |= {f"{name}, server running": median for name, median in found.items()}
    loads.append(os.getloadavg()[0])
    out: dict[str, Any] = {"runs": runs, "query": QUERY, "median_seconds": medians, "load": loads}
    rows = []
    rg_median = medians.get("rg -l -i (the query's words)")
    for name, median in medians.items():
        command, _, rest = name.partition(" — ")
        suffix = ", server running" if rest.endswith(", server running") else ""
        this = medians.get(f"{command} — this code{suffix}")
        rows.append(
            [
                name,
                round(median * 1000),
                round(median / this, 2) if this else "-",
                round(median / rg_median, 1) if rg_median else "-",
            ]
        )
    table(
        ["command", "median ms", "× this code", "× rg"],
        rows,
        f"CLI from a cold process, fastapi-docs ({runs} runs, load "
        f"{min(loads):.1f}–{max(loads):.1f})",
    )
    write_json("cli", out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench cli", description=__doc__)
    parser.add_argument("--store", type=Path, help="keep the copy and its index here (reused)")
    parser.add_argument("--old", type=Path, help="the server/ folder of an older checkout")
    parser.add_argument(
        "--old-own-store",
        action="store_true",
        help="the old code's commands on a store it indexes itself, not this code's",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--no-server",
        action="store_true",
        help="skip the rounds with the editor's server (this code) holding the index",
    )
    args = parser.parse_args(argv)
    store = args.store or Path(tempfile.mkdtemp(prefix="kb-bench-cli-"))
    store.mkdir(parents=True, exist_ok=True)
    stamp.ensure(store)
    if args.old_own_store and args.old is None:
        parser.error("--old-own-store needs --old")
    run(store, args.old, args.runs, not args.no_server, args.old_own_store)


if __name__ == "__main__":
    main()
