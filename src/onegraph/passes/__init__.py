"""Fusion-friendly graphs: named model-local functions, inlining, re-fusion of decomposed ops, kernel map.

Every transformation works in place on an :class:`onnx_ir.Model` and exists both as a function and as an
``onnx_ir.passes`` pass:

* :func:`group_functions` / :class:`GroupFunctionsPass`: group nodes into calls of model-local functions
  named after their source (by node metadata, node-name scopes or an explicit node list);
* :func:`inline` / :class:`InlineFunctionsPass`: inline all or selected functions back;
* :func:`fuse` / :class:`~onegraph.passes.fusion.FusePass`: rewrite decomposed LayerNormalization, GELU,
  LSTM and GRU into the standard operators (or into named functions wrapping the original nodes);
* :class:`~onegraph.passes.kernels.KernelMap`: replace functions by a backend's kernels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import onnx_ir as ir

from onegraph.errors import PassError
from onegraph.passes._gc import paused
from onegraph.passes._model import require_ir
from onegraph.passes.functions import (
    FunctionInfo,
    GroupFunctionsPass,
    InlineFunctionsPass,
    call_counts,
    format_id,
    group,
    inline,
    list_functions,
)
from onegraph.passes.grouping import (
    AUTO,
    Group,
    by_metadata,
    by_nodes,
    by_scope,
    parse_function_id,
)
from onegraph.passes.scopes import SCOPE_DOMAIN

GROUP_BY = ("metadata", "scope", "nodes")


def select_groups(graph: ir.Graph, by: str = "metadata", *, depth: int | None | str = AUTO, classes: Iterable[str] = (),
                  paths: Iterable[str] = (), scopes: Iterable[str] = (),
                  names: Mapping[str, tuple[str, str]] | None = None,
                  nodes: Mapping[str | tuple[str, ...], Sequence[str]] | None = None,
                  domain: str = SCOPE_DOMAIN, innermost: bool = False) -> list[Group]:
    """The groups :func:`group_functions` makes; see there."""
    if by == "metadata":
        return by_metadata(graph, depth=depth, classes=classes, paths=paths, innermost=innermost)
    if by == "scope":
        return by_scope(graph, depth=depth, scopes=scopes, names=names, domain=domain)
    if by == "nodes":
        if not nodes:
            raise PassError("grouping by nodes needs the node names",
                            hint="give nodes={'DOMAIN:NAME[:OVERLOAD]': [node names]}")
        return by_nodes(graph, nodes)
    raise PassError(f"unknown grouping {by!r}", hint=f"use one of {', '.join(GROUP_BY)}")


def group_functions(model: ir.Model, by: str = "metadata", **options: Any) -> list[ir.Node]:
    """Group nodes of ``model`` into calls of named model-local functions, in place.

    Parameters
    ----------
    model:
        An :class:`onnx_ir.Model`; modified in place.
    by:
        ``"metadata"``: the source objects recorded in node metadata (PyTorch's exporter:
        ``pkg.torch.onnx.name_scopes`` / ``class_hierarchy`` / ``namespace``; onegraph: ``onegraph.scopes``);
        options ``depth`` (levels of nesting: default 1, or all when ``classes`` / ``paths`` pick the
        objects; None = all), ``classes``, ``paths``, ``innermost``.
        ``"scope"``: the scopes in node names (``/encoder/lstm1/LSTM``); options ``depth``, ``scopes``,
        ``names`` (scope -> ``(domain, name)``), ``domain`` (default ``onegraph.scope``).
        ``"nodes"``: option ``nodes``, ``{"DOMAIN:NAME[:OVERLOAD]": [node names]}``.

    Returns
    -------
    list of onnx_ir.Node
        The call nodes made.

    Raises
    ------
    GroupingError
        for a non-convex or partly overlapping group, or an unknown node (each named).
    PassError
        for an unknown ``by``, or a model that is not an ``onnx_ir.Model``.
    """
    require_ir(model, "group_functions")
    with paused():
        return group(model, select_groups(model.graph, by, **options))


def group_steps(model: ir.Model) -> list[ir.Node]:
    """Group a model onegraph built so each pipeline step (transformer, model) is one named function call.

    A step whose own nodes sit on both sides of a nested step (an imputer's nodes before and after its
    initial imputer's, say) cannot be one call without a cycle: its own nodes stay in the graph, the nested
    steps are still grouped (the structure is a convenience; the values are the same either way).
    """
    with paused():
        return group(model, [g for g in by_metadata(model.graph, depth=None, innermost=True) if _convex(g.nodes)])


def _convex(nodes: Iterable[ir.Node]) -> bool:
    """No path leaves ``nodes`` and comes back into them (what one function call of them needs)."""
    inside = set(nodes)
    frontier = [use.node for n in inside for v in n.outputs for use in v.uses() if use.node not in inside]
    seen: set[ir.Node] = set()
    while frontier:
        node = frontier.pop()
        if node in seen:
            continue
        seen.add(node)
        for v in node.outputs:
            for use in v.uses():
                if use.node in inside:
                    return False
                if use.node not in seen:
                    frontier.append(use.node)
    return True


def fuse(model: ir.Model, rules: Iterable[str] | None = None, *, as_functions: bool = False) -> dict[str, int]:
    """Re-fuse decomposed operations of ``model`` in place; see :func:`onegraph.passes.fusion.fuse`."""
    from onegraph.passes.fusion import fuse as _fuse

    return _fuse(model, rules, as_functions=as_functions)


__all__ = [
    "FunctionInfo",
    "Group",
    "GroupFunctionsPass",
    "InlineFunctionsPass",
    "GROUP_BY",
    "by_metadata",
    "by_nodes",
    "by_scope",
    "call_counts",
    "format_id",
    "fuse",
    "group",
    "group_functions",
    "group_steps",
    "inline",
    "list_functions",
    "parse_function_id",
    "select_groups",
]
