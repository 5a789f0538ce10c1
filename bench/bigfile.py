"""Peak memory of the server on big files (issue 10, point 7): a 5 MB file of one line
and a large Markdown file, each beside a small-file baseline measured in the same run.

    python -m bench bigfile [--large-mb 50] [--one-line-mb 5] [--old SERVER_DIR]
                            [--embedder hashing|minilm] [--only CASE ...]

Each case is a fresh workspace and an empty store, indexed from cold by the real server
(`python -m kb_lsp` over stdio) with `kb.maxFileSize` raised to 100 MiB (as in the issue):

* `baseline` — 20 small notes (about 2 KB each);
* `one-line` — the 20 notes and a file of `--one-line-mb` MB without a line break;
* `large` — the 20 notes and a Markdown file of `--large-mb` MB (headings, paragraphs).

Peak RSS is the kernel's high-water mark of the server process (VmHWM) once the index is
complete; `kb/status` is polled every 100 ms meanwhile. Then a word that occurs once,
near the end of the big file, is searched (keyword and hybrid, median of 5): it must be
found (text past the first chunk is searchable) and says what a search costs there.

The default embedder is the deterministic hashing one of the test suite (no model): the
point is the memory of reading, chunking, keyword indexing and storing a big file, which
does not depend on the model; the issue measured its 1.7 GiB the same way. `--embedder
minilm` uses the real model (slow on big files: for small sizes only). `--old` runs
another commit's server on the same cases right after (e.g. the code before the chunk
cap, from `git worktree add /tmp/old 1b8219a`); it is told the test embedder by both the
current variable and the one it used then.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.coldrun import proc_kib
from bench.lsp_client import LspClient
from bench.report import table, write_json

MIB = 1024 * 1024
CASES = ("baseline", "one-line", "large")
HASHING = "tests.fakes.embedder:HashingEmbedder"
# A word found once, near the end of each big file (and nowhere in the notes).
NEEDLE = "quokkafjord"
SMALL_NOTES = 20

_VOCABULARY = (
    "index search chunk vector budget payment river mountain garden report meeting "
    "release window server client memory file folder note draft review schedule "
    "market ledger invoice storage network module testing question answer summary "
    "history planning design channel signal harbor lantern orchard violet copper"
)
_WORDS = _VOCABULARY.split()


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(count))


def write_notes(folder: Path, rng: random.Random) -> None:
    notes = folder / "notes"
    notes.mkdir(parents=True)
    for i in range(SMALL_NOTES):
        body = "\n\n".join(_words(rng, 60) for _ in range(5))
        (notes / f"note-{i:02d}.md").write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")


def write_one_line(path: Path, size: int, rng: random.Random) -> None:
    """`size` bytes of words and no line break; the needle about 95 % of the way in."""
    with path.open("w", encoding="utf-8") as out:
        written = 0
        placed = False
        while written < size:
            piece = _words(rng, 2000) + " "
            if not placed and written >= size * 0.95:
                piece = f"{NEEDLE} {piece}"
                placed = True
            out.write(piece)
            written += len(piece)
        if not placed:
            out.write(NEEDLE)


def write_large(path: Path, size: int, rng: random.Random) -> None:
    """`size` bytes of Markdown: a heading every 20 paragraphs of 4 lines."""
    with path.open("w", encoding="utf-8") as out:
        out.write("# A large file\n\n")
        written, section, placed = 0, 0, False
        while written < size:
            section += 1
            parts = [f"## Section {section}\n"]
            for _ in range(20):
                lines = [_words(rng, 14) for _ in range(4)]
                parts.append("\n".join(lines) + "\n")
            if not placed and written >= size * 0.95:
                parts.append(f"The {NEEDLE} appears once.\n")
                placed = True
            text = "\n".join(parts) + "\n"
            out.write(text)
            written += len(text)
        if not placed:
            out.write(f"The {NEEDLE} appears once.\n")


def make_workspace(folder: Path, case: str, one_line_mb: float, large_mb: float) -> int:
    """The case's files in `folder`; returns how many Markdown files there are."""
    rng = random.Random(10)
    write_notes(folder, rng)
    if case == "one-line":
        write_one_line(folder / "one-line.md", int(one_line_mb * MIB), rng)
    elif case == "large":
        write_large(folder / "large.md", int(large_mb * MIB), rng)
    return sum(1 for _ in folder.rglob("*.md"))


def _median_ms(client: LspClient, mode: str) -> tuple[float, bool]:
    took, found = [], False
    for _ in range(5):
        t0 = time.perf_counter()
        hits = client.search(NEEDLE, mode=mode, limit=5)["results"]
        took.append((time.perf_counter() - t0) * 1000)
        found = found or any(not h["path"].startswith("notes/") for h in hits)
    return statistics.median(took), found


