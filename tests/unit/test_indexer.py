"""Incremental sync: only what changed is embedded, and any interruption is repaired."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import REPO
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.sql import statements_of
from tests.helpers.store import chroma_collection, store_of

from kb_lsp.config import load_settings
from kb_lsp.engine.index import vector_pass
from kb_lsp.engine.index.indexer import embedding_text
from kb_lsp.engine.index.reports import SyncProgress
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.records import ReadOnlyStore
from kb_lsp.engine.storage import DATABASE
from kb_lsp.engine.store import Store, VectorEntry
from kb_lsp.engine.store.chroma import ChromaIndex
from kb_lsp.engine.terms import parse_stems, stems_text, word_stems, word_terms
from kb_lsp.protocol import IndexStatus


def open_kb(
    workspace: Path, storage: Path, embedder: HashingEmbedder | None = None, **raw: object
) -> KnowledgeBase:
    settings = load_settings({"search": {"threshold": 0.0}, **raw}).settings
    return KnowledgeBase(
        [workspace], settings, embedder=embedder or HashingEmbedder(), storage=storage
    )


def chroma_ids(store: Store) -> set[str]:
    return store.vectors.ids()


def sqlite_ids(store: Store) -> set[str]:
    return set(store.chunks.indexed())


def test_cold_sync_then_no_change_embeds_nothing(workspace: Path, storage: Path) -> None:
    embedder = HashingEmbedder()
    kb = open_kb(workspace, storage, embedder)
    first = kb.sync()
    md_files = [p for p in workspace.rglob("*.md")]
    assert first.files_added == len(md_files)
    assert first.seconds > 0  # measured on the monotonic clock (`kb index` said 0.0s once)
    assert first.chunks_embedded == embedder.texts_embedded > 0
    status = kb.status()
    assert status.files == len(md_files)
    assert status.chunks == first.chunks_embedded + first.chunks_reused

    again = kb.sync()
    assert again.chunks_embedded == 0
    assert again.files_added == again.files_changed == again.files_removed == 0
    assert again.files_unchanged == len(md_files)
    kb.close()


def test_touch_without_change_costs_nothing(workspace: Path, storage: Path) -> None:
    kb = open_kb(workspace, storage)
    kb.sync()
    target = workspace / "glossary.md"
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 10**9))
    report = kb.sync([target])
    assert report.chunks_embedded == 0
    assert report.files_changed == 0
    assert report.files_unchanged == 1
    kb.close()


def test_editing_one_paragraph_embeds_only_that_chunk(workspace: Path, storage: Path) -> None:
    embedder = HashingEmbedder()
    kb = open_kb(workspace, storage, embedder, chunkSize=200, chunkOverlap=0)
    kb.sync()
    target = workspace / "payments" / "mexico-payments.md"
    chunks_before = kb.chunks_of("payments/mexico-payments.md")
    assert len(chunks_before) > 3
    text = target.read_text(encoding="utf-8")
    paragraph = chunks_before[-1].text.splitlines()[-1]
    target.write_text(
        text.replace(paragraph, paragraph + " Zanzibar reconciliation note."), encoding="utf-8"
    )

    before = embedder.texts_embedded
    report = kb.sync([target])
    assert report.files_changed == 1
    assert report.chunks_embedded == 1 == embedder.texts_embedded - before
    assert report.chunks_reused == len(kb.chunks_of("payments/mexico-payments.md")) - 1
    hits = kb.search("Zanzibar reconciliation")
    assert hits[0].path == "payments/mexico-payments.md"
    kb.close()


def test_rename_and_folder_move_cost_no_embedding(workspace: Path, storage: Path) -> None:
    embedder = HashingEmbedder()
    kb = open_kb(workspace, storage, embedder)
    kb.sync()
    before = embedder.texts_embedded

    (workspace / "glossary.md").rename(workspace / "terms.md")
    (workspace / "payments").rename(workspace / "money-movement")
    report = kb.sync()
    assert report.chunks_embedded == 0
    assert embedder.texts_embedded == before
    paths = {info.path for info in kb.files()}
    assert "terms.md" in paths and "glossary.md" not in paths
    assert "money-movement/mexico-payments.md" in paths
    assert not any(p.startswith("payments/") for p in paths)
    with store_of(workspace, storage) as store:
        assert chroma_ids(store) == sqlite_ids(store)
    kb.close()


def test_delete_file_and_folder_by_path(workspace: Path, storage: Path) -> None:
    kb = open_kb(workspace, storage)
    kb.sync()
    (workspace / "glossary.md").unlink()
    meetings = workspace / "meetings"
    for child in meetings.iterdir():
        child.unlink()
    meetings.rmdir()
    report = kb.sync([workspace / "glossary.md", meetings])
    assert report.files_removed == 3
    paths = {info.path for info in kb.files()}
    assert "glossary.md" not in paths
    assert not any(p.startswith("meetings/") for p in paths)
    assert all(hit.path != "glossary.md" for hit in kb.search("glossary SPEI"))
    with store_of(workspace, storage) as store:
        assert chroma_ids(store) == sqlite_ids(store)
    kb.close()


def test_new_file_by_path(workspace: Path, storage: Path) -> None:
    kb = open_kb(workspace, storage)
    kb.sync()
    note = workspace / "notes" / "chile.md"
    note.parent.mkdir()
    note.write_text(
        "# Chile payments\n\nPayments to Chile go through Banco Estado.\n", encoding="utf-8"
    )
    report = kb.sync([note])
    assert report.files_added == 1
    assert kb.search("Banco Estado")[0].path == "notes/chile.md"
    kb.close()


def test_crash_between_sqlite_and_chroma_is_repaired(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = open_kb(workspace, storage)

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(ChromaIndex, "upsert", crash)  # the port: Chroma fails
    with pytest.raises(KeyboardInterrupt):
        kb.sync()
    monkeypatch.undo()
    with store_of(workspace, storage) as store:
        pending = [r for r in store.catalog.manifest().values() if r.state != "ok"]
    assert pending, "the interrupted batch is left pending"
    kb.close()

    # The next process repairs it: every file indexed, Chroma holds exactly SQLite's ids.
    embedder = HashingEmbedder()
    kb = open_kb(workspace, storage, embedder)
    kb.sync()
    with store_of(workspace, storage) as store:
        assert all(r.state == "ok" for r in store.catalog.manifest().values())
        assert len(store.catalog.manifest()) == len(list(workspace.rglob("*.md")))
        assert chroma_ids(store) == sqlite_ids(store)
    again = kb.sync()
    assert again.chunks_embedded == 0
    kb.close()


def test_stray_vectors_in_chroma_are_removed(workspace: Path, storage: Path) -> None:
    kb = open_kb(workspace, storage)
    kb.sync()
    kb.close()
    with store_of(workspace, storage) as store:  # the writer now, as the next process would be
        store.vectors.upsert([VectorEntry("stray:0", "gone.md", "x", np.full(256, 0.1))])
        some = sorted(sqlite_ids(store))[:3]
        store.vectors.delete(some)
    # What a crash leaves in Chroma is repaired by the next opening's first sync.
    kb = open_kb(workspace, storage)
    kb.sync()
    with store_of(workspace, storage) as store:
        assert chroma_ids(store) == sqlite_ids(store)
    kb.close()


def test_a_save_does_not_check_every_vector_again(workspace: Path, storage: Path) -> None:
    """Chroma is checked against every chunk row once per opening, not on every save."""
    kb = open_kb(workspace, storage)
    kb.sync()
    (folder,) = kb.store_folders()
    note = workspace / "payments" / "mexico-payments.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    with statements_of(folder) as seen:
        report = kb.sync([note])
    assert report.files_changed == 1
    every_row = [s for s in seen if "LEFT JOIN files" in s]
    assert not every_row, every_row
    with store_of(workspace, storage) as store:
        assert chroma_ids(store) == sqlite_ids(store)
    kb.close()


def test_bad_files_are_skipped_with_reasons(workspace: Path, storage: Path) -> None:
    (workspace / "binary.md").write_bytes(b"# Title\x00\x01\x02 binary")
    (workspace / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve".encode("latin-1"))
    (workspace / "huge.md").write_text("# Big\n\n" + "word " * 1000, encoding="utf-8")
    kb = open_kb(workspace, storage, maxFileSize=4096)
    report = kb.sync()
    reasons = {item.path: item.reason for item in kb.status().skipped}
    assert "binary" in reasons["binary.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "size limit" in reasons["huge.md"]
    assert report.skipped == 3
    indexed = {info.path for info in kb.files()}
    assert not {"binary.md", "latin1.md", "huge.md"} & indexed

    # Fixed files are indexed and lose their reason.
    (workspace / "latin1.md").write_text("# Café\n\nnaïve", encoding="utf-8")
    kb.sync([workspace / "latin1.md"])
    assert "latin1.md" in {info.path for info in kb.files()}
    assert "latin1.md" not in {item.path for item in kb.status().skipped}
    kb.close()


def test_file_that_becomes_unreadable_is_removed(workspace: Path, storage: Path) -> None:
    kb = open_kb(workspace, storage)
    kb.sync()
    (workspace / "glossary.md").write_bytes(b"\xff\xfe\x00garbage\x00")
    kb.sync([workspace / "glossary.md"])
    assert "glossary.md" not in {info.path for info in kb.files()}
    assert "glossary.md" in {item.path for item in kb.status().skipped}
    kb.close()


def test_new_embedder_rebuilds_vectors(workspace: Path, storage: Path) -> None:
    kb = open_kb(workspace, storage, HashingEmbedder(256))
    first = kb.sync()
    kb.close()
    other = HashingEmbedder(128)
    kb = open_kb(workspace, storage, other)
    # Keyword search keeps working while the vectors are rebuilt, with progress.
    assert kb.search("SPEI cut-off", mode="keyword")[0].path == "payments/mexico-payments.md"
    assert kb.status().vectors_ready == 0.0
    steps: list[SyncProgress] = []
    report = kb.sync(progress=steps.append)
    vectors = [s for s in steps if s.phase == "vectors"]
    assert vectors[-1].chunks_done == vectors[-1].chunks_total == kb.status().chunks
    assert report.chunks_embedded == first.chunks_embedded
    assert kb.status().embedder == "test:hashing:128"
    assert kb.search("SPEI cut-off")[0].path == "payments/mexico-payments.md"
    kb.close()


def test_full_reindex_reuses_cached_vectors(workspace: Path, storage: Path) -> None:
    embedder = HashingEmbedder()
    kb = open_kb(workspace, storage, embedder)
    kb.sync()
    before = embedder.texts_embedded
    report = kb.sync(full=True)
    assert report.files_changed == len(list(workspace.rglob("*.md")))
    assert embedder.texts_embedded == before
    kb.close()


class _Readers:
    """Threads that search in a loop, counting their answers, until stopped."""

    QUERY = "SPEI cut-off"

    def __init__(self, kbs: list[KnowledgeBase]) -> None:
        self.answers: list[list[str | None]] = [[] for _ in kbs]
        self.errors: list[BaseException] = []
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop, args=(kb, i), daemon=True)
            for i, kb in enumerate(kbs)
        ]

    def _loop(self, kb: KnowledgeBase, i: int) -> None:
        while not self._stop.is_set():
            try:
                hits = kb.search(self.QUERY)
                answer = hits[0].path if hits else None
            except BaseException as err:  # every failure is a test failure
                answer = None
                self.errors.append(err)
            with self._cond:
                self.answers[i].append(answer)
                self._cond.notify_all()

    def __enter__(self) -> _Readers:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)

    def one_more_each(self) -> None:
        """Wait until every reader has answered once more from now."""
        with self._cond:
            marks = [len(a) for a in self.answers]
            assert self._cond.wait_for(
                lambda: all(len(a) > m for a, m in zip(self.answers, marks, strict=True)), 60
            ), "a reader stopped answering"


def test_full_reindex_keeps_readers_answering_here_and_in_a_read_only_opener(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = open_kb(workspace, storage)
    writer.sync()
    reader = open_kb(workspace, storage)  # another window: read-only on the same store
    assert reader.read_only
    (workspace / "zebra.md").write_text("# Zebra\n\nThe quokka ledger closes on Fridays.\n")
    rebuild = ChromaIndex.rebuild

    with _Readers([writer, reader]) as readers:

        def switch_between_searches(
            index: ChromaIndex, batches: Iterable[Sequence[VectorEntry]]
        ) -> int:
            # Both readers search while the old collection is live (and between the
            # new one's batches), and again once the new one replaced it and the old one
            # is gone.
            readers.one_more_each()

            def batch_by_batch() -> Iterator[Sequence[VectorEntry]]:
                for batch in batches:
                    yield batch
                    readers.one_more_each()

            written = rebuild(index, batch_by_batch())
            readers.one_more_each()
            return written

        monkeypatch.setattr(ChromaIndex, "rebuild", switch_between_searches)

        def every_file_between_searches(step: object) -> None:
            readers.one_more_each()

        report = writer.sync(full=True, progress=every_file_between_searches)
        readers.one_more_each()
    assert not report.cancelled
    assert readers.errors == [], "".join(traceback.format_exception(readers.errors[0]))
    for answers in readers.answers:
        assert answers and set(answers) == {"payments/mexico-payments.md"}
    # The last ones see what was written before the rebuild, in both windows.
    for kb in (writer, reader):
        assert kb.search("quokka ledger")[0].path == "zebra.md"
    reader.close()
    writer.close()
    with store_of(workspace, storage) as store:
        assert isinstance(store.vectors, ChromaIndex)
        live = store.vectors.live_name()
        assert live != "kb_" + store.directory.name  # a new collection, switched to
        assert store.vectors.collection_names() == [live]


def test_cancel_stops_between_files(workspace: Path, storage: Path) -> None:
    import threading

    kb = open_kb(workspace, storage)
    cancel = threading.Event()
    seen: list[str | None] = []

    def progress(p: object) -> None:
        seen.append(getattr(p, "path", None))
        cancel.set()

    report = kb.sync(progress=progress, cancel=cancel)
    assert report.cancelled
    assert kb.status().files < len(list(workspace.rglob("*.md")))
    # The next sync finishes the job.
    assert not kb.sync().cancelled
    assert kb.status().files == len(list(workspace.rglob("*.md")))
    kb.close()


def test_second_opener_is_read_only(workspace: Path, storage: Path) -> None:
    writer = open_kb(workspace, storage)
    writer.sync()
    reader = open_kb(workspace, storage)
    assert reader.read_only and not writer.read_only
    status = reader.status()
    assert status.read_only and status.files == writer.status().files
    assert "another kb-lsp process" in (status.message or "")
    assert reader.search("SPEI cut-off")[0].path == "payments/mexico-payments.md"
    with pytest.raises(ReadOnlyStore, match="another kb-lsp process"):
        reader.sync()
    reader.close()
    writer.close()
    # The lock is released on close: the next opener writes.
    again = open_kb(workspace, storage)
    assert not again.read_only
    again.close()


# --- two phases: keyword search first, vectors in bounded batches across files -----------


def big_file(path: Path, sections: int) -> None:
    path.write_text(
        "# Release notes\n\n"
        + "\n\n".join(
            f"## Version {i}\n\nFixed the frobnicator number {i} in the ledger export."
            for i in range(sections)
        )
        + "\n",
        encoding="utf-8",
    )


class RecordingEmbedder(HashingEmbedder):
    """Records each `embed_documents` call's texts."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return super().embed_documents(texts)


