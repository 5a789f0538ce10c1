"""A workspace's index status read from its store alone, for `kb status`.

Opening the runtime to print a status costs seconds (Chroma, onnxruntime, the agent's
HTTP clients, the model loaded just to name it) where the answer is already on disk:
what is indexed and skipped, which embedder made the vectors (the store records it),
whether another process is writing the index now (its writer lock, and the state it
publishes). This reads those and nothing else: no Chroma, no model, no lock kept.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_lsp.engine.llm.config import UNNAMED_MODEL, LlmConfig
from kb_lsp.engine.private import refusal
from kb_lsp.engine.storage import DATABASE, WRITER_LOCK, default_storage, store_dir_for
from kb_lsp.engine.store.writer_lock import held_elsewhere

if TYPE_CHECKING:
    from kb_lsp.config import Settings
    from kb_lsp.protocol import IndexStatus


def read_status(folder: Path, settings: Settings) -> IndexStatus | None:
    """The status of `folder`'s index, or None when it has none yet (the caller then
    opens the runtime, which makes one)."""
    from kb_lsp.protocol import IndexStatus
    from kb_lsp.runtime.status import Activity, combined
    from kb_lsp.runtime.takeover import read_state

    values = stored_values(folder, settings)
    if values is None:
        return None
    base = IndexStatus.model_validate(values)
    # As the runtime lays its activity over the knowledge base's status (`status.py`).
    store = store_dir_for(default_storage(settings), folder)
    state = read_state(store) if base.read_only else None
    elsewhere = state if state is not None and state.state == "indexing" else None
    return combined(base, Activity(elsewhere=elsewhere))


def stored_values(folder: Path, settings: Settings) -> dict[str, Any] | None:
    """The status's fields as the store has them, by their wire names (the `IndexStatus`
    read_status makes of them, or `quick.wire`'s dict), before the runtime's activity is
    laid over them; None when there is no index yet."""
    storage = default_storage(settings)
    store = store_dir_for(storage, folder)
    database = store / DATABASE
    if not database.is_file() or refusal(store) is not None:
        return None  # none yet, or not this user's (opening the store says so)
    try:
        db = sqlite3.connect(database, timeout=30.0)
    except sqlite3.Error:
        return None
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        if row is None:
            return None  # made but never written: let the runtime say what it is
        embedder = str(row[0])
        files = int(db.execute("SELECT count(*) FROM files").fetchone()[0])
        chunks = int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        complete, written = db.execute(
            "SELECT coalesce(sum(CASE WHEN state = 'ok' THEN chunk_count END), 0), "
            "coalesce(sum(chunk_count), 0) FROM files"
        ).fetchone()
        skipped = [
            {"path": str(p), "reason": str(r)}
            for p, r in db.execute("SELECT path, reason FROM skipped ORDER BY path")
        ]
        problems = _problems(db)
        metadata = _metadata(db, files)
    except sqlite3.Error:
        return None  # an older or damaged store: the runtime knows what to do with it
    finally:
        db.close()

    read_only = held_elsewhere(store / WRITER_LOCK)
    return {
        "state": "ready",
        "files": files,
        "chunks": chunks,
        "embedder": embedder,
        "store": str(storage),
        "llm": configured_llm(settings),
        "readOnly": read_only,
        "roots": [str(folder)],
        "skipped": skipped,
        "problems": problems,
        "message": "read-only: another kb-lsp process is indexing this workspace"
        if read_only
        else None,
        "vectorsReady": min(1.0, int(complete) / int(written)) if written else 1.0,
        "metadata": _with_schema(folder, settings, metadata, files),
    }


def _with_schema(
    folder: Path, settings: Settings, metadata: dict[str, Any] | None, files: int
) -> dict[str, Any] | None:
    """The extraction's progress, with why it cannot run when the schema is broken (as
    the server's status says it). The schema's reader loads only where there is one."""
    setting = settings.metadata.schema_file
    if not setting and not os.path.lexists(folder / ".kb" / "schema.json"):
        return metadata
    from kb_lsp.engine.metadata.user_schema import SchemaError, load_schema

    try:
        load_schema(folder, settings.metadata.schema_file)
    except SchemaError as err:
        shown = metadata or {"model": None, "extracted": 0, "total": files}
        return {**shown, "message": f"metadata extraction skipped: {err}"}
    return metadata


def _metadata(db: sqlite3.Connection, files: int) -> dict[str, Any] | None:
    """How many notes have a current extraction (`store/extractions.py`), by the model
    that made the latest; None when no note has one."""
    try:
        row = db.execute(
            "SELECT count(*), max(e.model) FROM files f JOIN file_extraction e "
            "ON e.path = f.path AND e.content_hash = f.sha256"
        ).fetchone()
    except sqlite3.OperationalError:  # a store from before extraction
        return None
    if not row or not row[0]:
        return None
    return {"model": str(row[1]), "extracted": int(row[0]), "total": files}


def _problems(db: sqlite3.Connection) -> list[dict[str, Any]]:
    try:
        rows = db.execute("SELECT path, line, message FROM file_problems ORDER BY path, line")
        return [{"path": str(p), "line": int(n), "message": str(m)} for p, n, m in rows]
    except sqlite3.OperationalError:  # a store from before file metadata
        return []


def configured_llm(settings: Settings) -> dict[str, Any]:
    """The model the settings describe, as the runtime shows it before asking it
    (`ChatModel.configured_status`), by wire names; without loading its HTTP client."""
    config = LlmConfig.from_settings(settings)
    return {
        "host": config.base_url,
        "model": config.model or UNNAMED_MODEL,
        "provider": config.provider,
    }
