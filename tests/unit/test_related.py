"""Related notes: nearest files by stored vectors, never embedding, never the file itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase, NotIndexed
from kb_lsp.engine.related import outgoing_links
from kb_lsp.engine.workspace.files import PathOutsideWorkspace

# The test embedder hashes words, so the two topics share no word at all.
NOTES = {
    "cats/feeding.md": "# Feeding cats\n\nCats eat fish and chicken. Kittens eat kitten food "
    "three times daily. Fresh water for cats, always.\n\nSee [care](care.md).\n",
    "cats/care.md": "# Cat care\n\nBrush cats weekly. Cats need clean litter, "
    "fresh water and food. Kittens need vaccinations.\n",
    "cats/toys.md": "# Cat toys\n\nCats chase string and toy mice. Kittens play with "
    "anything moving; [[feeding]] keeps cats strong.\n",
    "finance/close.md": "# Month-end close\n\nReconcile every bank account, post "
    "accruals, send the cash report to the controller before day three.\n",
    "finance/budget.md": "# Budget\n\nThe treasury budget covers bank fees, the cash "
    "report tooling, the controller's travel.\n",
}


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    workspace = tmp_path / "notes"
    for rel, text in NOTES.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text, encoding="utf-8")
    embedder = HashingEmbedder()
    base = KnowledgeBase(
        [workspace], load_settings().settings, embedder=embedder, storage=tmp_path / "store"
    )
    base.sync()
    yield base
    base.close()


def test_nearest_files_first_without_the_file_itself(kb: KnowledgeBase) -> None:
    embedder = kb.embedder
    assert isinstance(embedder, HashingEmbedder)
    calls = embedder.calls
    hits = kb.related("cats/feeding.md", limit=10)
    assert embedder.calls == calls, "related notes come from stored vectors only"
    paths = [h.path for h in hits]
    assert "cats/feeding.md" not in paths
    assert set(paths[:2]) == {"cats/care.md", "cats/toys.md"}
    assert [h.n for h in hits] == list(range(1, len(hits) + 1))
    assert all(h.label == "related" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    top = hits[0]
    assert top.uri.endswith(f"/notes/{top.path}") and top.snippet and top.title
    assert top.range.start.line <= top.range.end.line
    assert len(kb.related("cats/feeding.md", limit=1)) == 1


def test_a_changed_neighbour_is_scored_again(kb: KnowledgeBase, tmp_path: Path) -> None:
    """Centroids are kept per version of a file: once a neighbour is rewritten about
    something else, it leaves the list (and comes back when it is about cats again)."""
    before = [h.path for h in kb.related("cats/feeding.md")]
    assert "cats/toys.md" in before
    toys = tmp_path / "notes" / "cats" / "toys.md"
    original = toys.read_text(encoding="utf-8")
    toys.write_text("# Ledger\n\nPost accruals to the treasury ledger.\n", encoding="utf-8")
    kb.sync()
    assert "cats/toys.md" not in [h.path for h in kb.related("cats/feeding.md")]
    toys.write_text(original, encoding="utf-8")
    kb.sync()
    assert [h.path for h in kb.related("cats/feeding.md")] == before


def test_exclude_linked_leaves_out_the_files_it_links_to(kb: KnowledgeBase) -> None:
    assert "cats/care.md" in [h.path for h in kb.related("cats/feeding.md")]
    linked = [h.path for h in kb.related("cats/feeding.md", exclude_linked=True)]
    assert "cats/care.md" not in linked and "cats/toys.md" in linked
    # A wiki link counts too.
    toys = [h.path for h in kb.related("cats/toys.md", exclude_linked=True)]
    assert "cats/feeding.md" not in toys


def test_unrelated_files_are_not_listed(kb: KnowledgeBase) -> None:
    paths = [h.path for h in kb.related("finance/close.md")]
    assert paths and paths[0] == "finance/budget.md"
    assert not any(p.startswith("cats/") for p in paths)


def test_files_not_in_the_index_and_paths_outside(kb: KnowledgeBase, tmp_path: Path) -> None:
    with pytest.raises(NotIndexed, match=r"cats/missing\.md is not in the knowledge base"):
        kb.related("cats/missing.md")
    with pytest.raises(PathOutsideWorkspace):
        kb.related("../../etc/passwd")


def test_outgoing_links() -> None:
    known = ["a/b.md", "a/c.md", "d.md", "e/notes.md"]
    text = (
        "[b](b.md) [c](./c.md#part) [d](../d.md) [web](https://x.org/d.md) "
        "[ref][1] [[notes]] [[a/b|alias]] [self](x.md)\n\n[1]: /e/notes.md\n"
    )
    assert outgoing_links(text, "a/x.md", known) == {"a/b.md", "a/c.md", "d.md", "e/notes.md"}
