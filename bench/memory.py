"""Resident memory of the server: peak during a cold index and idle after it.

    python -m bench memory [--corpus fastapi|tldr] [--files N] [--old SERVER_DIR]

The real server indexes a fresh copy from an empty store (`bench/coldrun.py`); peak RSS
is the kernel's high-water mark of the process, idle RSS is read 5 s after the index is
complete, with no request in between. `--old` runs another commit's server the same way
for a side-by-side. Memory does not depend on the machine's load the way time does, so
the two may run one after the other on a busy machine.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.coldrun import add_cold_run_arguments, cold_run, make_model_cache
from bench.report import table, write_json


def run(
    corpus: str, files: int | None, old: Path | None, cache: Path | None, only_old: bool = False
) -> dict[str, Any]:
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="kb-bench-models-") as tmp:
        models = cache or Path(tmp)
        if not only_old:
            make_model_cache(models)
            runs["this commit"] = cold_run(corpus, model_cache=models, files=files)
        if old is not None:
            runs["old commit"] = cold_run(corpus, server=old, files=files)
    table(
        ["server", "files", "chunks", "index (s)", "peak RSS (MiB)", "idle RSS (MiB)"],
        [
            [
                name,
                r["files"],
                r.get("chunks", 0),
                r["vectors_complete_s"] or 0.0,
                r["peak_rss_mib"],
                r.get("idle_rss_mib", 0.0),
            ]
            for name, r in runs.items()
        ],
        f"Server memory, cold index of {corpus}" + (f" (first {files} pages)" if files else ""),
    )
    for r in runs.values():
        r.pop("samples", None)
    out = {"corpus": corpus, "runs": runs}
    write_json(f"memory-{corpus}" + ("-old" if only_old else ""), out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench memory", description=__doc__)
    add_cold_run_arguments(parser)
    parser.add_argument("--models", type=Path, help="keep the int8 model copy here")
    args = parser.parse_args(argv)
    run(args.corpus, args.files, args.old, args.models, args.only_old)
