"""Keyword candidates that stay bounded as the index grows (`Fusion.bounded_from`): on a
big index a common word leaves the FTS5 query when a rarer one is there, and the figures
each search reads are kept until something is committed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.sql import statements_of
from tests.helpers.store import Indexed, indexed_folder

from kb_lsp.engine.search import DEFAULT_FUSION, Searcher
from kb_lsp.engine.search.candidates import TermStats, keyword_queries
from kb_lsp.engine.terms import word_terms

# Small thresholds stand for a big index: 50 notes are "big" above 20 chunks, and a word
# in more than 8 of them is "common".
SMALL = replace(DEFAULT_FUSION, bounded_from=20, common_chunks=8)


def _stats(chunks: int, **counts: int) -> TermStats:
    return TermStats(chunks, {word_terms(word)[0]: n for word, n in counts.items()})


def test_a_small_index_asks_for_any_of_the_words() -> None:
    stats = _stats(10_000, deploy=9_000, kafka=3)
    assert keyword_queries(DEFAULT_FUSION, ["deploy", "kafka"], stats) == ['"deploy" OR "kafka"']


def test_a_big_index_leaves_common_words_out_when_a_rare_one_is_there() -> None:
    stats = _stats(100_000, deploy=40_000, kafka=300, rollback=1_500)
    queries = keyword_queries(DEFAULT_FUSION, ["deploy", "kafka", "rollback"], stats)
    # The rare words first; all of them only if those find too few chunks.
    assert queries == ['"kafka" OR "rollback"', '"deploy" OR "kafka" OR "rollback"']


def test_a_big_index_asks_for_chunks_with_all_the_common_words_first() -> None:
    stats = _stats(100_000, list=40_000, files=50_000)
    queries = keyword_queries(DEFAULT_FUSION, ["list", "files"], stats)
    assert queries == ['"list" AND "files"', '"list" OR "files"']


def test_one_word_or_only_rare_words_are_asked_as_they_are() -> None:
    stats = _stats(100_000, deploy=40_000, kafka=300, zookeeper=20)
    assert keyword_queries(DEFAULT_FUSION, ["deploy"], stats) == ['"deploy"']
    both = keyword_queries(DEFAULT_FUSION, ["kafka", "zookeeper"], stats)
    assert both == ['"kafka" OR "zookeeper"']


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexed]:
    base = tmp_path_factory.mktemp("bounded")
    workspace = base / "notes"
    workspace.mkdir()
    for i in range(50):
        body = f"# Service {i}\n\nHow to restart service {i} after a deploy on the cluster.\n"
        if i == 17:
            body += "\nThe kafka consumer of this service needs a rebalance after it.\n"
        (workspace / f"service-{i:02d}.md").write_text(body, encoding="utf-8")
    with indexed_folder(workspace, base / "store") as indexed:
        yield indexed


def _matches(root: Indexed, search: Callable[[], object]) -> list[str]:
    """The FTS5 MATCH expressions the search ran for its chunk candidates."""
    with statements_of(root.store.directory) as seen:
        search()
    return [
        statement.split("MATCH ", 1)[1].split(" ORDER BY", 1)[0]
        for statement in seen
        if statement.startswith("SELECT rowid, bm25(chunks_fts")
    ]


def test_a_big_index_finds_the_rare_words_file_without_asking_for_the_common_ones(
    root: Indexed,
) -> None:
    bounded, plain = Searcher(HashingEmbedder(), SMALL), Searcher(HashingEmbedder())

    def search(searcher: Searcher) -> list[str]:
        hits = searcher.search([root.source], "restart kafka", limit=5, mode="keyword")
        return [hit.path for hit in hits]

    assert search(bounded)[0] == search(plain)[0] == "service-17.md"
    assert _matches(root, lambda: search(bounded)) == ["'\"kafka\"'", '\'"restart" OR "kafka"\'']
    assert _matches(root, lambda: search(plain)) == ['\'"restart" OR "kafka"\'']


def test_a_big_index_with_only_common_words_finds_chunks_holding_all_of_them(
    root: Indexed,
) -> None:
    bounded = Searcher(HashingEmbedder(), SMALL)
    hits = bounded.search([root.source], "restart cluster", limit=5, mode="keyword")
    assert len(hits) == 5
    # Every note holds both words: the AND query found the 40 candidates a search asks
    # for (5 times its limit, at least 40) and the OR one never ran.
    ran = _matches(
        root, lambda: bounded.search([root.source], "restart cluster", limit=5, mode="keyword")
    )
    assert ran == ['\'"restart" AND "cluster"\'']


def test_term_counts_are_read_again_only_after_a_commit(root: Indexed, tmp_path: Path) -> None:
    fts = root.store.fts
    with statements_of(root.store.directory) as seen:
        first = fts.term_counts(["kafka", "servic"])
        again = fts.term_counts(["kafka", "servic"])
    assert first == again == {"kafka": 1, "servic": 50}
    assert sum("chunks_vocab" in s for s in seen) == 1
    note = root.root / "service-03.md"
    note.write_text(note.read_text() + "\nKafka lag is watched here too.\n", encoding="utf-8")
    root.kb.sync()
    assert fts.term_counts(["kafka"]) == {"kafka": 2}
