"""The hashing embedder of tests/fakes/embedder.py at a fixed pace per passage.

The e2e test of the cold index (test/e2e/panelFlows.test.ts) needs a sync that runs long
enough for the editor's estimate of the time left — a rate measured over at least 15 s
(src/estimate.ts) — on any machine: the plain hashing embedder embeds the FastAPI docs in
a few seconds on a quiet one. `KB_E2E_SECONDS_PER_PASSAGE` sets the pace (default 0.02 s:
about a minute for their 3,038 passages).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from tests.fakes.embedder import HashingEmbedder

SECONDS_PER_PASSAGE = float(os.environ.get("KB_E2E_SECONDS_PER_PASSAGE", "0.02"))


class PacedEmbedder(HashingEmbedder):
    """Embeds as the hashing embedder does, taking SECONDS_PER_PASSAGE for each text."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(SECONDS_PER_PASSAGE * len(texts))
        return super().embed_documents(texts)
