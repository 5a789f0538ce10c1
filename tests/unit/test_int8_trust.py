"""The int8 copy's cache is files anyone who can write it may change (`int8_record.py`):
a copy that is not the pinned one is checked against the float model before it is used,
a bad file is made again, the record is read only as a regular file, and the cache is
tightened to its user. Each of these once went wrong: a swapped model whose hash was
written into `int8.json` loaded unchecked, garbage with a matching hash made every
command exit 1, a named pipe as `int8.json` held `kb search` for ever."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kb_lsp.engine.embed import int8_copy, quantize
from kb_lsp.engine.embed.inference import ort_version
from kb_lsp.engine.embed.minilm import MiniLMEmbedder


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a verified int8 copy and its record, made once for the module."""
    cache = tmp_path_factory.mktemp("int8-good")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quantize, "machine_busy", lambda: False)
        patch.setattr(quantize, "fastest_threads", lambda run, cores=None: 1)
        patch.setattr(quantize, "faster_of", lambda runs, rounds=3: {"int8": 1.0, "float": 2.0})
        embedder = MiniLMEmbedder(int8_cache=cache)
        embedder.load()
    assert embedder.int8 is not None
    return embedder.int8.path.parent


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cache_with(good: Path, tmp_path: Path, model: bytes | None = None) -> tuple[Path, Path]:
    """A copy of the good cache, its model replaced by `model` and the record saying
    the new model's hash (as whoever replaced it would write): (cache, copy folder)."""
    cache = tmp_path / "cache"
    folder = cache / good.name
    shutil.copytree(good, folder)
    if model is not None:
        (folder / int8_copy.INT8_MODEL).write_bytes(model)
        record_path = folder / int8_copy.INT8_RECORD
        record = json.loads(record_path.read_text())
        record["sha256"] = hashlib.sha256(model).hexdigest()
        record_path.write_text(json.dumps(record))
    return cache, folder


def counting_derive(good: Path, calls: list[Path]) -> Any:
    def derive(source: Path, dest: Path) -> None:
        calls.append(dest)
        shutil.copyfile(good / int8_copy.INT8_MODEL, dest)

    return derive


def drifted(model: Path) -> bytes:
    """The copy with its float weights turned round: a model onnxruntime runs, whose
    vectors are not the float model's."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(model))
    for tensor in graph.graph.initializer:
        values = numpy_helper.to_array(tensor)
        if values.dtype == np.float32 and values.size > 1000:
            tensor.CopyFrom(numpy_helper.from_array(values[..., ::-1].copy(), tensor.name))
    data: bytes = graph.SerializeToString()
    return data


def test_the_copy_made_here_is_the_pinned_one(good: Path) -> None:
    pinned = int8_copy.PINNED_COPIES.get((ort_version(), quantize.RECIPE))
    if pinned is None:
        pytest.skip(f"no copy pinned for onnxruntime {ort_version()}: each is checked on load")
    assert sha(good / int8_copy.INT8_MODEL) == pinned


@pytest.mark.parametrize("kind", ["drifted", "garbage"])
def test_a_replaced_copy_with_its_hash_in_the_record_is_made_again(
    good: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    model = drifted(good / int8_copy.INT8_MODEL) if kind == "drifted" else b"garbage" * 100
    cache, folder = cache_with(good, tmp_path, model)
    calls: list[Path] = []
    monkeypatch.setattr(quantize, "derive", counting_derive(good, calls))
    embedder = MiniLMEmbedder(int8_cache=cache)
    embedder.load()
    assert calls == [folder / int8_copy.INT8_MODEL]
    assert embedder.int8 is not None and embedder.int8.sha256 == sha(good / int8_copy.INT8_MODEL)
    assert embedder.embed_query("payments")  # it runs


@pytest.mark.timeout(120)
def test_a_named_pipe_as_the_record_is_no_record(
    good: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, folder = cache_with(good, tmp_path)
    record = folder / int8_copy.INT8_RECORD
    record.unlink()
    os.mkfifo(record)
    calls: list[Path] = []
    monkeypatch.setattr(quantize, "derive", counting_derive(good, calls))
    embedder = MiniLMEmbedder(int8_cache=cache)
    assert embedder.identity  # described without waiting on the pipe
    embedder.load()
    assert embedder.int8 is not None and len(calls) == 1
    assert stat.S_ISREG(os.lstat(record).st_mode)  # a record again


def test_a_cache_others_may_write_is_tightened(good: Path, tmp_path: Path) -> None:
    cache, folder = cache_with(good, tmp_path)
    for path in (cache, folder, *folder.iterdir()):
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    embedder = MiniLMEmbedder(int8_cache=cache)
    embedder.load()
    assert embedder.int8 is not None
    for path in (cache, folder, *folder.iterdir()):
        assert stat.S_IMODE(os.lstat(path).st_mode) & 0o077 == 0, path
