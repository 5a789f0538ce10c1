"""workspace.py on real files in temporary folders.

Permission tests: the suite may run as root (CI does), which ignores `chmod 000`. The
chmod test then reads the files from a child process that has given up root for
`nobody`, so the real OS refusal is met either way; separate tests reach the same code by
making the OS call raise `PermissionError` (monkeypatched).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kb_lsp.config import Settings
from kb_lsp.engine.workspace import files as workspace_module
from kb_lsp.engine.workspace.files import (
    FileEntry,
    PathOutsideWorkspace,
    Skipped,
    UnreadableFile,
    WorkspaceRoot,
    read_markdown,
)

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def write(root: Path, rel: str, text: str = "# note\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def scanned(root: Path, **settings: Any) -> list[str]:
    return [f.path for f in WorkspaceRoot(root, Settings(**settings)).scan().files]


# --- include / exclude ---------------------------------------------------------------------


def test_default_include_takes_markdown_only(tmp_path: Path) -> None:
    write(tmp_path, "README.md")
    write(tmp_path, "docs/guide.markdown")
    write(tmp_path, "docs/deep/er/note.md")
    write(tmp_path, "notes.txt")
    write(tmp_path, "docs/image.png")
    assert scanned(tmp_path) == ["README.md", "docs/deep/er/note.md", "docs/guide.markdown"]


def test_entries_carry_size_mtime_and_paths(tmp_path: Path) -> None:
    path = write(tmp_path, "a/b.md", "hello\n")
    (entry,) = WorkspaceRoot(tmp_path, Settings()).scan().files
    assert entry.path == "a/b.md"
    assert entry.root == tmp_path.resolve()
    assert entry.abs_path == tmp_path.resolve() / "a" / "b.md"
    assert entry.size == 6
    assert entry.mtime_ns == path.stat().st_mtime_ns


def test_exclude_and_custom_include_globs(tmp_path: Path) -> None:
    write(tmp_path, "docs/a.md")
    write(tmp_path, "docs/drafts/b.md")
    write(tmp_path, "docs/secret-plan.md")
    write(tmp_path, "notes/c.md")
    write(tmp_path, "notes/d.txt")
    assert scanned(tmp_path, exclude=["drafts/", "**/secret-*.md"]) == ["docs/a.md", "notes/c.md"]
    assert scanned(tmp_path, include=["notes/**"]) == ["notes/c.md", "notes/d.txt"]
    assert scanned(tmp_path, include=["**/*.md", "!docs/**"]) == ["notes/c.md"]


def test_an_invalid_glob_is_dropped_not_fatal(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    write(tmp_path, "b.md")
    assert scanned(tmp_path, exclude=["!", "b.md"]) == ["a.md"]


@pytest.mark.parametrize(
    "folder",
    [
        ".git",
        "node_modules",
        "sub/node_modules",
        ".venv",
        "venv",
        "__pycache__",
        "build",
        "dist",
        "target",
        ".tox",
        ".mypy_cache",
        "pkg.egg-info",
    ],
)
def test_always_excluded_folders(tmp_path: Path, folder: str) -> None:
    write(tmp_path, "kept.md")
    write(tmp_path, f"{folder}/inner/skipped.md")
    ws = WorkspaceRoot(tmp_path, Settings())
    assert [f.path for f in ws.scan().files] == ["kept.md"]
    assert ws.is_ignored_dir(tmp_path / folder)
    assert ws.entry(tmp_path / folder / "inner" / "skipped.md") is None


def test_any_virtualenv_is_excluded_but_site_is_not(tmp_path: Path) -> None:
    write(tmp_path, "env-py311/pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path, "env-py311/lib/README.md")
    write(tmp_path, "site/index.md")
    ws = WorkspaceRoot(tmp_path, Settings())
    assert [f.path for f in ws.scan().files] == ["site/index.md"]
    assert ws.is_ignored_dir(tmp_path / "env-py311")
    assert ws.entry(tmp_path / "env-py311" / "lib" / "README.md") is None
    assert not ws.is_ignored_dir(tmp_path / "site")


# --- .gitignore ----------------------------------------------------------------------------


@pytest.fixture
def ignored_tree(tmp_path: Path) -> Path:
    write(tmp_path, ".gitignore", "# comment\ngenerated/\n*.tmp.md\n/top-only.md\n")
    write(tmp_path, "a.md")
    write(tmp_path, "x.tmp.md")
    write(tmp_path, "top-only.md")
    write(tmp_path, "generated/out.md")
    write(tmp_path, "other/top-only.md")
    write(tmp_path, "docs/.gitignore", "*.md\n!keep.md\n/local/\n")
    write(tmp_path, "docs/keep.md")
    write(tmp_path, "docs/drop.md")
    write(tmp_path, "docs/local/l.md")
    write(tmp_path, "docs/sub/keep.md")
    write(tmp_path, "docs/sub/drop.md")
    write(tmp_path, "other/local/l.md")
    # A negation cannot re-include a file inside an ignored folder (as in git).
    write(tmp_path, "generated/.gitignore", "!out.md\n")
    return tmp_path


def test_gitignore_nested_anchored_and_negated(ignored_tree: Path) -> None:
    assert scanned(ignored_tree) == [
        "a.md",
        "docs/keep.md",
        "docs/sub/keep.md",
        "other/local/l.md",
        "other/top-only.md",
    ]


def test_gitignore_can_be_turned_off(ignored_tree: Path) -> None:
    assert len(scanned(ignored_tree, respect_gitignore=False)) == 11


def test_gitignore_rules_apply_to_single_entries(ignored_tree: Path) -> None:
    ws = WorkspaceRoot(ignored_tree, Settings())
    assert isinstance(ws.entry(ignored_tree / "docs" / "sub" / "keep.md"), FileEntry)
    assert ws.entry(ignored_tree / "docs" / "sub" / "drop.md") is None
    assert ws.entry(ignored_tree / "generated" / "out.md") is None
    assert ws.entry(ignored_tree / "top-only.md") is None
    assert ws.is_ignored_dir(ignored_tree / "generated")
    assert ws.is_ignored_dir(ignored_tree / "docs" / "local")
    assert not ws.is_ignored_dir(ignored_tree / "other" / "local")


def test_gitignore_change_is_seen_by_entry(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    ws = WorkspaceRoot(tmp_path, Settings())
    assert isinstance(ws.entry(tmp_path / "a.md"), FileEntry)
    write(tmp_path, ".gitignore", "a.md\n# longer, so the size differs too\n")
    assert ws.entry(tmp_path / "a.md") is None


def test_root_inside_a_repository_uses_the_gitignores_above_it(tmp_path: Path) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("wiki/private/\n")
    write(tmp_path, ".gitignore", "*.draft.md\nwiki/archive.md\n")
    wiki = tmp_path / "wiki"
    write(wiki, "a.md")
    write(wiki, "b.draft.md")
    write(wiki, "archive.md")
    write(wiki, "private/p.md")
    write(wiki, "nested/archive.md")
    assert scanned(wiki) == ["a.md", "nested/archive.md"]


# --- size, binary, encoding, permissions -----------------------------------------------------


def test_size_limit_is_skipped_with_a_reason(tmp_path: Path) -> None:
    write(tmp_path, "small.md", "x" * 100)
    write(tmp_path, "big.md", "x" * 3 * 1024)
    result = WorkspaceRoot(tmp_path, Settings(max_file_size=2048)).scan()
    assert [f.path for f in result.files] == ["small.md"]
    assert result.skipped == [Skipped("big.md", "larger than the 2 KiB size limit (3 KiB)")]


def test_size_limit_message_in_mib(tmp_path: Path) -> None:
    write(tmp_path, "huge.md", "x" * int(3.1 * 1024 * 1024))
    ws = WorkspaceRoot(tmp_path, Settings())
    assert ws.entry(tmp_path / "huge.md") == Skipped(
        "huge.md", "larger than the 2 MiB size limit (3.1 MiB)"
    )


def test_read_markdown_decodes_utf8_and_drops_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"\xef\xbb\xbf# Caf\xc3\xa9\n")
    data, text = read_markdown(path)
    assert data == b"\xef\xbb\xbf# Caf\xc3\xa9\n"
    assert text == "# Café\n"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"# title\n\x00\x01\x02 binary", "binary file"),
        (b"# caf\xe9 in latin-1\n", "not valid UTF-8"),
        ("# utf-16\n".encode("utf-16"), "not valid UTF-8 (it looks like UTF-16)"),
    ],
)
def test_read_markdown_refuses_binary_and_undecodable(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "bad.md"
    path.write_bytes(content)
    with pytest.raises(UnreadableFile) as caught:
        read_markdown(path)
    assert caught.value.reason == reason


def test_read_markdown_reports_a_deleted_file(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile) as caught:
        read_markdown(tmp_path / "gone.md")
    assert caught.value.reason == "deleted while reading"


def test_read_markdown_reports_permission_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "locked.md")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(workspace_module.os, "open", refuse)
    with pytest.raises(UnreadableFile) as caught:
        read_markdown(path)
    assert caught.value.reason == "permission denied"


NOBODY = 65534  # the unprivileged user a root run reads as


def _unreadable(root: Path) -> dict[str, Any]:
    """What reading `root/locked.md` and scanning `root` meet."""
    try:
        read_markdown(root / "locked.md")
        reason = None
    except UnreadableFile as err:
        reason = err.reason
    result = WorkspaceRoot(root, Settings()).scan()
    return {
        "reason": reason,
        "files": [f.path for f in result.files],
        "skipped": [[s.path, s.reason] for s in result.skipped],
    }


def _read_as_nobody(root: Path, answers: Any) -> None:
    """In the forked child: give up root, then read."""
    try:
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        answers.put({"seen": _unreadable(root)})
    except BaseException as err:  # the parent reports it
        answers.put({"error": repr(err)})


def _as_nobody(root: Path) -> dict[str, Any]:
    """`_unreadable(root)` in a forked child that gave up root (everything it runs is
    imported already: it may not read this interpreter's own files)."""
    for path in [root, *root.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    _unreadable(root)  # as root: warms every lazy import before the fork
    fork = multiprocessing.get_context("fork")
    answers = fork.SimpleQueue()
    child = fork.Process(target=_read_as_nobody, args=(root, answers))
    child.start()
    answer = answers.get()
    child.join()
    assert "seen" in answer, answer
    return dict(answer["seen"])


def test_unreadable_file_and_folder_with_chmod(tmp_path: Path) -> None:
    # As root, a folder `nobody` can reach (pytest's own are root's alone).
    root = Path(tempfile.mkdtemp(prefix="kb-chmod-")) if AS_ROOT else tmp_path
    locked = write(root, "locked.md")
    write(root, "closed/inner.md")
    write(root, "open.md")
    try:
        if AS_ROOT:
            root.chmod(0o755)
        locked.chmod(0)
        (root / "closed").chmod(0)
        seen = _as_nobody(root) if AS_ROOT else _unreadable(root)
    finally:
        (root / "closed").chmod(0o755)
        locked.chmod(0o644)
        if AS_ROOT:
            shutil.rmtree(root)
    assert seen["reason"] == "permission denied"
    assert "open.md" in seen["files"]
    assert ["closed/", "folder not readable (permission denied)"] in seen["skipped"]


def test_unreadable_folder_is_skipped_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "open.md")
    write(tmp_path, "closed/inner.md")
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        if Path(path).name == "closed":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(workspace_module.os, "scandir", scandir)
    result = WorkspaceRoot(tmp_path, Settings()).scan()
    assert [f.path for f in result.files] == ["open.md"]
    assert result.skipped == [Skipped("closed/", "folder not readable (permission denied)")]


# --- races and links ---------------------------------------------------------------------


class _ListingThenDelete:
    """os.scandir whose listing is taken before some paths are deleted: the race."""

    def __init__(self, path: Any, victims: list[Path], real: Any) -> None:
        with real(path) as listing:
            self.entries = list(listing)
        for victim in victims:
            if victim.is_dir():
                for child in victim.iterdir():
                    child.unlink()
                victim.rmdir()
            elif victim.exists():
                victim.unlink()

    def __enter__(self) -> Any:
        return iter(self.entries)

    def __exit__(self, *exc: object) -> None:
        return None


def test_files_and_folders_deleted_mid_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "stays.md")
    victims = [write(tmp_path, "vanishes.md"), tmp_path / "gone"]
    write(tmp_path, "gone/inner.md")
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        if Path(path) == tmp_path.resolve():
            return _ListingThenDelete(path, victims, real_scandir)
        return real_scandir(path)

    monkeypatch.setattr(workspace_module.os, "scandir", scandir)
    result = WorkspaceRoot(tmp_path, Settings()).scan()
    assert [f.path for f in result.files] == ["stays.md"]
    assert result.skipped == []


