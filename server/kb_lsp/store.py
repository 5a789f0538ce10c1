"""The knowledge store of one workspace root: Chroma for vectors, SQLite for the rest.

Layout, under `<storage>/<sha of root>/`:

* `kb.sqlite3` (WAL) — `files` (the manifest: path, size, mtime, sha256, title, state),
  `chunks` (text, heading path, lines, text hash), `chunks_fts` (FTS5 over path, title,
  heading and text, for BM25 and `snippet()`), `vectors` (every embedding by text hash, so
  an unchanged paragraph, a renamed file or a moved folder costs no embedding, and Chroma
  can be rebuilt without the model), `skipped` (files left out, with the reason),
  `summaries` (keyed by content hash + model) and `meta` (schema, embedder identity).
* `chroma/` — a persistent Chroma collection in cosine space holding the chunk vectors
  under stable ids (`<sha1(path)[:16]>:<chunk index>`), metadata `path` and `text_hash`.
  With `kb.chroma.url` the collection lives on a Chroma server instead. Which collection
  is the live one is recorded in `meta` (`collection`): a full rebuild (or a new
  embedder) builds a new collection beside the live one and switches `meta` to it when
  it is complete, so readers — threads of this process, or another process that opened
  the store read-only — always find a whole collection; they look the name up again
  when it changed, or when the collection they hold was dropped under them.
  A one-shot process (the command line) opens the store with `exact_vectors`: it searches
  the vectors SQLite caches (`exact_vectors.py`) and opens Chroma only to write to it.
* `writer.lock` — an OS file lock: the process holding it is the only writer; a second
  process opens the store read-only and says so.

Crash safety and the two phases of a sync (`indexer.py`): phase 1 writes a file's chunks
and FTS rows with `state = 'pending'` in one SQLite transaction (keyword search sees the
file from then on); phase 2 embeds pending chunks in batches across files, caches each
new vector by text hash in SQLite first, then upserts the file's chunk ids into Chroma,
and only when all of a file's ids are in marks it `state = 'ok'`. A crash anywhere leaves
files pending, and the next sync finishes them (cached vectors cost no embedding);
`repair_vectors` removes Chroma ids SQLite does not know and restores (or sends back to
pending) complete files that lost one. Until phase 2 reaches a changed file, Chroma may
still hold the vector of a chunk id's previous text; each vector carries the text hash it
was made from, and search ignores one that no longer matches the chunk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from filelock import FileLock, Timeout

from kb_lsp.exact_vectors import ExactVectors
from kb_lsp.metadata import cards as note_cards
from kb_lsp.metadata import tables as metadata_tables
from kb_lsp.metadata.extract import FileMetadata
from kb_lsp.metadata.filters import Node as FilterNode
from kb_lsp.metadata.query import matching_paths
from kb_lsp.private import private_folder, tighten
from kb_lsp.records import ReadOnlyStore, StoredChunk, VectorHit
from kb_lsp.storage import DATABASE, WRITER_LOCK
from kb_lsp.storage import store_dir_for as store_dir_for  # its home before storage.py
from kb_lsp.terms import STEMS_VERSION, TOKENIZE, stems_text

log = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = 1
# `meta` key naming the live Chroma collection (absent: the first one, `kb_<dir>`).
LIVE_COLLECTION = "collection"
_COSINE = {"hnsw:space": "cosine"}

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    title TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    state TEXT NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    idx INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    heading TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL,
    stems TEXT
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path, idx);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(text_hash);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    chunk_id UNINDEXED, path, title, heading, text,
    tokenize = '{TOKENIZE}'
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TABLE IF NOT EXISTS vectors (text_hash TEXT PRIMARY KEY, embedding BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS summaries (
    content_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    summary TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (content_hash, model)
);
"""

# A restriction to files holding at least this share of the chunks is applied after an
# unfiltered vector query deep enough for it (see `Store.vector_search`).
OVERFETCH_SHARE = 0.1

# BM25 column weights for (path, title, heading, text): a hit in a file's name or title
# says more about the file than one word in a long passage.
BM25_WEIGHTS = (0.0, 4.0, 3.0, 2.0, 1.0)


def chunk_id(path: str, index: int) -> str:
    return f"{hashlib.sha1(path.encode('utf-8')).hexdigest()[:16]}:{index}"


@dataclass(frozen=True)
class FileRecord:
    path: str
    size: int
    mtime_ns: int
    sha256: str
    title: str
    chunk_count: int
    state: str


@dataclass(frozen=True)
class NewChunk:
    """A chunk on its way into the store (its vector follows in phase 2)."""

    index: int
    text: str
    text_hash: str
    heading: str
    start_line: int
    end_line: int
    stems: str | None = None  # `terms.stems_text`; None: the store computes it


@dataclass(frozen=True)
class StoreFigures:
    files: int
    chunks: int
    complete_chunks: int  # of files whose vectors are all in (`vector_coverage`)
    written_chunks: int
    skipped: tuple[tuple[str, str], ...]
    problems: tuple[metadata_tables.StoredProblem, ...]


@dataclass(frozen=True)
class KeywordHit:
    chunk_id: str
    path: str
    bm25: float  # positive, larger is better
    rowid: int  # its FTS row: `keyword_snippet` asks for that row alone


