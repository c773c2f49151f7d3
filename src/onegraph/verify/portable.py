"""Does a model run on any stock ONNX runtime, on any host? Standard operators only, none locale-bound.

onegraph promises graphs made of standard operators: the ``ai.onnx`` and ``ai.onnx.ml`` domains, plus the
model's own local functions (whose bodies must obey the same rule). Some standard operators still depend
on the host's locale, so the same graph could compute different values on another machine:

* ``StringNormalizer`` (case mapping with a locale onnxruntime takes from the host; it fails to load
  where ``en_US.UTF-8`` is missing);
* ``Cast`` / ``CastLike`` from text to a floating-point type (``std::stod``, which reads the decimal
  separator of ``LC_NUMERIC``) and from a floating-point type to text (``snprintf("%.8g")``, same).

``Cast`` between text and integers (``std::stoll`` / ``std::to_string``) is locale-independent for the
digits onegraph feeds it.

One exception is written on purpose: a ``HashingVectorizer`` needs the murmurhash3 of each token's UTF-8
bytes, which no standard operator computes; onegraph uses onnxruntime's contrib operator
``com.microsoft.MurmurHash3`` (:data:`ONNXRUNTIME_OPS`), declared in the model's opset imports. Such a model
runs on onnxruntime only: :func:`portability_problems` reports it, unless called with
``runtime="onnxruntime"``, which accepts the operators of :data:`ONNXRUNTIME_OPS` (and no other). :func:`portability_problems` walks the main graph, every subgraph (``Loop``,
``If``, ``Scan`` bodies) and every function body, and lists what breaks the promise.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx
import onnx.shape_inference
from onnx import TensorProto

from onegraph.check import irsafe, native

__all__ = ["STANDARD_DOMAINS", "LOCALE_DEPENDENT_OPS", "ONNXRUNTIME_OPS", "all_nodes", "portability_problems",
           "onnxruntime_ops", "subgraphs"]

STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
#: onnxruntime's contrib operators onegraph writes ((domain, op_type) -> why), each locale-free
ONNXRUNTIME_OPS = {("com.microsoft", "MurmurHash3"): "HashingVectorizer's murmurhash3 of UTF-8 bytes"}
LOCALE_DEPENDENT_OPS = ("StringNormalizer",)
_FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    """The graphs ``node`` holds in its attributes (``If`` branches, ``Loop`` / ``Scan`` bodies)."""
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            yield from attr.graphs


def _nodes(graph: onnx.GraphProto, where: str) -> Iterator[tuple[onnx.NodeProto, str]]:
    for node in graph.node:
        yield node, where
        for sub in subgraphs(node):
            yield from _nodes(sub, f"{where} > {node.op_type} {node.name or ''}".rstrip())


def all_nodes(model: onnx.ModelProto) -> Iterator[tuple[onnx.NodeProto, str]]:
    """Every node of the model with where it is: main graph, subgraphs, function bodies."""
    yield from _nodes(model.graph, "graph")
    for fn in model.functions:
        for node in fn.node:
            yield node, f"function {fn.domain}.{fn.name}"
            for sub in subgraphs(node):
                yield from _nodes(sub, f"function {fn.domain}.{fn.name} > {node.op_type}")


def _inlined(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its local functions inlined by onnx-ir (onnx 1.23's own inliner leaves a graph whose
    shape inference crashes the process when a function body holds a Loop, as onegraph's text steps do)."""
    copy = irsafe.from_proto(model)
    irsafe.inline(copy)
    return irsafe.to_proto(copy)


def _typed(model: onnx.ModelProto) -> tuple[dict[str, int], onnx.GraphProto] | None:
    """The main graph with local functions inlined, and the element type of every value in it (shape
    inference), or None when inference fails."""
    try:
        inlined = _inlined(model) if model.functions else model
        inferred = native.infer_shapes(inlined)
    except Exception:  # onnx raises several types for models it cannot infer
        return None
    types: dict[str, int] = {}

    def collect(graph: onnx.GraphProto) -> None:
        for v in list(graph.input) + list(graph.output) + list(graph.value_info):
            if v.type.HasField("tensor_type"):
                types[v.name] = v.type.tensor_type.elem_type
        for t in graph.initializer:
            types[t.name] = t.data_type
        for node in graph.node:
            for sub in subgraphs(node):
                collect(sub)

    collect(inferred.graph)
    return types, inferred.graph


def onnxruntime_ops(model: onnx.ModelProto) -> list[str]:
    """The operators of :data:`ONNXRUNTIME_OPS` that ``model`` uses (``domain.op_type``, once each): the model
    runs on onnxruntime only when this is not empty."""
    found = {f"{n.domain}.{n.op_type}" for n, _ in all_nodes(model) if (n.domain, n.op_type) in ONNXRUNTIME_OPS}
    return sorted(found)


def portability_problems(model: onnx.ModelProto, *, runtime: str | None = None) -> list[str]:
    """What keeps ``model`` from running identically on any stock runtime and host (empty: nothing).

    Each problem names the operator and where it is (graph, subgraph path, or function). ``runtime=
    "onnxruntime"``: the model is meant for onnxruntime, whose contrib operators of :data:`ONNXRUNTIME_OPS`
    are then accepted (each still needs its domain's opset import).
    """
    if runtime not in (None, "onnxruntime"):
        raise ValueError(f"runtime={runtime!r}: None (any runtime) or 'onnxruntime'")
    problems = []
    local = {(f.domain, f.name) for f in model.functions}
    imported = {o.domain for o in model.opset_import}
    for node, where in all_nodes(model):
        if node.domain not in STANDARD_DOMAINS and (node.domain, node.op_type) not in local:
            if (node.domain, node.op_type) in ONNXRUNTIME_OPS:
                if node.domain not in imported:
                    problems.append(f"{node.domain}.{node.op_type} ({where}): the model does not import its domain")
                elif runtime != "onnxruntime":
                    problems.append(f"{node.domain}.{node.op_type} ({where}) is an onnxruntime contrib operator "
                                    f"({ONNXRUNTIME_OPS[node.domain, node.op_type]}): the model runs on onnxruntime "
                                    "only")
                continue
            problems.append(f"{node.domain}.{node.op_type} ({where}) is not a standard operator")
        if node.op_type in LOCALE_DEPENDENT_OPS and node.domain in STANDARD_DOMAINS:
            problems.append(f"{node.op_type} ({where}) depends on the host locale")
    typed = _typed(model)
    if typed is None:
        return problems + ["the graph's types cannot be inferred, so its Cast nodes were not checked"]
    types, graph = typed
    for node, where in _nodes(graph, "graph (functions inlined)"):
        if node.op_type not in ("Cast", "CastLike") or node.domain not in STANDARD_DOMAINS:
            continue
        source = types.get(node.input[0])
        if node.op_type == "Cast":
            target = next((a.i for a in node.attribute if a.name == "to"), None)
        else:
            target = types.get(node.input[1])
        text_to_float = source == TensorProto.STRING and target in _FLOATS
        float_to_text = source in _FLOATS and target == TensorProto.STRING
        if text_to_float or float_to_text:
            problems.append(f"{node.op_type} {node.name or ''} ({where}) converts between text and floating "
                            "point, which depends on the host locale's decimal separator")
    return problems
