"""The packaged model's int8 copy: its folder in the cache, its record, making and checking it.

With a cache folder (the knowledge base passes `knowledge.model_cache()`: `$KB_MODEL_CACHE`,
else `$XDG_CACHE_HOME/kb-lsp/models`, i.e. `~/.cache/kb-lsp/models` — per user, not per
store), the packaged model runs as a real int8 copy derived once per machine
(`quantize.py`): about twice as fast and a third of the memory. Making it takes from
seconds to minutes, so it is announced as a notice (`terminal/logs.py`: the command line
shows that one line without `--verbose`). The copy is checked against the float model on
`PROBES` — every cosine at least `INT8_MIN_COSINE` — or not used (a warning says so, and
the float model runs). Its identity carries the copy's hash, so an index made with the
float model is re-embedded once. The intra-op thread count is measured on the machine
when the copy is made (again by the first start on a free machine when the cores were
busy then: `quantize.machine_busy`), and the copy is kept only if it embeds a batch faster than the
float model there (`FLOAT_MARGIN`): int8 wins by the CPU's int8 instructions (VNNI), and
the folder is named by the CPU's kind (`quantize.cpu_signature`), so a cache carried to
another kind of CPU measures again.

Next to the copy, `INT8_RECORD` keeps the verdict, the measurements and the model's
dimension, so a later process can describe the embedder without loading it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from filelock import FileLock

# Both called through their module, so that a stand-in set on it (a test's) is what runs.
from kb_lsp.engine.embed import inference, quantize
from kb_lsp.engine.embed.embeddings import Matrix
from kb_lsp.engine.embed.inference import check_session, ort_version, pooled
from kb_lsp.engine.embed.int8_record import (
    INT8_MIN_COSINE,
    INT8_RECORD,
    kept_record,
    private_cache,
    read_record,
    write_record,
)
from kb_lsp.engine.embed.model_source import ModelSource, hash_verified
from kb_lsp.engine.memory import release_free_memory
from kb_lsp.engine.private import tighten

if TYPE_CHECKING:
    import onnxruntime as ort
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

# The int8 copy is used only if, on these texts, every cosine to the float model's vector
# is at least INT8_MIN_COSINE (`int8_record.py`).
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
# The copies this project derived from the packaged model and checked, by (onnxruntime's
# version, `quantize.RECIPE`): `derive` makes the same bytes each time, so a copy with
# this hash is that copy; any other is checked against the float model when it loads.
PINNED_COPIES = {
    ("1.32.0", 2): "38e12a85ef9d8ceb440ea38e0940dd52697c833c4531cf000804d6092331285a",
}
# The float model is kept only when it is clearly faster: within 10 % the int8 copy's third
# of the memory wins.
FLOAT_MARGIN = 0.9
INT8_MODEL = "model.int8.onnx"


@dataclass(frozen=True)
class Int8Copy:
    """The verified int8 copy of a model (`quantize.py`) and what was measured for it."""

    path: Path
    sha256: str
    threads: int
    min_cosine: float
    mean_cosine: float


def copy_folder(cache: Path, source: ModelSource, model_sha: str) -> Path:
    """The folder in `cache` of the copy of `source` (whose model hashes to `model_sha`):
    named by the model, onnxruntime's version, the recipe and the CPU's kind, so an
    upgrade of either, or a cache carried to another kind of CPU, makes and measures a
    new copy (the copy's bytes, and so the index's identity, stay the same)."""
    name = f"{source.name}-{model_sha[:16]}-ort{ort_version()}-r{quantize.RECIPE}"
    return cache / f"{name}-{quantize.cpu_signature()}"


def recorded_copy(folder: Path) -> tuple[str, int] | None:
    """(the copy's sha256, the model's dimension) when the folder's record says both of a
    verified copy that is still intact, read without loading anything; else None."""
    record_path = folder / INT8_RECORD
    record = read_record(record_path)
    dimension = record.get("dimension") if record else None
    if record is None or not record.get("ok") or type(dimension) is not int:
        return None
    kept = kept_record(record, record_path)
    copy = record_path.with_name(INT8_MODEL)
    if kept is None or not copy.is_file():
        return None
    if hash_verified(copy, None, "int8 model copy") != kept.sha256:
        return None  # loading makes it again, under another identity
    return kept.sha256, dimension


def ready_copy(
    folder: Path, source: Path, tokenizer: Tokenizer, threads: int | None
) -> Int8Copy | None:
    """The verified int8 copy of the model file `source` from `folder`, made now if
    missing; None (with a warning) when it cannot be made or drifts from the float model.
    `threads`: None measures the thread count when the copy is made."""
    try:
        why = private_cache(folder)
        if why is not None:
            log.warning(
                "Not using the int8 model cache %s: it is not yours alone (%s); using the "
                "float model. Set KB_MODEL_CACHE to a folder of your own.",
                folder,
                why,
            )
            return None
        # Two windows starting at once: one derives, the other waits and reads.
        with FileLock(str(folder / ".lock"), timeout=600):
            copy = _cached_or_new(folder, source, tokenizer, threads)
        tighten(folder, say=False)  # what was made now, under any umask
        return copy
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


def _cached_or_new(
    folder: Path, source: Path, tokenizer: Tokenizer, threads: int | None
) -> Int8Copy | None:
    record_path, model = folder / INT8_RECORD, folder / INT8_MODEL
    record = read_record(record_path)
    if record is not None and record.get("float_faster"):
        log.info("embedding with the float model: %s", record.get("reason"))
        return None
    if record is not None and not record.get("ok"):
        log.warning(
            "The int8 copy of the embedding model was rejected when it was made (%s); "
            "using the float model. Delete %s to try again.",
            record.get("reason"),
            folder,
        )
        return None
    if record is not None and model.is_file():
        kept = kept_record(record, record_path)
        digest = hash_verified(model, None, "int8 model copy")
        if kept is not None and digest == kept.sha256 and _trusted(source, model, tokenizer):
            used = kept.threads
            if record.get("busy") and threads is None and not quantize.machine_busy():
                used = _measure_again(model, tokenizer, record, record_path)
            return Int8Copy(model, digest, used, kept.min_cosine, kept.mean_cosine)
        log.warning("The cached int8 model %s is damaged or not ours; making it again.", model)
    return _make(folder, source, tokenizer, threads)


def _trusted(source: Path, copy: Path, tokenizer: Tokenizer) -> bool:
    """Whether the copy may be used: one this project pinned, or one whose vectors stay
    close to the float model's now (a record says what anyone could write into it)."""
    digest = hash_verified(copy, None, "int8 model copy")
    if PINNED_COPIES.get((ort_version(), quantize.RECIPE)) == digest:
        return True
    try:
        checked = _verify_int8(source, copy, tokenizer)
    except Exception as err:  # not a model onnxruntime can run: garbage with a hash
        log.warning("The cached int8 model %s does not run (%s: %s)", copy, type(err).__name__, err)
        return False
    return checked.min_cosine >= INT8_MIN_COSINE


