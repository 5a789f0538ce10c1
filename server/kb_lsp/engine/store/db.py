"""One store's SQLite database: the writer lock, the schema, a connection per reader
thread, one write transaction at a time, and `meta` (schema, embedder, live collection).

Autocommit connections in WAL mode: readers read while the writer writes, and every
transaction is explicit (`writer`). The process that holds `writer.lock` writes; any other
opens the database read-only (`PRAGMA query_only`) and says so.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from kb_lsp.engine.metadata import tables as metadata_tables
from kb_lsp.engine.private import private_folder
from kb_lsp.engine.records import ReadOnlyStore
from kb_lsp.engine.storage import DATABASE, WRITER_LOCK
from kb_lsp.engine.store.text_format import CHUNKS, ensure
from kb_lsp.engine.store.writer_lock import take

log = logging.getLogger("kb_lsp.engine.store")
# Every SQL statement a store runs, at DEBUG, with the store's folder as `record.store`
# (the reads FTS5 makes of its own tables come as statements starting with `--`). Quiet
# unless a bench or a test lowers its level: a verbose log would drown in them.
statements = logging.getLogger("kb_lsp.engine.store.sql")
statements.setLevel(logging.INFO)

T = TypeVar("T")

SCHEMA_VERSION = 1

# `files.title` and `files.words`, like a chunk's heading and text, are what FTS5 indexed
# (`text_format.py`): they change only with a file's FTS rows, in `Chunks.write`.
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    title TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    state TEXT NOT NULL,
    indexed_at REAL NOT NULL,
    words TEXT NOT NULL DEFAULT ''
);
{CHUNKS}
CREATE TABLE IF NOT EXISTS vectors (text_hash TEXT PRIMARY KEY, embedding BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS extractions (
    content_hash TEXT NOT NULL,
    schema_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    result TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (content_hash, schema_hash, model)
);
CREATE TABLE IF NOT EXISTS summaries (
    content_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    summary TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (content_hash, model)
);
"""


class Database:
    """The SQLite side of one root's store. Readers may call from any thread."""

    def __init__(self, directory: Path, *, one_shot: bool = False) -> None:
        """`one_shot`: a process that reads and ends (`writer_lock.take`'s `flock`)."""
        self.directory = directory
        # Whether this opening makes the store (`Store` tightens an older one's modes).
        self.existed = (directory / DATABASE).exists()
        private_folder(directory)
        self._lock = take(directory / WRITER_LOCK, flock=one_shot)
        self.read_only = self._lock is None
        if self._lock is None:
            log.warning(
                "The index at %s is being written by another kb-lsp process (another "
                "window on this workspace?); this one opens it read-only.",
                directory,
            )
        self._path = directory / DATABASE
        self.local = threading.local()  # per reader thread: its connection, its caches
        self._write_lock = threading.Lock()
        self.closed = False
        self.needs_compaction = False
        # Every reader thread opens its own connection; close() closes them all.
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_db: sqlite3.Connection | None = None
        if not self.read_only:
            self._write_db = self._connect()
            self._write_db.executescript(SCHEMA + metadata_tables.DDL)
            # An older store's text moved over leaves space to give back; the vector cache
            # (its next part to open) may narrow old vectors too, and compacts once for both.
            self.needs_compaction = ensure(self._write_db)

    def _connect(self) -> sqlite3.Connection:
        # Autocommit mode: transactions are explicit (`writer`), never implied.
        db = sqlite3.connect(
            self._path, timeout=30.0, check_same_thread=False, isolation_level=None
        )
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=OFF")
        db.set_trace_callback(self._statement)
        return db

    def _all(self) -> list[sqlite3.Connection]:
        with self._connections_lock:
            return [*self._connections, *([self._write_db] if self._write_db else [])]

    def _statement(self, sql: str) -> None:
        if statements.isEnabledFor(logging.DEBUG):
            statements.debug("%s", sql, extra={"store": self.directory})

    def reader(self) -> sqlite3.Connection:
        """A connection for this thread: WAL lets it read while the writer writes."""
        if self.closed:
            raise RuntimeError("the store is closed")
        db: sqlite3.Connection | None = getattr(self.local, "db", None)
        if db is None:
            db = self._connect()
            if self.read_only:
                db.execute("PRAGMA query_only=ON")
            self.local.db = db
            with self._connections_lock:
                self._connections.append(db)
        return db

    @contextmanager
    def writer(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any error)."""
        if self.read_only:
            raise ReadOnlyStore(
                f"the index at {self.directory} is opened read-only: another kb-lsp "
                "process is indexing this workspace"
            )
        with self._write_lock:
            db = self._write_db
            if db is None:
                db = self._write_db = self._connect()
            try:
                db.execute("BEGIN IMMEDIATE")
                yield db
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def vacuum(self) -> None:
        """Give freed pages back to the file system (after a migration shrank a table).
        Not done is no harm (SQLite reuses the pages): another process reading the
        store can hold it off, and the store must open anyway."""
        with self._write_lock:
            db = self._write_db
            if db is None:
                return
            try:
                db.execute("VACUUM")
                # In WAL mode the compacted pages sit in the log until a checkpoint:
                # write them back now, or the log holds a second copy of the store.
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError as err:
                log.warning("Could not compact the index at %s (%s)", self.directory, err)

    def select_in(
        self, sql: str, values: Iterable[str] | Iterable[int]
    ) -> Iterator[tuple[Any, ...]]:
        """Rows of `sql` (one `IN ({marks})` placeholder) for `values`, in batches below
        SQLite's limit on bound parameters."""
        unique = list(dict.fromkeys(values))
        db = self.reader()
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            yield from db.execute(sql.format(marks=",".join("?" * len(part))), part)

    def version(self) -> int:
        """SQLite's data_version of this thread's connection: it changes when any
        connection (this process's writer included) commits; -1 when it cannot be read."""
        try:
            return int(self.reader().execute("PRAGMA data_version").fetchone()[0])
        except (sqlite3.Error, RuntimeError):
            return -1

    def current(self, key: str, compute: Callable[[], T]) -> T:
        """`compute()`, kept for this reader thread until something is committed: figures
        every search reads (the status, term counts) cost a scan each time otherwise."""
        version = self.version()
        held: dict[str, tuple[int, Any]] = self.local.__dict__.setdefault("current", {})
        got = held.get(key)
        if got is not None and got[0] == version and version != -1:
            return got[1]  # type: ignore[no-any-return]
        value = compute()
        held[key] = (version, value)
        return value

    def read(self, read: Callable[[sqlite3.Connection], T], default: T) -> T:
        """`read(connection)`, or `default` when there is nothing to read: before the
        writer made the tables (a read-only opener), or once the store is closed (its
        workspace folder was removed while a search was running)."""
        if self.closed:
            return default
        try:
            return read(self.reader())
        except (sqlite3.OperationalError, sqlite3.ProgrammingError) as err:
            log.debug("store read failed: %s", err)
            return default
        except RuntimeError:
            if self.closed:
                return default
            raise

    def get_meta(self, key: str) -> str | None:
        try:
            row = self.reader().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # read-only opener before the writer made tables
            return None
        return None if row is None else str(row[0])

    @staticmethod
    def set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for db in self._all():
            with suppress(sqlite3.Error):
                db.close()
        if self._lock is not None:
            self._lock.release()
