"""Rewrite the folded MiniLM graph into onnxruntime's fused CPU operators before it is
quantised (`quantize.derive`).

The shipped model is a `torch.export` graph: each layer's attention is a dozen small
operators (reshapes, transposes, two scalings, the mask added as a bias on the full
batch x heads x length x length scores, a NaN guard after the softmax) and each GELU five
elementwise ones. onnxruntime's own graph optimiser does not recognise these patterns: in
a per-operator profile of the int8 copy on fastapi chunks the NaN guard's `Where` alone
took 14 % of the time. Replaced by `com.microsoft` `MultiHeadAttention` (the padding mask
as a key mask) and `Gelu`, the same vectors come out (equal to float rounding on unpadded
tokens) with less work (figures in bench/results/README.md, issue 15 third pass).

Only exact matches are rewritten; anything else is left as it is, so a graph that does
not have these shapes is quantised unchanged (the counts returned say what happened).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import onnx
from onnx import TensorProto, helper, numpy_helper

MS_DOMAIN = "com.microsoft"
_KEY_MASK = "kb_attention_mask_int32"


@dataclass(frozen=True)
class Fused:
    attention: int
    gelu: int


class _Graph:
    """Producer/consumer lookups over a graph, rebuilt after each rewrite."""

    def __init__(self, model: onnx.ModelProto) -> None:
        graph = model.graph
        self.constants = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
        self.producer = {out: node for node in graph.node for out in node.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)

    def scalar(self, name: str) -> float | None:
        value = self.constants.get(name)
        return float(value.ravel()[0]) if value is not None and value.size == 1 else None

    def is_scalar(self, name: str, expected: float) -> bool:
        value = self.scalar(name)
        return value is not None and math.isclose(value, expected, rel_tol=1e-6)

    def made_by(self, name: str, op: str) -> onnx.NodeProto | None:
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op else None

    def sole_user(self, name: str, op: str) -> onnx.NodeProto | None:
        users = self.consumers.get(name, [])
        return users[0] if len(users) == 1 and users[0].op_type == op else None

    def inputs_of(self, name: str) -> set[str]:
        """The graph inputs `name` is computed from."""
        seen: set[str] = set()
        todo, inputs = [name], set()
        while todo:
            current = todo.pop()
            if current in seen or current in self.constants:
                continue
            seen.add(current)
            node = self.producer.get(current)
            if node is None:
                inputs.add(current)
            else:
                todo.extend(i for i in node.input if i)
        return inputs

    def projection(self, name: str) -> tuple[str, float] | None:
        """Back through the head split (Reshape/Transpose) and scalar scalings to the
        projection's bias Add: (its output, the product of the scalings)."""
        scale = 1.0
        while (node := self.producer.get(name)) is not None and node.op_type in (
            "Mul",
            "Reshape",
            "Transpose",
        ):
            if node.op_type == "Mul":
                factor = self.scalar(node.input[1])
                if factor is None:
                    return None
                scale *= factor
            name = node.input[0]
        return (name, scale) if self.made_by(name, "Add") is not None else None


def fuse(model: onnx.ModelProto) -> Fused:
    """Rewrite `model` in place (attention first, then GELU) and drop what is left unused."""
    attention = _fuse_attention(model)
    gelu = _fuse_gelu(model)
    if attention or gelu:
        _drop_unused(model)
        if not any(opset.domain == MS_DOMAIN for opset in model.opset_import):
            model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return Fused(attention, gelu)


