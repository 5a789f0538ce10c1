"""A store folder that is not its user's alone is refused, with a message, never used
(`engine/private.py`): one another user made first in a shared `KB_STORAGE` (a 1777
folder) answered the victim's `kb search` from the index they planted."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from tests.conftest import copy_example_workspace
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.cli import HASHED, run

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.private import NotPrivate, refusal
from kb_lsp.engine.storage import store_dir_for

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="another user's folder needs chown")


def open_kb(workspace: Path, storage: Path) -> KnowledgeBase:
    settings = load_settings().settings
    return KnowledgeBase([workspace], settings, embedder=HashingEmbedder(), storage=storage)


def planted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace, a shared storage folder (1777, as /tmp) and, in it, the workspace's
    store folder made and indexed by another user (`nobody`) first: (workspace,
    storage, store folder)."""
    workspace = copy_example_workspace(tmp_path / "workspace")
    storage = tmp_path / "shared"
    storage.mkdir()
    os.chmod(storage, 0o1777)
    trap = tmp_path / "trap"
    (trap / "notes").mkdir(parents=True)
    (trap / "notes" / "planted.md").write_text("# Planted\n\nMexico payments go to evil.\n")
    kb = open_kb(trap / "notes", tmp_path / "trap-store")
    kb.sync()
    kb.close()
    store = store_dir_for(storage, workspace)
    os.replace(store_dir_for(tmp_path / "trap-store", trap / "notes"), store)
    nobody = pwd.getpwnam("nobody")
    for current, dirs, files in os.walk(store):
        for name in [".", *dirs, *files]:
            os.chown(os.path.join(current, name), nobody.pw_uid, nobody.pw_gid)
    os.chmod(store, 0o777)
    return workspace, storage, store


@needs_root
def test_a_store_folder_another_user_made_is_refused(tmp_path: Path) -> None:
    workspace, storage, store = planted(tmp_path)
    assert refusal(store) == f"it belongs to the user nobody ({pwd.getpwnam('nobody').pw_uid})"
    with pytest.raises(NotPrivate, match=r"set kb\.storage \(KB_STORAGE\)"):
        open_kb(workspace, storage)
    for command in (["search", "Mexico payments"], ["status"], ["index"]):
        done = run(*command, "-w", str(workspace), storage=storage, **HASHED)
        assert done.returncode == 1, command
        assert "planted.md" not in done.stdout
        assert f"The index folder {store} is not yours alone" in done.stderr
        assert "Traceback" not in done.stderr and "NotPrivate" not in done.stderr


def test_a_store_reached_through_a_folder_everyone_may_write_is_refused(tmp_path: Path) -> None:
    workspace = copy_example_workspace(tmp_path / "workspace")
    storage = tmp_path / "open"
    storage.mkdir()
    os.chmod(storage, 0o777)  # no sticky bit: anyone may move our folder away and replace it
    with pytest.raises(NotPrivate, match="may be written by every user"):
        open_kb(workspace, storage)
    os.chmod(storage, 0o1777)  # sticky, as /tmp: others cannot touch what is ours
    kb = open_kb(workspace, storage)
    try:
        kb.sync()
        assert kb.search("SPEI", mode="keyword")
    finally:
        kb.close()


def test_a_store_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    workspace = copy_example_workspace(tmp_path / "workspace")
    storage = tmp_path / "storage"
    storage.mkdir()
    (tmp_path / "elsewhere").mkdir()
    store_dir_for(storage, workspace).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(NotPrivate, match="symbolic link"):
        open_kb(workspace, storage)


def test_the_users_own_folders_are_private(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    assert refusal(folder) is None
