"""Where a store's bytes are, and what removing a file's keyword rows costs, on a store
`bench scaling` built.

    python -m bench storage --store DIR [--copies 12] [--files 15]

Opens this code's store of `DIR/x<copies>` (what `python -m bench scaling --store DIR`
keeps) and reports:

* bytes — SQLite's own page count per table and index (`dbstat`), the chunk rows' text,
  stems and readable blocks columns within them, and every file of the Chroma folder,
  each against the workspace's Markdown;
* removing a file's FTS5 rows — the statement every edit and removal runs first
  (`text_format.REMOVE_FILE`), for `--files` seeded random files, each in a transaction
  rolled back (the store is left as it was): median and max.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import stamp
from bench.report import table, write_json
from kb_lsp.engine.store.text_format import REMOVE_FILE

REPO = Path(__file__).resolve().parent.parent
SEED = 26
MB = 1_000_000


def sqlite_bytes(db: sqlite3.Connection) -> dict[str, int]:
    """Bytes of pages per table or index (FTS5's shadow tables by their own names)."""
    rows = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")
    return {str(name): int(size) for name, size in rows}


def column_bytes(db: sqlite3.Connection) -> dict[str, int]:
    """What the chunk rows' big columns hold (part of the `chunks` pages): the text and
    what is made from it (`store/chunks.py`), those a store of older code has."""
    present = {str(row[1]) for row in db.execute("PRAGMA table_info(chunks)")}
    names = [name for name in ("text", "stems", "blocks") if name in present]
    sums = db.execute(
        "SELECT " + ", ".join(f"SUM(LENGTH({name}))" for name in names) + " FROM chunks"
    ).fetchone()
    return {f"chunks.{name}": int(size or 0) for name, size in zip(names, sums, strict=True)}


def removal_times(db: sqlite3.Connection, files: int) -> list[float]:
    """Seconds to remove each of `files` random files' FTS rows, rolled back."""
    paths = [row[0] for row in db.execute("SELECT path FROM files ORDER BY path")]
    chosen = random.Random(SEED).sample(paths, min(files, len(paths)))
    times = []
    for path in chosen:
        db.execute("BEGIN")
        started = time.perf_counter()
        db.execute(REMOVE_FILE, (path,))
        times.append(time.perf_counter() - started)
        db.execute("ROLLBACK")
    return times


def _collection_relative(path: Path) -> str:
    """A Chroma file's name, its collection's folder (a UUID) said as such."""
    parts = path.parts
    return "/".join(("(HNSW)", *parts[1:])) if len(parts) > 1 else parts[0]


def measure(store: Path, workspace: Path, files: int) -> dict[str, Any]:
    database = next(store.rglob("kb.sqlite3"))
    chroma = database.parent / "chroma"
    markdown = sum(p.stat().st_size for p in workspace.rglob("*.md"))
    db = sqlite3.connect(database, isolation_level=None)
    try:
        tables = sqlite_bytes(db)
        columns = column_bytes(db)
        chunks = int(db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        removal = removal_times(db, files)
    finally:
        db.close()
    chroma_files = {
        _collection_relative(p.relative_to(chroma)): p.stat().st_size
        for p in chroma.rglob("*")
        if p.is_file()
    }
    return {
        "chunks": chunks,
        "markdown_bytes": markdown,
        "sqlite": tables,
        "sqlite_file_bytes": database.stat().st_size,
        "columns": columns,
        "chroma": chroma_files,
        "remove_fts_rows_seconds": removal,
    }


def report(out: dict[str, Any]) -> None:
    markdown = out["markdown_bytes"]

    def row(name: str, size: int) -> list[Any]:
        return [name, round(size / MB, 1), round(size / markdown, 2), round(size / out["chunks"])]

    sqlite_total = sum(out["sqlite"].values())
    chroma_total = sum(out["chroma"].values())
    rows = [row("Markdown", markdown), row("kb.sqlite3 (pages)", sqlite_total)]
    rows += [row(f"  {name}", size) for name, size in out["sqlite"].items() if size >= MB // 10]
    rows += [row(f"    {name}", size) for name, size in out["columns"].items()]
    rows.append(row("chroma/", chroma_total))
    rows += [row(f"  {name}", size) for name, size in out["chroma"].items() if size >= MB // 10]
    rows.append(row("store", sqlite_total + chroma_total))
    table(
        ["part", "MB", "× Markdown", "bytes per chunk"],
        rows,
        f"Where the store's bytes are: {out['chunks']:,} chunks",
    )
    times = out["remove_fts_rows_seconds"]
    print(
        f"removing a file's FTS5 rows ({len(times)} random files, rolled back): median "
        f"{statistics.median(times) * 1000:.2f} ms, max {max(times) * 1000:.2f} ms"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench storage", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--store", required=True, help="the --store DIR of bench scaling")
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument("--files", type=int, default=15)
    args = parser.parse_args(argv)
    folder = Path(args.store).resolve() / f"x{args.copies}"
    store = folder / f"store-this-{stamp.content_hash(REPO / 'server')}"
    if not (store / "bench-built.json").is_file():
        raise SystemExit(f"no store of this code at {store}: run python -m bench scaling first")
    stamp.ensure(store)
    out = measure(store / "kb", folder / "ws", args.files)
    report(out)
    out["load"] = os.getloadavg()[0]
    write_json("storage", {"copies": args.copies, **out})


if __name__ == "__main__":
    main()
