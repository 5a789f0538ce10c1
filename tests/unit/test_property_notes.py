"""Notes with front matter and no body (Hugo redirect stubs, Obsidian/Dendron property
notes) are found by their fields, their name and their title, and counted by filters."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase

TOPICS = ["kayaks", "llamas", "sourdough", "telescopes", "origami", "beekeeping"]
STUBS = len(TOPICS)


def open_kb(workspace: Path, storage: Path) -> KnowledgeBase:
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    return KnowledgeBase([workspace], settings, embedder=HashingEmbedder(), storage=storage)


def _with_property_notes(workspace: Path) -> None:
    posts = workspace / "posts"
    posts.mkdir()
    for n, topic in enumerate(TOPICS):
        (posts / f"old-{n}.md").write_text(
            f'---\ntitle: "Archived post on {topic}"\nredirect: /blog/new-{n}/\n---\n'
        )
    (workspace / "people.ana.md").write_text(
        "---\nid: 4f2a\ntitle: Ana Lucía\ndesc: Quarterly goals of the treasury lead\n"
        "updated: 1700000000\n---\n\n"
    )


def test_property_notes_are_found_by_filters(workspace: Path, storage: Path) -> None:
    _with_property_notes(workspace)
    total = len(list(workspace.rglob("*.md")))
    kb = open_kb(workspace, storage)
    kb.sync()
    stubs = {f"posts/old-{n}.md" for n in range(STUBS)}
    assert {hit.path for hit in kb.search("has:redirect", limit=50)} == stubs
    assert len(kb.search("-has:redirect", limit=100)) == total - STUBS
    assert len(kb.search("-has:nosuchfield", limit=100)) == total
    assert {hit.path for hit in kb.search("redirect:/blog/new-3/", limit=50)} == {"posts/old-3.md"}
    schema = {field.name: field for field in kb.schema().fields}
    assert schema["redirect"].files == STUBS
    kb.close()


def test_property_notes_are_found_by_name_and_title(workspace: Path, storage: Path) -> None:
    _with_property_notes(workspace)
    kb = open_kb(workspace, storage)
    kb.sync()
    for mode in ("keyword", "hybrid"):
        by_title = kb.search("archived post on telescopes", mode=mode)
        assert by_title and by_title[0].path == "posts/old-3.md", (mode, by_title)
        by_name = kb.search("people ana", mode=mode)
        assert by_name and by_name[0].path == "people.ana.md", (mode, by_name)
        described = kb.search("treasury lead quarterly goals", mode=mode)
        assert "people.ana.md" in [hit.path for hit in described[:3]], (mode, described)
    hit = kb.search("archived post on telescopes", mode="keyword")[0]
    # The hit shows the card: its title and fields, at the front matter's lines (0-3).
    assert "redirect: /blog/new-3/" in hit.snippet
    assert (hit.range.start.line, hit.range.end.line) == (0, 4)
    kb.close()


def test_an_empty_file_is_found_by_its_name(workspace: Path, storage: Path) -> None:
    (workspace / "quarterly-planning.md").write_text("")
    kb = open_kb(workspace, storage)
    kb.sync()
    hits = kb.search("quarterly planning", mode="keyword")
    assert hits and hits[0].path == "quarterly-planning.md"
    assert hits[0].label == "filename match"
    kb.close()
