"""Incremental sync: only what changed is embedded, and any interruption is repaired."""

from __future__ import annotations

import os
import threading
import traceback
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.knowledge import KnowledgeBase
from kb_lsp.records import ReadOnlyStore
from kb_lsp.store import Store


def open_kb(
    workspace: Path, storage: Path, embedder: HashingEmbedder | None = None, **raw: object
) -> KnowledgeBase:
    settings = load_settings({"search": {"threshold": 0.0}, **raw}).settings
    return KnowledgeBase(
        [workspace], settings, embedder=embedder or HashingEmbedder(), storage=storage
    )


def chroma_ids(store: Store) -> set[str]:
    return set(store._collection.get(include=[])["ids"])


def sqlite_ids(store: Store) -> set[str]:
    return {row[0] for row in store._reader().execute("SELECT id FROM chunks")}


def test_cold_sync_then_no_change_embeds_nothing(workspace: Path, storage: Path) -> None:
    embedder = HashingEmbedder()
    kb = open_kb(workspace, storage, embedder)
    first = kb.sync()
    md_files = [p for p in workspace.rglob("*.md")]
    assert first.files_added == len(md_files)
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
    assert chroma_ids(kb._roots[0].store) == sqlite_ids(kb._roots[0].store)
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
    assert chroma_ids(kb._roots[0].store) == sqlite_ids(kb._roots[0].store)
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
    store = kb._roots[0].store

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(store, "_chroma_upsert", crash)
    with pytest.raises(KeyboardInterrupt):
        kb.sync()
    monkeypatch.undo()
    pending = [r for r in store.manifest().values() if r.state != "ok"]
    assert pending, "the interrupted batch is left pending"
    kb.close()

    # The next process repairs it: every file indexed, Chroma holds exactly SQLite's ids.
    embedder = HashingEmbedder()
    kb = open_kb(workspace, storage, embedder)
    kb.sync()
    store = kb._roots[0].store
    assert all(r.state == "ok" for r in store.manifest().values())
    assert len(store.manifest()) == len(list(workspace.rglob("*.md")))
    assert chroma_ids(store) == sqlite_ids(store)
    again = kb.sync()
    assert again.chunks_embedded == 0
    kb.close()


def test_stray_vectors_in_chroma_are_removed(workspace: Path, storage: Path) -> None:
    kb = open_kb(workspace, storage)
    kb.sync()
    store = kb._roots[0].store
    store._collection.upsert(
        ids=["stray:0"], embeddings=[[0.1] * 256], metadatas=[{"path": "gone.md", "text_hash": "x"}]
    )
    some = sorted(sqlite_ids(store))[:3]
    store._collection.delete(ids=some)
    kb.sync()
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
    report = kb.sync()
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
    store = writer._roots[0].store
    switch = store._switch

    with _Readers([writer, reader]) as readers:

        def switch_between_searches(collection: object) -> object:
            # Both readers search while the old collection is live, and again once the
            # new one replaced it and the old one is gone.
            readers.one_more_each()
            switched = switch(collection)
            readers.one_more_each()
            return switched

        monkeypatch.setattr(store, "_switch", switch_between_searches)

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
    live = store._live_name()
    assert live != "kb_" + store.directory.name  # a new collection, switched to
    assert [c.name for c in store._client.list_collections()] == [live]
    reader.close()
    writer.close()


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
