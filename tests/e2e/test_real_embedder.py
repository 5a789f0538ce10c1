"""One end-to-end run with the real default embedder (all-MiniLM-L6-v2 on onnxruntime)."""

from __future__ import annotations

from pathlib import Path

from .conftest import running_server

MEXICO = "payments/mexico-payments.md"


async def test_semantic_search_with_the_default_embedder(workspace: Path, storage: Path) -> None:
    async with running_server([workspace], storage, real_embedder=True) as kb:
        status = await kb.status()
        assert "minilm" in status["embedder"].lower()
        # No word of the query appears in the file name; the meaning has to carry it.
        response = await kb.search(
            "wiring money to our subsidiary in Latin America", mode="semantic"
        )
        paths = [hit["path"] for hit in response["results"]]
        # The one note about the subsidiary in Mexico comes first; any `payments/` file in
        # the top 3 would let a random ranking of that folder pass two times in three.
        assert paths and paths[0] == MEXICO, paths