def run_case(
    case: str,
    *,
    one_line_mb: float,
    large_mb: float,
    embedder: str,
    server: Path | None = None,
    deadline: float = 3600.0,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"kb-bench-bigfile-{case}-") as tmp:
        workspace = Path(tmp) / "ws"
        expected = make_workspace(workspace, case, one_line_mb, large_mb)
        size = sum(p.stat().st_size for p in workspace.rglob("*.md"))
        storage = Path(tmp) / "store"
        storage.mkdir()
        client = LspClient(
            [workspace],
            storage,
            {"maxFileSize": 100 * MIB},
            server=server,
            embedder_factory=HASHING if embedder == "hashing" else None,
        )
        out: dict[str, Any] = {"case": case, "files": expected, "bytes": size}
        with client:
            pid, t0 = client.pid, client.started_at
            status: dict[str, Any] = {}
            while time.perf_counter() - t0 < deadline:
                status = client.status()
                if (
                    status["state"] == "ready"
                    and status["pending"] == 0
                    and status["files"] >= expected
                    and status.get("vectorsReady", 1.0) >= 1.0
                ):
                    out["ready_s"] = time.perf_counter() - t0
                    break
                time.sleep(0.1)
            out["chunks"] = status.get("chunks", 0)
            out["indexed_files"] = status.get("files", 0)
            out["skipped"] = status.get("skipped", [])
            out["peak_rss_mib"] = proc_kib(pid, "VmHWM") / 1024
            out["rss_after_mib"] = proc_kib(pid, "VmRSS") / 1024
            if case != "baseline" and "ready_s" in out:
                out["keyword_ms"], out["keyword_found"] = _median_ms(client, "keyword")
                out["hybrid_ms"], out["hybrid_found"] = _median_ms(client, "hybrid")
        return out


def run(
    cases: Sequence[str],
    one_line_mb: float,
    large_mb: float,
    embedder: str,
    old: Path | None,
) -> dict[str, Any]:
    servers: dict[str, Path | None] = {"this commit": None}
    if old is not None:
        servers["old commit"] = old
    runs: dict[str, dict[str, Any]] = {}
    for name, server in servers.items():
        for case in cases:
            print(f"{name}: {case} …", flush=True)
            runs[f"{name} / {case}"] = result = run_case(
                case, one_line_mb=one_line_mb, large_mb=large_mb, embedder=embedder, server=server
            )
            print(
                f"  ready in {result.get('ready_s', float('nan')):.1f} s, "
                f"{result['chunks']} chunks, peak RSS {result['peak_rss_mib']:.0f} MiB",
                flush=True,
            )
    rows = []
    for key, r in runs.items():
        name = key.split(" / ")[0]
        base = runs.get(f"{name} / baseline")
        rows.append(
            [
                key,
                f"{r['bytes'] / MIB:.1f}",
                r["chunks"],
                r.get("ready_s", float("nan")),
                r["peak_rss_mib"],
                f"{r['peak_rss_mib'] - base['peak_rss_mib']:+.0f}" if base else "–",
                _search_cell(r, "keyword"),
                _search_cell(r, "hybrid"),
            ]
        )
    table(
        [
            "server / case",
            "MiB of Markdown",
            "chunks",
            "index (s)",
            "peak RSS (MiB)",
            "vs baseline (MiB)",
            f"keyword '{NEEDLE}' (ms)",
            "hybrid (ms)",
        ],
        rows,
        f"Server peak memory on big files ({embedder} embedder, kb.maxFileSize 100 MiB)",
    )
    out = {
        "embedder": embedder,
        "one_line_mb": one_line_mb,
        "large_mb": large_mb,
        "runs": runs,
    }
    write_json("bigfile", out)
    return out


def _search_cell(r: dict[str, Any], mode: str) -> str:
    if f"{mode}_ms" not in r:
        return "–"
    return f"{r[f'{mode}_ms']:.0f}" + ("" if r[f"{mode}_found"] else " (not found)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench bigfile", description=__doc__)
    parser.add_argument("--one-line-mb", type=float, default=5.0)
    parser.add_argument("--large-mb", type=float, default=50.0)
    parser.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    parser.add_argument("--only", nargs="+", choices=CASES, help="run these cases only")
    parser.add_argument("--old", type=Path, help="another commit's server/ folder to compare")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.only or c in args.only]
    run(cases, args.one_line_mb, args.large_mb, args.embedder, args.old)
