"""One end-to-end run with the real default embedder (all-MiniLM-L6-v2 on onnxruntime)."""

from __future__ import annotations

from pathlib import Path

from .conftest import running_server


async def test_semantic_search_with_the_default_embedder(workspace: Path, storage: Path) -> None:
    async with running_server([workspace], storage, real_embedder=True) as kb:
        status = await kb.status()
        assert "minilm" in status["embedder"].lower()
        # No word of the query appears in the file name; the meaning has to carry it.
        response = await kb.search(
            "wiring money to our subsidiary in Latin America", mode="semantic"
        )
        paths = [hit["path"] for hit in response["results"]]
        assert paths, "no results"
        assert any(path.startswith("payments/") for path in paths[:3]), paths
