"""A save re-resolves only the links its files can re-target, with the answer resolving
every link gives (`metadata/anchors.py`), and reads neither the whole manifest nor every
link."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.sql import statements_of

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.markdown.document import parse_markdown
from kb_lsp.engine.metadata import anchors
from kb_lsp.engine.metadata import tables as metadata_tables
from kb_lsp.engine.metadata.extract import extract_metadata
from kb_lsp.engine.storage import DATABASE
from kb_lsp.engine.store.db import SCHEMA

Snapshot = tuple[dict[str, str], Counter[tuple[str, str, str]]]


def snapshot(db: sqlite3.Connection) -> Snapshot:
    """Every card's anchor texts, and where every link resolves."""
    cards = {str(p): str(a) for p, a in db.execute("SELECT path, anchors FROM note_cards")}
    targets = Counter(
        (str(p), str(t), str(c)) for p, t, c in db.execute("SELECT * FROM link_targets")
    )
    return cards, targets


def open_kb(workspace: Path, storage: Path) -> KnowledgeBase:
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    return KnowledgeBase([workspace], settings, embedder=HashingEmbedder(), storage=storage)


def stored(kb: KnowledgeBase) -> Snapshot:
    ((folder, _),) = kb.store_folders().items()
    with closing(sqlite3.connect(folder / DATABASE)) as db:
        return snapshot(db)


# --- a one-file save on a workspace -----------------------------------------------------------

NOTES = 30


def ring(workspace: Path) -> None:
    """Note i links to note i+1 by name and to note i+2 by path."""
    workspace.mkdir()
    for i in range(NOTES):
        (workspace / f"n{i}.md").write_text(
            f"# Note {i}\n\nSee [[n{(i + 1) % NOTES}]] and [x](n{(i + 2) % NOTES}.md).\n",
            encoding="utf-8",
        )


@pytest.fixture
def saved(tmp_path: Path) -> Iterator[tuple[KnowledgeBase, list[str], set[str]]]:
    """A ring of notes, note 3 saved with a new link: (knowledge base, the statements
    of the save, the notes the save can touch)."""
    workspace = tmp_path / "ws"
    ring(workspace)
    kb = open_kb(workspace, tmp_path / "s")
    kb.sync()
    (folder,) = kb.store_folders()
    (workspace / "n3.md").write_text("# Note 3\n\nNow [[n7|seven]].\n", encoding="utf-8")
    with statements_of(folder) as seen:
        report = kb.sync([workspace / "n3.md"])
    assert report.files_changed == 1
    # Its old targets, its new one, and the notes linking to it.
    near = {f"n{i}.md" for i in (3, 3 + 1, 3 + 2, 7, 3 - 1, 3 - 2)}
    yield kb, seen, near
    kb.close()


WHOLE_TABLES = ("files", "file_links", "note_cards", "link_targets", "link_names", "file_names")


def test_a_one_file_save_reads_no_whole_table(
    saved: tuple[KnowledgeBase, list[str], set[str]],
) -> None:
    _, seen, _ = saved
    whole = re.compile(rf"\bFROM ({'|'.join(WHOLE_TABLES)})\b(?!\s+WHERE)")
    reads = [s for s in seen if s.lstrip().startswith("SELECT")]
    assert reads
    assert not [s for s in reads if whole.search(s)]


def test_a_one_file_save_resolves_only_the_links_near_it(
    saved: tuple[KnowledgeBase, list[str], set[str]],
) -> None:
    kb, seen, near = saved
    link_reads = [
        s for s in seen if re.match(r"\s*SELECT\b.*\bFROM (file_links|link_targets)\b", s)
    ]
    assert link_reads
    # Each read of the links names the notes it reads, and only notes near the saved one.
    for read in link_reads:
        named = set(re.findall(r"'(n\d+\.md)'", read))
        assert named, read
        assert named <= near, read
    cards, _ = stored(kb)
    assert cards["n7.md"].split("\n") == ["n7", "seven", "x"]


# --- the same answer as resolving every link -----------------------------------------------------


def write(root: Path, path: str, text: str) -> Path:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    return file


