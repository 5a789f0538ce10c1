"""File names are bytes until proven text (`workspace/names.py`): a name that is not
valid UTF-8 (git checks such names out as they are) is skipped with its reason, under
its escaped and reversible form, and never stops a sync; every other file is indexed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.workspace.names import NOT_TEXT, escaped, is_text, name_bytes

SETTINGS = load_settings({"search": {"threshold": 0.0}}).settings
BAD = b"bad\xff\xfebytes.md"


def open_kb(workspace: Path, storage: Path) -> KnowledgeBase:
    return KnowledgeBase(
        [workspace], SETTINGS, embedder=HashingEmbedder(), storage=storage, exact_vectors=True
    )


def write(folder: Path, name: bytes, text: str) -> None:
    with open(os.path.join(os.fsencode(folder), name), "w", encoding="utf-8") as out:
        out.write(text)


def test_a_name_that_is_not_utf8_is_skipped_and_the_rest_indexed(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "good.md").write_text("# Good\n\nzebrafinch payments\n")
    write(workspace, BAD, "# Bad\n\nzebrafinch bytes\n")
    os.mkdir(os.path.join(os.fsencode(workspace), b"dir\xe9"))
    write(workspace / os.fsdecode(b"dir\xe9"), b"inner.md", "# Inner\n\nzebrafinch inner\n")
    kb = open_kb(workspace, tmp_path / "storage")
    try:
        report = kb.sync()
        assert report.errors == []
        status = kb.status()
        assert status.state == "ready" and status.files == 1
        assert {(s.path, s.reason) for s in status.skipped} == {
            ("bad\\xff\\xfebytes.md", NOT_TEXT),
            ("dir\\xe9/inner.md", NOT_TEXT),
        }
        assert [hit.path for hit in kb.search("zebrafinch", mode="keyword")] == ["good.md"]
        # A save of the bad file (the watcher's path) is skipped the same way.
        again = kb.sync([workspace / os.fsdecode(BAD)])
        assert again.errors == []
        assert {s.path for s in kb.status().skipped} >= {"bad\\xff\\xfebytes.md"}
    finally:
        kb.close()


@given(st.binary(min_size=1, max_size=200))
def test_the_escaped_form_is_text_and_reversible(raw: bytes) -> None:
    name = os.fsdecode(raw)
    shown = escaped(name)
    shown.encode("utf-8")  # text: SQLite, JSON and a terminal take it
    if is_text(name):
        assert shown == name
    else:
        assert name_bytes(shown) == raw


# Any byte string a POSIX file name may be: no "/" and no NUL, not "." or "..".
NAMES = (
    st.binary(min_size=1, max_size=120)
    .map(lambda raw: raw.replace(b"/", b"_").replace(b"\x00", b"_"))
    .filter(lambda raw: raw not in (b".", b".."))
)


@pytest.fixture(scope="module")
def names_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, KnowledgeBase]]:
    base = tmp_path_factory.mktemp("names")
    workspace = base / "workspace"
    workspace.mkdir()
    (workspace / "good.md").write_text("# Good\n\nzebrafinch payments\n")
    kb = open_kb(workspace, base / "storage")
    yield workspace, kb
    kb.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=NAMES)
def test_any_byte_string_as_a_file_name(names_kb: tuple[Path, KnowledgeBase], name: bytes) -> None:
    """Indexing never fails; the good file stays searchable; a name that is not text is
    listed with its reason, one that is text is indexed and found by its words."""
    workspace, kb = names_kb
    name = name[:240] + b".md"
    path = os.path.join(os.fsencode(workspace), name)
    with open(path, "w", encoding="utf-8") as out:
        out.write("# Odd\n\nquokkaberry text\n")
    try:
        report = kb.sync()
        assert report.errors == []
        assert kb.status().state == "ready"
        assert [hit.path for hit in kb.search("zebrafinch", mode="keyword")] == ["good.md"]
        shown = escaped(os.fsdecode(name))
        skipped = {s.path: s.reason for s in kb.status().skipped}
        found = [hit.path for hit in kb.search("quokkaberry", mode="keyword")]
        if is_text(os.fsdecode(name)):
            assert found == [shown] and shown not in skipped
        else:
            assert skipped[shown] == NOT_TEXT and found == []
    finally:
        os.unlink(path)