def test_keyword_search_is_complete_before_any_vector(workspace: Path, storage: Path) -> None:
    big_file(workspace / "release-notes.md", 300)
    embedder = RecordingEmbedder()
    kb = open_kb(workspace, storage, embedder, search={"threshold": 0.3})
    seen: list[IndexStatus] = []
    found: list[list[str]] = []

    def progress(step: SyncProgress) -> None:
        if step.phase == "vectors" and not seen:
            # Phase 2 has not stored a vector yet: everything searchable is keyword.
            assert embedder.batches == []
            seen.append(kb.status())
            found.append([hit.path for hit in kb.search("SPEI cut-off")])
            found.append([hit.path for hit in kb.search("frobnicator 287")])

    kb.sync(progress=progress)
    status = seen[0]
    assert status.keyword_complete
    assert status.files == len(list(workspace.rglob("*.md")))
    assert status.progress is not None and status.progress.phase == "vectors"
    assert 0.0 <= status.vectors_ready < 0.1
    # A file whose vectors are pending is found, above the default threshold.
    assert found[0][0] == "payments/mexico-payments.md"
    assert found[1][0] == "release-notes.md"
    final = kb.status()
    assert final.keyword_complete and final.vectors_ready == 1.0 and final.progress is None
    kb.close()


def test_vectors_go_in_bounded_batches_across_files(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_pass, "EMBED_BATCH", 16)
    big_file(workspace / "release-notes.md", 120)
    embedder = RecordingEmbedder()
    kb = open_kb(workspace, storage, embedder)
    steps: list[SyncProgress] = []
    kb.sync(progress=steps.append)
    assert max(len(batch) for batch in embedder.batches) <= 16
    big = [i for i, batch in enumerate(embedder.batches) if any("frobnicator" in t for t in batch)]
    assert len(big) >= 120 // 16  # the big file spans many batches, holding none alone
    vectors = [s for s in steps if s.phase == "vectors"]
    assert [s.chunks_done for s in vectors] == sorted(s.chunks_done for s in vectors)
    assert vectors[-1].chunks_done == vectors[-1].chunks_total == kb.status().chunks
    kb.close()


