"""Text embedders: the `Embedder` protocol, what its providers share, and where they are.

* `MiniLMEmbedder` (`minilm.py`, the default) runs all-MiniLM-L6-v2 in-process on
  onnxruntime (`inference.py`), from model files that come with installed packages or a
  user's own folder (`model_source.py`); the packaged model runs as a verified int8 copy
  made once per machine (`int8_copy.py`).
* `OllamaEmbedder` (`ollama_embed.py`) calls Ollama's `/api/embed` through the `ollama`
  client.

`make_embedder` (`providers.py`) makes the one the settings name.

Every vector is L2-normalised. `identity` names the model, its file hash and the dimension;
the store keeps it, and a different identity means the vectors are rebuilt, never mixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

import numpy as np
import numpy.typing as npt

from kb_lsp.errors import Unavailable

Matrix = npt.NDArray[np.float32]


class EmbedderError(Unavailable):
    """The embedder cannot work; the message says what to install, start or configure.
    The contract's `Unavailable` (a `RuntimeError` too): the request was fine, the
    embedder cannot serve it now, and every front end says so in the embedder's words."""


# Not runtime_checkable on purpose: on Python 3.11 isinstance() against a protocol reads its
# properties, which would load the model or call Ollama.
class Embedder(Protocol):
    @property
    def identity(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def normalise(vectors: Matrix) -> Matrix:
    """Each row scaled to length 1 (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalised: Matrix = np.asarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)
    return normalised


def as_lists(vectors: Matrix) -> list[list[float]]:
    """The rows as the plain lists the protocol returns."""
    return cast("list[list[float]]", vectors.tolist())


__all__ = ["Embedder", "EmbedderError", "Matrix", "as_lists", "normalise"]
