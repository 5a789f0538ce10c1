"""globs.py: pathspec's gitignore decisions, matched on RE2 (no backtracking), with limits.

The pathological cases are the campaign's: `*a*a*…*b` against a name of many `a`s made
Python's `re` (pathspec's matcher) backtrack for minutes — 30 `a`s took 271 s, and each
further `a` doubles it. Here they use 40 `a`s, hours on the backtracking matcher, and must
finish inside the suite's ordinary per-test timeout.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from unittest import mock

import pathspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pathspec import GitIgnoreSpec
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern
from pydantic import ValidationError
from tests.fakes.embedder import HashingEmbedder

from kb_lsp import globs
from kb_lsp.config import Settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.workspace import glob_memo
from kb_lsp.engine.workspace.files import WorkspaceRoot
from kb_lsp.globs import GlobList, GlobRefused
from kb_lsp.mcp.files import list_files
from kb_lsp.protocol import SearchParams, SkippedFile

HOSTILE = "*a" * 14 + "*b"  # 15 wildcards: within the limits, so it is matched
LONG_NAME = "a" * 40


# --- the same decisions as pathspec --------------------------------------------------------


def pathspec_decision(patterns: list[str], path: str) -> bool | None:
    # "simple" is pathspec's reference matcher (Python's `re`); with google-re2 installed
    # its default would be its own RE2 backend.
    spec = GitIgnoreSpec.from_lines(patterns, backend="simple")
    result: bool | None = spec.check_file(path).include
    return result


SEGMENT = st.text(alphabet="ab.-_ é", min_size=1, max_size=4)
# With the prefixes pathspec's `normalize_file` takes off (`globs.normalized` does too).
PATHS = st.builds(
    str.__add__,
    st.sampled_from(["", "", "/", "./", "//", "/./"]),
    st.lists(SEGMENT, min_size=1, max_size=4).map("/".join),
)
PATTERN_PART = st.sampled_from(
    ["a", "b", "*", "**", "?", "[ab]", "[!a]", ".", "-", "é", "\\*", " ", "/"]
)
PATTERNS = st.builds(
    lambda neg, parts, slash: ("!" if neg else "") + "".join(parts) + ("/" if slash else ""),
    st.booleans(),
    st.lists(PATTERN_PART, min_size=1, max_size=6),
    st.booleans(),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns=st.lists(PATTERNS, min_size=1, max_size=5), paths=st.lists(PATHS, max_size=6))
def test_decisions_are_pathspecs(patterns: list[str], paths: list[str]) -> None:
    # Each list twice: asking pathspec, and through its translations as a store keeps
    # them (`glob_memo.py`: saved, read back) with pathspec not asked at all.
    try:
        pathspec_decision(patterns, "x")
    except Exception:  # a pattern pathspec refuses: globs refuses it as well
        with pytest.raises(GlobRefused):
            GlobList(patterns)
        with pytest.raises(GlobRefused):
            through_the_memo(patterns)
        return
    ours = GlobList(patterns)
    remembered = through_the_memo(patterns)
    for path in paths:
        for candidate in (path, path + "/"):
            expected = pathspec_decision(patterns, candidate)
            assert ours.decide(candidate) == expected, (patterns, candidate)
            assert remembered.decide(candidate) == expected, (patterns, candidate)


def through_the_memo(patterns: list[str]) -> GlobList:
    """`GlobList(patterns)` from their translations saved as a store row and loaded back,
    pathspec made to fail if it is asked."""
    row = glob_memo.saved(patterns)
    assert row is not None
    asked = AssertionError("pathspec was asked")
    with mock.patch.object(GitIgnoreSpecPattern, "pattern_to_regex", side_effect=asked):
        assert glob_memo.load(row)
        return GlobList(patterns)


def test_a_memo_of_another_pathspec_interpreter_or_format_is_not_used() -> None:
    patterns = ["*.memo-md"]
    genuine = glob_memo.saved(patterns)
    assert genuine is not None
    row = json.loads(genuine)
    assert row["pathspec"] == f"pathspec {pathspec.__version__}, {sys.implementation.cache_tag}"
    # A translation no path matches: were the row used, `a.memo-md` would not match.
    row["translations"]["*.memo-md"] = ["^never-any-path$", True]
    key = row["pathspec"]
    for changed in (
        {"pathspec": key.replace(pathspec.__version__, "0.0.1")},
        {"pathspec": key.replace(sys.implementation.cache_tag, "pypy-311")},
        {"format": glob_memo.FORMAT + 1},
    ):
        assert not glob_memo.load(json.dumps(row | changed))
        assert GlobList(patterns).decide("a.memo-md") is True
    try:
        # The same row under this pathspec's key is used as it is: the test can see it.
        assert glob_memo.load(json.dumps(row))
        assert GlobList(patterns).decide("a.memo-md") is None
    finally:
        assert glob_memo.load(genuine)
    assert GlobList(patterns).decide("a.memo-md") is True


@pytest.mark.parametrize(
    ("patterns", "path", "expected"),
    [
        (["*.md"], "docs/a.md", True),
        (["docs/"], "docs/a.md", True),
        (["docs/", "!docs/a.md"], "docs/a.md", False),
        (["**/drafts/**"], "x/drafts/y/z.md", True),
        (["/top.md"], "sub/top.md", None),
        (["#comment", ""], "a.md", None),
        (["a?c.md"], "abc.md", True),
        (["[!x]b.md"], "ab.md", True),
    ],
)
def test_hand_picked_decisions(patterns: list[str], path: str, expected: bool | None) -> None:
    assert GlobList(patterns).decide(path) is expected
    assert pathspec_decision(patterns, path) is expected


# --- linear time on the patterns that made pathspec backtrack ------------------------------


def test_hostile_pattern_against_a_long_name_answers() -> None:
    glob_list = GlobList([HOSTILE])
    assert glob_list.decide(LONG_NAME) is None
    assert glob_list.decide(LONG_NAME + "b") is True
    assert glob_list.decide("x/" * 30 + LONG_NAME + ".md") is None


def test_a_hostile_gitignore_does_not_hang_the_scan(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text(HOSTILE + "\nignored.md\n", encoding="utf-8")
    for name in (LONG_NAME, LONG_NAME + ".md", "sub/" + LONG_NAME + ".md", "ignored.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("# x\n", encoding="utf-8")
    files = [f.path for f in WorkspaceRoot(tmp_path, Settings()).scan().files]
    assert files == [LONG_NAME + ".md", "sub/" + LONG_NAME + ".md"]


def test_hostile_search_paths_and_list_files_glob_answer(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / f"{LONG_NAME}.md").write_text("# Payments\n\nrefund steps\n", encoding="utf-8")
    (root / ("a" * 14 + "b.md")).write_text("# Other\n\nrefund steps\n", encoding="utf-8")
    kb = KnowledgeBase([root], Settings(), embedder=HashingEmbedder(), storage=tmp_path / "store")
    try:
        kb.sync()
        hits = kb.search("refund", paths=[HOSTILE + "*"], mode="keyword")
        assert [hit.path for hit in hits] == ["a" * 14 + "b.md"]
        assert [info.path for info in kb.files(HOSTILE + ".md")] == ["a" * 14 + "b.md"]
        assert [info.path for info in kb.files("*a" * 14 + "*c.md")] == []
        skipped = [SkippedFile(path=LONG_NAME + "/", reason="folder not readable")]
        listing = list_files([], HOSTILE, None, skipped)
        assert listing.skipped == []
    finally:
        kb.close()


# --- limits, named ---------------------------------------------------------------------------


def test_too_many_wildcards_is_refused_by_name() -> None:
    pattern = "*a" * (globs.MAX_GLOB_WILDCARDS + 1)
    with pytest.raises(GlobRefused, match=r"more than 32 wildcards \(33\)") as caught:
        GlobList([pattern])
    assert caught.value.pattern == pattern


def test_too_long_is_refused() -> None:
    with pytest.raises(GlobRefused, match="longer than 1024 characters"):
        globs.check("a" * (globs.MAX_GLOB_CHARS + 1))


def test_a_request_glob_over_the_limit_is_a_validation_error_naming_it() -> None:
    pattern = "*x" * 40
    with pytest.raises(ValidationError, match="more than 32 wildcards"):
        SearchParams.model_validate({"query": "q", "paths": [pattern]})


def test_a_gitignore_line_over_the_limit_is_left_out_and_the_rest_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    refused = "*a" * 40
    (tmp_path / ".gitignore").write_text(f"{refused}\nsecret.md\n", encoding="utf-8")
    for name in ("secret.md", "kept.md", "aaaa.md"):
        (tmp_path / name).write_text("# x\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kb_lsp.engine.workspace.files"):
        files = [f.path for f in WorkspaceRoot(tmp_path, Settings()).scan().files]
    assert files == ["aaaa.md", "kept.md"]
    assert any("more than 32 wildcards" in r.getMessage() for r in caplog.records)


def test_wildcards_counts_runs_classes_and_escapes() -> None:
    assert globs.wildcards("**/*.md") == 2
    assert globs.wildcards("a?[bc]\\*d") == 2
    assert globs.wildcards("plain") == 0