def test_newest_files_get_vectors_first(workspace: Path, storage: Path) -> None:
    embedder = RecordingEmbedder()
    kb = open_kb(workspace, storage, embedder)
    kb.sync()
    glossary, mexico = workspace / "glossary.md", workspace / "payments" / "mexico-payments.md"
    for i, path in enumerate([glossary, mexico]):
        path.write_text(path.read_text(encoding="utf-8") + f"\n\nEdited note {i}.\n", "utf-8")
        os.utime(path, ns=(10**18 + i, 10**18 + i))  # mexico is the newest
    embedder.batches.clear()
    kb.sync([glossary, mexico])
    order = [t for batch in embedder.batches for t in batch]
    assert "Edited note 1." in order[0] and "Edited note 0." in order[-1]
    kb.close()


def test_search_ignores_the_vector_of_a_chunks_previous_text(
    workspace: Path, storage: Path
) -> None:
    kb = open_kb(workspace, storage, search={"threshold": 0.3})
    target = workspace / "zeta.md"
    target.write_text("# Zeta\n\nQuokka wombat platypus marsupial census.\n", encoding="utf-8")
    kb.sync()
    assert kb.search("quokka wombat platypus")[0].path == "zeta.md"
    target.write_text("# Zeta\n\nNothing about animals any more.\n", encoding="utf-8")
    results: list[list[str]] = []

    def progress(step: SyncProgress) -> None:
        if step.phase == "vectors" and not results:
            # Chroma still holds the old vector under the same chunk id.
            results.append([hit.path for hit in kb.search("quokka wombat platypus")])

    kb.sync([target], progress=progress)
    assert "zeta.md" not in results[0]
    kb.close()