def _make(folder: Path, source: Path, tokenizer: Tokenizer, threads: int | None) -> Int8Copy | None:
    record_path, model = folder / INT8_RECORD, folder / INT8_MODEL
    log.info(
        "making the int8 copy of the embedding model, once per machine (a minute or "
        "more on a busy machine), in %s",
        folder,
        extra={"notice": True},  # said at a terminal without --verbose: a wait begins
    )
    quantize.derive(source, model)
    copy = _verify_int8(source, model, tokenizer)
    if copy.min_cosine < INT8_MIN_COSINE:
        reason = (
            f"its vectors drift from the float model's (lowest cosine {copy.min_cosine:.3f}"
            f" < {INT8_MIN_COSINE} on {len(PROBES)} probe texts)"
        )
        write_record(record_path, {"ok": False, "reason": reason})
        model.unlink(missing_ok=True)
        log.warning("Not using the int8 copy of the embedding model: %s.", reason)
        return None
    busy = threads is None and quantize.machine_busy()
    threads = threads or _fastest_threads(model, tokenizer)
    if _float_is_faster(source, model, tokenizer, threads, record_path):
        return None
    copy = Int8Copy(model, copy.sha256, threads, copy.min_cosine, copy.mean_cosine)
    write_record(
        record_path,
        {
            "ok": True,
            "sha256": copy.sha256,
            "threads": threads,
            "min_cosine": copy.min_cosine,
            "mean_cosine": copy.mean_cosine,
            "onnxruntime": ort_version(),
            "source": str(source),
            "busy": busy,  # measured while other work held the cores: measure again later
        },
    )
    log.info(
        "int8 embedding model ready: cosine to the float model min %.4f, mean %.4f; %d threads",
        copy.min_cosine,
        copy.mean_cosine,
        threads,
    )
    return copy