@pytest.mark.timeout(20)
def test_symlink_loops_do_not_hang_and_files_are_listed_once(tmp_path: Path) -> None:
    write(tmp_path, "docs/a.md")
    write(tmp_path, "docs/sub/b.md")
    (tmp_path / "docs" / "sub" / "up").symlink_to(tmp_path / "docs")
    (tmp_path / "docs" / "self").symlink_to(".")
    (tmp_path / "alias").symlink_to("docs")  # sorts before "docs": must not win
    (tmp_path / "x").symlink_to("y")
    (tmp_path / "y").symlink_to("x")
    assert scanned(tmp_path) == ["docs/a.md", "docs/sub/b.md"]


def test_linked_folder_inside_root_is_followed_once(tmp_path: Path) -> None:
    write(tmp_path, "shared/real/a.md")
    (tmp_path / "link").symlink_to(tmp_path / "shared" / "real")
    write(tmp_path, "z/other.md")
    (tmp_path / "shared" / "real").rename(tmp_path / "elsewhere")
    (tmp_path / "shared" / "real").symlink_to(tmp_path / "elsewhere")
    # Both `link` and `shared/real` lead to `elsewhere`, which is walked as itself.
    assert scanned(tmp_path) == ["elsewhere/a.md", "z/other.md"]