class Store:
    """One root's store. Readers may call from any thread; one writer (see module doc)."""

    def __init__(
        self,
        directory: Path,
        *,
        root: Path,
        embedder_identity: str,
        dimension: int,
        chroma_url: str | None = None,
        exact_vectors: bool = False,
    ) -> None:
        """`exact_vectors`: vector search scans the vectors SQLite caches (every chunk's,
        exact) instead of asking Chroma, and Chroma is opened only when this process
        writes to it. For one-shot processes (the command line): importing and opening
        Chroma costs them more than the search itself (`vector_search`)."""
        self.directory = directory
        self.root = root
        self.embedder_identity = embedder_identity
        self.dimension = dimension
        existed = (directory / DATABASE).exists()
        private_folder(directory)

        self._lock = FileLock(str(directory / WRITER_LOCK))
        try:
            self._lock.acquire(timeout=0)
            self.read_only = False
        except Timeout:
            self.read_only = True
            log.warning(
                "The index at %s is being written by another kb-lsp process (another "
                "window on this workspace?); this one opens it read-only.",
                directory,
            )

        self._db_path = directory / DATABASE
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._closed = False
        # Every reader thread opens its own connection; close() closes them all.
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_db: sqlite3.Connection | None = None
        if not self.read_only:
            self._write_db = self._connect()
            self._write_db.executescript(_SCHEMA + metadata_tables.DDL)
        self._chroma_url = chroma_url
        self.exact_vectors = exact_vectors
        self._chroma: tuple[Any, Any | None, int] | None = None  # client, collection, batch
        self._exact = ExactVectors(dimension) if exact_vectors else None
        if not exact_vectors:
            self._open_chroma()
        self._stems_missing = False  # chunks written before their stems were stored
        if not self.read_only:
            tighten(directory, say=existed)  # after SQLite and Chroma created their files
            self._check_embedder()
            self._check_metadata_version()
            self._check_stems_version()

    # --- connections ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        # Autocommit mode: transactions are explicit (`_writer`), never implied.
        db = sqlite3.connect(
            self._db_path, timeout=30.0, check_same_thread=False, isolation_level=None
        )
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=OFF")
        return db

    def _reader(self) -> sqlite3.Connection:
        """A connection for this thread: WAL lets it read while the writer writes."""
        if self._closed:
            raise RuntimeError("the store is closed")
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self._connect()
            if self.read_only:
                db.execute("PRAGMA query_only=ON")
            self._local.db = db
            with self._connections_lock:
                self._connections.append(db)
        return db

    @contextmanager
    def _writer(self) -> Iterator[sqlite3.Connection]:
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

    # --- Chroma (opened lazily with `exact_vectors`) ------------------------------------------

    def _open_chroma(self) -> tuple[Any, Any | None, int]:
        if self._chroma is None:
            client, collection = self._open_collection(self._chroma_url)
            self._chroma = (client, collection, int(client.get_max_batch_size()))
            if self.exact_vectors and not self.read_only:
                # Opened late, right before this process first writes to it: what an
                # earlier crash left behind is repaired first, as every sync does when
                # Chroma is open from the start.
                self.repair_vectors()
        return self._chroma

    @property
    def _client(self) -> Any:
        return self._open_chroma()[0]

    @property
    def _collection(self) -> Any:  # None for a reader until the writer made one
        return self._open_chroma()[1]

    @_collection.setter
    def _collection(self, collection: Any | None) -> None:
        client, _, batch = self._open_chroma()
        self._chroma = (client, collection, batch)

    @property
    def _max_batch(self) -> int:
        return self._open_chroma()[2]

    def _open_collection(self, chroma_url: str | None) -> tuple[Any, Any | None]:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if chroma_url:
            from urllib.parse import urlparse

            url = urlparse(chroma_url)
            client: Any = chromadb.HttpClient(
                host=url.hostname or "localhost",
                port=url.port or (443 if url.scheme == "https" else 8000),
                ssl=url.scheme == "https",
                settings=chroma_settings,
            )
        else:
            client = chromadb.PersistentClient(
                path=str(self.directory / "chroma"), settings=chroma_settings
            )
        name = self._live_name()
        if self.read_only:
            try:  # None until the writer made one
                return client, client.get_collection(name, embedding_function=None)
            except Exception:
                return client, None
        return client, client.get_or_create_collection(
            name, metadata=_COSINE, embedding_function=None
        )

    def _first_name(self) -> str:
        return "kb_" + self.directory.name

    def _live_name(self) -> str:
        return self.get_meta(LIVE_COLLECTION) or self._first_name()

    def _get_collection(self, name: str) -> Any | None:
        try:
            return self._client.get_collection(name, embedding_function=None)
        except Exception:  # not there (yet, or any more)
            return None

    def _live(self, *, again: bool = False) -> Any | None:
        """The live collection for a reader: a rebuild (here or in the process that
        writes) may have switched it since this store last looked. `again`: look it up
        even when the name did not change (the one held failed)."""
        current = self._collection
        name = self._live_name()
        if current is not None and current.name == name and not again:
            return current
        fresh = self._get_collection(name)
        if fresh is not None:
            self._collection = fresh
            return fresh
        return current

    def _switch_to_new_collection(self) -> Any:
        """An empty collection under a new name, made the live one; the old one is
        dropped. For a new embedder (its vectors are useless); `rebuild_vectors` fills
        the new one before it switches."""
        return self._switch(self._new_collection())

    def _new_collection(self) -> Any:
        name = f"{self._first_name()}_{uuid.uuid4().hex[:8]}"
        return self._client.get_or_create_collection(
            name, metadata=_COSINE, embedding_function=None
        )

    def _switch(self, collection: Any) -> Any:
        old = self._collection
        with self._writer() as db:
            self._set_meta(db, LIVE_COLLECTION, collection.name)
        self._collection = collection
        if old is not None and old.name != collection.name:
            try:
                self._client.delete_collection(old.name)
            except Exception as err:  # gone already: nothing to drop
                log.debug("dropping the collection %s: %s", old.name, err)
        return collection

    def _check_embedder(self) -> None:
        """A different embedder (or dimension) than the one that made the vectors: rebuild."""
        identity = self.get_meta("embedder")
        if identity == self.embedder_identity:
            return
        if identity is not None:
            log.info(
                "Embedder changed (%s -> %s): the vectors of %s will be rebuilt.",
                identity,
                self.embedder_identity,
                self.root,
            )
            self._switch_to_new_collection()
            with self._writer() as db:
                db.execute("DELETE FROM vectors")
                db.execute("UPDATE files SET state = 'pending'")
        with self._writer() as db:
            self._set_meta(db, "embedder", self.embedder_identity)
            self._set_meta(db, "dimension", str(self.dimension))
            self._set_meta(db, "schema", str(SCHEMA_VERSION))
            self._set_meta(db, "root", str(self.root))

    # --- meta ----------------------------------------------------------------------------

    def _check_metadata_version(self) -> None:
        """Files indexed by an older metadata extraction are read again by the next sync:
        `pending` with an unknown hash (their vectors come from the cache)."""
        if self.get_meta("metadata") == metadata_tables.METADATA_VERSION:
            return
        with self._writer() as db:
            metadata_tables.recreate(db)
            db.execute("UPDATE files SET state = 'pending', sha256 = ''")
            self._set_meta(db, "metadata", metadata_tables.METADATA_VERSION)

    def _check_stems_version(self) -> None:
        """Stems made by another stemmer (or none: a store made before they were kept)
        are dropped; `fill_stems` (the next sync runs it) makes them again, and search
        stems a chunk without them itself meanwhile."""
        if self.get_meta("stems") == STEMS_VERSION:
            return
        with self._writer() as db:
            columns = {str(row[1]) for row in db.execute("PRAGMA table_info(chunks)")}
            if "stems" not in columns:
                db.execute("ALTER TABLE chunks ADD COLUMN stems TEXT")
            else:
                db.execute("UPDATE chunks SET stems = NULL")
            self._set_meta(db, "stems", STEMS_VERSION)
        self._stems_missing = True

    def fill_stems(self, batch: int = 500) -> int:
        """Store the stems of chunks that have none (see `_check_stems_version`);
        returns how many were filled."""
        filled = 0
        while self._stems_missing:
            rows = (
                self._reader()
                .execute(
                    "SELECT id, heading, text FROM chunks WHERE stems IS NULL LIMIT ?", (batch,)
                )
                .fetchall()
            )
            stems = [(stems_text(heading, text), cid) for cid, heading, text in rows]
            with self._writer() as db:
                db.executemany("UPDATE chunks SET stems = ? WHERE id = ?", stems)
            filled += len(rows)
            self._stems_missing = len(rows) == batch
        return filled

    def get_meta(self, key: str) -> str | None:
        try:
            row = self._reader().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # read-only opener before the writer made tables
            return None
        return None if row is None else str(row[0])

    @staticmethod
    def _set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # --- manifest ------------------------------------------------------------------------

    def manifest(self) -> dict[str, FileRecord]:
        try:
            rows = self._reader().execute(
                "SELECT path, size, mtime_ns, sha256, title, chunk_count, state FROM files"
            )
            return {row[0]: FileRecord(*row) for row in rows}
        except sqlite3.OperationalError:
            return {}

    def file(self, path: str) -> FileRecord | None:
        try:
            row = (
                self._reader()
                .execute(
                    "SELECT path, size, mtime_ns, sha256, title, chunk_count, state FROM files "
                    "WHERE path = ?",
                    (path,),
                )
                .fetchone()
            )
        except sqlite3.OperationalError:
            return None
        return None if row is None else FileRecord(*row)

    def counts(self) -> tuple[int, int]:
        """(files, chunks) currently indexed."""
        try:
            db = self._reader()
            files = db.execute("SELECT count(*) FROM files").fetchone()[0]
            chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        except sqlite3.OperationalError:
            return (0, 0)
        return int(files), int(chunks)

    def figures(self) -> StoreFigures:
        """What the status shows of this store. Every search answer carries the status,
        and on 7,425 files reading it costs 2 ms: read again only when something was
        committed since (SQLite's data_version, per connection: so per reader thread)."""
        try:
            db = self._reader()
            version = int(db.execute("PRAGMA data_version").fetchone()[0])
        except (sqlite3.Error, RuntimeError):
            version = -1
        held: tuple[int, StoreFigures] | None = getattr(self._local, "figures", None)
        if held is not None and held[0] == version and version != -1:
            return held[1]
        files, chunks = self.counts()
        complete, written = self.vector_coverage()
        figures = StoreFigures(
            files, chunks, complete, written, tuple(self.skipped()), tuple(self.problems())
        )
        self._local.figures = (version, figures)
        return figures

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        """path -> title of the given files (one query, not one per file)."""
        try:
            rows = self._select_in("SELECT path, title FROM files WHERE path IN ({marks})", paths)
            return {str(path): str(title) for path, title in rows}
        except sqlite3.OperationalError:
            return {}

    def chunk_count(self) -> int:
        """Chunks currently indexed (the second half of `counts`)."""
        try:
            return int(self._reader().execute("SELECT count(*) FROM chunks").fetchone()[0])
        except sqlite3.OperationalError:
            return 0

    def touch(self, path: str, size: int, mtime_ns: int) -> None:
        """Same content, new size/mtime (a `touch`, a save without changes)."""
        with self._writer() as db:
            db.execute(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", (size, mtime_ns, path)
            )

    # --- skipped files -------------------------------------------------------------------

    def skipped(self) -> list[tuple[str, str]]:
        try:
            rows = self._reader().execute("SELECT path, reason FROM skipped ORDER BY path")
            return [(str(p), str(r)) for p, r in rows]
        except sqlite3.OperationalError:
            return []

    def set_skipped(self, entries: Iterable[tuple[str, str]], *, replace_all: bool) -> None:
        with self._writer() as db:
            if replace_all:
                db.execute("DELETE FROM skipped")
            db.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)", entries)

    def clear_skipped(self, paths: Iterable[str]) -> None:
        with self._writer() as db:
            db.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in paths])

    def _select_in(self, sql: str, values: Iterable[str]) -> Iterator[tuple[Any, ...]]:
        """Rows of `sql` (one `IN ({marks})` placeholder) for `values`, in batches below
        SQLite's limit on bound parameters."""
        unique = list(dict.fromkeys(values))
        db = self._reader()
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            yield from db.execute(sql.format(marks=",".join("?" * len(part))), part)

    # --- vectors by text hash ------------------------------------------------------------

    def cached_vectors(self, text_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        rows = self._select_in(
            "SELECT text_hash, embedding FROM vectors WHERE text_hash IN ({marks})", text_hashes
        )
        for text_hash, blob in rows:
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape[0] == self.dimension:
                found[text_hash] = vector
        return found

    # --- writing files -------------------------------------------------------------------

    def write_texts(
        self,
        files: Sequence[tuple[FileRecord, Iterable[NewChunk]]],
        metadata: dict[str, FileMetadata] | None = None,
        cards: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        """Phase 1 of a sync: replace the chunks and FTS rows of `files` in one transaction,
        each file left `pending` (its vectors follow in phase 2, `upsert_vectors`), with
        their metadata when given (and each note card's text hash and text: its vector
        follows in phase 2, `missing_card_vectors`).

        Chunk ids that the new version no longer has leave Chroma after the commit; ids it
        keeps may hold a vector of their old text until phase 2 overwrites them, which is
        why a vector hit carries its `text_hash` and search checks it (module doc).
        """
        if not files:
            return
        now = time.time()
        stale_ids: list[str] = []
        with self._writer() as db:
            for record, chunks in files:
                old_ids = {
                    row[0]
                    for row in db.execute("SELECT id FROM chunks WHERE path = ?", (record.path,))
                }
                if old_ids:
                    # The FTS delete scans the whole FTS table (chunk_id is UNINDEXED): a
                    # new file, every file of a cold index, has nothing to delete.
                    self._delete_rows(db, record.path)
                count = 0
                words = _path_words(record.path)
                for chunk in chunks:
                    cid = chunk_id(record.path, chunk.index)
                    old_ids.discard(cid)
                    count += 1
                    db.execute(
                        "INSERT INTO chunks(id, path, idx, text_hash, heading, start_line, "
                        "end_line, text, stems) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            cid,
                            record.path,
                            chunk.index,
                            chunk.text_hash,
                            chunk.heading,
                            chunk.start_line,
                            chunk.end_line,
                            chunk.text,
                            chunk.stems
                            if chunk.stems is not None
                            else stems_text(chunk.heading, chunk.text),
                        ),
                    )
                    db.execute(
                        "INSERT INTO chunks_fts(chunk_id, path, title, heading, text) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (cid, words, record.title, chunk.heading, chunk.text),
                    )
                db.execute(
                    "INSERT OR REPLACE INTO files(path, size, mtime_ns, sha256, title, "
                    "chunk_count, state, indexed_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
                    (
                        record.path,
                        record.size,
                        record.mtime_ns,
                        record.sha256,
                        record.title,
                        count,
                        now,
                    ),
                )
                stale_ids.extend(old_ids)
                if metadata is not None and record.path in metadata:
                    card = (cards or {}).get(record.path)
                    metadata_tables.write(db, record.path, metadata[record.path], card)
        self._chroma_delete(stale_ids)

    def pending_files(self) -> list[FileRecord]:
        """Files whose chunks are written but whose vectors are not all in Chroma yet."""
        try:
            rows = self._reader().execute(
                "SELECT path, size, mtime_ns, sha256, title, chunk_count, state FROM files "
                "WHERE state != 'ok'"
            )
            return [FileRecord(*row) for row in rows]
        except sqlite3.OperationalError:
            return []

    def chunk_page(self, path: str, start: int, limit: int) -> list[tuple[str, str, str, str]]:
        """(id, text_hash, heading, text) of a file's chunks with index >= `start`, in
        order, at most `limit`: phase 2 reads a big file a page at a time."""
        rows = self._reader().execute(
            "SELECT id, text_hash, heading, text FROM chunks WHERE path = ? AND idx >= ? "
            "ORDER BY idx LIMIT ?",
            (path, start, limit),
        )
        return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]

    def store_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        """Cache new embeddings by text hash (before they go to Chroma: a crash in between
        costs no second embedding)."""
        if not vectors:
            return
        with self._writer() as db:
            db.executemany(
                "INSERT OR IGNORE INTO vectors(text_hash, embedding) VALUES (?, ?)",
                (
                    (digest, np.asarray(vector, dtype=np.float32).tobytes())
                    for digest, vector in vectors.items()
                ),
            )

    def upsert_vectors(self, entries: Sequence[tuple[str, str, str, np.ndarray]]) -> None:
        """Phase 2: (chunk id, path, text hash, vector) into Chroma."""
        self._chroma_upsert(
            [cid for cid, _, _, _ in entries],
            [np.asarray(vector, dtype=np.float32).tolist() for _, _, _, vector in entries],
            [{"path": path, "text_hash": digest} for _, path, digest, _ in entries],
        )

    def mark_ready(self, paths: Sequence[str]) -> None:
        """Every vector of these files is in Chroma: they are complete."""
        if paths:
            with self._writer() as db:
                db.executemany(
                    "UPDATE files SET state = 'ok' WHERE path = ?", [(p,) for p in paths]
                )

    def vector_coverage(self) -> tuple[int, int]:
        """(chunks of complete files, all chunks), from the manifest."""
        try:
            row = (
                self._reader()
                .execute(
                    "SELECT coalesce(sum(CASE WHEN state = 'ok' THEN chunk_count END), 0), "
                    "coalesce(sum(chunk_count), 0) FROM files"
                )
                .fetchone()
            )
        except sqlite3.OperationalError:
            return (0, 0)
        return int(row[0]), int(row[1])

    def delete_files(self, paths: Sequence[str]) -> int:
        """Remove files and their chunks; returns the number of chunks removed."""
        if not paths:
            return 0
        ids: list[str] = []
        with self._writer() as db:
            for path in paths:
                ids.extend(
                    row[0] for row in db.execute("SELECT id FROM chunks WHERE path = ?", (path,))
                )
                self._delete_rows(db, path)
                metadata_tables.delete(db, path)
                db.execute("DELETE FROM files WHERE path = ?", (path,))
                db.execute("DELETE FROM skipped WHERE path = ?", (path,))
        self._chroma_delete(ids)
        return len(ids)

    @staticmethod
    def _delete_rows(db: sqlite3.Connection, path: str) -> None:
        db.execute(
            "DELETE FROM chunks_fts WHERE chunk_id IN (SELECT id FROM chunks WHERE path = ?)",
            (path,),
        )
        db.execute("DELETE FROM chunks WHERE path = ?", (path,))

    def _chroma_upsert(
        self, ids: list[str], vectors: list[list[float]], metas: list[dict[str, Any]]
    ) -> None:
        if not ids:  # nothing to write: Chroma need not be opened for it
            return
        for start in range(0, len(ids), self._max_batch):
            end = start + self._max_batch
            self._collection.upsert(
                ids=ids[start:end], embeddings=vectors[start:end], metadatas=metas[start:end]
            )

    def _chroma_delete(self, ids: list[str]) -> None:
        if not ids:
            return
        for start in range(0, len(ids), self._max_batch):
            self._collection.delete(ids=ids[start : start + self._max_batch])

    def forget_unused_vectors(self) -> None:
        """Drop cached vectors no chunk uses any more (after a sync, not during one)."""
        with self._writer() as db:
            db.execute(
                "DELETE FROM vectors WHERE text_hash NOT IN (SELECT text_hash FROM chunks) "
                "AND text_hash NOT IN "
                "(SELECT card_hash FROM note_cards WHERE card_hash IS NOT NULL)"
            )

    def missing_card_vectors(self) -> list[tuple[str, str]]:
        """(hash, text) of the note cards whose vector is not stored yet."""
        return self._read_metadata(note_cards.missing_vectors, [])

    def repair_vectors(self) -> int:
        """Make Chroma hold no id SQLite does not know and every id of a complete file;
        returns ids fixed. Ids of pending files are phase 2's business (it upserts all of
        a file's ids); a complete file whose vector is lost goes back to pending."""
        if self.read_only or (self.exact_vectors and self._chroma is None):
            return 0  # opening Chroma repairs it then (`_open_chroma`)
        if self._collection is None:
            return 0
        db = self._reader()
        known = {
            row[0]: (row[1], row[2], row[3] == "ok")
            for row in db.execute(
                "SELECT c.id, c.path, c.text_hash, f.state FROM chunks c "
                "LEFT JOIN files f ON f.path = c.path"
            )
        }
        complete = [cid for cid, (_, _, ok) in known.items() if ok]
        count = self._collection.count()
        if count == len(known) == len(complete) and not self._missing_ids(complete):
            return 0
        # Pending files partly in Chroma are fine, unless a complete file lost an id.
        partly = len(complete) <= count <= len(known) and len(complete) < len(known)
        if partly and not self._missing_ids(complete):
            return 0
        present: set[str] = set()
        offset = 0
        while True:
            page = self._collection.get(include=[], limit=self._max_batch, offset=offset)
            if not page["ids"]:
                break
            present.update(page["ids"])
            offset += len(page["ids"])
        extra = sorted(present - set(known))
        missing = [cid for cid in complete if cid not in present]
        self._chroma_delete(extra)
        vectors = self.cached_vectors(known[cid][1] for cid in missing)
        restore: list[tuple[str, str, str, np.ndarray]] = []
        lost: set[str] = set()
        for cid in missing:
            path, text_hash, _ = known[cid]
            vector = vectors.get(text_hash)
            if vector is None:
                lost.add(path)  # re-embedded by phase 2
            else:
                restore.append((cid, path, text_hash, vector))
        self.upsert_vectors(restore)
        if lost:
            with self._writer() as wdb:
                wdb.executemany(
                    "UPDATE files SET state = 'pending' WHERE path = ?", [(p,) for p in lost]
                )
        if extra or missing:
            log.info(
                "Repaired the vector index: %d removed, %d restored, %d files to re-embed",
                len(extra),
                len(restore),
                len(lost),
            )
        return len(extra) + len(missing)

    def _missing_ids(self, ids: list[str]) -> bool:
        # A cheap spot check: counts can match while ids differ after a crash.
        sample = ids[:: max(1, len(ids) // 50)][:50]
        if not sample:
            return False
        got = self._collection.get(ids=sample, include=[])
        return len(got["ids"]) != len(sample)

    def rebuild_vectors(self) -> int:
        """A new Chroma collection from what SQLite holds (every chunk's id and its cached
        vector), built beside the live one and switched to when complete; the old one is
        dropped then. Readers keep answering from the old one until the switch (see the
        module doc). A chunk whose vector is not cached leaves its file pending, so the
        next sync embeds it. Returns the number of vectors in the new collection."""
        if self.read_only:
            raise ReadOnlyStore(f"the index at {self.directory} is opened read-only")
        collection = self._new_collection()
        rows = list(self._reader().execute("SELECT id, path, text_hash FROM chunks"))
        written = 0
        uncached: set[str] = set()
        for start in range(0, len(rows), self._max_batch):
            part = rows[start : start + self._max_batch]
            vectors = self.cached_vectors(row[2] for row in part)
            ids, embeddings, metas = [], [], []
            for cid, path, digest in part:
                vector = vectors.get(digest)
                if vector is None:
                    uncached.add(path)
                    continue
                ids.append(cid)
                embeddings.append(vector.tolist())
                metas.append({"path": path, "text_hash": digest})
            if ids:
                collection.upsert(ids=ids, embeddings=embeddings, metadatas=metas)
                written += len(ids)
        if uncached:
            with self._writer() as db:
                db.executemany(
                    "UPDATE files SET state = 'pending' WHERE path = ?", [(p,) for p in uncached]
                )
        self._switch(collection)
        log.info("Rebuilt the vector collection of %s: %d vectors", self.root, written)
        return written

    # --- reading -------------------------------------------------------------------------

    _CHUNK_COLUMNS = "path, idx, text, heading, start_line, end_line, text_hash, stems"

    def _chunk(self, row: Sequence[Any]) -> StoredChunk:
        path, index, text, heading, start, end, digest, stems = row
        return StoredChunk(path, str(self.root), index, text, heading, start, end, digest, stems)

    def chunks_of(self, path: str) -> list[StoredChunk]:
        rows = self._reader().execute(
            f"SELECT {self._CHUNK_COLUMNS} FROM chunks WHERE path = ? ORDER BY idx", (path,)
        )
        return [self._chunk(row) for row in rows]

    def _paths_of(self, ids: Iterable[str]) -> dict[str, str]:
        """chunk id -> its file's path, for the ids SQLite holds."""
        rows = self._select_in("SELECT id, path FROM chunks WHERE id IN ({marks})", ids)
        return {str(cid): str(path) for cid, path in rows}

    def chunks_by_id(self, ids: Iterable[str]) -> dict[str, StoredChunk]:
        rows = self._select_in(
            f"SELECT id, {self._CHUNK_COLUMNS} FROM chunks WHERE id IN ({{marks}})", ids
        )
        return {row[0]: self._chunk(row[1:]) for row in rows}

    def vector_search(
        self, vector: Sequence[float] | np.ndarray, k: int, paths: list[str] | None = None
    ) -> list[VectorHit]:
        """The `k` chunks nearest to `vector`, among the chunks of `paths` when given.

        With `paths` (a path glob or a metadata filter), the restriction runs inside the
        vector query, so a selective filter still yields `k` candidates: a Chroma `where`
        on the chunks' `path` when they are a small share of the files; otherwise
        (a `$in` over thousands of paths is slow in Chroma) an unfiltered query deep
        enough to hold `k` of them, kept to those files, falling back to `where` when it
        holds fewer. Either way the result is the `k` nearest among those files.

        The collection asked is the live one (module doc); when a rebuild dropped the one
        this reader held meanwhile, the live one is asked again.
        """
        if k <= 0:
            return []
        if self.exact_vectors:
            return self._exact_nearest(np.asarray(vector, dtype=np.float32), k, paths)
        query = np.asarray(vector, dtype=np.float32).tolist()
        try:
            return self._nearest(self._live(), query, k, paths)
        except Exception:
            # A rebuild switched collections and dropped the one this reader held: the
            # live one is named in meta by then.
            return self._nearest(self._live(again=True), query, k, paths)

    def _exact_nearest(self, query: np.ndarray, k: int, paths: list[str] | None) -> list[VectorHit]:
        assert self._exact is not None
        wanted = None if paths is None else set(paths)
        return self._exact.nearest(self._reader(), query, k, wanted)

    def _nearest(
        self, collection: Any | None, query: list[float], k: int, paths: list[str] | None
    ) -> list[VectorHit]:
        # No `collection.count()` first (2 ms a query): Chroma returns what it has when
        # asked for more, and nothing from an empty collection.
        if collection is None:
            return []
        if paths is None:
            return self._query_chroma(collection, query, k, None)
        if not paths:
            return []
        wanted = set(paths)
        share = self._file_share(wanted)
        if share >= OVERFETCH_SHARE and len(wanted) > 1:
            depth = max(4 * k, int(k / share * 1.5) + 1)
            found = self._query_chroma(collection, query, depth, None)
            hits = [h for h in found if h.path in wanted]
            if len(hits) >= k or len(found) < depth:
                return hits[:k]
        where: dict[str, Any] = (
            {"path": {"$in": paths}} if len(wanted) > 1 else {"path": next(iter(wanted))}
        )
        return self._query_chroma(collection, query, k, where)

    def _query_chroma(
        self, collection: Any, query: list[float], n: int, where: dict[str, Any] | None
    ) -> list[VectorHit]:
        # Distances only: reading the hits' metadata back was half of Chroma's time. A
        # chunk's path and the text its vector was made from come from SQLite: a file in
        # state 'ok' has every vector of its current text (module doc); only for a file
        # still pending is Chroma asked which text its vectors were made from. An id
        # SQLite does not hold (a file deleted or rewritten meanwhile) is left out.
        result = collection.query(
            query_embeddings=[query], n_results=n, where=where, include=["distances"]
        )
        ids: list[str] = result["ids"][0]
        rows = {
            str(cid): (str(path), str(digest), state == "ok")
            for cid, path, digest, state in self._select_in(
                "SELECT c.id, c.path, c.text_hash, f.state FROM chunks c "
                "JOIN files f ON f.path = c.path WHERE c.id IN ({marks})",
                ids,
            )
        }
        pending = [cid for cid in ids if cid in rows and not rows[cid][2]]
        made_from = self._vector_text_hashes(collection, pending) if pending else {}
        hits = []
        for cid, distance in zip(ids, result["distances"][0], strict=True):
            row = rows.get(cid)
            if row is not None:
                path, digest, complete = row
                made = digest if complete else made_from.get(cid, "")
                hits.append(VectorHit(cid, path, 1.0 - float(distance), made))
        return hits

    @staticmethod
    def _vector_text_hashes(collection: Any, ids: list[str]) -> dict[str, str]:
        """id -> the text hash its vector in Chroma was made from ("" when unknown: an
        id being upserted or deleted may have no metadata)."""
        got = collection.get(ids=ids, include=["metadatas"])
        return {
            str(cid): str(meta.get("text_hash", ""))
            for cid, meta in zip(got["ids"], got["metadatas"] or [], strict=False)
            if meta
        }

    def _file_share(self, paths: set[str]) -> float:
        """The share of the indexed files that `paths` are (files hold chunks alike
        enough for choosing how to restrict a query)."""
        files = self.counts()[0]
        return min(1.0, len(paths) / max(1, files))

    def keyword_search(
        self, match: str, k: int, paths: list[str] | None = None
    ) -> list[KeywordHit]:
        """FTS5 BM25 over path, title, heading and text. `match` is an FTS5 query.

        With `paths`, the best `k` among those files' chunks: for files holding a large
        share of the index, an unrestricted query deep enough for that share, kept to
        them (cheaper than naming thousands of paths), else the restriction in SQL.
        """
        if not match:
            return []
        if paths is not None:
            if not paths:
                return []
            wanted = set(paths)
            share = self._file_share(wanted)
            if share >= OVERFETCH_SHARE:
                depth = max(4 * k, int(k / share * 1.5) + 1)
                hits = self._keyword_query(match, depth, None)
                kept = [h for h in hits if h.path in wanted]
                if len(kept) >= k or len(hits) < depth:
                    return kept[:k]
        return self._keyword_query(match, k, paths)

    def _keyword_query(self, match: str, k: int, paths: list[str] | None) -> list[KeywordHit]:
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        # No `snippet()` here: it cost as much as the query for all k rows, and a hit
        # needs FTS's snippet only when its chunk has no readable text (`keyword_snippet`).
        sql = (
            f"SELECT chunk_id, bm25(chunks_fts, {weights}) AS score, rowid "
            "FROM chunks_fts WHERE chunks_fts MATCH ?"
        )
        args: list[Any] = [match]
        if paths is not None:
            sql += (
                " AND chunk_id IN (SELECT id FROM chunks"
                " WHERE path IN (SELECT value FROM json_each(?)))"
            )
            args.append(json.dumps(paths))
        sql += " ORDER BY score LIMIT ?"
        args.append(k)
        try:
            rows = self._reader().execute(sql, args).fetchall()
        except sqlite3.OperationalError as err:
            log.debug("FTS query %r failed: %s", match, err)
            return []
        path_of = self._paths_of(row[0] for row in rows)
        return [
            KeywordHit(cid, path_of[cid], -float(score), int(rowid))
            for cid, score, rowid in rows
            if cid in path_of
        ]

    def keyword_snippet(self, match: str, rowid: int) -> str | None:
        """FTS5's snippet of one `keyword_search` hit's text for `match`; None when the
        row is gone (a sync replaced the file since)."""
        try:
            row = (
                self._reader()
                .execute(
                    "SELECT snippet(chunks_fts, 4, '', '', '…', 24) FROM chunks_fts "
                    "WHERE chunks_fts MATCH ? AND rowid = ?",
                    (match, rowid),
                )
                .fetchone()
            )
        except sqlite3.OperationalError as err:
            log.debug("FTS snippet %r failed: %s", match, err)
            return None
        return None if row is None else str(row[0])

    def term_chunk_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each term (FTS5's own, stemmed, vocabulary)."""
        if not terms:
            return {}
        marks = ",".join("?" * len(terms))
        try:
            rows = self._reader().execute(
                f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", list(terms)
            )
            return {str(term): int(doc) for term, doc in rows}
        except sqlite3.OperationalError:  # an index made before the vocabulary table
            return {}

    # --- metadata ------------------------------------------------------------------------

    def _read_metadata(self, read: Callable[[sqlite3.Connection], T], default: T) -> T:
        """A metadata read, or `default` when there is nothing to read: before the writer
        made the tables (a read-only opener), or once the store is closed (its workspace
        folder was removed while a search was running)."""
        if self._closed:
            return default
        try:
            return read(self._reader())
        except (sqlite3.OperationalError, sqlite3.ProgrammingError) as err:
            log.debug("metadata read failed: %s", err)
            return default
        except RuntimeError:
            if self._closed:
                return default
            raise

    def filter_paths(self, node: FilterNode, prefix: str = "") -> set[str]:
        """The paths of the files a metadata filter keeps (`metadata/query.py`)."""
        return self._read_metadata(lambda db: matching_paths(db, node, prefix), set())

    def field_values(
        self, paths: Sequence[str], fields: Sequence[str]
    ) -> dict[str, dict[str, list[str]]]:
        return self._read_metadata(lambda db: metadata_tables.values_of(db, paths, fields), {})

    def field_names(self) -> set[str]:
        return self._read_metadata(metadata_tables.field_names, set())

    def field_summaries(self, top: int) -> list[metadata_tables.FieldSummary]:
        return self._read_metadata(lambda db: metadata_tables.summarise(db, top), [])

    def refresh_anchors(self) -> int:
        """Re-resolve links and update incoming anchor texts (`metadata/cards.py`)."""
        with self._writer() as db:
            return note_cards.refresh_anchors(db)

    def note_cards(self, paths: Iterable[str]) -> dict[str, note_cards.Card]:
        wanted = list(paths)
        return self._read_metadata(lambda db: note_cards.cards_of(db, wanted), {})

    def matching_notes(self, match: str, k: int, allowed: list[str] | None) -> list[str]:
        """Notes whose aliases, description or incoming anchor texts match `match`."""
        if not match:
            return []
        return self._read_metadata(lambda db: note_cards.matching_notes(db, match, k, allowed), [])

    def problems(self) -> list[metadata_tables.StoredProblem]:
        return self._read_metadata(metadata_tables.problems, [])

    # --- summaries -----------------------------------------------------------------------

    def cached_summary(self, content_hash: str, model: str) -> str | None:
        try:
            row = (
                self._reader()
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
        with self._writer() as db:
            db.execute(
                "INSERT OR REPLACE INTO summaries(content_hash, model, summary, created) "
                "VALUES (?, ?, ?, ?)",
                (content_hash, model, summary, time.time()),
            )

    # --- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._connections_lock:
            connections = [*self._connections, *([self._write_db] if self._write_db else [])]
        for db in connections:
            with suppress(sqlite3.Error):
                db.close()
        if not self.read_only:
            self._lock.release()


def _path_words(path: str) -> str:
    """A path as words for FTS: `payments/mexico-payments.md` -> `payments mexico payments md`.

    unicode61 already splits on `/`, `-` and `.`, but not on camelCase or `_` inside
    words in every build, so split explicitly.
    """
    out: list[str] = []
    word: list[str] = []
    for char in path:
        if char.isalnum():
            if word and char.isupper() and word[-1].islower():
                out.append("".join(word))
                word = []
            word.append(char)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return " ".join(out)
