"""The constant value of a tensor, when it has one: initializer, ``Constant`` node, or a foldable computation.

Down-converting an operator whose input became an attribute (``axes`` of Unsqueeze/Squeeze/Reduce*,
``split``, ``pads``, ``scales``, Slice's ``starts``/``ends``...) needs that input's value when converting.
onnx's converter only looks for an initializer or a ``Constant`` node and otherwise stops with an assertion
that names neither node nor tensor ("input is not in initializer", "No initializer or constant input to node
found"). :func:`constant_input` also folds a computation whose leaves are constants or the ``Shape`` of a
tensor with a fully known shape (what exporters emit for ``x.size(1)``), evaluating it with onnx's
``ReferenceEvaluator``; and when the value cannot be known, it says which graph input it depends on.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import onnx_ir as ir

__all__ = ["TARGET_DOMAIN", "Constant", "constant_input"]

#: domain of the nodes onegraph took across a step while onnx's converter runs on the others (see opset)
TARGET_DOMAIN = "onegraph.converted"

#: operators whose value depends on more than their inputs: never folded
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                     "Bernoulli"}


@dataclasses.dataclass
class Constant:
    """A tensor's value when known at conversion time.

    ``value`` is None when it is not known; ``how`` says where the value came from (``initializer``,
    ``Constant node``, ``folded``, ``overridable initializer``) or, when unknown, why.
    """

    value: np.ndarray | None
    how: str

    @property
    def known(self) -> bool:
        return self.value is not None


def constant_input(value: ir.Value | None, opset: int) -> Constant:
    """The value of ``value`` if it can be known without running the model.

    Parameters
    ----------
    value:
        A tensor of an onnx-ir graph (None for an absent optional input).
    opset:
        Default-domain opset of the graph, to evaluate folded nodes with their own definitions.
    """
    if value is None:
        return Constant(None, "the input is absent")
    if value.is_graph_input():
        if value.const_value is not None:
            return Constant(value.const_value.numpy(), "overridable initializer")
        return Constant(None, f"{value.name!r} is a graph input, not an initializer")
    tensor = ir.convenience.get_const_tensor(value)
    producer = value.producer()
    if tensor is None and producer is not None and producer.op_type == "Constant" \
            and producer.domain == TARGET_DOMAIN and "value" in producer.attributes:
        tensor = producer.attributes["value"].as_tensor()  # a Constant node already relabelled
    if tensor is not None:
        return Constant(tensor.numpy(), "initializer" if value.is_initializer() else "Constant node")
    return _fold(value, opset)


def _fold(value: ir.Value, opset: int) -> Constant:
    """Evaluate the nodes ``value`` depends on when all of them are constant (see module doc)."""
    known: dict[str, np.ndarray] = {}
    nodes: list[ir.Node] = []
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if v is None or v.name in seen:
            continue
        seen.add(v.name)
        if v.is_graph_input() and v.const_value is None:
            return Constant(None, f"it is computed from graph input {v.name!r}")
        t = v.const_value if v.const_value is not None else ir.convenience.get_const_tensor(v)
        if t is not None:
            known[v.name] = t.numpy()
            continue
        node = v.producer()
        if node is None:
            return Constant(None, f"{v.name!r} has no producer and no value")
        if node.op_type in _NONDETERMINISTIC or node.domain not in ("", "ai.onnx"):
            return Constant(None, f"it is computed by {node.op_type} node {node.name!r}")
        if any(a.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS) for a in node.attributes.values()):
            return Constant(None, f"it is computed by control flow ({node.op_type} node {node.name!r})")
        if node.op_type == "Shape":
            shape = node.inputs[0].shape if node.inputs[0] is not None else None
            if shape is None or not shape.is_static():
                return Constant(None, f"it depends on the shape of {node.inputs[0].name!r}, which is not fixed")
            dims = np.array([int(d) for d in shape], dtype=np.int64)
            start = node.attributes.get_int("start", 0)
            end = node.attributes.get_int("end", len(dims))
            known[node.outputs[0].name] = dims[start:end]
            continue
        if node not in nodes:
            nodes.append(node)
        stack.extend(node.inputs)
    return _evaluate(value, nodes, known, opset)


def _evaluate(value: ir.Value, nodes: list[ir.Node], known: dict[str, np.ndarray], opset: int) -> Constant:
    from onnx.reference import ReferenceEvaluator

    protos = [ir.serde.serialize_node(n) for n in _ordered(nodes)]
    graph = onnx.helper.make_graph(
        protos, "fold", [], [onnx.ValueInfoProto(name=value.name)],
        initializer=[onnx.numpy_helper.from_array(np.asarray(a), name) for name, a in known.items()])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    try:
        (result,) = ReferenceEvaluator(model).run(None, {})
    except Exception as exc:  # the reference implementation's own errors
        return Constant(None, f"folding it failed ({type(exc).__name__}: {str(exc)[:200]})")
    return Constant(np.asarray(result), "folded")


def _ordered(nodes: list[ir.Node]) -> list[ir.Node]:
    """``nodes`` in an order where each comes after the nodes that produce its inputs."""
    members = set(map(id, nodes))
    done: set[int] = set()
    order: list[ir.Node] = []

    def visit(n: ir.Node) -> None:
        if id(n) in done:
            return
        done.add(id(n))
        for v in n.inputs:
            p = v.producer() if v is not None else None
            if p is not None and id(p) in members:
                visit(p)
        order.append(n)

    for n in nodes:
        visit(n)
    return order