def test_links_out_of_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    root = tmp_path / "root"
    write(outside, "secret.md")
    write(root, "own.md")
    (root / "linked-file.md").symlink_to(outside / "secret.md")
    (root / "inner-link.md").symlink_to(root / "own.md")
    (root / "linked-dir").symlink_to(outside)
    (root / "dangling.md").symlink_to(root / "nothing.md")
    ws = WorkspaceRoot(root, Settings())
    result = ws.scan()
    assert [f.path for f in result.files] == ["inner-link.md", "own.md"]
    assert sorted(result.skipped, key=lambda s: s.path) == [
        Skipped("dangling.md", "broken symbolic link"),
        Skipped("linked-dir/", "symbolic link to a folder outside the workspace"),
        Skipped("linked-file.md", "symbolic link to a file outside the workspace"),
    ]
    assert ws.entry(root / "linked-dir" / "secret.md") is None
    assert isinstance(ws.entry(root / "linked-file.md"), Skipped)


# --- single entries and relative paths --------------------------------------------------------


def test_entry_for_single_paths(tmp_path: Path) -> None:
    write(tmp_path, "notes/a.md")
    write(tmp_path, "notes/b.txt")
    write(tmp_path.parent / f"{tmp_path.name}-sibling", "c.md")
    ws = WorkspaceRoot(tmp_path, Settings())
    entry = ws.entry(tmp_path / "notes" / "a.md")
    assert isinstance(entry, FileEntry)
    assert entry.path == "notes/a.md"
    assert ws.entry(tmp_path / "notes" / "b.txt") is None
    assert ws.entry(tmp_path / "notes" / "missing.md") is None
    assert ws.entry(tmp_path / "notes") is None
    assert ws.entry(tmp_path.parent / f"{tmp_path.name}-sibling" / "c.md") is None