def _fastest_threads(model: Path, tokenizer: Tokenizer) -> int:
    return quantize.fastest_threads(
        lambda n: _probe_run(inference.open_session(model, n), tokenizer, batched=True)
    )


def _measure_again(
    model: Path, tokenizer: Tokenizer, record: dict[str, Any], record_path: Path
) -> int:
    """The thread count measured anew, now that the cores are free: the first measure,
    taken while other work held them, favours one thread (more gain nothing then), which
    then costs every embedding on a free machine."""
    threads = _fastest_threads(model, tokenizer)
    log.info("embedder threads measured again (first on a busy machine): %d", threads)
    try:
        write_record(record_path, {**record, "threads": threads, "busy": False})
    except OSError as err:  # a read-only cache: measured again next time
        log.debug("could not update %s: %s", record_path, err)
    return threads


def _float_is_faster(
    source: Path, model: Path, tokenizer: Tokenizer, threads: int, record_path: Path
) -> bool:
    """Whether, on this CPU, the float model embeds a batch faster than the int8 copy:
    int8 wins by the CPU's int8 instructions (VNNI), and without them it may not win at
    all. When float is faster, the record says so and the float model runs."""
    seconds = quantize.faster_of(
        {
            "int8": _probe_run(inference.open_session(model, threads), tokenizer, batched=True),
            "float": _probe_run(inference.open_session(source, threads), tokenizer, batched=True),
        }
    )
    log.info(
        "embedding a batch on this CPU (%s): int8 %.0f ms, float %.0f ms",
        quantize.cpu_signature(),
        seconds["int8"] * 1000,
        seconds["float"] * 1000,
    )
    if seconds["float"] >= seconds["int8"] * FLOAT_MARGIN:
        return False
    reason = (
        f"on this CPU ({quantize.cpu_signature()}) the float model embeds a batch in "
        f"{seconds['float'] * 1000:.0f} ms and the int8 copy in {seconds['int8'] * 1000:.0f} ms"
    )
    write_record(record_path, {"ok": False, "float_faster": True, "reason": reason})
    model.unlink(missing_ok=True)
    log.info("embedding with the float model: %s", reason)
    return True


def note_dimension(copy: Int8Copy, dimension: int) -> None:
    """Add the loaded model's dimension to a record made before records said it, so the
    next process can describe the embedder without loading it."""
    path = copy.path.with_name(INT8_RECORD)
    record = read_record(path)
    if record is not None and record.get("ok") and record.get("dimension") != dimension:
        try:
            write_record(path, {**record, "dimension": dimension})
        except OSError as err:  # a read-only cache: the next process loads the model
            log.debug("could not note the dimension in %s: %s", path, err)


def _probe_run(
    session: ort.InferenceSession, tokenizer: Tokenizer, *, batched: bool = False
) -> Callable[[], Matrix]:
    """A function embedding `PROBES` with `session`: one at a time (verification), or
    as one padded batch (the thread count's timing: threads pay off on document
    batches, the work that takes time, and hardly on one short text)."""
    input_names, output_name, _ = check_session(session, Path("probe"))
    ids = [encoding.ids for encoding in tokenizer.encode_batch(list(PROBES))]

    def run() -> Matrix:
        if batched:  # cut to a document batch's size (13 x 64 <= minilm.MAX_BATCH_TOKENS)
            return pooled(session, input_names, output_name, [row[:64] for row in ids], None)
        return np.concatenate(
            [pooled(session, input_names, output_name, [row], None) for row in ids]
        )

    return run


def _verify_int8(source: Path, copy: Path, tokenizer: Tokenizer) -> Int8Copy:
    """Cosines between the float and the int8 model's vectors of `PROBES`."""
    reference = _probe_run(inference.open_session(source, None), tokenizer)()
    candidate = _probe_run(inference.open_session(copy, None), tokenizer)()
    cosines = (reference * candidate).sum(axis=1)
    digest = hash_verified(copy, None, "int8 model copy")
    return Int8Copy(copy, digest, 0, float(cosines.min()), float(cosines.mean()))


__all__ = [
    "INT8_MIN_COSINE",
    "INT8_MODEL",
    "INT8_RECORD",
    "PROBES",
    "Int8Copy",
    "copy_folder",
    "note_dimension",
    "ready_copy",
    "recorded_copy",
]
