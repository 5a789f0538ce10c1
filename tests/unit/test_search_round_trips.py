"""A search asks its store a bounded number of times, however many hits it returns.

Counted from the statements the store logs (`store.db.statements`: every one, on every
connection; the reads FTS5 makes of its own tables, which sqlite3 reports as statements
starting with `--`, and `PRAGMA data_version`, are not round trips): one query per kind
of read and root, never one per hit.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterator

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.sql import statements_of
from tests.helpers.store import Indexed, indexed_folder

from kb_lsp.engine.metadata.filters import parse_filter
from kb_lsp.engine.search import Searcher

FILES = 80
# What one search may ask of one root's store at most: term statistics (2), the keyword
# query and its paths (2), the vector query (1-2), the notes' cards (1), chunk rows (1),
# cached vectors of keyword-only candidates (1), titles (1), note cards (1), card
# vectors (1), first chunks (1), FTS snippets (1), the hits' metadata and records (2),
# and the allowed paths of a filter (1-2): about 16, whatever the number of hits.
BOUND = 20


def _note(i: int) -> str:
    return (
        "---\n"
        f"aliases: [beacon {i}]\n"
        f"description: How lantern number {i} is kept burning\n"
        f"tags: [shelf{i % 5}]\n"
        "---\n"
        f"# Lantern {i}\n\n"
        f"The lantern {i} stands by the door; its maintenance takes a morning.\n\n"
        "## Wicks\n\n"
        f"Trim the wick of lantern {i} before maintenance, then refill the oil.\n\n"
        "## Glass\n\n"
        f"Polish the glass of lantern {i} after the maintenance is done.\n"
    )


@pytest.fixture(scope="module", params=[True, False], ids=["exact", "chroma"])
def root(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Indexed]:
    base = tmp_path_factory.mktemp("round-trips")
    workspace = base / "notes"
    workspace.mkdir()
    for i in range(FILES):
        (workspace / f"lantern-{i:02d}.md").write_text(_note(i), encoding="utf-8")
    # A chunk without readable text: its hit shows FTS's own snippet.
    (workspace / "maintenance-log.md").write_text(
        "# Lantern maintenance log\n\n```\n```\n", encoding="utf-8"
    )
    with indexed_folder(workspace, base / "storage", exact=request.param) as indexed:
        yield indexed


def _counted(seen: list[str]) -> list[str]:
    # `PRAGMA data_version` reads no table: the connection answers it from its own
    # pager, to tell whether figures kept since the last search are still current.
    return [s for s in seen if not s.startswith("--") and s != "PRAGMA data_version"]


def _statements(root: Indexed, query: str, filter: str | None, limit: int) -> tuple[list[str], int]:
    """(SQL statements, hits) of one search."""
    searcher = Searcher(HashingEmbedder())
    node = parse_filter(filter) if filter else None
    search = functools.partial(
        searcher.search, [root.source], query, limit=limit, threshold=0.0, filter=node
    )
    search()  # connections and caches warm
    with statements_of(root.store.directory) as seen:
        hits = search()
    return _counted(seen), len(hits)


@pytest.mark.parametrize(
    ("query", "filter"),
    [("lantern maintenance", None), ("lantern maintenance", "-tag:shelf1"), ("beacon", None)],
)
def test_a_search_makes_the_same_round_trips_for_5_hits_and_for_50(
    root: Indexed, query: str, filter: str | None
) -> None:
    few, few_hits = _statements(root, query, filter, 5)
    many, many_hits = _statements(root, query, filter, 50)
    assert few_hits == 5
    assert many_hits >= 50, "the test needs a query with many hits"
    assert len(few) <= BOUND and len(many) <= BOUND, (len(few), len(many))
    # No read is repeated per hit or per file: each kind of statement runs at most twice,
    # cached vectors three times (the candidates', the cards', and the first chunks of
    # files whose first chunk was no candidate: with Chroma's approximate neighbours
    # among 80 near-identical notes, whether that read is needed varies from run to run).
    shapes = collections.Counter(statement.split(" IN ", 1)[0] for statement in many)
    vectors = shapes.pop("SELECT text_hash, embedding FROM vectors WHERE text_hash", 0)
    assert 1 <= vectors <= 3, vectors
    assert max(shapes.values()) <= 2, shapes.most_common(3)


def test_a_filter_without_words_lists_with_bounded_round_trips(root: Indexed) -> None:
    searcher = Searcher(HashingEmbedder())
    node = parse_filter("tag:shelf2")
    counts = []
    for limit in (3, 15):
        with statements_of(root.store.directory) as seen:
            hits = searcher.list_matching([root.source], node, limit=limit)
        assert len(hits) == limit
        counts.append(len(_counted(seen)))
    assert counts[0] == counts[1]


def test_search_results_hold_first_chunks_snippets_and_meta(root: Indexed) -> None:
    """The batched reads give what the per-hit reads gave: the log's unreadable chunk
    shows FTS's snippet and every hit its meta."""
    hits = Searcher(HashingEmbedder()).search([root.source], "lantern maintenance log", limit=50)
    log = next(h for h in hits if h.path == "maintenance-log.md")
    assert "maintenance" in log.snippet.lower()
    assert all(h.meta is not None for h in hits)
    assert all(h.meta.modified for h in hits if h.meta is not None)
    tagged = next(h for h in hits if h.path.startswith("lantern-"))
    number = int(tagged.path.removeprefix("lantern-").removesuffix(".md"))
    assert tagged.meta is not None and tagged.meta.tags == [f"shelf{number % 5}"]
