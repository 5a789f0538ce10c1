"""Live indexing over the LSP: how soon a saved file is searchable, and a checkout burst.

    python -m bench live [--quick] [--store DIR]

A real server with its default settings (debounce included) on a tldr-pages copy: the
one `bench search` left in `--store` (the server starts on it with nothing to embed),
else a fresh cold index of 1000 pages.

* save → searchable: 20 times, a page gets a new paragraph with a word that exists
  nowhere else; the clock runs from the write until `kb/search` for that word returns
  the page with the word in its snippet (polled as fast as the server answers).
* burst: 400 pages changed, 50 added, 50 deleted in one go, as a `git checkout` does.
  Time until the index matches the disk (last sync logged once the server is quiet),
  chunks the server embedded against chunks whose text is really new (counted by
  chunking the disk before and after with the pipeline's own chunker), and a spot check
  that changed pages are found and deleted ones are gone.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import corpora, stamp
from bench.lsp_client import LspClient
from bench.report import percentiles, table, write_json
from kb_lsp.config import Settings
from kb_lsp.engine.index.indexer import text_hash
from kb_lsp.engine.markdown.document import parse_markdown

EDITS = 20
PAGES = 1000
QUICK_PAGES = 300
BURST = (400, 50, 50)  # changed, added, deleted
QUICK_BURST = (120, 15, 15)
QUIET = 2.0  # seconds without a new sync before the index counts as caught up


def chunk_hashes(workspace: Path) -> set[str]:
    settings = Settings()
    out: set[str] = set()
    for path in workspace.rglob("*.md"):
        doc = parse_markdown(
            path.read_text(encoding="utf-8", errors="replace"),
            file_name=path.name,
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
        )
        out |= {text_hash(" > ".join(c.heading_path), c.text) for c in doc.chunks}
    return out


def save_to_searchable(client: LspClient, workspace: Path, pages: list[Path]) -> list[float]:
    latencies = []
    for i, page in enumerate(pages[:EDITS]):
        rel = page.relative_to(workspace).as_posix()
        word = f"livetoken{i}q{random.Random(i).randrange(10**6)}"
        text = page.read_text(encoding="utf-8")
        started = time.perf_counter()
        page.write_text(text + f"\n- Live edit {i}: the {word} option is new here:\n\n`x {word}`\n")
        deadline = started + 120
        while True:
            result = client.search(word)
            if any(
                word in (hit["snippet"] or "") and hit["path"] == rel for hit in result["results"]
            ):
                latencies.append(time.perf_counter() - started)
                break
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{page.name} not searchable for {word!r} after 120 s")
        time.sleep(0.5)  # one save at a time, as a person types and saves
    return latencies


def burst(
    client: LspClient, workspace: Path, pages: list[Path], sizes: tuple[int, int, int]
) -> dict[str, Any]:
    changed_n, added_n, deleted_n = sizes
    before = chunk_hashes(workspace)
    files_before = client.status()["files"]
    rng = random.Random(7)
    chosen = rng.sample(pages[EDITS:], changed_n + deleted_n)
    changed, deleted = chosen[:changed_n], chosen[changed_n:]
    started = time.perf_counter()
    for i, page in enumerate(changed):
        lines = page.read_text(encoding="utf-8").splitlines()
        at = next((n for n, ln in enumerate(lines) if ln.startswith("- ")), len(lines) - 1)
        lines[at] = f"- Burst {i} changes this example, see burstword{i}x:"
        page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    added_dir = workspace / "pages" / "checkout"
    added_dir.mkdir(exist_ok=True)
    for i in range(added_n):
        (added_dir / f"tool-{i}.md").write_text(
            f"# tool-{i}\n\n> A tool added by the burst, addedword{i}x.\n\n"
            f"- Run it:\n\n`tool-{i}`\n"
        )
    for page in deleted:
        page.unlink()
    written = time.perf_counter() - started
    expected = files_before + added_n - deleted_n

    # Caught up: ready, the right number of files, and no new sync for QUIET seconds.
    while True:
        status = client.status()
        syncs = client.syncs(since=started)
        last = max((s["at"] for s in syncs), default=started)
        quiet = time.perf_counter() - last
        settled = status["state"] == "ready" and not status["pending"]
        if settled and status["files"] == expected and syncs and quiet >= QUIET:
            break
        if time.perf_counter() - started > 1800:
            raise TimeoutError(f"burst not indexed after 30 min: {status}")
        time.sleep(0.1)
    caught_up = last - started

    after = chunk_hashes(workspace)
    really_new = len(after - before)
    embedded = sum(s["embedded"] for s in syncs)
    spot = rng.sample(range(changed_n), min(10, changed_n))
    missed = []
    for i in spot:
        rel = changed[i].relative_to(workspace).as_posix()
        # Keyword mode: this checks the index holds the new text, not ranking (in hybrid
        # mode the 120 look-alike words "burstwordNx" compete on meaning too).
        hits = client.search(f"burstword{i}x", mode="keyword")["results"]
        if all(hit["path"] != rel for hit in hits):
            missed.append({"path": rel, "got": [(h["path"], h["score"]) for h in hits[:3]]})
    found = len(spot) - len(missed)
    gone = sum(
        all(
            hit["path"] != page.relative_to(workspace).as_posix()
            for hit in client.search(page.stem.replace("-", " "))["results"]
        )
        for page in deleted[:10]
    )
    return {
        "changed": changed_n,
        "added": added_n,
        "deleted": deleted_n,
        "write_seconds": written,
        "seconds_until_index_matches_disk": caught_up,
        "syncs": len(syncs),
        "chunks_embedded": embedded,
        "chunks_really_new": really_new,
        "spot_check_changed_found": f"{found}/{len(spot)}",
        "spot_check_missed": missed,
        "spot_check_deleted_gone": f"{gone}/{min(10, len(deleted))}",
    }


def run(quick: bool = False, store: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kb-bench-live-") as tmp:
        base = store or Path(tmp)
        workspace, storage = base / "tldr", base / "tldr-store"
        reused = workspace.is_dir() and storage.is_dir()
        stamp.ensure(base)
        if not reused:
            for path in (workspace, storage):
                shutil.rmtree(path, ignore_errors=True)
                path.mkdir(parents=True)
            corpora.copy_tldr(workspace, QUICK_PAGES if quick else PAGES)
        with LspClient([workspace], storage) as client:
            t0 = time.perf_counter()
            status = client.wait_ready(poll=0.1)
            print(
                f"{status['files']} files, {status['chunks']} chunks ready in "
                f"{time.perf_counter() - t0:.1f} s ({'reused index' if reused else 'cold index'})"
            )
            pages = sorted(workspace.rglob("*.md"))
            random.Random(3).shuffle(pages)
            latencies = save_to_searchable(client, workspace, pages)
            burst_out = burst(client, workspace, pages, QUICK_BURST if quick else BURST)
            out = {
                "files": status["files"],
                "chunks": status["chunks"],
                "save_to_searchable_s": percentiles(latencies),
                "save_to_searchable_samples": latencies,
                "burst": burst_out,
            }
    lat = out["save_to_searchable_s"]
    b = out["burst"]
    table(
        ["measure", "value"],
        [
            [f"save → searchable, median of {len(latencies)} (s)", lat["p50"]],
            ["save → searchable, p95 (s)", lat["p95"]],
            [
                f"burst ({b['changed']} changed, {b['added']} added, {b['deleted']} deleted): "
                "seconds until the index matches the disk",
                b["seconds_until_index_matches_disk"],
            ],
            [
                "burst: chunks embedded / chunks really new",
                f"{b['chunks_embedded']} / {b['chunks_really_new']}",
            ],
            [
                "burst: spot checks (changed found, deleted gone)",
                f"{b['spot_check_changed_found']}, {b['spot_check_deleted_gone']}",
            ],
        ],
        f"Live indexing over LSP ({out['files']} files)",
    )
    write_json("live", out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench live", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller corpus and burst")
    parser.add_argument("--store", type=Path, help="reuse the copy and index `bench search` kept")
    args = parser.parse_args(argv)
    run(quick=args.quick, store=args.store)
