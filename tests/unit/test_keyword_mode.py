"""Keyword mode never embeds the query, so a one-shot keyword search never loads the
model: an embedder that fails when asked for a query's vector answers keyword searches."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.embedder import HashingEmbedder, QueryRefusingEmbedder
from tests.helpers.cli import HASHED, REPO, run

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.storage import DATABASE, store_dir_for

REFUSING = {
    "KB_EMBEDDER_FACTORY": "tests.fakes.embedder:QueryRefusingEmbedder",
    "PYTHONPATH": str(REPO),
}
SETTINGS = load_settings({"search": {"threshold": 0.0}}).settings


def test_keyword_search_never_embeds_the_query(workspace: Path, storage: Path) -> None:
    first = KnowledgeBase([workspace], SETTINGS, embedder=HashingEmbedder(), storage=storage)
    first.sync()
    first.close()
    kb = KnowledgeBase([workspace], SETTINGS, embedder=QueryRefusingEmbedder(), storage=storage)
    hits = kb.search("Mexico payments SPEI", mode="keyword")
    assert hits and hits[0].path == "payments/mexico-payments.md"
    assert kb.search("SPEI folder:payments", mode="keyword")
    # The other modes do ask for it: the embedder above is the one searching.
    for mode in ("hybrid", "semantic"):
        with pytest.raises(AssertionError, match="was embedded"):
            kb.search("Mexico payments SPEI", mode=mode)  # type: ignore[arg-type]
    kb.close()


def test_a_one_shot_keyword_search_on_the_command_line_embeds_nothing(
    workspace: Path, storage: Path
) -> None:
    assert run("index", str(workspace), storage=storage, **HASHED).returncode == 0
    args = ("search", "Mexico payments SPEI", "-w", str(workspace))
    keyword = run(*args, "--mode", "keyword", storage=storage, **REFUSING)
    assert keyword.returncode == 0, keyword.stderr
    assert keyword.stdout.startswith("1, payments/mexico-payments.md")
    hybrid = run(*args, storage=storage, **REFUSING)
    assert hybrid.returncode != 0
    assert "was embedded" in hybrid.stderr


# What a one-shot command must not import on a current index (the tests below).
FILTERS, CLAIMS = "kb_lsp.engine.metadata.filters", "kb_lsp.engine.metadata.claims"
HEAVY = (
    "onnxruntime", "tokenizers", "chromadb", "numpy", "pydantic", "yaml", "filelock",
    "markdown_it", "mdurl", "mdit_py_plugins", "kb_lsp.engine.markdown.document",
    "kb_lsp.engine.snippets", "socket", "pathspec", FILTERS, CLAIMS,
)  # fmt: skip


def one_shot(argv: list[str], storage: Path, **env: str) -> tuple[str, set[str]]:
    """`kb` with `argv` in a process of its own: its stdout, and which of `HEAVY` it loaded."""
    probe = (
        "import json, sys\n"
        "from kb_lsp.cli import main\n"
        f"code = main({argv!r})\n"
        f"print('loaded:', json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
        "raise SystemExit(code)\n"
    )
    env = {**os.environ, "KB_STORAGE": str(storage), "PYTHONPATH": str(REPO), **env}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    printed, _, loaded = done.stdout.rpartition("loaded: ")
    return printed, set(json.loads(loaded))


def test_one_shot_keyword_search_status_and_schema_load_no_numpy_pydantic_onnx_chroma_or_yaml(
    workspace: Path, storage: Path
) -> None:
    # The default embedder (MiniLM on onnxruntime), as a user's `kb` has it: on a current
    # index a keyword search, a status and the schema answer from SQLite (`runtime/quick_search.py`,
    # `runtime/quick.py`) and pay none of these imports. YAML is the indexer's: reading the
    # store's schema and its stored values must not load it (`metadata/values.py`).
    assert run("index", str(workspace), storage=storage).returncode == 0
    # And, lighter but each a tenth of a cold keyword search: the writer's lock library
    # (`store/writer_lock.py` flocks), the Markdown parser (an unchanged workspace parses
    # nothing, and a snippet is cut from the readable blocks the sync stored: neither
    # markdown-it nor its URL helper loads, nor the chunker, nor the rules that make
    # blocks), the socket module (no server listens), pathspec (the scan's globs were
    # translated by the sync, which kept them in the store: `workspace/glob_memo.py`);
    # the filter language's parser (only a query or a filter that uses it), the model's
    # claims (no extracted values).
    # The first hit's passages have inline markup (emphasis) that rendering from the text
    # would need markdown-it for.
    assert "**third business day**" in (workspace / "payments/mexico-payments.md").read_text()
    where = ["-w", str(workspace)]
    for argv, first, allowed in [
        (["search", "Mexico payments SPEI", "--mode", "keyword", *where], "1, payments/mexico",
         set()),
        (["search", "tag:runbook", "--mode", "keyword", "--json", *where], "{", {FILTERS}),
        (["status", *where], "workspace:", set()),
        (["schema", *where], "14 files; metadata fields", {CLAIMS}),  # it counts them
    ]:  # fmt: skip
        printed, loaded = one_shot(argv, storage)
        assert printed.startswith(first), printed
        assert loaded <= allowed, (argv, loaded)


# A `.gitignore` with what pathspec answers in each way: a comment, a blank line, a folder,
# a negation, and a line it refuses (`!` alone), which the scan leaves out with a warning.
GITIGNORE = "# drafts stay out\n\ndrafts/\n!drafts/keep.md\n!\n"
SEARCH = ["search", "Mexico payments SPEI", "--mode", "keyword"]


def test_a_one_shot_keyword_search_asks_pathspec_only_for_a_glob_no_sync_translated(
    workspace: Path, storage: Path
) -> None:
    (workspace / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    (workspace / "drafts").mkdir()
    (workspace / "drafts" / "spei-draft.md").write_text("# SPEI draft\n\nMexico payments SPEI\n")
    assert run("index", str(workspace), storage=storage, **HASHED).returncode == 0
    where = ["-w", str(workspace)]
    printed, loaded = one_shot([*SEARCH, *where], storage, **HASHED)
    assert printed.startswith("1, payments/mexico-payments.md")
    assert "drafts/" not in printed
    assert loaded <= {"markdown_it"}, loaded
    # A line no sync has seen is asked of pathspec, in the same lean answer.
    with (workspace / ".gitignore").open("a", encoding="utf-8") as gitignore:
        gitignore.write("*.tmp\n")
    printed, loaded = one_shot([*SEARCH, *where], storage, **HASHED)
    assert printed.startswith("1, payments/mexico-payments.md")
    assert "pathspec" in loaded and "pydantic" not in loaded, loaded
    # One that ignores an indexed file: the index is not current, the full path syncs,
    # and the file is gone from the answer as pathspec's reading of the line says.
    with (workspace / ".gitignore").open("a", encoding="utf-8") as gitignore:
        gitignore.write("payments/mexico-*\n")
    printed, loaded = one_shot([*SEARCH, *where], storage, **HASHED)
    assert "pydantic" in loaded, loaded
    assert "mexico-payments.md" not in printed and "payments/" in printed, printed


def _poisoned(row: dict[str, Any], *, malformed: bool = False, **changes: object) -> str:
    """`row` with `changes`, and `**/*.md` (the default `kb.include`) translated to a
    regular expression no path matches: a scan that used it would find no file;
    `malformed`: and one translation that is not one."""
    translations = {**row["translations"], "**/*.md": ["^never-any-path$", True]}
    if malformed:
        translations["drafts/"] = ["^(?:.+/)?drafts(?P<ps_d>/)"]
    return json.dumps({**row, "translations": translations, **changes})


def test_a_memo_of_another_pathspec_or_format_or_corrupt_is_ignored_and_kept(
    workspace: Path, storage: Path
) -> None:
    (workspace / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    assert run("index", str(workspace), storage=storage, **HASHED).returncode == 0
    database = store_dir_for(storage, workspace.resolve()) / DATABASE
    with closing(sqlite3.connect(database)) as db:
        (saved,) = db.execute("SELECT value FROM meta WHERE key = 'glob_translations'").fetchone()
    row = json.loads(saved)
    assert row["translations"]["drafts/"][1] is True  # pathspec's answer, kept by the sync
    key = row["pathspec"]
    rows = [
        _poisoned(row, pathspec="pathspec 0.0.1" + key[key.index(",") :]),
        _poisoned(row, pathspec=key.replace("cpython", "pypy")),
        _poisoned(row, format=row["format"] + 1),
        _poisoned(row, malformed=True),
        "{not json",
        "[" * 100_000,
        json.dumps({"format": row["format"], "pathspec": key}),
        json.dumps({"format": row["format"], "pathspec": key, "translations": []}),
    ]
    for bad in rows:
        with closing(sqlite3.connect(database)) as db, db:
            db.execute("UPDATE meta SET value = ? WHERE key = 'glob_translations'", (bad,))
        printed, loaded = one_shot([*SEARCH, "-w", str(workspace)], storage, **HASHED)
        # The lean path answered (no pydantic: the full path was not needed), every file
        # found (a poisoned `**/*.md` was not used), its globs asked of pathspec.
        assert printed.startswith("1, payments/mexico-payments.md"), (bad[:80], printed)
        assert "pathspec" in loaded and "pydantic" not in loaded, (bad[:80], loaded)
        with closing(sqlite3.connect(database)) as db:
            kept = db.execute("SELECT value FROM meta WHERE key = 'glob_translations'").fetchone()
        assert kept == (bad,)  # a one-shot reader never writes the store


def test_kb_as_a_process_of_its_own_freezes_its_objects_before_exiting(
    workspace: Path, storage: Path
) -> None:
    # The interpreter's last garbage collection walks every object a process made; `kb`
    # run as a command (main() reading sys.argv) freezes them out of it. Called with its
    # arguments (a test, a caller in the same process), main() leaves the caller's
    # collector alone.
    assert run("index", str(workspace), storage=storage).returncode == 0
    argv = [*SEARCH, "-w", str(workspace)]
    probe = (
        "import gc, sys\n"
        "from kb_lsp.cli import main\n"
        "before = gc.get_freeze_count()\n"
        f"main({argv!r})\n"
        "called = gc.get_freeze_count()\n"
        f"sys.argv = ['kb', *{argv!r}]\n"
        "main()\n"
        "print('frozen:', before, called, gc.get_freeze_count())\n"
    )
    env = {**os.environ, "KB_STORAGE": str(storage), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    before, called, after = map(int, done.stdout.rpartition("frozen: ")[2].split())
    assert before == called == 0
    assert after > 0
    assert done.stdout.count("1, payments/mexico") == 2  # both answered
