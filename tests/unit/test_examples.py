"""Examples come from the open index, never from the sample wiki (issue 39, point 3): the
welcome's searches and questions name this index's notes, its filters are terms its files
have, and a filter error's "e.g." is a term of this index — or absent, where no file has
the field (an index without tags is never told `tag:payments`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import copy_example_workspace
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.metadata.filters import FilterError


def indexed(folder: Path, storage: Path) -> KnowledgeBase:
    kb = KnowledgeBase(
        [folder], load_settings({}).settings, embedder=HashingEmbedder(), storage=storage
    )
    kb.sync()
    return kb


def plain_notes(folder: Path) -> Path:
    """Notes of another kind than the sample wiki's, without front matter or tags."""
    (folder / "guide").mkdir(parents=True)
    (folder / "guide" / "query-parameters.md").write_text(
        "# Query Parameters\n\n" + "Declare query parameters in the path operation. " * 40
    )
    (folder / "guide" / "dependencies.md").write_text(
        "# Dependencies\n\nDependency injection declares what a path operation needs.\n"
    )
    (folder / "README.md").write_text("# Project\n\n" + "About this project. " * 80)
    return folder


def test_the_sample_wikis_examples_are_its_own_and_find_files(tmp_path: Path) -> None:
    kb = indexed(copy_example_workspace(tmp_path / "ws"), tmp_path / "st")
    try:
        found = kb.queries.examples()
        titles = {info.title for info in kb.files()}
        paths = {info.path for info in kb.files()}
        assert found.searches and found.questions and found.filters
        for query in found.searches:
            assert kb.search(query), query
        assert any(title in found.questions[0] for title in titles), found.questions
        assert found.questions[1].removeprefix("Summarize ") in paths
        for term in found.filters:
            assert kb.search(term), term  # a filter alone lists the files it keeps
        with pytest.raises(FilterError) as err:
            kb.search("payments tag:")
        assert "e.g. tag:" in str(err.value)
    finally:
        kb.close()


def test_an_index_without_tags_is_not_told_about_the_sample_wikis(tmp_path: Path) -> None:
    kb = indexed(plain_notes(tmp_path / "notes"), tmp_path / "st")
    try:
        found = kb.queries.examples()
        # The note with the most passages first; README is about the repository.
        assert found.searches[0] == "query parameters"
        assert found.questions == [
            "What do my notes say about Query Parameters?",
            "Summarize guide/dependencies.md",
        ]
        assert found.filters == []  # no tag, no field a file wrote
        everything = " ".join([*found.searches, *found.questions])
        assert "mexico" not in everything.lower() and "payments" not in everything.lower()
        with pytest.raises(FilterError) as err:
            kb.search("parameters tag:")
        assert "needs a value" in str(err.value) and "e.g." not in str(err.value)
        with pytest.raises(FilterError) as bad:
            kb.search("parameters", filter="guide")
        # The example is a term this index has: its folder.
        assert str(bad.value).endswith("use field:value, e.g. folder:guide (in 'guide')")
    finally:
        kb.close()


def test_an_empty_index_has_no_examples(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    kb = indexed(tmp_path / "empty", tmp_path / "st")
    try:
        found = kb.queries.examples()
        assert (found.searches, found.questions, found.filters) == ([], [], [])
    finally:
        kb.close()
