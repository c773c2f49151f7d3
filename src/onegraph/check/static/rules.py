"""Operator-specific checks for the inputs that public crash reports name.

Shape-inference and kernel code has crashed on attribute values and input ranks its schema forbids but the
generic checks cannot see (onnx/onnx#6185: Gemm with ``transB = 823`` and a rank-0 ``B``; onnx/onnx#6180: Conv
with a rank-0 weight). Each rule reads only what the model states (declared ranks, stored constants); what it
cannot see it leaves to the later stages. Allocations and shapes that constants decide are checked by
:mod:`onegraph.check.static.fold`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import onnx

from onegraph.check.findings import Finding
from onegraph.check.static.tensors import small_ints
from onegraph.check.static.walk import (
    Body,
    constants,
    declared_ranks,
    domain_of,
    node_label,
)

__all__ = ["rule", "check_rules"]

_Rule = Callable[..., Iterator[Finding]]
_RULES: dict[str, list[_Rule]] = {}


def rule(*op_types: str) -> Callable[[_Rule], _Rule]:
    def register(fn: _Rule) -> _Rule:
        for op in op_types:
            _RULES.setdefault(op, []).append(fn)
        return fn
    return register


class _Node:
    """A node with what the rules ask of it."""

    def __init__(self, node: onnx.NodeProto, index: int, body: Body, ranks: dict, consts: dict):
        self.node, self.path, self.label = node, f"{body.path}.node[{index}]", node_label(node, index)
        self.ranks, self.consts = ranks, consts
        self.attrs = {a.name: a for a in node.attribute}

    def rank(self, k: int) -> int | None:
        return self.ranks.get(self.node.input[k]) if k < len(self.node.input) and self.node.input[k] else None

    def const_ints(self, k: int) -> list[int] | None:
        if k >= len(self.node.input) or self.node.input[k] not in self.consts:
            return None
        return small_ints(self.consts[self.node.input[k]])

    def finding(self, code: str, message: str, field: str) -> Finding:
        return Finding(code, message, f"{self.path}.{field}", node=self.label)


def check_rules(body: Body) -> Iterator[Finding]:
    """C311 and C312 for the default-domain nodes of ``body`` (allocations whose size constants decide, and the
    shapes constants make invalid, are :mod:`onegraph.check.static.fold`'s)."""
    if not any(n.op_type in _RULES for n in body.nodes):
        return
    ranks, consts = declared_ranks(body), constants(body)
    for i, node in enumerate(body.nodes):
        if domain_of(node.domain) == "" and node.op_type in _RULES:
            view = _Node(node, i, body, ranks, consts)
            for fn in _RULES[node.op_type]:
                yield from fn(view)


@rule("Gemm")
def _gemm(n: _Node) -> Iterator[Finding]:
    for name in ("transA", "transB", "broadcast"):
        a = n.attrs.get(name)
        if a is not None and a.type == onnx.AttributeProto.INT and a.i not in (0, 1):
            yield n.finding("C311", f"{name} = {a.i}; Gemm takes 0 or 1", f"attribute[{name}]")
    for k, what in ((0, "A"), (1, "B")):
        r = n.rank(k)
        if r is not None and r != 2:
            yield n.finding("C312", f"input {what} has rank {r}; Gemm takes matrices (rank 2)", f"input[{k}]")
    r = n.rank(2)
    if r is not None and r > 2:
        yield n.finding("C312", f"input C has rank {r}; Gemm takes rank 0 to 2", "input[2]")


@rule("Conv", "ConvTranspose", "ConvInteger", "QLinearConv")
def _conv(n: _Node) -> Iterator[Finding]:
    x_at, w_at = (0, 3) if n.node.op_type == "QLinearConv" else (0, 1)
    x, w = n.rank(x_at), n.rank(w_at)
    for k, r, what in ((x_at, x, "X"), (w_at, w, "W")):
        if r is not None and r < 3:
            yield n.finding("C312", f"input {what} has rank {r}; {n.node.op_type} takes rank 3 or more "
                            "(N, C, spatial...)", f"input[{k}]")
    if x is not None and w is not None and x >= 3 and w >= 3 and x != w:
        yield n.finding("C312", f"X has rank {x} and W rank {w}; they must be equal", f"input[{w_at}]")
    yield from _window_attributes(n, spatial=(w - 2) if w is not None and w >= 3 else None)
    group = n.attrs.get("group")
    if group is not None and group.type == onnx.AttributeProto.INT and group.i < 1:
        yield n.finding("C311", f"group = {group.i}; it must be at least 1", "attribute[group]")


@rule("MaxPool", "AveragePool", "LpPool")
def _pool(n: _Node) -> Iterator[Finding]:
    x = n.rank(0)
    if x is not None and x < 3:
        yield n.finding("C312", f"input X has rank {x}; {n.node.op_type} takes rank 3 or more", "input[0]")
    yield from _window_attributes(n, spatial=(x - 2) if x is not None and x >= 3 else None)


def _window_attributes(n: _Node, spatial: int | None) -> Iterator[Finding]:
    for name, least in (("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("pads", 0)):
        a = n.attrs.get(name)
        if a is None or a.type != onnx.AttributeProto.INTS:
            continue
        values = list(a.ints)
        bad = [v for v in values if v < least]
        want = None if spatial is None else (2 * spatial if name == "pads" else spatial)
        if bad:
            yield n.finding("C311", f"{name} {values[:8]} holds {bad[0]}; values must be at least {least}",
                            f"attribute[{name}]")
        elif want is not None and len(values) != want:
            yield n.finding("C311", f"{name} has {len(values)} values; the input's {spatial} spatial axes need "
                            f"{want}", f"attribute[{name}]")
