"""A deterministic embedder for tests where the test is not about embedding quality.

Bag-of-words feature hashing: every lower-cased word is hashed (blake2b, so the result is
the same in every process, unlike `hash()`) into one of `dimension` buckets with a sign,
counts are damped with log1p, and the vector is L2-normalised. Texts sharing words get a
positive cosine similarity, so hybrid search behaves sensibly on small test corpora.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Implements `kb_lsp.engine.embed.embeddings.Embedder` (structurally), with no model."""

    def __init__(self, dimension: int = 256) -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self._dimension = dimension
        self.calls = 0  # embed_documents/embed_query calls, for tests that count re-embedding
        self.texts_embedded = 0

    @property
    def identity(self) -> str:
        return f"test:hashing:{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts_embedded += len(texts)
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self._vector(text)

    def _vector(self, text: str) -> list[float]:
        counts: dict[int, float] = {}
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            bucket = value % self._dimension
            sign = 1.0 if (value >> 63) & 1 else -1.0
            counts[bucket] = counts.get(bucket, 0.0) + sign
        vector = [0.0] * self._dimension
        for bucket, count in counts.items():
            vector[bucket] = math.copysign(math.log1p(abs(count)), count)
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:
            # A text without words still needs a unit vector: cosine distance is
            # undefined for the zero vector and Chroma would return NaN.
            vector[0] = 1.0
            return vector
        return [x / norm for x in vector]


_HOLD = re.compile(r"HOLD-([a-z0-9]+)")
HOLD_DIR_VARIABLE = "KB_TEST_HOLD_DIR"
HOLD_DEADLINE = 120.0  # seconds a held embedding waits at most


class GatedEmbedder(HashingEmbedder):
    """The hashing embedder, except that a text containing `HOLD-<name>` is not embedded
    while `<name>.hold` exists in `$KB_TEST_HOLD_DIR`; meanwhile `<name>.waiting` says
    that it is held. A test in another process holds a sync at a point of its choosing
    (`kb/reindex` running and not done, whatever the machine's speed) and lets it go."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        folder = os.environ.get(HOLD_DIR_VARIABLE)
        if folder:
            for name in sorted({m for text in texts for m in _HOLD.findall(text)}):
                self._hold(Path(folder), name)
        return super().embed_documents(texts)

    @staticmethod
    def _hold(folder: Path, name: str) -> None:
        hold = folder / f"{name}.hold"
        if not hold.exists():
            return
        (folder / f"{name}.waiting").touch()
        deadline = time.monotonic() + HOLD_DEADLINE
        while hold.exists() and time.monotonic() < deadline:
            time.sleep(0.01)


class QueryRefusingEmbedder(HashingEmbedder):
    """The hashing embedder (same identity: it opens an index the hashing embedder made)
    that fails when asked to embed a query: keyword search must never ask."""

    def embed_query(self, text: str) -> list[float]:
        raise AssertionError(f"the query {text!r} was embedded")


COUNT_FILE_VARIABLE = "KB_TEST_EMBEDDED_LOG"


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder (same identity), which also appends every passage it embeds
    to the file `$KB_TEST_EMBEDDED_LOG`, one JSON string a line: a test counts (and reads)
    what a `kb` process embedded. Queries are not passages and are not written."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        log = os.environ.get(COUNT_FILE_VARIABLE)
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.writelines(json.dumps(text) + "\n" for text in texts)
        return super().embed_documents(texts)
