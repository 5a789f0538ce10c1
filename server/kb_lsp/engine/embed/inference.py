"""onnxruntime for a sentence-transformer: the session every model opens with, the check of
what a loaded model takes and gives, and mean-pooled vectors of token ids.

onnxruntime is imported by the functions that need it, not with this module. Its memory
arena gives back the buffers of a document batch after it, and the model is loaded from
its path, not from bytes in memory.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kb_lsp.engine.embed.embeddings import EmbedderError, Matrix, normalise

if TYPE_CHECKING:
    import onnxruntime as ort


def open_session(path: Path, threads: int | None) -> ort.InferenceSession:
    """An onnxruntime session on the model file at `path`, with `threads` intra-op
    threads (None: onnxruntime's default); every model the embedders run opens here."""
    # onnxruntime (and the tokenizer) load with the model, not with this module: a
    # keyword search or `kb status` never embeds and should not pay their import.
    import onnxruntime as ort

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


@functools.cache
def ort_version() -> str:
    """onnxruntime's version from its distribution's metadata, without importing it (the
    int8 copy's folder is named by it, and a keyword search must find that folder
    without loading the runtime)."""
    from importlib.metadata import version

    return version("onnxruntime")


# After a document batch the arena returns the batch's buffers (it would keep the largest
# batch's activations for ever: +300 MiB); measured to cost no speed.
@functools.cache
def shrink_arena() -> ort.RunOptions:
    """Run options that give the memory arena's buffers back after the run."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def check_session(session: ort.InferenceSession, path: Path) -> tuple[frozenset[str], str, int]:
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


def pooled(
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
        return normalise(hidden)
    weights = mask[:, :, np.newaxis].astype(np.float32)
    mean = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return normalise(mean)


__all__ = ["check_session", "open_session", "ort_version", "pooled", "shrink_arena"]
