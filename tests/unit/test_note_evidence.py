"""Note-level evidence: descriptions and aliases, wiki-link resolution, incoming anchor
text kept up to date incrementally, and the topic page first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.store import store_beside

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.markdown.document import parse_markdown
from kb_lsp.engine.metadata.extract import extract_metadata
from kb_lsp.engine.metadata.links import Resolver, StoredLink, rank_anchors

# --- extraction ----------------------------------------------------------------------------------


def test_description_and_aliases_are_read_from_the_usual_keys() -> None:
    def meta(front: str):  # type: ignore[no-untyped-def]
        return extract_metadata(
            parse_markdown(f"---\n{front}\n---\nbody\n", file_name="a.md"), "a.md"
        )

    m = meta(
        "description: Learn how to open files in  pop-out windows\naliases: [Pop-outs, Windows]"
    )
    assert m.description == "Learn how to open files in pop-out windows"
    assert m.aliases == ("Pop-outs", "Windows")
    assert meta("summary: short one").description == "short one"
    assert meta("excerpt: an excerpt").description == "an excerpt"
    assert meta("desc: Dendron style").description == "Dendron style"
    assert meta("desc: ''").description is None
    assert meta("alias: One, Two").aliases == ("One", "Two")
    assert meta("aliases: single name").aliases == ("single name",)
    assert meta("aliases: [1984, true, {x: y}]").aliases == ("1984",)


# --- resolution ---------------------------------------------------------------------------------

PATHS = [
    "Canvas.md",
    "notes/Canvas.md",
    "notes/deep/Ideas.md",
    "other/Ideas.md",
    "dendron.topic.links.md",
    "guide/setup.md",
]


def resolve(source: str, target: str, kind: str = "wiki", text: str = "") -> str | None:
    return Resolver(PATHS, {"guide/setup.md": ["Installation"]}).resolve(
        StoredLink(source, kind, target, text)
    )[0]


def test_wiki_links_follow_obsidian_names() -> None:
    assert resolve("x.md", "Canvas") == "Canvas.md"  # the exact path wins
    assert resolve("x.md", "notes/Canvas") == "notes/Canvas.md"
    assert resolve("x.md", "canvas.md") == "Canvas.md"
    assert resolve("x.md", "deep/Ideas") == "notes/deep/Ideas.md"
    assert resolve("x.md", "Missing") is None
    assert resolve("x.md", "Installation") == "guide/setup.md"  # an alias


def test_an_ambiguous_name_resolves_to_one_file_the_nearest() -> None:
    # Two files are called Ideas: the one in the linking file's folder wins, else the
    # shortest path, else the first alphabetically.
    assert resolve("other/x.md", "Ideas") == "other/Ideas.md"
    assert resolve("notes/deep/y.md", "Ideas") == "notes/deep/Ideas.md"
    assert resolve("x.md", "Ideas") == "other/Ideas.md"


def test_markdown_links_resolve_relative_to_the_file() -> None:
    assert resolve("notes/a.md", "../guide/setup.md", "markdown") == "guide/setup.md"
    assert resolve("notes/a.md", "/guide/setup", "markdown") == "guide/setup.md"
    assert resolve("notes/a.md", "../../outside.md", "markdown") is None


def test_dendron_label_first_order() -> None:
    link = StoredLink("x.md", "wiki", "multi vault", "dendron://site/dendron.topic.links")
    target, text = Resolver(PATHS).resolve(link)
    assert (target, text) == ("dendron.topic.links.md", "multi vault")


def test_anchor_texts_are_distinct_and_count_each_linking_file_once() -> None:
    links = [
        StoredLink("a.md", "wiki", "Canvas", "open a board"),
        StoredLink("a.md", "wiki", "Canvas", "open a board"),
        StoredLink("b.md", "markdown", "Canvas.md", "Open a  board"),
        StoredLink("c.md", "wiki", "Canvas", ""),
        StoredLink("Canvas.md", "wiki", "Canvas", "self link"),
    ]
    resolver = Resolver(PATHS)
    credits = [(link.source, *resolver.resolve(link)) for link in links]
    ranked = rank_anchors((source, str(target), text) for source, target, text in credits if target)
    assert ranked == {"Canvas.md": ["open a board", "Canvas"]}


# --- through the knowledge base -------------------------------------------------------------------


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(
        root,
        "Pop-out windows.md",
        "---\ndescription: Learn how to open notes in separate windows\n"
        "aliases: [Detached panes]\n---\n# Pop-out windows\n\nThe intro.\n\n"
        "## Details\n\nMore about workspaces and panes and layouts.\n",
    )
    write(
        root, "Workspaces.md", "# Workspaces\n\nSee [[Pop-out windows|open it in a new window]].\n"
    )
    write(root, "Layouts.md", "# Layouts\n\nArrange panes; [[Pop-out windows]] too.\n")
    for i in range(12):
        write(
            root, f"misc/note-{i}.md", f"# Note {i}\n\nUnrelated text number {i} about gardening.\n"
        )
    return root


@pytest.fixture
def kb(vault: Path, tmp_path: Path) -> Iterator[KnowledgeBase]:
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    base = KnowledgeBase([vault], settings, embedder=HashingEmbedder(), storage=tmp_path / "s")
    base.sync()
    yield base
    base.close()


def anchors(kb: KnowledgeBase, path: str) -> tuple[str, ...]:
    with store_beside(kb) as store:
        card = store.notes.cards([path]).get(path)
    return card.anchors if card else ()


def test_incoming_anchor_text_is_stored_per_target(kb: KnowledgeBase) -> None:
    assert set(anchors(kb, "Pop-out windows.md")) == {"open it in a new window", "Pop-out windows"}


def test_anchor_text_follows_edits_deletes_and_renames(kb: KnowledgeBase, vault: Path) -> None:
    # A change in the linking file updates the target's evidence.
    write(vault, "Workspaces.md", "# Workspaces\n\nSee [[Pop-out windows|detach a tab]].\n")
    kb.sync([vault / "Workspaces.md"])
    assert set(anchors(kb, "Pop-out windows.md")) == {"detach a tab", "Pop-out windows"}
    # The linking file goes away: its text goes with it.
    (vault / "Layouts.md").unlink()
    kb.sync([vault / "Layouts.md"])
    assert anchors(kb, "Pop-out windows.md") == ("detach a tab",)
    # The target is renamed: the links name nothing any more…
    (vault / "Pop-out windows.md").rename(vault / "Separate windows.md")
    kb.sync([vault / "Pop-out windows.md", vault / "Separate windows.md"])
    assert anchors(kb, "Separate windows.md") == ()
    # …until the linking note follows the rename.
    write(vault, "Workspaces.md", "# Workspaces\n\nSee [[Separate windows|detach a tab]].\n")
    kb.sync([vault / "Workspaces.md"])
    assert anchors(kb, "Separate windows.md") == ("detach a tab",)


def test_anchor_text_makes_a_page_findable_by_what_others_call_it(
    kb: KnowledgeBase, vault: Path
) -> None:
    # No word of the query is in the target's own text, title, aliases or description.
    write(vault, "Workspaces.md", "# Workspaces\n\nSee [[Pop-out windows|detach a tab]].\n")
    kb.sync([vault / "Workspaces.md"])
    paths = [h.path for h in kb.search("detach tab")]
    assert "Pop-out windows.md" in paths
    assert paths.index("Pop-out windows.md") < min(
        (paths.index(p) for p in paths if p.startswith("misc/")), default=len(paths)
    )


def test_description_and_alias_make_the_topic_page_first(kb: KnowledgeBase) -> None:
    hit = kb.search("separate windows")[0]
    assert hit.path == "Pop-out windows.md"
    # Shown from the page's start (not the Details section), with its description.
    assert hit.range.start.line == 4
    assert "separate windows" in hit.snippet.lower()
    alias = kb.search("detached panes")[0]
    assert alias.path == "Pop-out windows.md"
    assert alias.label == "filename match"


def test_ablation_without_cards_loses_the_description(vault: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from kb_lsp.engine.search import DEFAULT_FUSION, Searcher

    settings = load_settings({"search": {"threshold": 0.0}}).settings
    kb = KnowledgeBase([vault], settings, embedder=HashingEmbedder(), storage=tmp_path / "t")
    kb.sync()
    try:
        # "learn" and "separate" are only in the description.
        with_cards = {h.path: h.score for h in kb.search("learn separate")}
        kb.searcher = Searcher(kb.embedder, replace(DEFAULT_FUSION, description=0.0, anchors=0.0))
        without = {h.path: h.score for h in kb.search("learn separate")}
    finally:
        kb.close()
    assert next(iter(with_cards)) == "Pop-out windows.md"
    assert without.get("Pop-out windows.md", 0.0) < with_cards["Pop-out windows.md"]


def test_aliases_name_a_file_in_a_question(kb: KnowledgeBase) -> None:
    from kb_lsp.engine.agent import references

    files = kb.files()
    popout = next(f for f in files if f.path == "Pop-out windows.md")
    assert popout.aliases == ("Detached panes",)
    refs = references.find_by_name("summarize the detached panes note", files)
    assert [[c.path for c in r.candidates] for r in refs] == [["Pop-out windows.md"]]
