"""Which nodes become one function call: groups by recorded scope (node metadata or node names) or by list.

A *group* is a set of top-level nodes of the main graph that :func:`onegraph.passes.functions.group`
turns into one call of a model-local function. Groups from scopes follow the source objects:

* one group per **call** of a source object: the nodes of one scope that come one after another in the
  exporter's node order (a module called at every time step, like an ``LSTMCell`` in a loop, is recorded
  with the same path at each call; the calls are told apart by the nodes of other scopes between them);
* nested objects give nested groups (an encoder's layers inside the encoder), down to ``depth`` levels;
* nodes the exporter's optimizer added without a record (a ``Split`` from ``chunk``, a ``Constant``) join a
  group when every input comes from that group (or is a graph input, an initializer or such a node) and
  every use is inside it, so adding them never changes what the group computes nor makes it non-convex.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

import onnx_ir as ir

from onegraph.errors import GroupingError
from onegraph.passes._index import GraphIndex
from onegraph.passes.scopes import (
    SCOPE_DOMAIN,
    Scope,
    call_metadata,
    call_name,
    function_name,
    metadata_chain,
    name_chain,
)

__all__ = ["Group", "AUTO", "by_metadata", "by_scope", "by_nodes", "parse_function_id"]


@dataclasses.dataclass
class Group:
    """Nodes to turn into one call of the function ``domain::name`` (overload from ``path``).

    Attributes
    ----------
    domain, name:
        Function identity (DESIGN.md: the source's namespace and class).
    path:
        Instance path of the source object (``encoder.lstm1``); becomes the overload.
    nodes:
        Top-level nodes of the main graph, in graph order.
    depth:
        Nesting level (1 = a top-level object); deeper groups are made into functions first.
    metadata:
        ``metadata_props`` of the call node (the source record, truncated to this object's scopes).
    call_name:
        Name of the call node (default: ``path``, else the function name).
    constants_inside:
        Copy one-element constants and short integer vectors the group reads (``eps``, ``0.5``, axes)
        into the body as ``Constant`` nodes instead of passing them in, so the function's inputs are
        those of the operation it stands for (used by :mod:`onegraph.passes.fusion`'s functions).
    """

    domain: str
    name: str
    path: str
    nodes: list[ir.Node]
    depth: int = 1
    metadata: dict[str, str] = dataclasses.field(default_factory=dict)
    call_name: str = ""
    constants_inside: bool = False

    @property
    def label(self) -> str:
        return f"{self.domain}::{self.name}" + (f" ({self.path})" if self.path else "")


Chain = Callable[[ir.Node], "list[Scope] | None"]
Select = Callable[[int, Scope], "tuple[str, str] | None"]


#: ``depth`` default: the top level (1), or every level when classes, paths or scopes pick the objects.
AUTO = "auto"


def by_metadata(graph: ir.Graph, *, depth: int | None | str = AUTO, classes: Iterable[str] = (),
                paths: Iterable[str] = (), innermost: bool = False) -> list[Group]:
    """Groups for the source objects recorded in node metadata (PyTorch's exporter, onegraph's builder).

    Parameters
    ----------
    graph:
        The main graph of the model.
    depth:
        Group objects nested down to this level (1: the model's direct children); None: every level;
        ``"auto"`` (default): 1, or every level when ``classes`` or ``paths`` pick the objects.
    classes:
        Only objects of these classes, each given as the qualified class
        (``torch.nn.modules.rnn.LSTM``), its public name (``torch.nn.LSTM``) or the bare name (``LSTM``).
    paths:
        Only objects at these instance paths (``encoder.lstm1``).
    innermost:
        Group each node with the innermost object that made it only (the steps of a pipeline, not the
        pipeline around them): one level of functions, none nested.

    Returns
    -------
    list of Group
        Function ``domain`` / ``name`` from the class (:func:`onegraph.passes.scopes.function_name`).
    """
    classes, paths = set(classes), set(paths)
    depth = _levels(depth, bool(classes or paths))

    def select(level: int, scope: Scope) -> tuple[str, str] | None:
        if depth is not None and level > depth:
            return None
        domain, name = function_name(scope)
        if classes and not classes & {scope.cls, f"{domain}.{name}", name}:
            return None
        if paths and scope.path not in paths:
            return None
        return domain, name

    return _scoped_groups(graph, metadata_chain, select, by_name=False, innermost=innermost)


def by_scope(graph: ir.Graph, *, depth: int | None | str = AUTO, scopes: Iterable[str] = (),
             names: Mapping[str, tuple[str, str]] | None = None, domain: str = SCOPE_DOMAIN) -> list[Group]:
    """Groups for the scopes written in node names (``/encoder/lstm1/LSTM``: TorchScript exporter, tf2onnx).

    Parameters
    ----------
    depth:
        Group scopes nested down to this level; None: every level; ``"auto"``: 1, or every level when
        ``scopes`` picks them.
    scopes:
        Only these scopes, written ``/encoder/lstm1`` or ``encoder.lstm1``.
    names:
        ``(domain, name)`` of the function for a scope (keys written as in ``scopes``); by default the
        domain is ``domain`` and the name the scope's last part (see
        :func:`onegraph.passes.scopes.function_name`).
    """
    wanted = {_scope_path(s) for s in scopes}
    depth = _levels(depth, bool(wanted))
    given = {_scope_path(k): v for k, v in (names or {}).items()}

    def select(level: int, scope: Scope) -> tuple[str, str] | None:
        if depth is not None and level > depth:
            return None
        if wanted and scope.path not in wanted:
            return None
        return given.get(scope.path) or function_name(scope, domain)

    return _scoped_groups(graph, name_chain, select, by_name=True, innermost=False)


def by_nodes(graph: ir.Graph, groups: Mapping[str | tuple[str, ...], Sequence[str]]) -> list[Group]:
    """Groups given as node names, keyed by ``"domain:name[:overload]"`` (or a tuple of those parts).

    Raises
    ------
    GroupingError
        naming a node that is not in the graph, or a key that is not ``domain:name[:overload]``.
    """
    by_name: dict[str, ir.Node] = {}
    for node in graph:
        if node.name:
            by_name.setdefault(node.name, node)
    order = {node: i for i, node in enumerate(graph)}
    out = []
    for key, names in groups.items():
        domain, name, overload = parse_function_id(key)
        missing = [n for n in names if n not in by_name]
        if missing:
            raise GroupingError(f"node(s) {', '.join(map(repr, missing[:5]))} of group {domain}::{name} are not "
                                "in the graph", hint="list node names with `onegraph functions list MODEL --nodes`")
        nodes = sorted({by_name[n] for n in names}, key=order.__getitem__)
        if not nodes:
            raise GroupingError(f"group {domain}::{name} lists no node", hint="give at least one node name")
        out.append(Group(domain, name, overload, nodes))
    return out


def _levels(depth: int | None | str, picked: bool) -> int | None:
    if depth == AUTO:
        return None if picked else 1
    if depth is not None and (not isinstance(depth, int) or depth < 1):
        raise GroupingError(f"depth {depth!r} is not a level", hint="give 1, 2, ... or None for every level (`--depth all` on the command line)")
    return depth  # type: ignore[return-value]


def parse_function_id(key: str | tuple[str, ...]) -> tuple[str, str, str]:
    """``"torch.nn:LSTM:encoder.lstm1"`` (or a tuple) -> ``(domain, name, overload)``; overload may be empty."""
    parts = tuple(key) if isinstance(key, tuple) else tuple(key.split(":", 2))
    if len(parts) < 2 or not parts[1] or len(parts) > 3:
        raise GroupingError(f"function {':'.join(parts)!r} is not written DOMAIN:NAME[:OVERLOAD]",
                            hint="for example torch.nn:LSTM or torch.nn:LSTM:encoder.lstm1")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else ""


def _scope_path(scope: str) -> str:
    return ".".join(p for p in scope.replace("/", ".").split(".") if p)


@dataclasses.dataclass
class _Run:
    path: str
    picked: tuple[str, str] | None
    group: Group | None = None


def _scoped_groups(graph: ir.Graph, chain_of: Chain, select: Select, *, by_name: bool,
                   innermost: bool) -> list[Group]:
    nodes = list(graph)
    chains = [chain_of(n) for n in nodes]
    groups: list[Group] = []
    open_runs: list[_Run] = []
    for node, chain in zip(nodes, chains):
        if chain is None:
            continue  # unattributed: neither extends nor breaks a run; may be absorbed below
        for level, scope in enumerate(chain, start=1):
            if len(open_runs) >= level and open_runs[level - 1].path == scope.path:
                run = open_runs[level - 1]
            else:
                del open_runs[level - 1:]
                run = _Run(scope.path, select(level, scope))
                open_runs.append(run)
            if run.picked is None or (innermost and level < len(chain)):
                continue
            if run.group is None:
                domain, name = run.picked
                run.group = Group(domain, name, scope.path, [], level, call_metadata(node, level, f"{domain}::{name}"),
                                  call_name(scope, by_name))
                groups.append(run.group)
            run.group.nodes.append(node)
        del open_runs[len(chain):]
    unattributed = [n for n, c in zip(nodes, chains) if c is None]
    if unattributed and groups:
        index = GraphIndex(graph)
        for level in sorted({g.depth for g in groups}):
            _absorb(unattributed, [g for g in groups if g.depth == level], index)
    return groups


def _absorb(candidates: list[ir.Node], groups: list[Group], index: GraphIndex) -> None:
    """Add each unattributed node that reads from one group and whose uses all lie in it.

    A node that reads nothing but graph inputs, initializers and such nodes (a ``Constant``, an
    ``Identity`` of a weight) is weight plumbing: it stays with the graph and its value is passed in,
    like an initializer, so that instances of one class keep one shareable body.
    """
    owner: dict[ir.Node, Group] = {n: g for g in groups for n in g.nodes}
    plumbing: set[ir.Node] = set()
    for n in candidates:
        if all(v.producer() is None or v.producer() in plumbing for v in index.reads(n)):
            plumbing.add(n)
    assign: dict[ir.Node, Group] = {}
    for n in candidates:  # forward: reads from exactly one group (and plumbing, sources)
        if n in plumbing:
            continue
        found: Group | None = None
        for v in index.reads(n):
            p = v.producer()
            if p is None or p in plumbing:
                continue
            g = owner.get(p) or assign.get(p)
            if g is None or (found is not None and g is not found):
                found = None
                break
            found = g
        if found is not None:
            assign[n] = found
    changed = True
    while changed:  # backward, then forward again, until every kept node's uses and reads agree
        changed = False
        for n in reversed(candidates):
            g = assign.get(n)
            if g is None:
                continue
            ok = bool(n.outputs) and not any(v.is_graph_output() for v in n.outputs)
            ok = ok and all((owner.get(index.top(u.node)) or assign.get(index.top(u.node))) is g
                            for v in n.outputs for u in v.uses())
            if not ok:
                del assign[n]
                changed = True
        for n in candidates:
            g = assign.get(n)
            if g is None:
                continue
            for v in index.reads(n):
                p = v.producer()
                if p is not None and p not in plumbing and (owner.get(p) or assign.get(p)) is not g:
                    del assign[n]
                    changed = True
                    break
    for n, g in assign.items():
        g.nodes.append(n)
    for g in groups:
        g.nodes.sort(key=index.pos.__getitem__)
