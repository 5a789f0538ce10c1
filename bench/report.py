"""Tables on stdout and JSON under bench/results/, shared by every benchmark."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """What the numbers were measured on: they mean little without it."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    except (OSError, StopIteration):
        mem_kb = 0
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        "commit": _commit(),
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=RESULTS.parent,
        ).stdout.strip()
    except OSError:
        return ""


def write_json(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    from bench.stamp import SEEN  # the stores this run built or reused, and by which code

    stores = {"stores": dict(SEEN)} if SEEN else {}
    path.write_text(json.dumps({"machine": machine(), **stores, **data}, indent=2) + "\n")
    print(f"-> {path.relative_to(RESULTS.parent.parent)}")
    return path


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> str:
    cells = [[_fmt(v) for v in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    lines = []
    if title:
        lines.append(f"\n## {title}")
    lines.append("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    text = "\n".join(lines)
    print(text, flush=True)
    return text


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    return str(value)


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    """Median, p95 and p99 (nearest rank): what a user waits for, typically and at worst."""
    ordered = sorted(samples)
    if not ordered:
        return {"p50": float("nan"), "p95": float("nan"), "p99": float("nan"), "n": 0}

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]

    return {
        "p50": statistics.median(ordered),
        "p95": rank(95),
        "p99": rank(99),
        "n": len(ordered),
    }
