"""Model-local functions: group nodes into named function calls, inline them back, list them.

Grouping (:func:`group`, :class:`GroupFunctionsPass`) turns each :class:`~onegraph.passes.grouping.Group`
into one call of a model-local function (``FunctionProto``), named per DESIGN.md: domain = the source's
namespace, name = its class, overload = its instance path. The rules:

* **Weights stay with the graph.** A value the group reads from outside (an initializer, a graph input,
  another node's output) becomes a function input, so two instances of one class with different weights
  share one function body.
* **One definition per body.** Groups with the same domain and name whose bodies are identical (same
  operators, attributes and wiring) call one function, whose overload is the path of the first instance;
  a group whose body differs gets its own overload (its path). Shapes recorded in a shared body are kept
  only where every instance agrees.
* **Nested groups nest.** Inner groups are made first; an outer group's body then calls them. A function
  called from another function's body has overload ``""``: onnxruntime (1.32) resolves overloads of calls
  in the main graph only, and fails to load a function body calling an overloaded function. So a nested
  group whose body differs from the function already made for its class stays as plain nodes in the outer
  body.
* **Refusals.** A group that is not convex (some outside node depends on the group and feeds it: grouping
  would create a cycle) or that partly overlaps another raises :class:`~onegraph.errors.GroupingError`
  naming the nodes.

The graph keeps its value names: each call output is named as the value it stands for, and the body keeps
the original nodes (names, metadata), so :func:`inline` restores the same nodes computing the same values.
The call node sits where the group's last node was; outside nodes between the group's nodes that depend
on it move after the call (their order otherwise unchanged).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import fnmatch
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import onnx_ir as ir

from onegraph.check import irsafe
from onegraph.errors import GroupingError, PassError
from onegraph.passes._gc import paused
from onegraph.passes._index import GraphIndex
from onegraph.passes.grouping import Group, parse_function_id

#: IR version 10 (ONNX 1.16) brings function overloads.
MIN_IR_VERSION = 10

FunctionId = tuple[str, str, str]


# -- grouping -------------------------------------------------------------------------------------
class GroupFunctionsPass(ir.passes.InPlacePass):
    """Group nodes into model-local function calls; ``select(graph)`` gives the groups.

    Parameters
    ----------
    select:
        ``graph -> list[Group]``, e.g. ``functools.partial(grouping.by_metadata, depth=1)``.
    """

    def __init__(self, select: Callable[[ir.Graph], list[Group]]) -> None:
        super().__init__()
        self.select = select
        self.calls: list[ir.Node] = []

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        self.calls = group(model, self.select(model.graph))
        return ir.passes.PassResult(model, modified=bool(self.calls))


def group(model: ir.Model, groups: Sequence[Group]) -> list[ir.Node]:
    """Turn each group of ``model``'s main graph into a call of a model-local function (in place).

    Parameters
    ----------
    model:
        The model; modified in place.
    groups:
        Node groups (:mod:`onegraph.passes.grouping`). Groups may nest; they must not partly overlap.

    Returns
    -------
    list of onnx_ir.Node
        The call nodes, innermost groups first.

    Raises
    ------
    GroupingError
        for a node not in the main graph, two groups sharing some but not all nodes, or a non-convex group
        (naming the outside node that would close a cycle and the group nodes around it).
    """
    with paused():
        return _group(model, groups)


def _group(model: ir.Model, groups: Sequence[Group]) -> list[ir.Node]:
    graph = model.graph
    groups = [g for g in groups if g.nodes]
    if not groups:
        return []
    ordered, nested, height = _nesting_order(graph, groups)
    builder = _Builder(model)
    # Among nested groups of one class, the body most of them share is made first, so it is the one
    # that gets the class's single nested function (overload ""); inner groups still come before outer.
    common = collections.Counter()
    shape: dict[int, tuple] = {}
    for i in nested:
        g = ordered[i]
        shape[i] = (g.domain, g.name, builder.signature_of(sorted(set(g.nodes), key=builder.pos.__getitem__)))
        common[shape[i]] += 1
    rank = sorted(range(len(ordered)), key=lambda i: (height[i], -common.get(shape.get(i), 0)))
    current: dict[ir.Node, ir.Node] = {}

    def now(node: ir.Node) -> ir.Node:
        while node in current:
            node = current[node]
        return node

    calls = []
    for i in rank:
        g = ordered[i]
        members = list(dict.fromkeys(now(n) for n in g.nodes))
        call = builder.extract(g, members, nested=i in nested)
        if call is None:
            continue
        for m in members:
            current[m] = call
        calls.append(call)
    builder.finish()
    return calls


def _nesting_order(graph: ir.Graph, groups: Sequence[Group]) -> tuple[list[Group], set[int], list[int]]:
    """Groups innermost first, which of them lie inside another, and each one's height in the nesting
    (0: holds no other group); refuse nodes outside the main graph and partly overlapping groups."""
    for g in groups:
        for n in g.nodes:
            if n.graph is not graph:
                raise GroupingError(f"node {n.name!r} of group {g.label} is not a node of the main graph",
                                    hint="group top-level nodes only")
    ordered = sorted(groups, key=lambda g: (len(set(g.nodes)), -g.depth))
    outermost: dict[ir.Node, int] = {}
    nested: set[int] = set()
    height = [0] * len(ordered)
    sizes = [len(set(g.nodes)) for g in ordered]
    for i, g in enumerate(ordered):
        counts: dict[int, list[ir.Node]] = {}
        for n in dict.fromkeys(g.nodes):
            j = outermost.get(n)
            if j is not None:
                counts.setdefault(j, []).append(n)
        for j, shared in counts.items():
            nested.add(j)
            height[i] = max(height[i], height[j] + 1)
            if len(shared) != sizes[j]:
                names = ", ".join(repr(n.name) for n in shared[:5]) + (" ..." if len(shared) > 5 else "")
                raise GroupingError(f"groups {ordered[j].label} and {g.label} overlap: they share node(s) {names} "
                                    "but neither holds the other", hint="make the groups disjoint or nested")
        for n in g.nodes:
            outermost[n] = i
    return ordered, nested, height


class _Builder:
    """Extracts groups one by one, keeping the node order and the registry of function bodies."""

    def __init__(self, model: ir.Model) -> None:
        self.model = model
        self.graph = model.graph
        self.index = GraphIndex(self.graph)
        # slots: the graph's node order; a node's slot is its position, emptied slots are None
        self.slots: list[ir.Node | None] = list(self.graph)
        self.pos: dict[ir.Node, int] = {n: i for i, n in enumerate(self.slots)}
        self.bodies: dict[tuple[str, str], dict[tuple, tuple[ir.Function, list[ir.Value]]]] = {}
        self.node_names = {n.name for n in self.graph if n.name}

    # -- one group ------------------------------------------------------------------------------
    def interface(self, members: list[ir.Node]) -> tuple[list[ir.Value], list[ir.Value]]:
        """The values ``members`` read from outside, and those of theirs read outside (or graph outputs)."""
        inside = set(members)
        top = self.index.top
        inputs: dict[ir.Value, None] = {}
        for m in members:
            for v in self.index.reads(m):
                p = v.producer()
                if p is None or top(p) not in inside:
                    inputs.setdefault(v, None)
        outputs = [v for m in members for v in m.outputs
                   if v.is_graph_output() or any(top(c) not in inside for c, _ in v.uses())]
        if not outputs:  # dead code: keep its values reachable so the body is a valid function
            outputs = [v for m in members for v in m.outputs]
        return list(inputs), outputs

    def signature_of(self, members: list[ir.Node]) -> tuple:
        return _signature(members, *self.interface(members))

    def extract(self, g: Group, members: list[ir.Node], nested: bool = False) -> ir.Node | None:
        """Replace ``members`` by one call; None when a nested group cannot get its own function."""
        members.sort(key=self.pos.__getitem__)
        inside = set(members)
        top = self.index.top
        read, outputs = self.interface(members)
        constants = [v for v in read if g.constants_inside and _small_constant(v)]
        inputs = [v for v in read if v not in constants]
        after = self._descendants_between(g, members, inside)
        signature = _signature(members, inputs, outputs, constants)
        values = [*inputs, *(v for m in members for v in m.outputs)]
        found = self._function_for(g, signature, values, nested)
        if found is None:
            return None
        function, body_values, new = found
        call = ir.Node(g.domain, g.name, inputs, num_outputs=len(outputs), overload=function.overload,
                       name=self._call_name(g), metadata_props=dict(g.metadata) or None)
        for v, out in zip(outputs, call.outputs):
            out.name, out.type, out.shape = v.name, v.type, v.shape
            out.metadata_props.update(v.metadata_props)
            for consumer, i in list(v.uses()):
                if top(consumer) not in inside:
                    consumer.replace_input_with(i, out)
            if v.is_graph_output():
                for k, o in enumerate(self.graph.outputs):
                    if o is v:
                        self.graph.outputs[k] = out
        self._place(call, members, after)
        if new:
            body_values.extend(self._move_into(function, members, inputs, outputs, constants))
        else:
            self._discard(members)
        return call

    def _descendants_between(self, g: Group, members: list[ir.Node], inside: set[ir.Node]) -> list[ir.Node]:
        """Outside nodes between the first and last member that depend on the group, in order.

        Raises GroupingError when one of them feeds a member (the group is not convex).
        """
        last = self.pos[members[-1]]
        top = self.index.top
        parent: dict[ir.Node, ir.Node] = {}
        frontier: list[ir.Node] = []

        def visit(node: ir.Node, source: ir.Node) -> None:
            for v in node.outputs:
                for consumer, _ in v.uses():
                    c = top(consumer)
                    if c in inside:
                        if node not in inside:
                            self._refuse_cycle(g, node, c, parent)
                        continue
                    if c in parent or self.pos.get(c, last + 1) >= last:
                        continue
                    parent[c] = source if node in inside else node
                    frontier.append(c)

        for m in members:
            visit(m, m)
        while frontier:
            node = frontier.pop()
            visit(node, node)
        return sorted(parent, key=self.pos.__getitem__)

    def _refuse_cycle(self, g: Group, outside: ir.Node, member: ir.Node, parent: dict[ir.Node, ir.Node]) -> None:
        path = [outside]
        while path[-1] in parent:
            path.append(parent[path[-1]])
        path.reverse()  # a member, then the outside nodes in order
        chain = " -> ".join(repr(n.name or n.op_type) for n in [*path, member])
        raise GroupingError(
            f"group {g.label} is not convex: outside node {outside.name or outside.op_type!r} depends on the group "
            f"and feeds its node {member.name or member.op_type!r} ({chain}); one function call would create a cycle",
            hint="add the outside node(s) to the group, or split the group there")

    def _function_for(self, g: Group, signature: tuple, values: list[ir.Value], nested: bool
                      ) -> tuple[ir.Function, list[ir.Value], bool] | None:
        """The function whose body computes ``signature`` (and its body's values), or a new empty one."""
        bodies = self.bodies.setdefault((g.domain, g.name), {})
        found = bodies.get(signature)
        if found is not None:
            function, body_values = found
            if nested and function.overload:
                return None
            _reconcile(body_values, values)
            return function, body_values, False
        if nested:
            if (g.domain, g.name, "") in self.model.functions:
                return None
            overload = ""
        else:
            overload = g.path
        k = 1
        while (g.domain, g.name, overload) in self.model.functions:
            overload = f"{g.path}@{k}"
            k += 1
        # an empty body now; filled when the nodes move in (after the call replaced their outside uses)
        function = ir.Function(g.domain, g.name, overload,
                               graph=ir.Graph([], [], nodes=[], opset_imports={}), attributes=[])
        self.model.functions[function.identifier()] = function
        self.model.opset_imports.setdefault(g.domain, 1)
        body_values: list[ir.Value] = []
        bodies[signature] = (function, body_values)
        return function, body_values, True

    def _move_into(self, function: ir.Function, members: list[ir.Node], inputs: list[ir.Value],
                   outputs: list[ir.Value], constants: list[ir.Value]) -> list[ir.Value]:
        """Move the members into the function's body; return the body's values (inputs, node outputs)."""
        top = self.index.top
        inside = set(members)
        formal: list[ir.Value] = []
        made = [ir.node("Constant", [], attributes={"value": ir.convenience.get_const_tensor(v)}) for v in constants]
        for k, v in enumerate(inputs):
            param = ir.Value(name=v.name or f"input_{k}", type=v.type, shape=v.shape)
            formal.append(param)
        for v, new in [*zip(inputs, formal), *zip(constants, (n.outputs[0] for n in made))]:
            if new.producer() is not None:
                new.name, new.type, new.shape = v.name, v.type, v.shape
            for consumer, i in list(v.uses()):
                if top(consumer) in inside:
                    consumer.replace_input_with(i, new)
        self.graph.remove(members, safe=False)
        body = function.graph
        body.inputs.extend(formal)
        body.extend(made)
        body.extend(members)
        body.outputs.extend(outputs)
        domains = {n.domain for m in members for n in self.index.inner_nodes(m)}
        for d in sorted(domains):
            body.opset_imports[d] = self.model.opset_imports.get(d, 1)
        if made:
            body.opset_imports.setdefault("", self.model.opset_imports.get("", 1))
        return [*formal, *(v for m in members for v in m.outputs)]

    def _discard(self, members: list[ir.Node]) -> None:
        for m in members:
            for n in self.index.inner_nodes(m):
                for i in range(len(n.inputs)):
                    n.replace_input_with(i, None)
        self.graph.remove(members, safe=False)

    def _place(self, call: ir.Node, members: list[ir.Node], after: list[ir.Node]) -> None:
        """Insert ``call`` where the last member is; move the outside descendants between members after it."""
        first, last = self.pos[members[0]], self.pos[members[-1]]
        inside, moved = set(members), set(after)
        stay = [n for n in self.slots[first:last + 1] if n is not None and n not in inside and n not in moved]
        if after:
            self.graph.remove(after, safe=False)
        if stay:
            self.graph.insert_after(stay[-1], [call, *after])
        else:
            self.graph.insert_before(members[0], [call, *after])
        order = [*stay, call, *after]
        for i in range(first, last + 1):
            self.slots[i] = None
        for i, n in enumerate(order):
            self.slots[first + i] = n
            self.pos[n] = first + i

    def _call_name(self, g: Group) -> str:
        base = g.call_name or g.path or g.name
        name, k = base, 1
        while name in self.node_names:
            name = f"{base}#{k}"
            k += 1
        self.node_names.add(name)
        return name

    def finish(self) -> None:
        if self.model.ir_version < MIN_IR_VERSION:
            self.model.ir_version = MIN_IR_VERSION


def _reconcile(body_values: list[ir.Value], values: list[ir.Value]) -> None:
    """Keep a shared body's recorded type / shape only where this instance agrees."""
    for b, v in zip(body_values, values):
        if b.type is not None and b.type != v.type:
            b.type = None
            b.shape = None
        elif b.shape is not None and b.shape != v.shape:
            b.shape = None


# -- body signatures ------------------------------------------------------------------------------
def _small_constant(value: ir.Value) -> bool:
    """A constant that parametrizes an operation rather than weighting it: one element, or a short
    integer vector (axes, shapes, split sizes)."""
    tensor = ir.convenience.get_const_tensor(value)
    if tensor is None:
        return False
    size = int(np.prod(tensor.shape)) if tensor.shape is not None else 0
    return size == 1 or (tensor.dtype in (ir.DataType.INT64, ir.DataType.INT32) and size <= 8)


def _signature(members: list[ir.Node], inputs: list[ir.Value], outputs: list[ir.Value],
               constants: Sequence[ir.Value] = ()) -> tuple:
    """What the body computes, independent of names: operators, attributes, wiring, reads and results."""
    ref: dict[ir.Value, tuple] = {v: ("in", k) for k, v in enumerate(inputs)}
    for v in constants:
        ref[v] = ("const", _tensor_signature(ir.convenience.get_const_tensor(v)))  # type: ignore[arg-type]
    for j, m in enumerate(members):
        for o, v in enumerate(m.outputs):
            ref[v] = ("node", j, o)
    return tuple(_node_signature(m, ref) for m in members), tuple(ref[v] for v in outputs)


def _node_signature(node: ir.Node, ref: dict[ir.Value, tuple]) -> tuple:
    return (node.domain, node.op_type, node.overload, len(node.outputs),
            tuple(None if v is None else ref.get(v, ("?", id(v))) for v in node.inputs),
            tuple(sorted((name, _attr_signature(a, ref)) for name, a in node.attributes.items())))


def _attr_signature(attr: ir.Attr, ref: dict[ir.Value, tuple]) -> object:
    if attr.is_ref():
        return ("ref", attr.ref_attr_name)
    t = attr.type
    try:
        if t == ir.AttributeType.TENSOR:
            return _tensor_signature(attr.as_tensor())
        if t == ir.AttributeType.TENSORS:
            return tuple(_tensor_signature(x) for x in attr.as_tensors())
    except (TypeError, ValueError):  # a tensor onnx-ir cannot read (an undefined dtype): equal to no other
        return ("unreadable", id(attr))
    if t == ir.AttributeType.GRAPH:
        return _graph_signature(attr.as_graph(), ref)
    if t == ir.AttributeType.GRAPHS:
        return tuple(_graph_signature(x, ref) for x in attr.as_graphs())
    value = attr.value
    return tuple(value) if isinstance(value, (list, tuple)) else (t, repr(value))


def _tensor_signature(tensor: ir.TensorProtocol) -> tuple:
    if tensor.dtype == ir.DataType.STRING:
        return (tensor.dtype, tuple(tensor.shape), tuple(tensor.string_data()))  # type: ignore[attr-defined]
    return (tensor.dtype, tuple(tensor.shape), tensor.tobytes())


def _graph_signature(graph: ir.Graph, outer: dict[ir.Value, tuple]) -> tuple:
    ref = dict(outer)
    level = outer.get(None, 0) + 1  # type: ignore[call-overload]  # tags subgraph-local values by nesting
    ref[None] = level  # type: ignore[index]
    for k, v in enumerate(graph.inputs):
        ref[v] = ("sub-in", level, k)
    for name, v in graph.initializers.items():
        ref[v] = ("sub-init", level, _tensor_signature(v.const_value) if v.const_value is not None else name)
    nodes = list(graph)
    for j, n in enumerate(nodes):
        for o, v in enumerate(n.outputs):
            ref[v] = ("sub-node", level, j, o)
    return (tuple(_node_signature(n, ref) for n in nodes), tuple(ref.get(v) for v in graph.outputs))


# -- inlining -------------------------------------------------------------------------------------
def function_selector(only: Iterable[str | tuple[str, ...]] | None) -> Callable[[ir.Function], bool] | None:
    """A predicate on functions from ``DOMAIN[:NAME[:OVERLOAD]]`` patterns (shell wildcards allowed)."""
    if only is None:
        return None
    patterns = []
    for item in only:
        parts = tuple(item) if isinstance(item, tuple) else tuple(item.split(":", 2))
        patterns.append(parts)

    def matches(function: ir.Function) -> bool:
        ident = (function.domain, function.name, function.overload)
        return any(all(fnmatch.fnmatchcase(part, pat) for part, pat in zip(ident, p)) for p in patterns)

    return matches


def inline(model: ir.Model, only: Iterable[str | tuple[str, ...]] | None = None) -> dict[FunctionId, int]:
    """Inline calls of model-local functions (all, or those ``only`` selects) into the graph, in place.

    Uses onnx-ir's :class:`~onnx_ir.passes.common.InlinePass`. Body nodes keep their names and metadata,
    each call's outputs keep their names, so inlining what :func:`group` made restores the original nodes.

    Parameters
    ----------
    only:
        ``DOMAIN``, ``DOMAIN:NAME`` or ``DOMAIN:NAME:OVERLOAD`` patterns (``fnmatch`` wildcards); None for all.

    Returns
    -------
    dict
        Calls inlined per function id ``(domain, name, overload)``.

    Raises
    ------
    PassError
        when a pattern of ``only`` matches no function of the model (naming it and the functions there are).
    """
    from onegraph.passes._model import require_ir

    require_ir(model, "inline")
    if isinstance(only, str):  # one pattern, not its letters
        only = [only]
    selector = function_selector(only)
    if only is not None:
        for item in only:
            single = function_selector([item])
            if not any(single(f) for f in model.functions.values()):  # type: ignore[misc]
                known = ", ".join(format_id(k) for k in model.functions) or "none"
                raise PassError(f"no function of the model matches {item!r} (functions: {known})",
                                hint="write DOMAIN, DOMAIN:NAME or DOMAIN:NAME:OVERLOAD; see `onegraph functions list`")
    counts = call_counts(model)
    before = set(model.functions)
    with _linear_unique_names(), paused():
        irsafe.inline(model, selector=selector)
    removed = before - set(model.functions)
    _drop_unused_function_domains(model)
    return {k: counts.get(k, 0) for k in removed}


@contextlib.contextmanager
def _linear_unique_names():
    """Let onnx-ir's inliner name the k-th copy of a shared body in O(1), not O(k).

    Its ``_make_unique_name`` tries ``name``, ``name_2``, ``name_3``, ... from the start at every call,
    so inlining one function called k times costs O(k^2) (minutes for 100,000 nodes). This version resumes
    from the last suffix it gave the name: the same names, in the same order.
    """
    from onnx_ir.passes.common import inliner

    original = inliner._make_unique_name
    last: dict[tuple[int, str], int] = {}

    def make_unique_name(name: str, callstack: list, used_names: set[str]) -> str:
        key = (id(used_names), name)
        i = last.get(key, 1)
        candidate = name if i == 1 else f"{name}_{i}"
        while candidate in used_names:
            i += 1
            candidate = f"{name}_{i}"
        last[key] = i
        used_names.add(candidate)
        return candidate

    inliner._make_unique_name = make_unique_name
    try:
        yield
    finally:
        inliner._make_unique_name = original


class InlineFunctionsPass(ir.passes.InPlacePass):
    """:func:`inline` as a pass."""

    def __init__(self, only: Iterable[str | tuple[str, ...]] | None = None) -> None:
        super().__init__()
        self.only = None if only is None else list(only)
        self.inlined: dict[FunctionId, int] = {}

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        self.inlined = inline(model, self.only)
        return ir.passes.PassResult(model, modified=bool(self.inlined))


def _drop_unused_function_domains(model: ir.Model) -> None:
    used = {d for d, _, _ in model.functions}
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        used.add(node.domain)
    for f in model.functions.values():
        for node in ir.traversal.RecursiveGraphIterator(f.graph):
            used.add(node.domain)
    standard = {"", "ai.onnx", "ai.onnx.ml", "ai.onnx.training", "ai.onnx.preview.training"}
    for domain in list(model.opset_imports):
        if domain not in used and domain not in standard:
            del model.opset_imports[domain]


# -- listing --------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FunctionInfo:
    """One model-local function: identity, calls, body size, interface."""

    domain: str
    name: str
    overload: str
    calls: int
    nodes: int
    inputs: list[str]
    outputs: list[str]

    @property
    def id(self) -> str:
        return format_id((self.domain, self.name, self.overload))


def format_id(function_id: FunctionId) -> str:
    domain, name, overload = function_id
    return f"{domain}:{name}" + (f":{overload}" if overload else "")


def call_counts(model: ir.Model) -> dict[FunctionId, int]:
    """How many nodes call each model-local function (in the graph and in function bodies)."""
    counts: dict[FunctionId, int] = {}
    graphs = [model.graph, *(f.graph for f in model.functions.values())]
    for g in graphs:
        for node in ir.traversal.RecursiveGraphIterator(g):
            ident = node.op_identifier()
            if ident in model.functions:
                counts[ident] = counts.get(ident, 0) + 1
    return counts


def list_functions(model: ir.Model) -> list[FunctionInfo]:
    """The model-local functions of ``model`` with their call counts and body sizes, in model order."""
    from onegraph.passes._model import require_ir

    counts = call_counts(require_ir(model, "list_functions"))
    out = []
    for ident, f in model.functions.items():
        size = sum(1 for _ in ir.traversal.RecursiveGraphIterator(f.graph))
        out.append(FunctionInfo(f.domain, f.name, f.overload, counts.get(ident, 0), size,
                                [v.name or "" for v in f.inputs], [v.name or "" for v in f.outputs]))
    return out


__all__ = [
    "GroupFunctionsPass",
    "InlineFunctionsPass",
    "FunctionInfo",
    "group",
    "inline",
    "list_functions",
    "call_counts",
    "function_selector",
    "format_id",
    "parse_function_id",
]
