"""Re-sync costs: what an already indexed workspace pays when little or nothing changed.

    python -m bench resync [--quick] [--store DIR]

On the fastapi-docs copy (the one `bench index` left in `--store`, else a fresh cold
index): a no-change re-sync (in-process, median of 3), a server restart to "ready" over
the LSP (spawn → `kb/status` ready, median of 3), a one-paragraph edit, and the rename of
the folder closest to 50 files. Each reports seconds and chunks embedded; the no-change
cases and the rename must embed 0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import corpora, stamp
from bench.index import QUICK_FILES, trim
from bench.lsp_client import LspClient
from bench.report import table, write_json
from kb_lsp.config import load_settings
from kb_lsp.engine.embed.minilm import MiniLMEmbedder
from kb_lsp.engine.knowledge import KnowledgeBase

RUNS = 3


def open_kb(base: Path) -> KnowledgeBase:
    settings = load_settings().settings
    embedder = MiniLMEmbedder(batch_size=settings.embedder.batch_size)
    return KnowledgeBase(
        [base / "fastapi-docs"], settings, embedder=embedder, storage=base / "store"
    )


def folder_near_50(workspace: Path) -> tuple[Path, int]:
    """The folder whose Markdown file count (all levels) is closest to 50."""
    counts = {
        d: sum(1 for _ in d.rglob("*.md"))
        for d in workspace.rglob("*")
        if d.is_dir() and d.parent != workspace  # not docs/ itself
    }
    folder = min(counts, key=lambda d: (abs(counts[d] - 50), str(d)))
    return folder, counts[folder]


def edit_one_paragraph(path: Path) -> None:
    """Add a sentence to the middle paragraph of `path`: one chunk's worth of change
    (two where the overlap carries it into the next chunk)."""
    text = path.read_text(encoding="utf-8")
    paragraphs = text.split("\n\n")
    prose = [i for i, p in enumerate(paragraphs) if p[:1].isalpha() and len(p) > 80]
    i = prose[len(prose) // 2]
    paragraphs[i] += " This sentence was added by the resync benchmark."
    path.write_text("\n\n".join(paragraphs), encoding="utf-8")


def run(quick: bool = False, store: Path | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kb-bench-resync-") as tmp:
        base = store or Path(tmp)
        stamp.ensure(base)
        workspace = base / "fastapi-docs"
        if not (base / "store").exists():
            base.mkdir(parents=True, exist_ok=True)
            if not workspace.exists():
                corpora.copy_fastapi(workspace)
                if quick:
                    trim(workspace, QUICK_FILES)
            kb = open_kb(base)
            report = kb.sync()
            print(f"cold index: {report.chunks_embedded} chunks in {report.seconds:.1f} s")
            kb.close()

        kb = open_kb(base)
        files, chunks = kb.status().files, kb.status().chunks
        out["files"], out["chunks"] = files, chunks
        rows = []

        reports = [kb.sync() for _ in range(RUNS)]
        out["no_change"] = {
            "seconds": statistics.median(r.seconds for r in reports),
            "embedded": max(r.chunks_embedded for r in reports),
        }
        rows.append(
            ["no-change re-sync", out["no_change"]["seconds"], out["no_change"]["embedded"]]
        )
        kb.close()

        restarts = []
        for _ in range(RUNS):
            client = LspClient([workspace], base / "store")
            with client:
                client.wait_ready(poll=0.02)
                ready = time.perf_counter() - client.started_at
                syncs = client.syncs()
                if not syncs:
                    print("warning: the server logged no sync; chunks embedded unknown")
                restarts.append((ready, sum(s["embedded"] for s in syncs)))
                out["restart_log"] = [s["summary"] for s in syncs]
        out["restart"] = {
            "seconds": statistics.median(r[0] for r in restarts),
            "embedded": max(r[1] for r in restarts),
        }
        rows.append(
            ["server restart to ready (LSP)", out["restart"]["seconds"], out["restart"]["embedded"]]
        )

        kb = open_kb(base)
        target = next(
            p
            for p in sorted(workspace.rglob("*.md"))
            if not p.name.startswith("_")
            and len(kb.chunks_of(p.relative_to(workspace).as_posix())) >= 4
        )
        rel = target.relative_to(workspace).as_posix()
        edit_one_paragraph(target)
        report = kb.sync([target])
        out["paragraph_edit"] = {
            "file": rel,
            "file_chunks": len(kb.chunks_of(rel)),
            "seconds": report.seconds,
            "embedded": report.chunks_embedded,
        }
        rows.append(
            [
                f"one-paragraph edit ({rel}, {out['paragraph_edit']['file_chunks']} chunks)",
                report.seconds,
                report.chunks_embedded,
            ]
        )

        folder, count = folder_near_50(workspace)
        renamed = folder.with_name(folder.name + "-renamed")
        os.rename(folder, renamed)
        report = kb.sync([folder, renamed])
        out["folder_rename"] = {
            "folder": folder.relative_to(workspace).as_posix(),
            "files": count,
            "seconds": report.seconds,
            "embedded": report.chunks_embedded,
            "reused": report.chunks_reused,
        }
        rows.append(
            [
                f"rename {out['folder_rename']['folder']}/ ({count} files)",
                report.seconds,
                report.chunks_embedded,
            ]
        )
        os.rename(renamed, folder)  # leave the copy as found, for whoever reuses it
        kb.sync([folder, renamed])
        kb.close()

    table(
        ["case", "seconds", "chunks embedded"],
        rows,
        f"Re-sync, fastapi-docs ({files} files, {chunks} chunks)",
    )
    write_json("resync", out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench resync", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"first {QUICK_FILES} files only")
    parser.add_argument("--store", type=Path, help="reuse the copy and index `bench index` kept")
    args = parser.parse_args(argv)
    run(quick=args.quick, store=args.store)
