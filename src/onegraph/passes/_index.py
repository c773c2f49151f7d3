"""Positions, nesting and read values of the top-level nodes of a graph, computed once per pass."""

from __future__ import annotations

import onnx_ir as ir


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
        # the subgraph nodes of each top-level node that has subgraphs; the outer values they read are
        # looked up when asked, because grouping replaces them (a captured value may become a call's output)
        self._inner: dict[ir.Node, list[ir.Node]] = {}
        for node in graph:
            subs = _subgraphs(node)
            if subs:
                inner = [n for sub in subs for n in ir.traversal.RecursiveGraphIterator(sub)]
                self._inner[node] = inner
                for n in inner:
                    self._top[n] = node

    def top(self, node: ir.Node) -> ir.Node:
        return self._top.get(node, node)

    def reads(self, node: ir.Node) -> list[ir.Value]:
        values = [v for v in node.inputs if v is not None]
        inner = self._inner.get(node)
        if inner:
            seen = set(values)
            for n in inner:
                for v in n.inputs:
                    if v is not None and v not in seen and v.graph is self.graph:
                        seen.add(v)
                        values.append(v)
        return values

    def inner_nodes(self, node: ir.Node) -> list[ir.Node]:
        """``node`` and every node of its subgraphs."""
        return [node, *self._inner.get(node, ())]


def _subgraphs(node: ir.Node) -> list[ir.Graph]:
    out: list[ir.Graph] = []
    for attr in node.attributes.values():
        if attr.type == ir.AttributeType.GRAPH:
            out.append(attr.as_graph())
        elif attr.type == ir.AttributeType.GRAPHS:
            out.extend(attr.as_graphs())
    return out
