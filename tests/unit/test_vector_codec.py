"""Vectors in SQLite as int8 with one scale each (issue 26: vectors stored once): the
rounding keeps cosine similarity, the blob is a quarter of float32's, older float32 blobs
are read and narrowed once (the file shrinks), and search finds the same chunks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
from filelock import FileLock
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from tests.fakes.embedder import HashingEmbedder
from tests.helpers.store import indexed_example, open_store

from kb_lsp.engine.storage import DATABASE, WRITER_LOCK, store_dir_for
from kb_lsp.engine.store import vector_codec
from kb_lsp.engine.store.vectors import VectorHit

DIMENSION = 384


def _unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return vector / np.linalg.norm(vector)


def test_a_blob_is_a_quarter_of_float32_and_keeps_the_cosine() -> None:
    for seed in range(50):
        vector = _unit(seed)
        blob = vector_codec.encode(vector)
        assert len(blob) == DIMENSION + 4
        back = vector_codec.decode(blob, DIMENSION)
        assert back is not None and back.dtype == np.float32
        cosine = float(back @ vector / np.linalg.norm(back))
        assert cosine > 0.9999, seed
        other = _unit(seed + 1000)
        assert abs(float(back @ other) - float(vector @ other)) < 2e-3


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False, width=32)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float32, st.integers(1, 64), elements=finite))
def test_any_vector_comes_back_within_half_a_step(vector: np.ndarray) -> None:
    blob = vector_codec.encode(vector)
    assert vector_codec.readable(blob, vector.size)
    back = vector_codec.decode(blob, vector.size)
    assert back is not None and back.shape == vector.shape
    step = float(np.max(np.abs(vector))) / 127 if np.any(vector) else 1.0
    assert float(np.max(np.abs(back - vector))) <= step / 2 * 1.001 + 1e-30
    matrix = vector_codec.decode_matrix([blob, vector.astype(np.float32).tobytes()], vector.size)
    assert np.array_equal(matrix[0], back) and np.array_equal(matrix[1], vector)


def test_other_dimensions_are_not_read() -> None:
    blob = vector_codec.encode(_unit(1))
    assert vector_codec.decode(blob, 768) is None
    assert not vector_codec.readable(blob, 768)
    assert vector_codec.decode(_unit(1).tobytes(), 768) is None


def test_a_store_made_with_float32_vectors_is_narrowed_once_and_searches_alike(
    tmp_path: Path,
) -> None:
    workspace, storage = indexed_example(tmp_path)
    database = store_dir_for(storage, workspace) / DATABASE
    embedder = HashingEmbedder()
    queries = ["Mexico payments cut-off", "production is down", "glossary", "first week"]

    # What an older store held: the exact float32 vectors, and no format mark.
    with sqlite3.connect(database) as db:
        hashes = [row[0] for row in db.execute("SELECT text_hash FROM vectors")]
        texts = dict(db.execute("SELECT text_hash, text FROM chunks"))
        exact = {
            h: np.asarray(embedder.embed_documents([texts[h]])[0]) for h in hashes if h in texts
        }
        db.executemany(
            "UPDATE vectors SET embedding = ? WHERE text_hash = ?",
            ((v.astype(np.float32).tobytes(), h) for h, v in exact.items()),
        )
        db.execute("DELETE FROM meta WHERE key = 'vector_format'")
        # Padding that a narrowing frees: the file shrinks once the space is given back.
        db.execute("CREATE TABLE filler (x BLOB)")
        db.executemany("INSERT INTO filler VALUES (?)", ((bytes(4096),) for _ in range(500)))
        db.execute("DROP TABLE filler")
    db.close()
    assert exact

    with sqlite3.connect(database) as db:
        widths = {row[0] for row in db.execute("SELECT DISTINCT length(embedding) FROM vectors")}
    db.close()
    assert 4 * embedder.dimension in widths

    # Read as they are, before any writer narrowed them.
    reader_before = {q: [h.chunk_id for h in _search(workspace, storage, q)] for q in queries}
    size_before = database.stat().st_size

    store = open_store(workspace, storage, exact=True)  # the writer's opening narrows them
    after = {
        q: [h.chunk_id for h in store.vector_search(embedder.embed_query(q), 5)] for q in queries
    }
    store.close()
    with sqlite3.connect(database) as db:
        widths = {row[0] for row in db.execute("SELECT DISTINCT length(embedding) FROM vectors")}
        mark = db.execute("SELECT value FROM meta WHERE key = 'vector_format'").fetchone()
        count = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    db.close()
    assert widths == {embedder.dimension + 4}
    assert mark == ("int8",)
    assert count == len(hashes)
    assert database.stat().st_size < size_before
    assert after == reader_before
    assert all(after.values())

    # Opened again: nothing left to narrow, and the cache still serves each vector.
    again = open_store(workspace, storage, exact=True)
    assert again.cache.narrow_old_vectors() == 0
    got = again.cache.get(exact)
    assert set(got) == set(exact)
    for digest, vector in exact.items():
        back = got[digest]
        assert float(back @ vector) / float(np.linalg.norm(back) * np.linalg.norm(vector)) > 0.999
    again.close()


def _search(workspace: Path, storage: Path, query: str) -> list[VectorHit]:
    """A reader's search while another process holds the writer's lock: it reads the
    float32 blobs as they are."""
    lock = FileLock(str(store_dir_for(storage, workspace) / WRITER_LOCK))
    lock.acquire()
    try:
        reader = open_store(workspace, storage, exact=True)
        assert reader.read_only
        hits = reader.vector_search(HashingEmbedder().embed_query(query), 5)
        reader.close()
    finally:
        lock.release()
    return hits
