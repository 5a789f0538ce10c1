"""Metadata through the knowledge base: stored at sync, filters before ranking, schema,
problems in the status, metadata on hits."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import datetime
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.store import store_beside

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.metadata.filters import FilterError, parse_filter
from kb_lsp.engine.storage import DATABASE


def write(root: Path, rel: str, text: str, mtime: datetime | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        stamp = mtime.timestamp()
        os.utime(path, (stamp, stamp))
    return path


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write(
        root,
        "payments/mexico.md",
        "---\ntags: [payments, runbook]\nstatus: draft\nowner: Ana López\n---\n"
        "# Mexico payments\n\nSPEI wires before the cut-off.\n",
        datetime(2026, 10, 14, 12),
    )
    write(
        root,
        "payments/germany.md",
        "---\ntags: [payments]\nstatus: published\n---\n# Germany payments\n\nSEPA wires.\n",
        datetime(2026, 9, 1, 12),
    )
    write(
        root,
        "runbooks/close.md",
        "# Treasury close\n\nMonth-end wires and #runbook steps.\n",
        datetime(2026, 11, 2, 12),
    )
    write(
        root,
        "broken.md",
        "---\ntitle: Broken\nstatus: [oops\n---\n# Broken\n\nwires everywhere\n",
        datetime(2026, 11, 3, 12),
    )
    for i in range(80):
        write(root, f"filler/wire-{i:02d}.md", f"# Wire note {i}\n\nwires wires wires {i}\n")
    return root


@pytest.fixture
def kb(notes: Path, tmp_path: Path) -> Iterator[KnowledgeBase]:
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    base = KnowledgeBase(
        [notes], settings, embedder=HashingEmbedder(), storage=tmp_path / "storage"
    )
    base.sync()
    yield base
    base.close()


def paths(hits: list) -> set[str]:  # type: ignore[type-arg]
    return {h.path for h in hits}


def test_filters_keep_exactly_the_matching_files(kb: KnowledgeBase) -> None:
    assert paths(kb.search("wires", filter="tag:payments")) == {
        "payments/mexico.md",
        "payments/germany.md",
    }
    # The inline #runbook tag counts like the front matter's.
    assert paths(kb.search("wires", filter="tag:runbook")) == {
        "payments/mexico.md",
        "runbooks/close.md",
    }
    assert paths(kb.search("wires", filter="folder:runbooks")) == {"runbooks/close.md"}
    assert paths(kb.search("wires", filter="modified>=2026-10 modified<2026-11")) == {
        "payments/mexico.md"
    }
    assert paths(kb.search("wires", filter='owner:"ana lópez"')) == {"payments/mexico.md"}
    got = paths(kb.search("wires", filter="-tag:payments -folder:filler", limit=50))
    assert got == {"runbooks/close.md", "broken.md"}


def test_inline_filter_in_the_query(kb: KnowledgeBase) -> None:
    hits = kb.search("wires tag:payments -status:draft")
    assert paths(hits) == {"payments/germany.md"}
    text, node = kb.queries.parse_query("wires status:draft owner:ana", None)
    assert text == "wires"
    assert str(node) == "(status:draft owner:ana)"


def test_a_selective_filter_still_fills_the_page(kb: KnowledgeBase) -> None:
    # Vector and keyword candidates are taken among the matching files, so the filler
    # notes (80, which match "wires" best) cannot crowd them out of a top-k cut.
    hits = kb.search("wires wires", limit=3, filter="-folder:filler")
    assert len(hits) == 3
    assert all(not h.path.startswith("filler/") for h in hits)


def test_a_filter_alone_lists_the_files_most_recent_first(kb: KnowledgeBase) -> None:
    hits = kb.search("tag:payments")
    assert [h.path for h in hits] == ["payments/mexico.md", "payments/germany.md"]
    assert [h.n for h in hits] == [1, 2]


def test_hits_carry_their_files_metadata(kb: KnowledgeBase) -> None:
    hit = next(h for h in kb.search("SPEI wires") if h.path == "payments/mexico.md")
    assert hit.meta is not None
    assert hit.meta.tags == ["payments", "runbook"]
    assert hit.meta.status == "draft"
    assert hit.meta.modified == "2026-10-14"


def test_bad_filter_raises_with_position(kb: KnowledgeBase) -> None:
    with pytest.raises(FilterError) as caught:
        kb.search("wires", filter="tag:a )")
    assert caught.value.position == 6


def test_a_misspelt_field_in_a_filter_names_the_field_it_looks_like(kb: KnowledgeBase) -> None:
    with pytest.raises(FilterError) as caught:
        kb.search("wires", filter='tag:payments onwer:"Ana López"')
    assert caught.value.position == len("tag:payments ")
    assert "no indexed file has the field 'onwer'; did you mean 'owner'?" in str(caught.value)
    with pytest.raises(FilterError, match="did you mean 'status'") as caught:
        kb.search("wires", filter="-has:statu")
    assert caught.value.position == len("-has:")
    # A field with no near name is no mistake: nothing has it yet, so nothing is kept.
    assert kb.search("wires", filter="reviewer:ana") == []
    assert len(kb.search("wires", filter="-reviewer:ana", limit=5)) == 5
    # Typed in the query, an unknown field is a word, never an error.
    assert kb.search("wires onwer:x", limit=5)


def test_status_lists_the_malformed_front_matter_with_its_line(kb: KnowledgeBase) -> None:
    status = kb.status()
    assert [(p.path, p.line) for p in status.problems] == [("broken.md", 2)]
    # The file is still indexed and found.
    assert "broken.md" in paths(kb.search("wires everywhere", limit=50))


def test_schema_counts(kb: KnowledgeBase) -> None:
    schema = kb.schema()
    fields = {f.name: f for f in schema.fields}
    assert schema.files == 84
    assert fields["tag"].files == 3
    assert {v.value: v.count for v in fields["tag"].top} == {"payments": 2, "runbook": 2}
    assert fields["tag"].types == ["list"]
    assert fields["status"].files == 2
    assert fields["owner"].top[0].value == "Ana López"
    assert fields["folder"].files == 84
    assert fields["modified"].types == ["date"]
    assert fields["words"].top == []


def test_editing_tags_is_reflected_after_sync(kb: KnowledgeBase, notes: Path) -> None:
    write(notes, "runbooks/close.md", "---\ntags: [archived]\n---\n# Treasury close\n\nwires\n")
    kb.sync([notes / "runbooks/close.md"])
    assert "runbooks/close.md" not in paths(kb.search("wires", filter="tag:runbook"))
    assert paths(kb.search("wires", filter="tag:archived")) == {"runbooks/close.md"}
    (notes / "payments/germany.md").unlink()
    kb.sync([notes / "payments/germany.md"])
    assert paths(kb.search("wires", filter="tag:payments")) == {"payments/mexico.md"}


def test_touch_moves_modified_without_reindexing(kb: KnowledgeBase, notes: Path) -> None:
    path = notes / "payments/germany.md"
    stamp = datetime(2026, 12, 24, 12).timestamp()
    os.utime(path, (stamp, stamp))
    kb.sync([path])
    assert paths(kb.search("wires", filter="modified:2026-12")) == {"payments/germany.md"}


def test_an_index_from_before_metadata_is_read_again(notes: Path, tmp_path: Path) -> None:
    settings = load_settings().settings
    storage = tmp_path / "old"
    kb = KnowledgeBase([notes], settings, embedder=HashingEmbedder(), storage=storage)
    kb.sync()
    ((folder, _),) = kb.store_folders().items()
    kb.close()
    with closing(sqlite3.connect(folder / DATABASE)) as db, db:
        db.execute("DELETE FROM file_fields")
        db.execute("DELETE FROM meta WHERE key = 'metadata'")
    embedder = HashingEmbedder()
    kb = KnowledgeBase([notes], settings, embedder=embedder, storage=storage)
    report = kb.sync()
    assert report.files_changed == 84
    assert embedder.texts_embedded == 0  # vectors from the cache
    assert paths(kb.search("tag:payments")) == {"payments/mexico.md", "payments/germany.md"}
    kb.close()


def test_an_unselective_filter_keeps_exactly_its_files_and_fills_the_page(
    kb: KnowledgeBase,
) -> None:
    # 82 of 84 files: vector and keyword candidates come from deeper unrestricted
    # queries kept to those files (Store.vector_search, Store.keyword_search).
    hits = kb.search("wires", filter="-tag:payments", limit=50)
    assert len(hits) == 50
    assert not {"payments/mexico.md", "payments/germany.md"} & {h.path for h in hits}
    with store_beside(kb) as store:
        wanted = sorted(store.notes.filter_paths(parse_filter("-tag:payments")))
        assert len(wanted) == 82
        match = '"wire"'
        restricted = store.fts.query(match, 10, wanted)
        # The same best scores as the query restricted in SQL (ties may come in any order).
        assert [round(h.bm25, 6) for h in store.fts.search(match, 10, wanted)] == [
            round(h.bm25, 6) for h in restricted
        ]


def test_hover_shows_the_linked_files_metadata(kb: KnowledgeBase, notes: Path) -> None:
    from kb_lsp.engine.link_preview import compute_hover

    document = notes / "runbooks" / "close.md"
    line = "See [Mexico](../payments/mexico.md) for the wires."
    found = compute_hover(kb, document, line, line.index("Mexico"))
    assert found is not None
    text, _ = found
    assert "`#payments` `#runbook` · status: draft · modified 2026-10-14" in text
    assert kb.file_reads.file_meta("payments/missing.md") is None
