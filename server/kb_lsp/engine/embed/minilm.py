"""`MiniLMEmbedder`, the default embedder: all-MiniLM-L6-v2 in-process on onnxruntime.

The model files come from installed packages or a user's folder (`model_source.py`), are
verified and loaded on first use, and the packaged model runs as its int8 copy when there
is a cache to keep it in (`int8_copy.py`). Texts are tokenised, cut at `max_tokens`, run
on onnxruntime (`inference.py`) in length-sorted batches of at most `MAX_BATCH_TOKENS`
padded tokens, and mean-pooled.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

# Called through the module, so that a stand-in set on it (a test's) is what opens models.
from kb_lsp.engine.embed import inference
from kb_lsp.engine.embed.embeddings import EmbedderError, Matrix, as_lists
from kb_lsp.engine.embed.inference import check_session, pooled, shrink_arena
from kb_lsp.engine.embed.int8_copy import (
    Int8Copy,
    copy_folder,
    note_dimension,
    ready_copy,
    recorded_copy,
)
from kb_lsp.engine.embed.model_source import (
    ModelSource,
    folder_source,
    hash_verified,
    packaged_source,
    read_tokenizer,
)
from kb_lsp.engine.once import Once

if TYPE_CHECKING:
    import onnxruntime as ort
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

# sentence-transformers embeds this model with at most 256 tokens (not the 512 it could take).
DEFAULT_MAX_TOKENS = 256
# Padded tokens per onnxruntime call. Activations grow with batch x length: 32 chunks of
# 256 tokens took the process to ~1.5 GB, 8 of them to ~0.6 GB, at about the same speed.
# With the int8 model and the arena shrunk after every call, 256 of the longest fastapi
# chunks peaked at +250 MiB with 2,048 tokens per call and +205 MiB with 1,024 (+370 MiB
# when the arena was shrunk only after the last call). Short texts still go up to
# batch_size at a time.
MAX_BATCH_TOKENS = 1024


@dataclass(frozen=True)
class _Loaded:
    session: ort.InferenceSession
    tokenizer: Tokenizer
    input_names: frozenset[str]
    output_name: str
    dimension: int
    identity: str


class MiniLMEmbedder:
    """A sentence-transformer (all-MiniLM-L6-v2 by default) on onnxruntime, in-process.

    Construction is cheap and only checks that the files exist; the model is read, verified
    and loaded on first use, or ahead of time with `load()` (e.g. from a background thread
    at server start). `embed_documents` and `embed_query` may run concurrently from
    different threads: onnxruntime's `run` is thread-safe, and the tokenizer is only
    configured while loading, under the lock, and read-only afterwards.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = 32,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        threads: int | None = None,
        int8_cache: Path | None = None,
    ) -> None:
        """`int8_cache`: where the int8 copy of the packaged model is kept
        (`int8_copy.py`); None runs the model file as it is. `threads`: None measures it
        for the int8 copy and leaves onnxruntime's default for the file as it is."""
        if batch_size < 1 or max_tokens < 2:
            raise ValueError("batch_size must be >= 1 and max_tokens >= 2")
        self._source = packaged_source() if model_path is None else folder_source(model_path)
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._threads = threads
        # Only the packaged model: its quality on the probes is known; a user's own
        # model runs as they made it.
        self._int8_cache = int8_cache if self._source.model_sha256 is not None else None
        self._loaded = Once(self._load)
        self._described = Once(self._describe)
        self.int8: Int8Copy | None = None  # set when loaded with the int8 copy

    @property
    def source(self) -> ModelSource:
        """The model and tokenizer files this embedder runs (read when it loads)."""
        return self._source

    def load(self) -> None:
        """Read, verify and load the model now rather than on the first embed."""
        self._ensure_loaded()

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text as the model is given them: cut at `max_tokens`,
        not padded."""
        encodings = self._ensure_loaded().tokenizer.encode_batch(list(texts))
        return [encoding.ids for encoding in encodings]

    @property
    def identity(self) -> str:
        return self._described.get()[0]

    @property
    def dimension(self) -> int:
        return self._described.get()[1]

    def _describe(self) -> tuple[str, int]:
        """(identity, dimension): what a store checks on opening. Read from the verified
        int8 copy's record when it says them, so a process that never embeds (a keyword
        search, `kb status`) loads neither onnxruntime nor the model; else from loading."""
        light = self._light_description()
        if light is not None:
            return light
        loaded = self._ensure_loaded()
        return loaded.identity, loaded.dimension

    def _light_description(self) -> tuple[str, int] | None:
        if self._int8_cache is None or self._loaded.done:
            return None
        source = self._source
        model_sha = hash_verified(source.model, source.model_sha256, "model file")
        recorded = recorded_copy(copy_folder(self._int8_cache, source, model_sha))
        if recorded is None:
            return None
        int8_sha, dimension = recorded
        _, tokenizer_sha = read_tokenizer(source)
        return self._identity(model_sha, tokenizer_sha, int8_sha, dimension), dimension

    def _identity(self, model_sha: str, tokenizer_sha: str, int8_sha: str | None, dim: int) -> str:
        source = self._source
        hashes = model_sha[:12] if source.model_sha256 else f"{model_sha[:12]}.{tokenizer_sha[:8]}"
        if int8_sha:
            hashes += f":q8.{int8_sha[:8]}"
        identity = f"minilm:{source.name}:{hashes}:{dim}"
        if self._max_tokens != DEFAULT_MAX_TOKENS:
            identity += f":t{self._max_tokens}"
        return identity

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        loaded = self._ensure_loaded()
        ids = self.token_ids(texts)
        # Length-sorted batches pad each input only to its neighbours' length; with the mask
        # built from the real counts this gives the same vectors as padding everything to
        # max_tokens, faster (notes/offline-models.md).
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.empty((len(ids), loaded.dimension), dtype=np.float32)
        for batch in token_batches(order, [len(row) for row in ids], self._batch_size):
            # Shrinking after every call, not only the last: the next call's differently
            # sized buffers would otherwise be allocated beside the kept ones.
            out[batch] = self._run(loaded, [ids[i] for i in batch], shrink=True)
        return as_lists(out)

    def embed_query(self, text: str) -> list[float]:
        loaded = self._ensure_loaded()
        return as_lists(self._run(loaded, [loaded.tokenizer.encode(text).ids]))[0]

    def _run(self, loaded: _Loaded, ids: list[list[int]], *, shrink: bool = False) -> Matrix:
        options = shrink_arena() if shrink else None
        return pooled(loaded.session, loaded.input_names, loaded.output_name, ids, options)

    def _ensure_loaded(self) -> _Loaded:
        return self._loaded.get()

    def _load(self) -> _Loaded:
        source = self._source
        model_sha = hash_verified(source.model, source.model_sha256, "model file")
        tokenizer_json, tokenizer_sha = read_tokenizer(source)
        try:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_str(tokenizer_json)
        except Exception as err:
            raise EmbedderError(
                f"{str(source.tokenizer)!r} is not a valid tokenizer.json: {err}."
            ) from err
        # The shipped tokenizer.json pads every input to 128 tokens and cuts at 128; padding
        # must go (the mask is built from real lengths) and the cut is ours to choose.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self._max_tokens)

        if self._int8_cache is not None:
            folder = copy_folder(self._int8_cache, source, model_sha)
            self.int8 = ready_copy(folder, source.model, tokenizer, self._threads)
        path = self.int8.path if self.int8 else source.model
        threads = self._threads or (self.int8.threads if self.int8 else None)
        try:
            session = inference.open_session(path, threads)
        except Exception as err:
            raise EmbedderError(
                f"onnxruntime cannot load {str(path)!r}: {err}. "
                "It must be an ONNX export of a sentence-transformer."
            ) from err
        input_names, output_name, dimension = check_session(session, path)
        int8_sha = self.int8.sha256 if self.int8 else None
        identity = self._identity(model_sha, tokenizer_sha, int8_sha, dimension)
        if self.int8:
            note_dimension(self.int8, dimension)
        log.info("embedder %s loaded from %s (%s threads)", identity, path, threads or "default")
        return _Loaded(session, tokenizer, input_names, output_name, dimension, identity)


def token_batches(order: list[int], lengths: list[int], batch_size: int) -> Iterator[list[int]]:
    """Consecutive runs of `order` (sorted by length) within both batch limits: at most
    `batch_size` texts, and at most `MAX_BATCH_TOKENS` padded tokens."""
    batch: list[int] = []
    for index in order:
        # Sorted ascending, so the newcomer sets the padded width of the batch.
        too_wide = (len(batch) + 1) * lengths[index] > MAX_BATCH_TOKENS
        if batch and (len(batch) == batch_size or too_wide):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch


__all__ = ["DEFAULT_MAX_TOKENS", "MAX_BATCH_TOKENS", "MiniLMEmbedder", "token_batches"]
