"""The index is its user's alone: store folders 0700, files 0600, under any umask."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import Settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.storage import DATABASE

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def modes(folder: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(os.lstat(folder).st_mode)}
    for current, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            path = Path(current) / name
            found[str(path.relative_to(folder))] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


def loose(folder: Path) -> dict[str, str]:
    return {path: oct(mode) for path, mode in modes(folder).items() if mode & 0o077}


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "secret.md").write_text("# Salaries\n\nthe numbers\n", encoding="utf-8")
    return root


def test_a_new_store_is_private_under_umask_022(tmp_path: Path, loose_umask: None) -> None:
    kb = KnowledgeBase(
        [workspace(tmp_path)], Settings(), embedder=HashingEmbedder(), storage=tmp_path / "s"
    )
    try:
        kb.sync()
        (store,) = kb.store_folders()
        assert (store / DATABASE).exists() and (store / "chroma").is_dir()
        assert stat.S_IMODE(os.stat(store).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(store / DATABASE).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(store / "chroma").st_mode) == 0o700
    finally:
        kb.close()


def test_an_existing_loose_store_is_tightened_on_open_and_said_once(
    tmp_path: Path, loose_umask: None, caplog: pytest.LogCaptureFixture
) -> None:
    root, storage = workspace(tmp_path), tmp_path / "s"
    kb = KnowledgeBase([root], Settings(), embedder=HashingEmbedder(), storage=storage)
    kb.sync()
    (store,) = kb.store_folders()
    kb.close()
    for path in [store, *store.rglob("*")]:  # as an older version left it
        if not path.is_symlink():
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
    assert loose(store)
    with caplog.at_level(logging.WARNING, logger="kb_lsp.engine.private"):
        kb = KnowledgeBase([root], Settings(), embedder=HashingEmbedder(), storage=storage)
        kb.close()
    assert loose(store) == {}
    said = [r.getMessage() for r in caplog.records if "readable by other users" in r.getMessage()]
    assert len(said) == 1 and str(store) in said[0]


def test_kb_index_leaves_nothing_readable_by_others(tmp_path: Path) -> None:
    root, storage = workspace(tmp_path), tmp_path / "s"
    env = {
        **os.environ,
        "KB_EMBEDDER_FACTORY": "tests.fakes.embedder:HashingEmbedder",
        "XDG_CACHE_HOME": str(tmp_path / "c"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "kb_lsp.cli", "index", "-w", str(root), "--storage", str(storage)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        preexec_fn=lambda: os.umask(0o022),
    )
    assert done.returncode == 0, done.stderr
    (store,) = [p for p in storage.iterdir() if p.is_dir()]
    assert (store / DATABASE).exists()
    assert loose(store) == {}
