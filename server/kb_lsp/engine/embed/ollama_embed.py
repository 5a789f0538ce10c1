"""`OllamaEmbedder`: Ollama's `/api/embed` through the `ollama` client."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kb_lsp.engine.embed.embeddings import EmbedderError, as_lists, normalise

if TYPE_CHECKING:
    import ollama


class OllamaEmbedder:
    """Ollama's `/api/embed` (e.g. `nomic-embed-text`), in batches.

    Inputs longer than the model's context are cut by Ollama itself (`truncate=True`);
    `max_chars` additionally cuts them client-side, for servers that refuse instead. The
    dimension is learnt from the first answer (a one-word probe if asked before any embed).
    """

    def __init__(
        self,
        model: str,
        host: str,
        *,
        timeout: float = 60.0,
        batch_size: int = 32,
        max_chars: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self._model = model
        self._host = host
        self._timeout = timeout
        self._batch_size = batch_size
        self._max_chars = max_chars
        import ollama  # only the Ollama provider needs it (and httpx): not imported at start

        self._client = ollama.Client(host=host, timeout=timeout)
        self._lock = threading.Lock()
        self._dimension: int | None = None

    @property
    def host(self) -> str:
        """The Ollama server asked (`kb.ollama.host`)."""
        return self._host

    @property
    def identity(self) -> str:
        return f"ollama:{self._model}:{self.dimension}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._embed_batch(["dimension"])
        assert self._dimension is not None
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(self._embed_batch(texts[start : start + self._batch_size]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self._embed_batch([text])[0]

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        import httpx
        import ollama
        import pydantic

        inputs = [text[: self._max_chars] if self._max_chars else text for text in texts]
        try:
            response = self._client.embed(model=self._model, input=inputs, truncate=True)
        except ConnectionError as err:  # what the ollama client raises for a refused connect
            raise EmbedderError(self._unreachable()) from err
        except httpx.TimeoutException as err:
            raise EmbedderError(
                f"Ollama at {self._host} did not answer within {self._timeout:g} s while "
                f"embedding with {self._model!r}: check that it is running and not overloaded, "
                "or raise kb.ollama.timeout."
            ) from err
        except httpx.HTTPError as err:
            raise EmbedderError(f"{self._unreachable()} ({err})") from err
        except ollama.ResponseError as err:
            raise EmbedderError(self._refused(err)) from err
        except pydantic.ValidationError as err:
            raise EmbedderError(
                f"Ollama at {self._host} sent an answer to /api/embed that is not an embedding "
                f"response: {err.error_count()} problems."
            ) from err
        return self._check(response.embeddings, len(inputs))

    def _check(self, embeddings: Sequence[Sequence[float]], count: int) -> list[list[float]]:
        matrix = np.asarray(embeddings, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] == 0:
            raise EmbedderError(
                f"Ollama at {self._host} returned {len(embeddings)} embeddings of an unexpected "
                f"shape for {count} inputs with {self._model!r}."
            )
        dimension = int(matrix.shape[1])
        with self._lock:
            if self._dimension is None:
                self._dimension = dimension
        if dimension != self._dimension:
            raise EmbedderError(
                f"Ollama's {self._model!r} changed dimension from {self._dimension} to "
                f"{dimension}: was the model replaced? Reindex with kb/reindex full."
            )
        return as_lists(normalise(matrix))

    def _unreachable(self) -> str:
        return (
            f"Cannot reach Ollama at {self._host}: start Ollama (`ollama serve`) or set "
            "kb.ollama.host to where it runs."
        )

    def _refused(self, err: ollama.ResponseError) -> str:
        reason = str(err.error)
        if err.status_code == 404 or "not found" in reason.lower():
            return (
                f"The embedding model {self._model!r} is not available in Ollama at "
                f"{self._host}: run `ollama pull {self._model}` (or change kb.embedder.model)."
            )
        return (
            f"Ollama at {self._host} could not embed with {self._model!r}: {reason} "
            f"(HTTP {err.status_code})."
        )


__all__ = ["OllamaEmbedder"]
