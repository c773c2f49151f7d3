"""Positions, nesting and read values of the top-level nodes of a graph, computed once per pass."""

from __future__ import annotations

import onnx_ir as ir
from onnx_ir.analysis import analyze_implicit_usage


class GraphIndex:
    """Index of ``graph``'s top-level nodes.

    * ``pos[node]``: position in the graph's (topological) order;
    * :meth:`top`: the top-level node a node belongs to (itself, or the node whose subgraph holds it);
    * :meth:`reads`: the values a top-level node reads, including outer values its subgraphs capture.
    """

    def __init__(self, graph: ir.Graph) -> None:
        self.graph = graph
        self.pos: dict[ir.Node, float] = {n: float(i) for i, n in enumerate(graph)}
        self._top: dict[ir.Node, ir.Node] = {}
        self._captured: dict[ir.Node, list[ir.Value]] = {}
        nested = [n for n in graph if _subgraphs(n)]
        if nested:
            implicit = analyze_implicit_usage(graph)
            for node in nested:
                seen: dict[ir.Value, None] = {}
                for sub in _subgraphs(node):
                    for inner in ir.traversal.RecursiveGraphIterator(sub):
                        self._top[inner] = node
                    for v in implicit.get(sub, ()):
                        if v.graph is graph:
                            seen[v] = None
                self._captured[node] = list(seen)

    def top(self, node: ir.Node) -> ir.Node:
        return self._top.get(node, node)

    def reads(self, node: ir.Node) -> list[ir.Value]:
        values = [v for v in node.inputs if v is not None]
        captured = self._captured.get(node)
        if captured:
            values.extend(v for v in captured if v not in values)
        return values

    def inner_nodes(self, node: ir.Node) -> list[ir.Node]:
        """``node`` and every node of its subgraphs."""
        if node not in self._captured:
            return [node]
        return [node] + [n for sub in _subgraphs(node) for n in ir.traversal.RecursiveGraphIterator(sub)]


def _subgraphs(node: ir.Node) -> list[ir.Graph]:
    out: list[ir.Graph] = []
    for attr in node.attributes.values():
        if attr.type == ir.AttributeType.GRAPH:
            out.append(attr.as_graph())
        elif attr.type == ir.AttributeType.GRAPHS:
            out.extend(attr.as_graphs())
    return out
