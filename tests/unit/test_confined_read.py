"""Reading what was checked: one descriptor, confined to the root, a regular file within
the size limit (`workspace.read_confined`), also while another thread swaps the path
between a file and a link to a file outside the workspace."""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import Settings, load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.workspace import files as workspace_module
from kb_lsp.engine.workspace.files import Skipped, UnreadableFile, WorkspaceRoot, read_confined

INSIDE = "# Race\n\nHarmless inside text about ferns and moss.\n"
OUTSIDE = "# Secret\n\nThe outside zebra passphrase is tangerine.\n"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """(root, outside): a workspace root and a secret file next to it."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "own.md").write_text("# Own\n\nOwn text.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(OUTSIDE)
    return root.resolve(), outside.resolve()


def test_named_pipes_and_sockets_are_skipped_with_a_reason(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    os.mkfifo(root / "pipe.md")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock_path = root / "sock.md"
    if len(str(sock_path)) >= 100:
        pytest.skip("the temporary folder's path is too long for a Unix socket")
    sock.bind(str(sock_path))
    try:
        result = WorkspaceRoot(root, Settings()).scan()
        assert [f.path for f in result.files] == ["own.md"]
        assert sorted(result.skipped, key=lambda s: s.path) == [
            Skipped("pipe.md", "not a regular file (a named pipe)"),
            Skipped("sock.md", "not a regular file (a socket)"),
        ]
    finally:
        sock.close()


@pytest.mark.timeout(20)
def test_reading_a_named_pipe_returns_at_once(tree: tuple[Path, Path]) -> None:
    """No writer ever opens the pipe: a blocking open would wait for ever."""
    root, _ = tree
    os.mkfifo(root / "pipe.md")
    with pytest.raises(UnreadableFile) as caught:
        WorkspaceRoot(root, Settings()).read("pipe.md")
    assert caught.value.reason == "not a regular file (a named pipe)"


def test_not_regular_reasons() -> None:
    assert workspace_module.not_regular(stat.S_IFCHR) == "not a regular file (a device)"
    assert workspace_module.not_regular(stat.S_IFBLK) == "not a regular file (a device)"
    assert workspace_module.not_regular(stat.S_IFREG) is None


def test_links_inside_are_read_and_links_outside_refused(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    (root / "alias.md").symlink_to(root / "own.md")
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / "escape-dir").symlink_to(outside)
    ws = WorkspaceRoot(root, Settings())
    assert ws.read("alias.md")[1] == "# Own\n\nOwn text.\n"
    for path in ("escape.md", "escape-dir/secret.md"):
        with pytest.raises(UnreadableFile) as caught:
            ws.read(path)
        assert "outside the workspace" in caught.value.reason


def test_a_folder_swapped_for_a_link_is_judged_by_what_was_opened(
    tree: tuple[Path, Path],
) -> None:
    """`read_confined` is given a path whose folder is a link leading out (as if it was
    swapped after the scan): the descriptor's real place is outside, so it is refused."""
    root, outside = tree
    (root / "sub").symlink_to(outside)
    with pytest.raises(UnreadableFile) as caught:
        read_confined(root / "sub" / "secret.md", root, 1 << 20)
    assert caught.value.reason == "symbolic link to a file outside the workspace"


