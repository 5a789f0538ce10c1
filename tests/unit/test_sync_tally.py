"""One sync, one total: the files it does are counted once, after the scan of every root,
and the count never changes within the sync (issue 13, point 1)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.index.reports import SyncProgress
from kb_lsp.engine.knowledge import KnowledgeBase


def open_kb(roots: list[Path], storage: Path) -> KnowledgeBase:
    settings = load_settings({}).settings
    return KnowledgeBase(roots, settings, embedder=HashingEmbedder(), storage=storage)


def check_one_sync(steps: list[SyncProgress], total: int) -> None:
    """Scanning first; then one total throughout; counts that only go up within a phase;
    reading before embedding; every phase ends complete."""
    assert steps and steps[0].phase == "scanning"
    counted = [s for s in steps if s.phase != "scanning"]
    assert counted and all(s.phase != "scanning" for s in steps[steps.index(counted[0]) :])
    assert {s.total for s in counted} == {total}
    phases = [s.phase for s in counted]
    assert phases == sorted(phases, key=["keyword", "vectors"].index)
    for phase in ("keyword", "vectors"):
        mine = [s for s in counted if s.phase == phase]
        assert mine, f"no {phase} step"
        assert [s.done for s in mine] == sorted(s.done for s in mine)
        assert mine[-1].done == total
    vectors = [s for s in counted if s.phase == "vectors"]
    assert len({s.chunks_total for s in vectors}) == 1
    assert [s.chunks_done for s in vectors] == sorted(s.chunks_done for s in vectors)
    assert vectors[-1].chunks_done == vectors[-1].chunks_total > 0


def test_a_cold_sync_of_two_roots_has_one_total(
    workspace: Path, tmp_path: Path, storage: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(workspace / "payments", other)
    (other / "extra.md").write_text("# Extra\n\nA page only the second root has.\n", "utf-8")
    total = len(list(workspace.rglob("*.md"))) + len(list(other.rglob("*.md")))
    kb = open_kb([workspace, other], storage)
    steps: list[SyncProgress] = []
    kb.sync(progress=steps.append)
    check_one_sync(steps, total)
    # Reading goes through both roots before any vector: one count from 0 to the total.
    reading = [s.done for s in steps if s.phase == "keyword"]
    assert reading[0] == 0 and reading[-1] == total
    assert kb.status().files == total
    kb.close()


def test_a_sync_of_one_file_counts_the_vectors_an_earlier_sync_left(
    workspace: Path, storage: Path
) -> None:
    kb = open_kb([workspace], storage)
    files = len(list(workspace.rglob("*.md")))
    cancel = threading.Event()

    def stop_at_the_vectors(step: SyncProgress) -> None:
        if step.phase == "vectors":
            cancel.set()

    assert kb.sync(progress=stop_at_the_vectors, cancel=cancel).cancelled
    assert kb.status().vectors_ready < 1.0

    # One file changes: the sync reads that one and finishes every pending file.
    note = workspace / "glossary.md"
    note.write_text(note.read_text(encoding="utf-8") + "\n\nA new line.\n", encoding="utf-8")
    steps: list[SyncProgress] = []
    report = kb.sync([note], progress=steps.append)
    assert not report.cancelled
    check_one_sync(steps, files)
    reading = [s.done for s in steps if s.phase == "keyword"]
    assert reading == [files - 1, files]  # only glossary.md is read
    embedding = [s for s in steps if s.phase == "vectors"]
    assert embedding[0].done == 0  # none of them had all its vectors
    assert kb.status().vectors_ready == 1.0
    kb.close()


def test_an_up_to_date_sync_counts_nothing(workspace: Path, storage: Path) -> None:
    kb = open_kb([workspace], storage)
    kb.sync()
    steps: list[SyncProgress] = []
    kb.sync(progress=steps.append)
    assert [s.phase for s in steps] == ["scanning", "keyword"]
    assert steps[-1].total == steps[-1].done == 0
    kb.close()
