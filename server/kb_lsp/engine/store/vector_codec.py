"""How SQLite keeps a vector: int8, one scale per vector (issue 26: vectors stored once).

A blob is the vector's `dimension` components as signed bytes (`round(x / scale)`, the
largest component at ±127) followed by `scale` as a float32: `dimension + 4` bytes, a
quarter of the float32 blob (`4 * dimension`) stores made before kept. Both are read — the
two lengths never coincide — and `VectorCache.narrow_old_vectors` rewrites the old ones once.

The float vectors live in the vector index (Chroma's HNSW), derived from these: a rebuild
makes them from this cache. What rounding costs: each component moves at most half a
step (`scale / 2`, about 0.1 % of a unit vector's largest component), so a cosine moves by
about 1e-3 at most; `bench quality` measures the rows on both (bench/results/README.md).
"""

from __future__ import annotations

import numpy as np

_LEVELS = 127.0


def encode(vector: np.ndarray) -> bytes:
    """The int8 blob of `vector`."""
    values = np.nan_to_num(np.asarray(vector, dtype=np.float32).reshape(-1))
    top = float(np.max(np.abs(values))) if values.size else 0.0
    scale = top / _LEVELS if top > 0.0 and np.isfinite(top) else 1.0
    steps = np.clip(np.rint(values / scale), -_LEVELS, _LEVELS).astype(np.int8)
    return bytes(steps.tobytes()) + bytes(np.float32(scale).tobytes())


def readable(blob: bytes, dimension: int) -> bool:
    """Whether `blob` is a vector of `dimension` components (int8 or an older float32)."""
    return len(blob) in (dimension + 4, 4 * dimension)


def decode(blob: bytes, dimension: int) -> np.ndarray | None:
    """The float32 vector of `blob`; None when it has another dimension."""
    if len(blob) == 4 * dimension:
        return np.frombuffer(blob, dtype=np.float32)
    if len(blob) != dimension + 4:
        return None
    steps = np.frombuffer(blob, dtype=np.int8, count=dimension)
    scale = float(np.frombuffer(blob, dtype=np.float32, offset=dimension)[0])
    vector: np.ndarray = steps.astype(np.float32) * np.float32(scale)
    return vector


def decode_matrix(blobs: list[bytes], dimension: int) -> np.ndarray:
    """One float32 row per blob (all `readable`), without a Python loop over int8 rows:
    a one-shot search reads every vector of the store through here."""
    matrix = np.empty((len(blobs), dimension), dtype=np.float32)
    narrow = [i for i, blob in enumerate(blobs) if len(blob) == dimension + 4]
    if narrow:
        raw = np.frombuffer(b"".join(blobs[i] for i in narrow), dtype=np.uint8)
        rows = raw.reshape(len(narrow), dimension + 4)
        scales = rows[:, dimension:].copy().view(np.float32)
        matrix[narrow] = rows[:, :dimension].view(np.int8).astype(np.float32) * scales
    if len(narrow) < len(blobs):
        taken = set(narrow)
        for i, blob in enumerate(blobs):
            if i not in taken:
                matrix[i] = np.frombuffer(blob, dtype=np.float32)
    return matrix