def test_relative_paths(tmp_path: Path) -> None:
    ws = WorkspaceRoot(tmp_path, Settings())
    assert ws.relative(tmp_path / "a" / "b.md") == "a/b.md"
    assert ws.relative(tmp_path) == ""
    assert ws.relative(tmp_path.parent / "elsewhere.md") is None
    assert ws.relative(tmp_path / ".." / "elsewhere.md") is None
    assert not ws.is_ignored_dir(tmp_path)
    assert ws.is_ignored_dir(tmp_path.parent)


def test_root_given_through_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write(real, "a.md")
    (tmp_path / "via").symlink_to(real)
    ws = WorkspaceRoot(tmp_path / "via", Settings())
    assert ws.root == real.resolve()
    assert ws.relative(tmp_path / "via" / "a.md") == "a.md"
    assert ws.relative(real / "a.md") == "a.md"
    assert isinstance(ws.entry(tmp_path / "via" / "a.md"), FileEntry)


# --- confinement ---------------------------------------------------------------------------


@pytest.fixture
def confined(tmp_path: Path) -> WorkspaceRoot:
    root = tmp_path / "root"
    write(root, "payments/mexico.md")
    write(root, "a.md")
    write(tmp_path, "outside.md")
    (root / "escape.md").symlink_to(tmp_path / "outside.md")
    (root / "escape-dir").symlink_to(tmp_path)
    (root / "alias.md").symlink_to(root / "a.md")
    return WorkspaceRoot(root, Settings())


@pytest.mark.parametrize(
    "user_path",
    [
        "../../etc/passwd",
        "../outside.md",
        "payments/../../outside.md",
        "/etc/passwd",
        "escape.md",
        "escape-dir/outside.md",
        "escape-dir",
    ],
)
def test_resolve_inside_refuses_paths_leaving_the_root(
    confined: WorkspaceRoot, user_path: str
) -> None:
    with pytest.raises(PathOutsideWorkspace) as caught:
        confined.resolve_inside(user_path)
    assert repr(user_path) in str(caught.value)
    assert "outside the workspace" in str(caught.value)


def test_resolve_inside_message_is_actionable(confined: WorkspaceRoot) -> None:
    with pytest.raises(PathOutsideWorkspace, match=r"^'\.\./\.\./etc/passwd' is outside the"):
        confined.resolve_inside("../../etc/passwd")


@pytest.mark.parametrize(
    ("user_path", "expected"),
    [
        ("payments/mexico.md", "payments/mexico.md"),
        ("./a.md", "a.md"),
        ("payments/../a.md", "a.md"),
        ("alias.md", "a.md"),
        ("new/not-yet.md", "new/not-yet.md"),
        (".", ""),
    ],
)
def test_resolve_inside_accepts_paths_in_the_root(
    confined: WorkspaceRoot, user_path: str, expected: str
) -> None:
    resolved = confined.resolve_inside(user_path)
    assert resolved == (confined.root / expected if expected else confined.root)
    assert confined.relative(resolved) == expected
