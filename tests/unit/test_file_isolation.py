"""One bad file never stops a sync: it is indexed without the part that failed, or
skipped, and `kb status` says which and why; only the store's own errors stop a sync."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import copy_example_workspace
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.index import indexer, prepare
from kb_lsp.engine.index.prepare import PreparedFile, prepare_file
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.metadata.frontmatter import flatten, load_front_matter
from kb_lsp.engine.store import FileRecord, Store
from kb_lsp.engine.store.writer import StoreWriter

SETTINGS = load_settings({"search": {"threshold": 0.0}}).settings

# Each of these stopped the whole sync on the first version of the indexer (issue 21).
ADVERSARIAL = {
    "huge-int.md": "---\ntitle: Huge\nn: 1" + "0" * 320 + "\n---\n# Huge\n\nzebrafinch one\n",
    "huge-hex.md": "---\nn: 0x" + "f" * 256 + "\n---\n# Hex\n\nzebrafinch two\n",
    "ansi.md": '---\ntitle: "\x1b[31mRed\x1b[0m"\n---\n# Ansi\n\nzebrafinch three\n',
    "soh.md": "---\ntitle: a\x01b\n---\n# Soh\n\nzebrafinch four\n",
    "bell.md": "---\nstatus: ok\nnote: ring\x07\n---\n# Bell\n\nzebrafinch five\n",
    "del.md": "---\ntitle: x\x7fy\n---\n# Del\n\nzebrafinch six\n",
    "surrogate.md": '---\ntitle: "half \\ud800 a pair"\n---\n# Surrogate\n\nzebrafinch seven\n',
}
# The 0-based line `kb status` names for each file that has a problem.
PROBLEM_LINES = {
    "ansi.md": 1,
    "soh.md": 1,
    "bell.md": 2,
    "del.md": 1,
    "huge-int.md": 2,
    "huge-hex.md": 1,
}


def open_kb(workspace: Path, storage: Path) -> KnowledgeBase:
    return KnowledgeBase([workspace], SETTINGS, embedder=HashingEmbedder(), storage=storage)


def test_adversarial_front_matter_is_indexed_beside_every_other_file(
    workspace: Path, storage: Path
) -> None:
    good = {p.relative_to(workspace).as_posix() for p in workspace.rglob("*.md")}
    for name, text in ADVERSARIAL.items():
        (workspace / name).write_text(text, encoding="utf-8")
    kb = open_kb(workspace, storage)
    report = kb.sync()
    assert report.errors == []
    status = kb.status()
    assert status.state == "ready"
    indexed = {info.path for info in kb.files()}
    assert indexed == good | set(ADVERSARIAL)
    assert status.skipped == []
    problems = {(p.path, p.line) for p in status.problems}
    assert problems == set(PROBLEM_LINES.items())
    messages = {p.path: p.message for p in status.problems}
    assert messages["ansi.md"].startswith("front matter holds the control character U+001B")
    assert messages["huge-int.md"] == (
        "a number of 321 digits is too large to compare as a number; it is kept as text"
    )
    # Each bad file's text is searchable, and what its front matter could give is kept.
    found = {hit.path for hit in kb.search("zebrafinch", mode="keyword", limit=20)}
    assert found == set(ADVERSARIAL)
    assert kb.file_info("ansi.md").title == "[31mRed[0m"  # type: ignore[union-attr]
    assert kb.file_info("surrogate.md").title == "half \ufffd a pair"  # type: ignore[union-attr]
    huge = kb.search("n:10000000*", limit=5)
    assert [hit.path for hit in huge] == ["huge-int.md"]  # kept as text, not a number
    kb.close()


def test_front_matter_values_beyond_a_float_are_text() -> None:
    front = load_front_matter("n: 1" + "0" * 400 + "\nm: 0x" + "f" * 300 + "\nk: 12", 1)
    assert [p.line for p in front.problems] == [1, 2]
    values = flatten(front.fields)
    assert values["n"][0].kind == values["m"][0].kind == "string"
    assert values["n"][0].text == "1" + "0" * 400
    assert values["k"][0].number == 12


def test_a_file_whose_reader_raises_is_skipped_with_its_reason_and_the_rest_indexed(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A future bug in one parser: whatever it raises for one file skips that file only."""
    (workspace / "boom.md").write_text("# Boom\n\nthis file trips the parser\n")
    real = prepare.parse_markdown

    def parse(text: str, **options: object) -> object:
        if "trips the parser" in text:
            raise RecursionError("maximum recursion depth exceeded")
        return real(text, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(prepare, "parse_markdown", parse)
    kb = open_kb(workspace, storage)
    kb.sync()
    status = kb.status()
    assert status.state == "ready"
    assert [(s.path, s.reason) for s in status.skipped] == [
        ("boom.md", "could not be indexed (RecursionError: maximum recursion depth exceeded)")
    ]
    assert "boom.md" not in {info.path for info in kb.files()}
    assert kb.search("SPEI", mode="keyword")
    kb.close()


def test_a_file_whose_metadata_reader_raises_is_indexed_without_its_fields(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "odd.md").write_text("---\nstatus: draft\n---\n# Odd\n\nquokka habitat\n")
    real = prepare.extract_metadata

    def extract(doc: object, path: str) -> object:
        if path == "odd.md":
            raise KeyError("status")
        return real(doc, path)  # type: ignore[arg-type]

    monkeypatch.setattr(prepare, "extract_metadata", extract)
    kb = open_kb(workspace, storage)
    kb.sync()
    status = kb.status()
    assert [(p.path, p.line) for p in status.problems] == [("odd.md", 1)]
    assert "KeyError" in status.problems[0].message
    assert [hit.path for hit in kb.search("quokka", mode="keyword")] == ["odd.md"]
    # Its fields were not read (other files of the wiki are drafts too).
    assert "odd.md" not in {hit.path for hit in kb.search("status:draft", limit=100)}
    kb.close()


def test_a_file_the_store_refuses_is_skipped_and_its_batch_written(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite refuses a value of one file (a string it cannot encode): the batch's other
    files are written one by one, and that file is skipped with the reason."""
    real = indexer.prepare_file

    def prepared(text: str, path: str, settings: object) -> PreparedFile:
        result = real(text, path, settings)  # type: ignore[arg-type]
        if path == "glossary.md":
            return PreparedFile("\ud800", result.chunks, result.metadata, result.card)
        return result

    monkeypatch.setattr(indexer, "prepare_file", prepared)
    files = {p.relative_to(workspace).as_posix() for p in workspace.rglob("*.md")}
    kb = open_kb(workspace, storage)
    report = kb.sync()
    assert report.files_added == len(files) - 1
    status = kb.status()
    assert [s.path for s in status.skipped] == ["glossary.md"]
    assert status.skipped[0].reason.startswith("could not be stored (UnicodeEncodeError")
    assert {info.path for info in kb.files()} == files - {"glossary.md"}
    kb.close()


def test_an_error_of_the_store_itself_stops_the_sync(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    kb = open_kb(workspace, storage)
    monkeypatch.setattr(StoreWriter, "write_texts", broken)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        kb.sync()
    kb.close()


# --- any front matter, any Markdown ----------------------------------------------------------

_TEXT = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40
)
_SCALAR = st.one_of(
    _TEXT.map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
    _TEXT.filter(lambda s: "\n" not in s),
    st.integers(min_value=-(10**400), max_value=10**400).map(str),
    st.integers(min_value=0, max_value=2**1100).map(hex),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "2026-10-14",
            "2026-02-30",
            "0000-01-01",
            "9999-12-31T23:59:59Z",
            "yes",
            "~",
            "null",
            "[]",
            "{}",
            "&a [*a]",
            '"\\ud800"',
            '"\\U0010ffff"',
            "!!binary aGVsbG8=",
            "!!python/object:os.system ls",
            "|\n  block\n  text",
            "\x1b[31mred\x1b[0m",
            "\x07\x01\x7f",
        ]
    ),
)
_KEY = st.one_of(
    st.sampled_from(
        ["title", "tags", "tag", "keywords", "aliases", "description", "date", "status", "n"]
    ),
    _TEXT.filter(lambda s: s.strip() and "\n" not in s and ":" not in s),
)
_VALUE = st.one_of(
    _SCALAR,
    st.lists(_SCALAR.filter(lambda s: "\n" not in s), max_size=4).map(
        lambda items: "[" + ", ".join(items) + "]"
    ),
    st.lists(_SCALAR.filter(lambda s: "\n" not in s), min_size=1, max_size=3).map(
        lambda items: "".join(f"\n  - {item}" for item in items)
    ),
    st.dictionaries(_KEY, _SCALAR.filter(lambda s: "\n" not in s), max_size=3).map(
        lambda d: "".join(f"\n  {k}: {v}" for k, v in d.items())
    ),
)
_FRONT = st.lists(st.tuples(_KEY, _VALUE), max_size=6).map(
    lambda pairs: "\n".join(f"{k}: {v}" for k, v in pairs)
)
_BLOCK = st.one_of(
    _TEXT,
    st.sampled_from(
        [
            "# Title { #title }",
            "## Steps {: #steps .note data-x=1 }",
            "Setext\n===",
            "```python\n# not a heading #nottag\n```",
            "    indented code #nottag",
            "<div>\n#html\n</div>",
            "- [ ] todo #tag/nested",
            "| a | b |\n|---|---|\n| 1 | 2 |",
            "[[Wiki link|text]] ![[embed]] [md](other.md#part)",
            "> quote with #quoted tag",
            "---",
            "\ufeff",
            "\r\n\r",
            "x" * 3000,
            "#" * 7 + " not a heading",
            "[" * 200 + "]" * 200,
            "*" * 500,
        ]
    ),
)
_DOCUMENT = st.tuples(st.one_of(st.none(), _FRONT), st.lists(_BLOCK, max_size=8)).map(
    lambda parts: ("" if parts[0] is None else f"---\n{parts[0]}\n---\n") + "\n\n".join(parts[1])
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    folder = tmp_path_factory.mktemp("isolation-store")
    embedder = HashingEmbedder()
    opened = Store(
        folder,
        root=folder,
        embedder_identity=embedder.identity,
        dimension=embedder.dimension,
        exact_vectors=True,
    )
    yield opened
    opened.close()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(text=_DOCUMENT)
def test_any_front_matter_and_markdown_is_prepared_and_stored(store: Store, text: str) -> None:
    """The per-file pipeline returns for any file (it may not raise, only the parser may,
    and then the file is skipped), and the store takes what it returns."""
    prepared = prepare_file(text, "notes/generated.md", SETTINGS)
    assert prepared.chunks, "every file has a chunk: its text, or its card"
    lines = max(1, len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")))
    assert all(0 <= p.line < lines for p in prepared.metadata.problems)
    record = FileRecord(
        path="notes/generated.md",
        size=len(text),
        mtime_ns=0,
        sha256="0",
        title=prepared.title,
        chunk_count=len(prepared.chunks),
        state="pending",
    )
    store.writer.write_texts(
        [(record, prepared.chunks)],
        metadata={record.path: prepared.metadata},
        cards={record.path: prepared.card} if prepared.card else None,
    )


def test_any_file_never_stops_a_sync(tmp_path: Path) -> None:
    """Generated files synced one at a time among the example workspace: the sync
    never raises, and each file is indexed or listed as skipped with a reason."""
    workspace = copy_example_workspace(tmp_path / "workspace")
    kb = open_kb(workspace, tmp_path / "storage")
    kb.sync()
    examples = [0]

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(text=_DOCUMENT)
    def check(text: str) -> None:
        examples[0] += 1
        path = workspace / "generated.md"
        path.write_bytes(text.encode("utf-8"))
        report = kb.sync([path])
        assert report.errors == []
        indexed = kb.file_info("generated.md") is not None
        skipped = {s.path: s.reason for s in kb.status().skipped}
        assert indexed != ("generated.md" in skipped)
        assert kb.search("SPEI", mode="keyword")

    check()
    assert examples[0] >= 20
    kb.close()
