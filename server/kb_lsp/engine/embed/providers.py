"""`make_embedder`: the embedder provider the settings name (`kb.embedder.provider`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kb_lsp.engine.embed.embeddings import Embedder
from kb_lsp.engine.embed.minilm import MiniLMEmbedder
from kb_lsp.engine.embed.ollama_embed import OllamaEmbedder

if TYPE_CHECKING:
    from kb_lsp.config import Settings


def make_embedder(settings: Settings, int8_cache: Path | None = None) -> Embedder:
    """The embedder `settings.embedder.provider` names; model files are checked on first use.
    `int8_cache`: where the packaged model's int8 copy is kept (None: the model as is)."""
    config = settings.embedder
    if config.provider == "ollama":
        return OllamaEmbedder(
            config.model,
            settings.ollama.host,
            timeout=settings.ollama.timeout,
            batch_size=config.batch_size,
        )
    model_path = Path(config.model_path).expanduser() if config.model_path else None
    return MiniLMEmbedder(model_path, batch_size=config.batch_size, int8_cache=int8_cache)


__all__ = ["make_embedder"]
