"""The graph rewrite of the int8 recipe (`fusion.py`), on the real packaged model: the
export's attention and GELU become onnxruntime's fused operators and compute the same
hidden states; graphs without those shapes are left alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from kb_lsp.engine.embed.fusion import fuse
from kb_lsp.engine.embed.minilm import MiniLMEmbedder

TEXTS = [
    "Payment files for the Mexico subsidiary",
    "How do I declare a path parameter with a type hint? " * 8,
    "kubectl",
    "| country | cut-off |\n|---|---|\n| Mexico | 14:30 |",
]


@pytest.fixture(scope="module")
def folded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged model folded by onnxruntime, as `quantize.derive` folds it."""
    source = MiniLMEmbedder().source.model
    out = tmp_path_factory.mktemp("fusion") / "folded.onnx"
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(out)
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    return out


def hidden_states(model: Path) -> tuple[np.ndarray, np.ndarray]:
    """last_hidden_state of TEXTS in one padded batch, and the mask."""
    ids = MiniLMEmbedder().token_ids(TEXTS)
    width = max(len(row) for row in ids)
    input_ids = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros_like(input_ids)
    for row, tokens in enumerate(ids):
        input_ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": 0 * input_ids}
    return np.asarray(session.run(None, feeds)[0]), mask


def op_counts(model: onnx.ModelProto) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in model.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def test_attention_and_gelu_are_fused_and_compute_the_same(folded: Path, tmp_path: Path) -> None:
    model = onnx.load(str(folded))
    before = op_counts(model)
    fused = fuse(model)
    after = op_counts(model)
    # all-MiniLM-L6-v2: six layers, one attention and one GELU each.
    assert (fused.attention, fused.gelu) == (6, 6)
    assert after["MultiHeadAttention"] == 6 and after["Gelu"] == 6
    for gone in ("Softmax", "Erf", "IsNaN", "Where"):
        assert gone in before and gone not in after
    assert sum(after.values()) < sum(before.values()) // 2
    # Every weight the quantiser will see is still there.
    assert after["MatMul"] == 36
    rewritten = tmp_path / "fused.onnx"
    onnx.save(model, str(rewritten))

    expected, mask = hidden_states(folded)
    got, _ = hidden_states(rewritten)
    real = mask.astype(bool)  # padded positions are never pooled
    assert np.abs(got[real] - expected[real]).max() < 1e-3
    assert np.abs(expected[real]).max() > 1.0  # not a comparison of zeros


def test_the_int8_copy_is_made_from_the_fused_graph(model_cache: Path) -> None:
    embedder = MiniLMEmbedder(int8_cache=model_cache)
    embedder.load()
    assert embedder.int8 is not None
    counts = op_counts(onnx.load(str(embedder.int8.path)))
    assert counts.get("MultiHeadAttention") == 6 and counts.get("Gelu") == 6
    assert counts.get("MatMulInteger", 0) >= 36


def small_graph(divisor: float) -> onnx.ModelProto:
    """y = x * 0.5 * (1 + erf(x / divisor)) on a projection: a GELU only for divisor √2."""
    weight = numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
    consts = [
        numpy_helper.from_array(np.array(value, dtype=np.float32), name)
        for name, value in (("d", divisor), ("one", 1.0), ("half", 0.5))
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["p"]),
        helper.make_node("Div", ["p", "d"], ["q"]),
        helper.make_node("Erf", ["q"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["a"]),
        helper.make_node("Mul", ["half", "a"], ["h"]),
        helper.make_node("Mul", ["p", "h"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [weight, *consts],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_only_exact_patterns_are_rewritten() -> None:
    gelu = small_graph(2**0.5)
    assert fuse(gelu).gelu == 1
    assert op_counts(gelu) == {"MatMul": 1, "Gelu": 1}
    assert {i.name for i in gelu.graph.initializer} == {"w"}  # the constants went with it

    other = small_graph(2.0)  # not erf(x/√2): some other function, kept as it is
    untouched = onnx.load_from_string(other.SerializeToString())
    result = fuse(other)
    assert (result.attention, result.gelu) == (0, 0)
    assert other == untouched
