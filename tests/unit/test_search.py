"""Hybrid search: numbering, labels, marks, threshold, modes, filters, several roots."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from tests.conftest import copy_example_workspace
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.embed.minilm import MiniLMEmbedder
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.search import DEFAULT_FUSION, Searcher, make_snippet, query_terms
from kb_lsp.engine.terms import word_terms


@pytest.fixture(scope="module")
def real_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """The example workspace indexed with the real default embedder (default settings)."""
    base = tmp_path_factory.mktemp("real")
    workspace = copy_example_workspace(base / "workspace")
    kb = KnowledgeBase(
        [workspace], load_settings().settings, embedder=MiniLMEmbedder(), storage=base / "store"
    )
    kb.sync()
    yield kb
    kb.close()


def test_paraphrase_finds_the_right_file_semantically(real_kb: KnowledgeBase) -> None:
    # No content word of the query occurs in the answer's text: only meaning links them.
    query = "what happens on someone's first days when they join the group"
    hits = real_kb.search(query, mode="semantic")
    assert hits and hits[0].path == "onboarding/onboarding-guide.md"
    assert real_kb.search(query)[0].path == "onboarding/onboarding-guide.md"
    assert (
        not real_kb.search(query, mode="keyword")
        or real_kb.search(query, mode="keyword")[0].path != "onboarding/onboarding-guide.md"
    )


def test_numbered_list_shape(real_kb: KnowledgeBase) -> None:
    hits = real_kb.search("mexico payment files")
    assert [hit.n for hit in hits] == list(range(1, len(hits) + 1))
    top = hits[0]
    assert top.path == "payments/mexico-payments.md"
    assert top.label == "filename match"
    assert top.uri.startswith("file://") and top.uri.endswith("/payments/mexico-payments.md")
    assert top.title == "Mexico payments"  # the front matter's title
    assert 0 < top.score <= 1
    assert top.snippet and "\n" not in top.snippet
    assert top.range.start.line <= top.range.end.line
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len({h.path for h in hits}) == len(hits), "one entry per file"


def test_context_match_label(real_kb: KnowledgeBase) -> None:
    # The glossary defines both "SPEI" and "cut-off", so either may come first.
    hits = real_kb.search("what is the cut-off time for SPEI transfers")
    mexico = next(h for h in hits[:2] if h.path == "payments/mexico-payments.md")
    assert mexico.label == "context match"
    assert all(h.label == "context match" for h in hits)


def test_filename_match_means_the_path_a_title_match_is_context(real_kb: KnowledgeBase) -> None:
    hits = real_kb.search("payments")
    labels = {h.path: h.label for h in hits}
    # "Deploy checklist: payments service" and "Treasury & Payments Team Wiki" are titles.
    assert labels["engineering/deploy-checklist.md"] == "context match"
    assert labels.get("README.md", "context match") == "context match"
    # A folder or file name holding the word is a filename match.
    assert labels["payments/mexico-payments.md"] == "filename match"
    assert labels["meetings/2026-10-14-payments-sync.md"] == "filename match"
    assert all(label == "filename match" for path, label in labels.items() if "payment" in path)
    # The title match still ranks as high as it deserves.
    assert "engineering/deploy-checklist.md" in [h.path for h in hits[:5]]
    top = real_kb.search("runbooks incident")[0]
    assert (top.path, top.label) == ("runbooks/incident-response.md", "filename match")


def test_hits_mark_only_distinctive_words(real_kb: KnowledgeBase) -> None:
    hits = real_kb.search("what is the cut-off time for SPEI transfers")
    mexico = next(h for h in hits if h.path == "payments/mexico-payments.md")
    assert "SPEI" in mexico.marks
    for hit in hits:
        assert all(mark in hit.snippet for mark in hit.marks)
        assert not {m.lower() for m in hit.marks} & {"what", "is", "the", "for"}


def test_off_topic_queries_return_nothing(real_kb: KnowledgeBase) -> None:
    for query in (
        "how to bake sourdough bread",
        "best hiking trails in Patagonia",
        "quantum chromodynamics lattice",
    ):
        assert real_kb.search(query) == [], query


def test_modes_and_limit(real_kb: KnowledgeBase) -> None:
    assert len(real_kb.search("payments", limit=2)) == 2
    keyword = real_kb.search("Banorte", mode="keyword")
    assert keyword
    root = Path(keyword[0].root)
    mentions = {
        path.relative_to(root).as_posix()
        for path in root.rglob("*.md")
        if "banorte" in path.read_text(encoding="utf-8").lower()
    }
    # Keyword mode lists only files that contain the word, each with a snippet showing it.
    assert {h.path for h in keyword} <= mentions
    assert all("banorte" in h.snippet.lower() for h in keyword)
    assert keyword[0].path in {"payments/mexico-payments.md", "projects/budget_brief.md"}


def test_path_filter(real_kb: KnowledgeBase) -> None:
    hits = real_kb.search("payments", paths=["meetings/**"])
    assert hits and all(h.path.startswith("meetings/") for h in hits)
    assert real_kb.search("payments", paths=["nothing/**"]) == []


def test_search_in_file_returns_passages_of_that_file(real_kb: KnowledgeBase) -> None:
    hits = real_kb.search_in_file("payments/mexico-payments.md", "cut-off time", limit=3)
    assert 1 <= len(hits) <= 3
    assert all(h.path == "payments/mexico-payments.md" for h in hits)
    assert len({(h.range.start.line, h.range.end.line) for h in hits}) == len(hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # The best passage returned is the one that states the cut-off.
    lines = (Path(hits[0].root) / hits[0].path).read_text(encoding="utf-8").splitlines()
    best = "\n".join(lines[hits[0].range.start.line : hits[0].range.end.line])
    assert "14:30" in best and "cut-off" in best
    assert len(real_kb.search_in_file("payments/mexico-payments.md", "cut-off", limit=1)) == 1


def test_query_without_words_returns_nothing(real_kb: KnowledgeBase) -> None:
    assert real_kb.search("?!  …") == []


def test_fts_syntax_in_query_is_harmless(real_kb: KnowledgeBase) -> None:
    for query in (
        '"unbalanced',
        "NEAR(a b",
        "a AND OR NOT",
        "col:umn*",
        "'; DROP TABLE chunks; --",
    ):
        real_kb.search(query)  # no exception
    assert real_kb.search("SPEI")[0].path == "payments/mexico-payments.md"


def test_two_roots_prefix_paths(tmp_path: Path) -> None:
    wiki = copy_example_workspace(tmp_path / "wiki")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "api.md").write_text(
        "# API\n\nThe payments API takes SPEI transfers too.\n", encoding="utf-8"
    )
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    kb = KnowledgeBase(
        [wiki, docs], settings, embedder=HashingEmbedder(), storage=tmp_path / "store"
    )
    kb.sync()
    paths = {h.path for h in kb.search("SPEI transfers")}
    assert "docs/api.md" in paths and "wiki/payments/mexico-payments.md" in paths
    hit = next(h for h in kb.search("SPEI transfers") if h.path == "docs/api.md")
    assert hit.root == str(docs.resolve())
    assert kb.resolve("docs/api.md") == (docs / "api.md").resolve()
    assert kb.chunks_of("docs/api.md")[0].path == "docs/api.md"
    kb.remove_root(docs)
    after = kb.search("SPEI transfers")
    # One root left: its paths lose the folder prefix, and the removed root is gone.
    assert "payments/mexico-payments.md" in {h.path for h in after}
    assert all(h.root == str(wiki) for h in after)
    kb.close()
    shutil.rmtree(tmp_path / "store")


def test_stemming_and_terms() -> None:
    assert word_terms("payments") == word_terms("payment") == ("payment",)
    assert word_terms("policies") == word_terms("policy") == ("polici",)
    assert query_terms("Find the Mexico payment files") == ["mexico", "payment"]
    assert query_terms("the") == ["the"]


def test_snippet_prefers_matching_line() -> None:
    text = (
        "# Title\n\nIntro line about nothing in particular here at all.\n\n"
        "The SPEI cut-off is 14:30 in Mexico City.\n"
    )
    assert make_snippet(text, ["spei"], None).startswith("The SPEI cut-off")
    assert "#" not in make_snippet(text, ["zzz"], None)


def test_rare_exact_word_beats_look_alikes(tmp_path: Path) -> None:
    """An identifier in one page beats pages with look-alike identifiers, which share
    most subword tokens with it and so look closer to the embedder."""
    workspace = tmp_path / "pages"
    workspace.mkdir()
    for i in range(1, 31):
        body = f"# command-{i}\n\n> Manage the widget cache of project {i}.\n\n"
        body += "".join(
            f"- Example {k} of the widget cache:\n\n`widget --flag{k}`\n\n" for k in range(4)
        )
        body += f"- Burst {i} changes this example, see burstword{i}x:\n\n`widget --burst`\n"
        (workspace / f"command-{i}.md").write_text(body, encoding="utf-8")
    for i in range(1, 16):
        (workspace / f"tool-{i}.md").write_text(
            f"# tool-{i}\n\n> A tool added by the burst, addedword{i}x.\n", encoding="utf-8"
        )
    kb = KnowledgeBase(
        [workspace], load_settings().settings, embedder=MiniLMEmbedder(), storage=tmp_path / "s"
    )
    kb.sync()
    wanted = [5, 9, 12]
    found = [kb.search(f"burstword{i}x")[0].path for i in wanted]
    assert found == [f"command-{i}.md" for i in wanted]
    # Without the bonus for rare exact words, the look-alikes win: the test is about it.
    kb.searcher = Searcher(kb.embedder, replace(DEFAULT_FUSION, rare=0.0))
    without = [kb.search(f"burstword{i}x")[0].path for i in wanted]
    assert without != found
    kb.close()


def test_a_chunk_without_readable_text_shows_the_keyword_snippet(tmp_path: Path) -> None:
    # Its only line is a heading (shown apart from snippets) and an empty code block:
    # nothing readable, so the hit shows what FTS5's snippet() holds for the query,
    # which search asks for that one row only when it is needed.
    workspace = tmp_path / "notes"
    workspace.mkdir()
    (workspace / "stables.md").write_text("# Zebracorn stables\n\n```\n```\n", encoding="utf-8")
    (workspace / "other.md").write_text("# Other\n\nNothing about it here.\n", encoding="utf-8")
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    kb = KnowledgeBase([workspace], settings, embedder=HashingEmbedder(), storage=tmp_path / "s")
    kb.sync()
    for mode in ("hybrid", "keyword"):
        top = kb.search("zebracorn stables", mode=mode)[0]
        assert (top.path, top.snippet) == ("stables.md", "# Zebracorn stables")
        assert "stables" in top.marks
    kb.close()
