"""Traversal of a ModelProto: every node list (graph, subgraphs, functions) with the names it can see.

Pure Python over an already parsed message: nothing here runs native code on the model's bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import onnx

__all__ = ["DEFAULT_DOMAINS", "domain_of", "Body", "opset_map", "node_label", "graph_defined", "bodies",
           "TensorSite", "tensors", "has_external_data", "external_locations", "declared_ranks", "constants"]

#: the default domain's two spellings
DEFAULT_DOMAINS = ("", "ai.onnx")


def domain_of(name: str) -> str:
    """``ai.onnx`` and ``""`` are the same domain; onegraph spells it ``""``."""
    return "" if name in DEFAULT_DOMAINS else name


@dataclasses.dataclass
class Body:
    """A list of nodes and what they can refer to: the main graph, a subgraph, or a function's body.

    Attributes
    ----------
    path:
        Protobuf path of the body (``graph``, ``graph.node[3].attribute[then_branch].g``, ``functions[0]``).
    nodes:
        The nodes, in file order.
    defined:
        Names defined before any node runs (graph inputs and initializers, or function inputs).
    outputs:
        Names the body must produce.
    outer:
        Names visible from enclosing graphs.
    opsets:
        domain -> opset version in force (``""`` for ai.onnx).
    graph, function:
        The message the body comes from (one of the two).
    """

    path: str
    nodes: Sequence[onnx.NodeProto]
    defined: list[str]
    outputs: list[str]
    outer: frozenset[str]
    opsets: dict[str, int]
    graph: onnx.GraphProto | None = None
    function: onnx.FunctionProto | None = None


def opset_map(imports: Sequence[onnx.OperatorSetIdProto]) -> dict[str, int]:
    return {domain_of(o.domain): int(o.version) for o in imports}


def node_label(node: onnx.NodeProto, index: int) -> str:
    """The node's name, or ``#<index> <op_type>`` when it has none."""
    return node.name or f"#{index} {node.op_type}"


def graph_defined(graph: onnx.GraphProto) -> list[str]:
    names = [i.name for i in graph.input] + [t.name for t in graph.initializer]
    names += [s.values.name for s in graph.sparse_initializer]
    return names


def bodies(model: onnx.ModelProto) -> Iterator[Body]:
    """Every body of ``model``: the main graph, each subgraph (depth first), each model-local function."""
    opsets = opset_map(model.opset_import)
    yield from _graph_bodies(model.graph, "graph", frozenset(), opsets)
    for i, fn in enumerate(model.functions):
        fn_opsets = opset_map(fn.opset_import) or opsets
        yield from _function_bodies(fn, f"functions[{i}]", fn_opsets)


def _graph_bodies(graph: onnx.GraphProto, path: str, outer: frozenset[str], opsets: dict[str, int]
                  ) -> Iterator[Body]:
    body = Body(path, graph.node, graph_defined(graph), [o.name for o in graph.output], outer, opsets, graph=graph)
    yield body
    yield from _subgraphs(body)


def _function_bodies(fn: onnx.FunctionProto, path: str, opsets: dict[str, int]) -> Iterator[Body]:
    body = Body(path, fn.node, list(fn.input), list(fn.output), frozenset(), opsets, function=fn)
    yield body
    yield from _subgraphs(body)


def _subgraphs(body: Body) -> Iterator[Body]:
    visible = body.outer | set(body.defined) | {o for n in body.nodes for o in n.output if o}
    for i, node in enumerate(body.nodes):
        for attr in node.attribute:
            where = f"{body.path}.node[{i}].attribute[{attr.name}]"
            if attr.HasField("g"):
                yield from _graph_bodies(attr.g, f"{where}.g", frozenset(visible), body.opsets)
            for j, g in enumerate(attr.graphs):
                yield from _graph_bodies(g, f"{where}.graphs[{j}]", frozenset(visible), body.opsets)


@dataclasses.dataclass
class TensorSite:
    """A tensor stored in the model and where it is."""

    tensor: onnx.TensorProto
    path: str
    node: str | None = None


def tensors(body: Body) -> Iterator[TensorSite]:
    """Every tensor stored in ``body`` (initializers, sparse initializers, tensor attributes of its nodes)."""
    if body.graph is not None:
        for i, t in enumerate(body.graph.initializer):
            yield TensorSite(t, f"{body.path}.initializer[{i}]")
        for i, s in enumerate(body.graph.sparse_initializer):
            yield TensorSite(s.values, f"{body.path}.sparse_initializer[{i}].values")
            yield TensorSite(s.indices, f"{body.path}.sparse_initializer[{i}].indices")
    for i, node in enumerate(body.nodes):
        label = node_label(node, i)
        for attr in node.attribute:
            where = f"{body.path}.node[{i}].attribute[{attr.name}]"
            if attr.HasField("t"):
                yield TensorSite(attr.t, f"{where}.t", label)
            for j, t in enumerate(attr.tensors):
                yield TensorSite(t, f"{where}.tensors[{j}]", label)
            if attr.HasField("sparse_tensor"):
                yield TensorSite(attr.sparse_tensor.values, f"{where}.sparse_tensor.values", label)
                yield TensorSite(attr.sparse_tensor.indices, f"{where}.sparse_tensor.indices", label)


def has_external_data(model: onnx.ModelProto) -> bool:
    """Whether any tensor of ``model`` keeps its data in an external file."""
    return any(site.tensor.data_location == onnx.TensorProto.EXTERNAL
               for body in bodies(model) for site in tensors(body))


def external_locations(model: onnx.ModelProto) -> list[str]:
    """The external data files ``model`` reads: each location once, normalized (``a/./b`` -> ``a/b``), in
    first-use order. The static checks decide whether they may be read; this only lists them."""
    found: dict[str, None] = {}
    for body in bodies(model):
        for site in tensors(body):
            if site.tensor.data_location == onnx.TensorProto.EXTERNAL:
                entries = {e.key: e.value for e in site.tensor.external_data}
                parts = entries.get("location", "").replace("\\", "/").split("/")
                location = "/".join(p for p in parts if p not in ("", "."))
                if location:
                    found[location] = None
    return list(found)


def declared_ranks(body: Body) -> dict[str, int]:
    """name -> rank for every value whose rank the body states (typed values, stored tensors, Constants)."""
    ranks: dict[str, int] = {}
    if body.graph is not None:
        for vi in list(body.graph.input) + list(body.graph.value_info) + list(body.graph.output):
            t = vi.type.tensor_type
            if vi.type.HasField("tensor_type") and t.HasField("shape"):
                ranks[vi.name] = len(t.shape.dim)
        for t in body.graph.initializer:
            ranks[t.name] = len(t.dims)
    for node in body.nodes:
        if node.op_type == "Constant" and domain_of(node.domain) == "" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    ranks[node.output[0]] = len(attr.t.dims)
    return ranks


def constants(body: Body) -> dict[str, onnx.TensorProto]:
    """name -> tensor for the values the body stores (initializers and Constant nodes' ``value``)."""
    found: dict[str, onnx.TensorProto] = {}
    if body.graph is not None:
        for t in body.graph.initializer:
            found[t.name] = t
    for node in body.nodes:
        if node.op_type == "Constant" and domain_of(node.domain) == "" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    found[node.output[0]] = attr.t
    return found