def _fuse_attention(model: onnx.ModelProto) -> int:
    """softmax(q·kᵀ·scale + mask)·v with the heads split and merged around it →
    MultiHeadAttention(q, k, v, key mask) on the projections' outputs."""
    graph = model.graph
    if "attention_mask" not in {i.name for i in graph.input}:
        return 0
    found = _Graph(model)
    fused = 0
    for softmax in [node for node in graph.node if node.op_type == "Softmax"]:
        scored = found.made_by(softmax.input[0], "Add")
        if scored is None:
            continue
        matmuls = [node for i in scored.input if (node := found.made_by(i, "MatMul"))]
        if len(matmuls) != 1:
            continue
        scores = matmuls[0]
        # The other term must be the padding mask (made from attention_mask and the
        # inputs' shape), which MultiHeadAttention applies itself.
        bias_term = next(i for i in scored.input if i != scores.output[0])
        if "attention_mask" not in found.inputs_of(bias_term):
            continue
        query, key = found.projection(scores.input[0]), found.projection(scores.input[1])
        probs = softmax.output[0]
        # The export's NaN guard (a row with every key masked); a row always keeps its
        # [CLS] token here, and MultiHeadAttention masks with a finite value anyway.
        users = found.consumers.get(probs, [])
        guard = next((node for node in users if node.op_type == "IsNaN"), None)
        if guard is not None:
            where = found.sole_user(guard.output[0], "Where")
            if where is None or where.input[2] != probs or len(users) != 2:
                continue
            probs = where.output[0]
        mixed = found.sole_user(probs, "MatMul")
        if mixed is None or mixed.input[0] != probs or query is None or key is None:
            continue
        value = found.projection(mixed.input[1])
        merge = found.sole_user(mixed.output[0], "Transpose")
        merged = found.sole_user(merge.output[0], "Reshape") if merge is not None else None
        if value is None or value[1] != 1.0 or merged is None:
            continue
        scale = query[1] * key[1]
        bias = found.made_by(query[0], "Add")
        weights = found.constants.get(bias.input[1]) if bias is not None else None
        hidden = int(weights.size) if weights is not None else 0
        head_size = round(1.0 / scale**2) if scale > 0 else 0
        if not hidden or not head_size or hidden % head_size:
            continue
        attention = helper.make_node(
            "MultiHeadAttention",
            [query[0], key[0], value[0], "", _KEY_MASK],
            list(merged.output),
            name=f"kb_attention_{fused}",
            domain=MS_DOMAIN,
            num_heads=hidden // head_size,
            scale=scale,
        )
        at = list(graph.node).index(merged)
        graph.node.remove(merged)
        graph.node.insert(at, attention)
        fused += 1
    if fused:
        mask = helper.make_node(
            "Cast", ["attention_mask"], [_KEY_MASK], to=TensorProto.INT32, name="kb_key_mask"
        )
        graph.node.insert(0, mask)
        _drop_unused(model)  # the old attention's nodes, before the next pattern looks
    return fused


def _fuse_gelu(model: onnx.ModelProto) -> int:
    """x · 0.5 · (1 + erf(x / √2)) → Gelu(x)."""
    graph = model.graph
    found = _Graph(model)
    fused = 0
    for div in [node for node in graph.node if node.op_type == "Div"]:
        if not found.is_scalar(div.input[1], math.sqrt(2.0)):
            continue
        x = div.input[0]
        erf = found.sole_user(div.output[0], "Erf")
        plus = found.sole_user(erf.output[0], "Add") if erf else None
        if plus is None or not any(found.is_scalar(i, 1.0) for i in plus.input):
            continue
        half = found.sole_user(plus.output[0], "Mul")
        if half is None or not any(found.is_scalar(i, 0.5) for i in half.input):
            continue
        times_x = found.sole_user(half.output[0], "Mul")
        if times_x is None or x not in times_x.input:
            continue
        at = list(graph.node).index(div)
        for node in (div, erf, plus, half, times_x):
            graph.node.remove(node)
        graph.node.insert(
            at,
            helper.make_node(
                "Gelu", [x], list(times_x.output), name=f"kb_gelu_{fused}", domain=MS_DOMAIN
            ),
        )
        fused += 1
    return fused


def _drop_unused(model: onnx.ModelProto) -> None:
    """Remove nodes nothing reads (repeatedly), then initializers nothing reads."""
    graph = model.graph
    outputs = {o.name for o in graph.output}
    while True:
        read = {name for node in graph.node for name in node.input} | outputs
        dead = [node for node in graph.node if not any(o in read for o in node.output)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    read = {name for node in graph.node for name in node.input}
    for unused in [i for i in graph.initializer if i.name not in read]:
        graph.initializer.remove(unused)


__all__ = ["Fused", "fuse"]
