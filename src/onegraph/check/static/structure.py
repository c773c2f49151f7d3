"""Checks of a body's wiring: every value defined once, every input defined, no cycle, outputs computed.

The rules are the ONNX IR's (``docs/IR.md``, "Graphs"): names are in SSA form, nodes are listed in
topological order, a subgraph may refer to the names of the graphs around it.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Iterator

from onegraph.check.findings import Finding
from onegraph.check.static.walk import Body, node_label

__all__ = ["check_body", "function_cycles"]


def check_body(body: Body) -> Iterator[Finding]:
    """Findings C303-C307 for one body."""
    yield from _duplicates(body)
    producer: dict[str, int] = {}
    for i, node in enumerate(body.nodes):
        for name in node.output:
            if name:
                producer.setdefault(name, i)
    defined = set(body.defined)
    unsorted = False
    for i, node in enumerate(body.nodes):
        for k, name in enumerate(node.input):
            if not name:
                continue
            j = producer.get(name)
            if j is None:
                if name not in defined and name not in body.outer:
                    yield Finding("C303", f"input {k} {name[:200]!r} is not defined by any node, input or "
                                  "initializer", f"{body.path}.node[{i}].input[{k}]", node=node_label(node, i),
                                  tensor=name[:200])
                continue
            unsorted |= j >= i
    if unsorted:
        cycle = _cycle(len(body.nodes), _edges(body, producer))
        if cycle:
            names = ", ".join(repr(node_label(body.nodes[i], i)) for i in cycle[:5])
            more = f" and {len(cycle) - 5} more" if len(cycle) > 5 else ""
            first = cycle[0]
            yield Finding("C304", f"{len(cycle)} node(s) are on, or depend on, a cycle: {names}{more}",
                          f"{body.path}.node[{first}]", node=node_label(body.nodes[first], first))
        else:
            yield Finding("C307", "nodes are not in topological order (onnxruntime sorts them; other runtimes "
                          "may not)", f"{body.path}.node")
    known = defined | set(producer) | body.outer
    for k, name in enumerate(body.outputs):
        if name not in known:
            field = f"{body.path}.output[{k}]"
            yield Finding("C306", f"output {name[:200]!r} is not computed", field, tensor=name[:200])


def _edges(body: Body, producer: dict[str, int]) -> dict[int, set[int]]:
    # built only for a graph out of order: a set per node is most of the static stage's memory on a long chain
    edges: dict[int, set[int]] = defaultdict(set)
    for i, node in enumerate(body.nodes):
        for name in node.input:
            j = producer.get(name) if name else None
            if j is not None:
                edges[j].add(i)
    return edges


def _duplicates(body: Body) -> Iterator[Finding]:
    if body.graph is not None:
        for what, names in (("input", [i.name for i in body.graph.input]),
                            ("initializer", [t.name for t in body.graph.initializer])):
            for name, n in Counter(names).items():
                if n > 1:
                    yield Finding("C305", f"{n} graph {what}s are named {name[:200]!r}", f"{body.path}.{what}",
                                  tensor=name[:200])
    seen = set(body.defined)
    for i, node in enumerate(body.nodes):
        for k, name in enumerate(node.output):
            if not name:
                continue
            if name in seen:
                yield Finding("C305", f"output {k} {name[:200]!r} is already defined",
                              f"{body.path}.node[{i}].output[{k}]", node=node_label(node, i), tensor=name[:200])
            seen.add(name)


def _cycle(n: int, edges: dict[int, set[int]]) -> list[int]:
    """Nodes left once every node that can be ordered is (Kahn's algorithm): those on or behind a cycle."""
    indegree = [0] * n
    for targets in edges.values():
        for t in targets:
            indegree[t] += 1
    ready = deque(i for i in range(n) if indegree[i] == 0)
    done = 0
    while ready:
        i = ready.popleft()
        done += 1
        for t in edges.get(i, ()):
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
    return [] if done == n else [i for i in range(n) if indegree[i] > 0]


def function_cycles(calls: dict[tuple[str, str, str], set[tuple[str, str, str]]]) -> list[tuple[str, str, str]]:
    """Model-local functions that (indirectly) call themselves."""
    keys = list(calls)
    index = {k: i for i, k in enumerate(keys)}
    edges: dict[int, set[int]] = defaultdict(set)
    for k, targets in calls.items():
        for t in targets:
            if t in index:
                edges[index[k]].add(index[t])
    return [keys[i] for i in _cycle(len(keys), edges)]
