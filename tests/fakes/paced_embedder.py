"""The hashing embedder of tests/fakes/embedder.py at a fixed pace per passage, one
that hogs the CPU through its first batch until a test lets it go, and one held before
its second call (`HeldEmbedder`).

The extension's e2e test of the cold index (vscode-extension/test/e2e/panelFlows.test.ts)
needs a sync that runs long enough for the editor's estimate of the time left — a rate
measured over at least 15 s (src/estimate.ts) — on any machine: the plain hashing
embedder embeds the FastAPI docs in a few seconds on a quiet one.
`KB_E2E_SECONDS_PER_PASSAGE` sets the pace (default 0.02 s: about a minute for their
3,038 passages).

`HoggingEmbedder` (tests/e2e/test_responsive.py): its first batch spins the CPU, in the
server's own process, while `first-batch.hold` exists in `$KB_TEST_HOLD_DIR` — in native
code that lets go of the interpreter lock, as onnxruntime does for the real embedder (a
pure-Python spin instead makes every other thread's SQLite call wait its turn for the
lock: a search then took from 2 s to over 90 s, depending on the scheduler); it says
`first-batch.waiting` when it starts and `first-batch.done` when it ends, so a test orders
what the server answers against the batch by these events, not by time.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tests.fakes.embedder import HashingEmbedder

SECONDS_PER_PASSAGE = float(os.environ.get("KB_E2E_SECONDS_PER_PASSAGE", "0.02"))


class PacedEmbedder(HashingEmbedder):
    """Embeds as the hashing embedder does, taking SECONDS_PER_PASSAGE for each text."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(SECONDS_PER_PASSAGE * len(texts))
        return super().embed_documents(texts)


HOLD_DEADLINE = 120.0  # seconds a held first batch spins at most


class HoggingEmbedder(HashingEmbedder):
    """The hashing embedder whose first batch is a CPU hog held by the test."""

    def __init__(self, dimension: int = 256) -> None:
        super().__init__(dimension)
        self._first = threading.Lock()
        self._started = False

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        with self._first:
            first, self._started = not self._started, True
        folder = os.environ.get("KB_TEST_HOLD_DIR")
        if first and folder:
            self._hog(Path(folder))
        return super().embed_documents(texts)

    @staticmethod
    def _hog(folder: Path) -> None:
        (folder / "first-batch.waiting").touch()
        hold = folder / "first-batch.hold"
        deadline = time.monotonic() + HOLD_DEADLINE
        matrix = np.random.default_rng(0).random((192, 192), dtype=np.float32)
        while hold.exists() and time.monotonic() < deadline:
            for _ in range(20):  # BLAS runs without the interpreter lock, as inference does
                matrix = np.tanh(matrix @ matrix)
        (folder / "first-batch.done").touch()


class HeldEmbedder(HashingEmbedder):
    """The hashing embedder held before its second call while `second-batch.hold` exists
    in `$KB_TEST_HOLD_DIR` (it says `second-batch.waiting` when it gets there): the sync
    is then in its vectors phase with some passages embedded, so it has a rate and a time
    left, and a test reads its status from another process meanwhile, ordered by these
    files rather than by time."""

    def __init__(self, dimension: int = 256) -> None:
        super().__init__(dimension)
        self._calls = 0

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self._calls += 1
        folder = os.environ.get("KB_TEST_HOLD_DIR")
        if self._calls == 2 and folder:
            (Path(folder) / "second-batch.waiting").touch()
            hold = Path(folder) / "second-batch.hold"
            deadline = time.monotonic() + HOLD_DEADLINE
            while hold.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return super().embed_documents(texts)
