"""Files open in the editor are embedded first (`KnowledgeBase.sync`'s `first`, from the
session's `editor_files`): during a long first index the note in front of the user
becomes searchable by meaning before the rest; the newest files come next."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.cli import HASHING
from tests.helpers.runtime import editor_runtime

from kb_lsp.config import Settings, load_settings
from kb_lsp.engine.knowledge import KnowledgeBase


class Recording(HashingEmbedder):
    """Keeps the order in which documents were embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return super().embed_documents(texts)


def notes(folder: Path, names: list[str]) -> None:
    """One note per name, the first the oldest: newest-first alone would do it last."""
    folder.mkdir(parents=True)
    for age, name in enumerate(names):
        path = folder / f"{name}.md"
        path.write_text(f"# {name}\n\nThe {name}word note about payments.\n", encoding="utf-8")
        os.utime(path, (1_700_000_000 + age * 60, 1_700_000_000 + age * 60))


def order(embedder: Recording, names: list[str]) -> list[str]:
    first = {
        name: next(i for i, t in enumerate(embedder.seen) if f"{name}word" in t) for name in names
    }
    return sorted(names, key=first.__getitem__)


def test_the_open_files_are_embedded_first_and_their_root_before_the_others(
    tmp_path: Path,
) -> None:
    wiki, team = tmp_path / "wiki", tmp_path / "team"
    notes(wiki, ["alpha", "beta", "gamma", "delta"])
    notes(team, ["echo", "foxtrot"])
    embedder = Recording()
    kb = KnowledgeBase([wiki, team], Settings(), embedder=embedder, storage=tmp_path / "store")
    try:
        kb.sync(first=[team / "echo.md", tmp_path / "elsewhere.md"])
        # echo (the oldest of the second folder) leads, then its folder, then the first.
        assert order(embedder, ["alpha", "beta", "gamma", "delta", "echo", "foxtrot"]) == [
            "echo",
            "foxtrot",
            "delta",
            "gamma",
            "beta",
            "alpha",
        ]
    finally:
        kb.close()


def test_without_open_files_the_newest_come_first(tmp_path: Path) -> None:
    wiki = tmp_path / "wiki"
    notes(wiki, ["alpha", "beta", "gamma"])
    embedder = Recording()
    kb = KnowledgeBase([wiki], Settings(), embedder=embedder, storage=tmp_path / "store")
    try:
        kb.sync()
        assert order(embedder, ["alpha", "beta", "gamma"]) == ["gamma", "beta", "alpha"]
    finally:
        kb.close()


def test_the_runtime_gives_its_syncs_the_files_open_now(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """VS Code opens its restored editors before the first index runs: the runtime keeps
    them, and each sync asks for the files open at its start."""
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    runtime = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
    asked: list[frozenset[Path]] = []
    try:
        open_note = workspace / "payments" / "mexico-payments.md"
        runtime.editor_files([open_note])  # nothing is open yet: kept
        settings = load_settings({"storage": str(storage)}).settings
        runtime.open([workspace], settings, index=False).result()
        kb = runtime.session.kb
        assert kb is not None
        sync = kb.sync

        def recorded(*args: Any, first: frozenset[Path] = frozenset(), **kwargs: Any) -> Any:
            asked.append(first)
            return sync(*args, first=first, **kwargs)

        monkeypatch.setattr(kb, "sync", recorded)
        runtime.reindex().result()
        runtime.editor_files([])
        runtime.reindex().result()
        assert asked == [frozenset({open_note}), frozenset()]
    finally:
        runtime.close()