def test_the_size_limit_is_checked_on_what_is_read(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    (root / "big.md").write_text("# Big\n\n" + "word " * 400)
    with pytest.raises(UnreadableFile) as caught:
        WorkspaceRoot(root, Settings(maxFileSize=1024)).read("big.md")
    assert "size limit" in caught.value.reason
    assert read_confined(root / "big.md", root, 1 << 20).startswith(b"# Big")


def _scan_in_a_thread(ws: WorkspaceRoot) -> list[str]:
    """The scanned paths; fails (instead of hanging the suite) if the scan blocks."""
    paths: list[str] = []
    worker = threading.Thread(
        target=lambda: paths.extend(f.path for f in ws.scan().files), daemon=True
    )
    worker.start()
    worker.join(60.0)  # a generous deadline: the scan itself takes milliseconds
    assert not worker.is_alive(), "the scan blocked"
    return paths


def test_a_gitignore_that_is_a_named_pipe_does_not_block_the_scan(
    tree: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """No writer ever opens the pipe: reading it the ordinary way would hang indexing."""
    root, _ = tree
    os.mkfifo(root / ".gitignore")
    sub = root / "sub"
    sub.mkdir()
    (sub / "note.md").write_text("# Note\n")
    os.mkfifo(sub / ".gitignore")
    assert _scan_in_a_thread(WorkspaceRoot(root, Settings())) == ["own.md", "sub/note.md"]
    assert "not used: not a regular file (a named pipe)" in caplog.text


def test_a_gitignore_linked_out_of_its_folder_is_not_used(
    tree: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """As git (2.32+) does: an ignore file that is a symbolic link is not followed out."""
    root, outside = tree
    (outside / "ignore-all").write_text("*.md\n")
    (root / ".gitignore").symlink_to(outside / "ignore-all")
    assert _scan_in_a_thread(WorkspaceRoot(root, Settings())) == ["own.md"]
    assert "outside the workspace" in caplog.text


def test_a_gitignore_in_a_linked_folder_inside_still_counts(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    real = root / "real"
    real.mkdir()
    (real / "keep.md").write_text("# Keep\n")
    (real / "drop.md").write_text("# Drop\n")
    (real / ".gitignore").write_text("drop.md\n")
    (root / "alias").symlink_to(real)
    ws = WorkspaceRoot(root, Settings())
    assert _scan_in_a_thread(ws) == ["own.md", "real/keep.md"]
    assert ws.entry(root / "alias" / "drop.md") is None


class Swapper(threading.Thread):
    """Replaces `race.md` by a regular file, then by a link to the outside secret, and
    again, until stopped; `swaps` counts the replacements (under `cond`)."""

    def __init__(self, root: Path, outside: Path) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.target = outside / "secret.md"
        self.stop = threading.Event()
        self.cond = threading.Condition()
        self.swaps = 0

    def run(self) -> None:
        race, staged = self.root / "race.md", self.root / ".staged"
        while not self.stop.is_set():
            staged.write_text(INSIDE)
            os.replace(staged, race)
            self._count()
            staged.symlink_to(self.target)
            os.replace(staged, race)
            self._count()

    def _count(self) -> None:
        with self.cond:
            self.swaps += 1
            self.cond.notify_all()

    def wait_past(self, swaps: int) -> int:
        """Block until more than `swaps` replacements have happened; the count now."""
        with self.cond:
            assert self.cond.wait_for(lambda: self.swaps > swaps, timeout=60)
            return self.swaps


@contextmanager
def swapping(root: Path, outside: Path) -> Iterator[Swapper]:
    swapper = Swapper(root, outside)
    swapper.start()
    try:
        yield swapper
    finally:
        swapper.stop.set()
        swapper.join(timeout=60)


@pytest.mark.timeout(120)
def test_read_never_returns_the_outside_file_while_the_path_is_swapped(
    tree: tuple[Path, Path],
) -> None:
    root, outside = tree
    ws = WorkspaceRoot(root, Settings())
    reads = refused = 0
    with swapping(root, outside) as swapper:
        seen = 0
        while reads < 300 or refused < 30:
            seen = swapper.wait_past(seen) if reads % 10 == 0 else seen
            try:
                _, text = ws.read("race.md")
            except UnreadableFile as err:
                refused += 1
                assert "outside the workspace" in err.reason or "reading" in err.reason
                continue
            reads += 1
            assert text == INSIDE
            assert reads + refused < 100_000, "the swapper never let a read through"


@pytest.mark.timeout(240)
def test_syncs_during_a_symlink_race_never_index_the_outside_text(
    tree: tuple[Path, Path], storage: Path
) -> None:
    root, outside = tree
    (root / "race.md").write_text(INSIDE)
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    kb = KnowledgeBase([root], settings, embedder=HashingEmbedder(), storage=storage)
    try:
        with swapping(root, outside) as swapper:
            seen = 0
            for round_ in range(40):
                seen = swapper.wait_past(seen)
                # A full scan and a sync of the one path, in turns.
                kb.sync(None if round_ % 2 else [root / "race.md"])
                stored = [c.text for info in kb.files() for c in kb.chunks_of(info.path)]
                assert not any("zebra" in text for text in stored), f"round {round_}"
                for hit in kb.search("outside zebra passphrase tangerine"):
                    assert "zebra" not in hit.snippet, f"round {round_}"
        kb.sync()
        assert "own.md" in {info.path for info in kb.files()}
    finally:
        kb.close()
