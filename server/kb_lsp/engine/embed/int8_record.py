"""The int8 copy's record (`int8.json`) and its folder, taken as what they are: files on
disk that whoever can write the cache can change.

* The record is read only when it is a regular file (a named pipe in its place once held
  `kb search` for ever), of at most `MAX_RECORD_BYTES`, through the bounded parser, and
  its values are validated (`kept_record`); anything else is no record, and the copy is
  made again.
* The cache folder must be the user's alone (`private.refusal`), and is tightened to
  0700/0600 when it is not (a cache folder others could write was never tightened).
* What the record says of the copy's quality is not trusted: `int8_copy.py` checks a
  copy against the float model unless its hash is one this project pinned.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError

from kb_lsp.engine.embed import quantize
from kb_lsp.engine.private import refusal, tighten
from kb_lsp.engine.workspace.files import UnreadableFile, read_confined
from kb_lsp.json_bounds import JsonRefused, load_json

log = logging.getLogger("kb_lsp.engine.embed.int8_copy")

INT8_RECORD = "int8.json"
MAX_RECORD_BYTES = 64 * 1024
# The int8 copy is used only if, on the probe texts, every cosine to the float model's
# vector is at least this (per-channel int8 measured 0.985 at worst, mean 0.994, on the
# FastAPI docs; per-tensor 0.93 on average, which this rejects).
INT8_MIN_COSINE = 0.98


class Int8Record(BaseModel):
    """What `int8.json` may say of a verified copy (unknown keys ignored)."""

    model_config = ConfigDict(extra="ignore")

    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    threads: StrictInt
    min_cosine: Annotated[StrictFloat, Field(ge=INT8_MIN_COSINE, le=1.0 + 1e-6)]
    mean_cosine: Annotated[StrictFloat, Field(ge=INT8_MIN_COSINE, le=1.0 + 1e-6)]


def kept_record(record: dict[str, Any], path: Path) -> Int8Record | None:
    """The record's values when they can be used, `threads` clamped to the cores this
    process may use (a copied cache, a hand edit: `"threads": 1000000` once made
    onnxruntime start a million threads); None when a value is missing or wrong."""
    try:
        kept = Int8Record.model_validate(record)
    except ValidationError as err:
        log.warning("%s is not usable (%s)", path, err.errors()[0]["msg"])
        return None
    cores = min(quantize.available_cores(), quantize.MAX_THREADS)
    threads = min(max(kept.threads, 1), cores)
    if threads != kept.threads:
        log.warning("%s: %d threads is not possible here; using %d", path, kept.threads, threads)
    return kept.model_copy(update={"threads": threads})


def read_record(path: Path) -> dict[str, Any] | None:
    """The record as a JSON object, or None: missing, not a regular file, too large,
    not JSON or not an object."""
    try:
        data = read_confined(path, Path(os.path.realpath(path.parent)), MAX_RECORD_BYTES)
        value = load_json(data, str(path), max_bytes=MAX_RECORD_BYTES)
    except (UnreadableFile, JsonRefused) as err:
        if path.exists() or path.is_symlink():
            log.warning("%s is not used: %s", path, getattr(err, "reason", err))
        return None
    return value if isinstance(value, dict) else None


def write_record(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_suffix(".tmp")
    partial.unlink(missing_ok=True)  # a file of ours, never through what was put there
    with open(partial, "x", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=1))
    partial.replace(path)


def private_cache(folder: Path) -> str | None:
    """`folder` (and the cache above it) made, what of it is the user's tightened to
    0700/0600, and why it still is not the user's alone (None when it is)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    changed = tighten(folder.parent, say=False)
    if changed:
        log.warning(
            "The model cache %s was open to other users: %d files and folders are now "
            "private to you (0600/0700).",
            folder.parent,
            changed,
        )
    return refusal(folder)