def test_saves_give_the_anchors_of_a_fresh_index(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write(vault, "Canvas.md", "---\naliases: [Board]\n---\n# Canvas\n")
    write(vault, "notes/Canvas.md", "# Canvas notes\n")
    write(vault, "guide/setup.md", "# Setup\n\nSee [[Board|the board]] and [c](../Canvas.md).\n")
    write(vault, "a.md", "# A\n\n[[Canvas]] [[notes/Canvas|nc]] [[Ideas]] [s](guide/setup)\n")
    write(vault, "notes/b.md", "# B\n\n[[Canvas]] [[label|setup]] [[Board]]\n")
    kb = open_kb(vault, tmp_path / "s")
    kb.sync()

    def same_as_fresh(*changed: Path) -> None:
        kb.sync(list(changed))
        fresh = open_kb(vault, tmp_path / f"fresh{len(list(tmp_path.iterdir()))}")
        fresh.sync()
        assert stored(kb) == stored(fresh)
        fresh.close()

    # A new note takes the name a link looked up; an alias moves.
    same_as_fresh(write(vault, "Ideas.md", "---\naliases: [Canvas board]\n---\n# Ideas\n"))
    same_as_fresh(write(vault, "Canvas.md", "# Canvas\n"), write(vault, "x/Board.md", "# B\n"))
    # A renamed target, a deleted one, and a note that now links elsewhere.
    (vault / "guide/setup.md").rename(vault / "guide/install.md")
    same_as_fresh(vault / "guide/setup.md", vault / "guide/install.md")
    (vault / "notes/Canvas.md").unlink()
    same_as_fresh(vault / "notes/Canvas.md", write(vault, "notes/b.md", "# B\n\n[[install]]\n"))
    kb.close()


# --- any small link graph, any edits: targeted == full --------------------------------------------

PATHS = ["a.md", "A b.md", "x/a.md", "x/c.md", "y/a.md", "y/x/c.md", "zed.md", "a.markdown"]
NAMES = ["a", "A", "x/a", "c", "x/c", "zed", "a b", "A  B", "Board", "a.md", "/x/a/", "q"]
LINKS = [
    *(f"[[{name}]]" for name in NAMES),
    *(f"[[{name}|{label}]]" for name in ("a", "q", "Board") for label in ("zed", "c", "t")),
    "[t](a.md)",
    "[t](../a.md)",
    "[u](/x/c.md)",
    "[u](c)",
    "[[x/c#Head]]",
    "[[dendron://v/zed]]",
]

note = st.tuples(
    st.lists(st.sampled_from(NAMES), max_size=2),  # aliases
    st.lists(st.sampled_from(LINKS), max_size=4),
)
edit = st.dictionaries(st.sampled_from(PATHS), st.none() | note, min_size=1, max_size=3)


def text(aliases: list[str], links: list[str]) -> str:
    front = f"---\naliases: [{', '.join(aliases)}]\n---\n" if aliases else ""
    return front + "# T\n\n" + " ".join(links) + "\n"


def apply(db: sqlite3.Connection, changes: dict[str, tuple[list[str], list[str]] | None]) -> None:
    """Write or remove files as a sync's phase 1 does (manifest row and metadata)."""
    for path, content in changes.items():
        if content is None:
            metadata_tables.delete(db, path)
            db.execute("DELETE FROM files WHERE path = ?", (path,))
            continue
        meta = extract_metadata(parse_markdown(text(*content), file_name=path), path)
        db.execute(
            "INSERT OR REPLACE INTO files(path, size, mtime_ns, sha256, title, chunk_count, "
            "state, indexed_at) VALUES (?, 0, 0, '', 'T', 0, 'pending', 0)",
            (path,),
        )
        metadata_tables.write(db, path, meta)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(PATHS), note), st.lists(edit, min_size=1, max_size=4))
def test_a_refresh_of_what_is_due_equals_resolving_every_link(
    start: dict[str, tuple[list[str], list[str]]],
    edits: list[dict[str, tuple[list[str], list[str]] | None]],
) -> None:
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript(SCHEMA + metadata_tables.DDL)
        apply(db, dict(start))
        anchors.refresh_all(db)
        for changes in edits:
            apply(db, changes)
            anchors.refresh_due(db)
            targeted = snapshot(db)
            assert anchors.refresh_all(db) == 0  # nothing left for a full refresh to change
            assert snapshot(db) == targeted
