"""The manifest of one store: which files are indexed (size, mtime, hash, title, state),
which were skipped and why, and the summaries cached by content hash."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kb_lsp.engine.store.db import Database

_FILE_COLUMNS = "path, size, mtime_ns, sha256, title, chunk_count, state"
# Sorts after any character a path can follow a folder's prefix with (UTF-8 byte order).
_LAST = "\U0010ffff"


@dataclass(frozen=True)
class FileRecord:
    path: str
    size: int
    mtime_ns: int
    sha256: str
    title: str
    chunk_count: int
    state: str  # "pending" until every vector of the file is in the vector index, then "ok"


class Catalog:
    def __init__(self, db: Database) -> None:
        self._db = db

    def manifest(self) -> dict[str, FileRecord]:
        try:
            rows = self._db.reader().execute(f"SELECT {_FILE_COLUMNS} FROM files")
            return {row[0]: FileRecord(*row) for row in rows}
        except sqlite3.OperationalError:
            return {}

    def file(self, path: str) -> FileRecord | None:
        try:
            row = (
                self._db.reader()
                .execute(f"SELECT {_FILE_COLUMNS} FROM files WHERE path = ?", (path,))
                .fetchone()
            )
        except sqlite3.OperationalError:
            return None
        return None if row is None else FileRecord(*row)

    def records(self, paths: Iterable[str]) -> dict[str, FileRecord]:
        """path -> its manifest record, for those of `paths` indexed (one query per 500)."""
        try:
            rows = self._db.select_in(
                f"SELECT {_FILE_COLUMNS} FROM files WHERE path IN ({{marks}})", paths
            )
            return {row[0]: FileRecord(*row) for row in rows}
        except sqlite3.OperationalError:
            return {}

    def records_under(self, prefix: str) -> dict[str, FileRecord]:
        """path -> record of the files under the folder `prefix` (ending in "/"): a range
        of the primary key, not a scan of the manifest."""
        try:
            rows = self._db.reader().execute(
                f"SELECT {_FILE_COLUMNS} FROM files WHERE path >= ? AND path < ?",
                (prefix, prefix + _LAST),
            )
            return {row[0]: FileRecord(*row) for row in rows}
        except sqlite3.OperationalError:
            return {}

    def pending_files(self) -> list[FileRecord]:
        """Files whose chunks are written but whose vectors are not all in the index yet."""
        try:
            rows = self._db.reader().execute(
                f"SELECT {_FILE_COLUMNS} FROM files WHERE state != 'ok'"
            )
            return [FileRecord(*row) for row in rows]
        except sqlite3.OperationalError:
            return []

    def counts(self) -> tuple[int, int]:
        """(files, chunks) currently indexed."""
        return self.file_count(), self.chunk_count()

    def file_count(self) -> int:
        return self._count("SELECT count(*) FROM files")

    def chunk_count(self) -> int:
        return self._count("SELECT count(*) FROM chunks")

    def _count(self, sql: str) -> int:
        try:
            return int(self._db.reader().execute(sql).fetchone()[0])
        except sqlite3.OperationalError:
            return 0

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        """path -> title of the given files (one query, not one per file)."""
        try:
            rows = self._db.select_in(
                "SELECT path, title FROM files WHERE path IN ({marks})", paths
            )
            return {str(path): str(title) for path, title in rows}
        except sqlite3.OperationalError:
            return {}

    def vector_coverage(self) -> tuple[int, int]:
        """(chunks of complete files, all chunks), from the manifest."""
        try:
            row = (
                self._db.reader()
                .execute(
                    "SELECT coalesce(sum(CASE WHEN state = 'ok' THEN chunk_count END), 0), "
                    "coalesce(sum(chunk_count), 0) FROM files"
                )
                .fetchone()
            )
        except sqlite3.OperationalError:
            return (0, 0)
        return int(row[0]), int(row[1])

    def touch(self, path: str, size: int, mtime_ns: int) -> None:
        """Same content, new size/mtime (a `touch`, a save without changes)."""
        with self._db.writer() as db:
            db.execute(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", (size, mtime_ns, path)
            )

    def mark_ready(self, paths: Sequence[str]) -> None:
        """Every vector of these files is in the index: they are complete."""
        self._set_state(paths, "ok")

    def mark_pending(self, paths: Iterable[str]) -> None:
        """These files lost vectors (or never had them cached): phase 2 embeds them."""
        self._set_state(list(paths), "pending")

    def _set_state(self, paths: Sequence[str], state: str) -> None:
        if paths:
            with self._db.writer() as db:
                db.executemany(
                    "UPDATE files SET state = ? WHERE path = ?", [(state, p) for p in paths]
                )

    # --- skipped files -------------------------------------------------------------------

    def skipped(self) -> list[tuple[str, str]]:
        try:
            rows = self._db.reader().execute("SELECT path, reason FROM skipped ORDER BY path")
            return [(str(p), str(r)) for p, r in rows]
        except sqlite3.OperationalError:
            return []

    def set_skipped(self, entries: Iterable[tuple[str, str]], *, replace_all: bool) -> None:
        with self._db.writer() as db:
            if replace_all:
                db.execute("DELETE FROM skipped")
            db.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)", entries)

    def clear_skipped(self, paths: Iterable[str]) -> None:
        with self._db.writer() as db:
            db.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in paths])

    # --- summaries -----------------------------------------------------------------------

    def cached_summary(self, content_hash: str, model: str) -> str | None:
        try:
            row = (
                self._db.reader()
                .execute(
                    "SELECT summary FROM summaries WHERE content_hash = ? AND model = ?",
                    (content_hash, model),
                )
                .fetchone()
            )
        except sqlite3.OperationalError:
            return None
        return None if row is None else str(row[0])

    def store_summary(self, content_hash: str, model: str, summary: str) -> None:
        with self._db.writer() as db:
            db.execute(
                "INSERT OR REPLACE INTO summaries(content_hash, model, summary, created) "
                "VALUES (?, ?, ?, ?)",
                (content_hash, model, summary, time.time()),
            )
