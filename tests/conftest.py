"""Shared fixtures: a temp copy of the example workspace and a temp storage folder."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_WORKSPACE = REPO / "examples" / "workspace"

# Used when examples/workspace is missing: enough to index, search and follow links.
_FALLBACK = {
    "README.md": "# Team wiki\n\nStart with the [glossary](glossary.md).\n",
    "glossary.md": "# Glossary\n\n## SPEI\n\nMexico's real-time interbank payment system.\n",
    "payments/mexico-payments.md": (
        "# Mexico payments\n\nPayments to the Mexican subsidiary are sent by SPEI before "
        "the 14:30 Mexico City cut-off.\n\n## Monthly wire run\n\nThe subsidiary is funded "
        "once a month, on the third business day, in MXN.\n"
    ),
    "runbooks/incident-response.md": (
        "# Incident response\n\nPage the on-call engineer, open an incident channel and "
        "write the timeline as you go.\n"
    ),
}


def copy_example_workspace(dest: Path) -> Path:
    """A private copy of examples/workspace (or a small fallback) at `dest`."""
    if EXAMPLE_WORKSPACE.is_dir():
        shutil.copytree(EXAMPLE_WORKSPACE, dest)
    else:
        for rel, text in _FALLBACK.items():
            path = dest / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return dest.resolve()


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One int8 copy of the embedding model per test session (servers and CLIs started
    by tests inherit the variable), never the user's own cache."""
    if os.environ.get("KB_MODEL_CACHE"):
        yield Path(os.environ["KB_MODEL_CACHE"])
        return
    folder = tmp_path_factory.mktemp("model-cache")
    os.environ["KB_MODEL_CACHE"] = str(folder)
    try:
        yield folder
    finally:
        os.environ.pop("KB_MODEL_CACHE", None)


def prepare_int8_model() -> None:
    """Make the session's int8 copy of the embedding model now if it is not made yet."""
    from kb_lsp.engine.embed.minilm import MiniLMEmbedder
    from kb_lsp.engine.knowledge import model_cache

    MiniLMEmbedder(int8_cache=model_cache()).load()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return copy_example_workspace(tmp_path / "workspace")


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    folder = tmp_path / "storage"
    folder.mkdir()
    return folder.resolve()