def index_matches_disk(store: Store, workspace: Path) -> None:
    """Every file indexed and complete, SQLite, FTS and Chroma agree, each vector is the
    embedding of its chunk's current text."""
    disk = {p.relative_to(workspace).as_posix(): p for p in workspace.rglob("*.md")}
    manifest = store.catalog.manifest()
    assert set(manifest) == set(disk)
    for path, record in manifest.items():
        assert record.state == "ok", path
        assert record.sha256 == hashlib.sha256(disk[path].read_bytes()).hexdigest(), path
    db = store.db.reader()
    rows = {
        cid: (digest, embedding_text(heading, text))
        for cid, digest, heading, text in db.execute(
            "SELECT id, text_hash, heading, text FROM chunks"
        )
    }
    # FTS5's index against the chunks it reads (an error when they differ), and a row
    # in it for every chunk.
    db.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    fts = [
        row[0]
        for row in db.execute("SELECT c.id FROM chunks_fts_docsize d JOIN chunks c ON c.rid = d.id")
    ]
    assert sorted(fts) == sorted(rows)
    got = chroma_collection(store.directory).get(include=["embeddings", "metadatas"])
    assert set(got["ids"]) == set(rows)
    reference = HashingEmbedder()
    for cid, vector, meta in zip(got["ids"], got["embeddings"], got["metadatas"], strict=True):
        digest, text = rows[cid]
        assert meta["text_hash"] == digest, cid
        expected = np.asarray(reference.embed_query(text))
        # A vector restored from the cache is its int8 copy: within half a step of each
        # component (`vector_codec.py`).
        step = float(np.max(np.abs(expected))) / 127
        assert np.allclose(vector, expected, atol=step / 2 + 1e-5), cid


KILL_POINTS = [
    ("StoreWriter.write_texts", "after", 1),  # text of the first files committed
    ("ChromaIndex.delete", "before", 2),  # SQLite replaced a file's chunks, Chroma not yet
    ("VectorCache.put", "after", 1),  # vectors cached, not in Chroma
    ("ChromaIndex.upsert", "after", 2),  # part of phase 2 in Chroma
    ("Catalog.mark_ready", "before", 2),  # vectors in Chroma, files not marked complete
    ("Catalog.mark_ready", "after", 3),
]


@pytest.mark.parametrize(("method", "when", "nth"), KILL_POINTS)
def test_sync_killed_at_any_point_is_repaired_by_the_next(
    workspace: Path, storage: Path, method: str, when: str, nth: int
) -> None:
    settings = {"chunkSize": 200, "chunkOverlap": 0}
    kb = open_kb(workspace, storage, **settings)
    kb.sync()
    kb.close()
    # Every kind of change: an edit in place (same chunk ids, new text), a new file with
    # many chunks, a rename, a delete.
    mexico = workspace / "payments" / "mexico-payments.md"
    mexico.write_text(mexico.read_text("utf-8").replace("Mexico", "Mejico"), "utf-8")
    big_file(workspace / "release-notes.md", 40)
    (workspace / "glossary.md").rename(workspace / "terms.md")
    next(p for p in sorted(workspace.rglob("*.md")) if p.name != "terms.md").unlink()

    args = [str(workspace), str(storage), method, when, str(nth)]
    child = subprocess.run(
        [sys.executable, "-m", "tests.fakes.killed_sync", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]

    kb = open_kb(workspace, storage, **settings)
    kb.sync()
    assert kb.search("frobnicator 17")[0].path == "release-notes.md"
    assert kb.sync().chunks_embedded == 0
    kb.close()
    with store_of(workspace, storage) as store:
        index_matches_disk(store, workspace)


def test_five_megabyte_one_line_file(workspace: Path, storage: Path) -> None:
    """Chunk sizes stay bounded and a word deep inside the line is found (issue 10)."""
    words = ["ledger", "wire", "treasury", "close", "payment", "reconcile", "batch"]
    body = " ".join(words[(i * 7919) % len(words)] for i in range(700_000))
    middle = len(body) * 3 // 5
    (workspace / "dump.md").write_text(
        body[:middle] + " zanzibarite " + body[middle:], encoding="utf-8"
    )
    embedder = RecordingEmbedder()
    kb = open_kb(workspace, storage, embedder, maxFileSize=8 * 1024 * 1024)
    kb.sync()
    chunks = kb.chunks_of("dump.md")
    assert len(chunks) > 5_000_000 // 800
    assert max(len(c.text) for c in chunks) <= 800
    assert max(len(batch) for batch in embedder.batches) <= vector_pass.EMBED_BATCH
    hits = kb.search("zanzibarite", mode="keyword")
    assert hits[0].path == "dump.md" and "zanzibarite" in hits[0].snippet
    assert kb.search("zanzibarite")[0].path == "dump.md"
    kb.close()


def test_stems_are_stored_and_an_older_store_gets_them(workspace: Path, storage: Path) -> None:
    """Search compares query words with each chunk's stems, stored at index time; a store
    made before they were kept (no `stems` column) works at once and is filled by the
    next sync, with the same results."""
    kb = open_kb(workspace, storage)
    kb.sync()
    before = [(h.path, h.score) for h in kb.search("mexico payment cut-off", mode="keyword")]
    ((folder, _),) = kb.store_folders().items()
    kb.close()
    with closing(sqlite3.connect(folder / DATABASE)) as db, db:
        rows = db.execute("SELECT heading, text, stems FROM chunks").fetchall()
        assert rows and all(stems == stems_text(heading, text) for heading, text, stems in rows)
        # As an older version left it: no column, no version.
        db.execute("ALTER TABLE chunks DROP COLUMN stems")
        db.execute("DELETE FROM meta WHERE key = 'stems'")

    def unstemmed() -> int:
        with closing(sqlite3.connect(folder / DATABASE)) as db:
            return int(db.execute("SELECT count(*) FROM chunks WHERE stems IS NULL").fetchone()[0])

    kb = open_kb(workspace, storage)
    assert unstemmed() == len(rows)
    assert [
        (h.path, h.score) for h in kb.search("mexico payment cut-off", mode="keyword")
    ] == before
    report = kb.sync()
    assert report.chunks_embedded == 0
    assert unstemmed() == 0
    assert [
        (h.path, h.score) for h in kb.search("mexico payment cut-off", mode="keyword")
    ] == before
    kb.close()


def test_word_stems_split_names_and_match_the_stemmer() -> None:
    # FTS5's unicode61 splits snake_case itself; camelCase parts are ours.
    assert word_stems("getUserPayments snake_case_names HTTPServer") == {
        "getuserpay",
        "get",
        "user",
        "payment",
        "snake",
        "case",
        "name",
        "httpserver",
    }
    text = "Deploying the payments services; payments deployed."
    assert word_stems(text) == {
        term
        for w in ("Deploying", "the", "payments", "services", "deployed")
        for term in word_terms(w)
    }
    assert parse_stems(stems_text("Heading", text)) == frozenset(word_stems("Heading\n" + text))


def test_vector_hits_without_metadata_are_resolved_or_skipped(
    workspace: Path, storage: Path
) -> None:
    """Chroma can answer an id whose metadata is gone (a file deleted or rewritten while
    the query ran): a chunk SQLite still holds keeps its path from there, an id nobody
    holds any more is left out, and the search answers instead of failing."""
    embedder = HashingEmbedder()
    kb = open_kb(workspace, storage, embedder)
    kb.sync()
    with store_of(workspace, storage) as store:  # read-only beside `kb`
        kept = sorted(sqlite_ids(store))[0]
        kept_path = store.chunks.chunks_by_id([kept])[kept].path
        collection = chroma_collection(store.directory)
        got = collection.get(ids=[kept], include=["embeddings"])
        vector = np.asarray(got["embeddings"][0], dtype=np.float32)
        collection.delete(ids=[kept])
        collection.add(ids=[kept, "ghost:0"], embeddings=[vector.tolist()] * 2)

        raw = collection.query(query_embeddings=[vector.tolist()], n_results=2)
        assert raw["metadatas"] is not None
        assert raw["metadatas"][0] == [None, None]  # the case: ids answered without metadata

        hits = store.vector_search(vector, 5)
        by_id = {hit.chunk_id: hit for hit in hits}
        assert "ghost:0" not in by_id
        assert by_id[kept].path == kept_path
        assert by_id[kept].similarity == pytest.approx(1.0, abs=1e-4)
        text = store.chunks.chunks_by_id([kept])[kept].text

    results = kb.search(" ".join(text.split()[:6]), limit=5)
    assert results and all(hit.path for hit in results)
    kb.close()
