"""One step of an opset conversion: a node crossing one version change of its operator.

A conversion from opset ``a`` to opset ``b`` moves one opset at a time, as onnx's version converter does
(:mod:`onegraph.convert.opset`). At each step, the nodes whose operator changed there cross the change:
converting down from opset ``v`` to ``v - 1``, a node of a definition introduced at ``v`` becomes a node
valid at ``v - 1``. onegraph's way across one change is a :class:`Step` (tables in
:mod:`onegraph.convert.opset_adapters`): an optional handler, then the schema checks.

The schema checks (:func:`fit`) make a node valid at the step's target or refuse it: an attribute the
older definition lacks is dropped when it holds the value its absence means (its default, or a neutral
value such as all-ones ``dilations``), else the node is refused naming it; absent trailing optional inputs
are trimmed; every required input must be given; every input and output type must be admitted, and inputs
sharing a type parameter in the older definition must share one type.

Two changes recur across operators and are handled from tables here:

* inputs that were attributes (:data:`MOVES`: ``axes`` of Squeeze / Unsqueeze / Reduce*, ``split``,
  ``pads``, Clip's ``min`` / ``max``, Slice's ``starts`` / ``ends`` / ``axes``, TopK's ``K``, Dropout's
  ``ratio``, Upsample's ``scales``, DFT's ``axis``): down, each input's value becomes the attribute again,
  taken from :func:`onegraph.convert.constants.constant_input` (initializers, ``Constant`` nodes of any
  ``value_*`` form, computations of constants and fixed shapes, folded); a value only known at run time is
  refused naming the tensor, and what only computed the value is removed;
* negative axes, allowed from opset 11 (:data:`NEGATIVE_AXES`): counted from the front when the rank is
  known, else refused; negative indices made non-negative against the length they index, at conversion
  time for constants, else by ``Where(i < 0, i + n, i)``.

Handlers build their nodes with :class:`Builder` (constants as ``Constant`` nodes, so the same steps work in
function bodies, which cannot hold initializers); the nodes they emit are valid at the step's target opset
and cross the later steps like any other node.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.convert.constants import TARGET_DOMAIN, Constant, constant_input

__all__ = ["TARGET_DOMAIN", "Refusal", "Context", "Rewrite", "Builder", "Step", "Move", "schema", "since",
           "first_version", "only_types_and_defaults", "NEUTRAL", "fit", "rank_of", "dims_of", "input_at",
           "known_value", "REDUCE_OPS", "MOVES", "inputs_to_attributes", "reduce_axes", "NEGATIVE_AXES", "from_front",
           "nonnegative_axes", "nonnegative_indices", "axis_length", "adapt", "apply"]


class Refusal(Exception):
    """No equivalent of this node exists at the step's target opset: the message says why."""


@dataclasses.dataclass
class Context:
    """One step of a conversion: the node's graph (or function body), the opsets it goes from and to."""

    graph: ir.Graph
    src: int
    dst: int
    notes: list[str] = dataclasses.field(default_factory=list)
    serial: list[int] = dataclasses.field(default_factory=lambda: [0])

    @property
    def down(self) -> bool:
        return self.dst < self.src

    def next_id(self) -> int:
        self.serial[0] += 1
        return self.serial[0]


@dataclasses.dataclass
class Rewrite:
    """What a step did to a node.

    ``outputs`` None: the node was changed in place and ``nodes`` (constants it now reads) go before it;
    otherwise ``nodes`` replace it and ``outputs`` replace its outputs (None for an output nobody reads).
    """

    nodes: list[ir.Node]
    outputs: list[ir.Value | None] | None
    how: str


class Builder:
    """Emits default-domain nodes valid at the step's target opset, named after the node they serve."""

    def __init__(self, base: str | None, ctx: Context) -> None:
        self.base = base or "node"
        self.ctx = ctx
        self.nodes: list[ir.Node] = []

    def op(self, op_type: str, *inputs: ir.Value | None, outputs: int = 1, **attrs):
        name = f"{self.base}/{op_type}_{self.ctx.next_id()}"
        node = ir.node(op_type, list(inputs), attrs or None, num_outputs=outputs, name=name)
        for i, out in enumerate(node.outputs):
            out.name = f"{name}_out{i}"
        self.nodes.append(node)
        return node.outputs[0] if outputs == 1 else list(node.outputs)

    def const(self, array) -> ir.Value:
        return self.op("Constant", value=ir.tensor(np.asarray(array)))


@dataclasses.dataclass(frozen=True)
class Step:
    """onegraph's way across one version change: what changed, and the handler (None: the schema checks
    of :func:`fit` alone, e.g. for an attribute added with a default)."""

    what: str
    handler: Callable[[ir.Node, Context], Rewrite | None] | None = None


@dataclasses.dataclass(frozen=True)
class Move:
    """An input that was an attribute before a version: ``index`` of the input, ``attribute`` it was (None:
    no attribute; the input must then be absent or hold ``neutral``), ``absent``: the attribute's value
    when the input is not given (None: no attribute)."""

    index: int
    attribute: str | None
    absent: object = None
    neutral: Callable[[np.ndarray], bool] | None = None
    neutral_text: str = ""


# -- the schema registry ----------------------------------------------------------------------------
@functools.cache
def schema(op_type: str, opset: int, domain: str = "") -> onnx.defs.OpSchema | None:
    """The definition of ``op_type`` in force at ``opset`` (None when it does not exist yet)."""
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


def since(op_type: str, opset: int, domain: str = "") -> int | None:
    s = schema(op_type, opset, domain)
    return s.since_version if s is not None else None


@functools.cache
def first_version(op_type: str, domain: str = "") -> int | None:
    """The first opset that defines ``op_type``."""
    return next((v for v in range(1, onnx.defs.onnx_opset_version() + 1) if schema(op_type, v, domain)), None)


def only_types_and_defaults(op_type: str, version: int) -> bool:
    """True when the definition introduced at ``version`` differs from the one before only in admitted types,
    documentation, and attributes added with a default (what :func:`fit` alone can convert)."""
    new, old = schema(op_type, version), schema(op_type, version - 1)
    if new is None or old is None or new.since_version != version:
        return False
    shape = lambda fs: [(f.name, f.option) for f in fs]  # noqa: E731
    return (shape(new.inputs) == shape(old.inputs) and shape(new.outputs) == shape(old.outputs)
            and set(old.attributes) <= set(new.attributes))


# -- the schema checks --------------------------------------------------------------------------------
#: attributes without a default whose value means the same as their absence
NEUTRAL = {"dilations": lambda a: all(int(d) == 1 for d in a.as_ints())}


def fit(node: ir.Node, ctx: Context) -> list[str]:
    """Make ``node`` (changed in place by a step's handler, or unchanged) valid at ``ctx.dst``, or refuse.

    Returns what was dropped (attributes holding the value their absence means).
    """
    target = schema(node.op_type, ctx.dst)
    if target is None:
        first = first_version(node.op_type)
        raise Refusal(f"{node.op_type} does not exist at opset {ctx.dst}"
                      + (f" (only from opset {first})" if first else ""))
    source = schema(node.op_type, ctx.src)
    dropped = []
    for name in [a for a in node.attributes if a not in target.attributes]:
        attr = node.attributes[name]
        if _is_default(attr, source) or (name in NEUTRAL and not attr.is_ref() and NEUTRAL[name](attr)):
            dropped.append(f"{name}={_show(attr)}")
            del node.attributes[name]
    extra = [a for a in node.attributes if a not in target.attributes]
    if extra:
        raise Refusal(", ".join(f"attribute {a}={_show(node.attributes[a])}" for a in extra)
                      + f" does not exist in {node.op_type}-{target.since_version}")
    inputs = list(node.inputs)
    while inputs and inputs[-1] is None:
        inputs.pop()
    if len(inputs) < len(node.inputs):
        node.resize_inputs(len(inputs))
    variadic = bool(target.inputs) and _variadic(target.inputs[-1])
    if len(inputs) > len(target.inputs) and not variadic:
        raise Refusal(f"{node.op_type}-{target.since_version} takes at most {len(target.inputs)} inputs")
    for i, formal in enumerate(target.inputs):
        single = formal.option == onnx.defs.OpSchema.FormalParameterOption.Single
        if single and (i >= len(inputs) or inputs[i] is None):
            raise Refusal(f"{node.op_type}-{target.since_version} requires input {i} ({formal.name}), which this "
                          "node leaves out")
    constraints = {c.type_param_str: set(c.allowed_type_strs) for c in target.type_constraints}
    seen: dict[str, tuple[str, str]] = {}
    pairs = [(v, target.inputs[min(i, len(target.inputs) - 1)], "input") for i, v in enumerate(inputs)]
    if target.outputs:
        pairs += [(v, target.outputs[min(i, len(target.outputs) - 1)], "output") for i, v in enumerate(node.outputs)]
    for i, (value, formal, kind) in enumerate(pairs):
        actual = _output_type(node, value) if kind == "output" else _value_type(value)
        if actual is None:
            continue
        allowed = constraints.get(formal.type_str, {formal.type_str})
        if actual not in allowed:
            raise Refusal(f"{kind} {value.name!r} is {actual}, which {node.op_type}-{target.since_version} does "
                          "not admit")
        if formal.type_str in constraints and kind == "input":
            other = seen.setdefault(formal.type_str, (actual, value.name))
            if other[0] != actual:
                raise Refusal(f"inputs {other[1]!r} ({other[0]}) and {value.name!r} ({actual}) must have one type "
                              f"in {node.op_type}-{target.since_version}")
    return dropped


def _is_default(attr: ir.Attr, source: onnx.defs.OpSchema | None) -> bool:
    """True when ``attr`` holds the default value of its definition in ``source``."""
    if source is None or attr.is_ref() or attr.name not in source.attributes:
        return False
    default = source.attributes[attr.name].default_value
    if default is None or not default.name:
        return False
    return onnx.helper.get_attribute_value(default) == onnx.helper.get_attribute_value(
        ir.serde.serialize_attribute(attr))


def _show(attr: ir.Attr) -> str:
    if attr.is_ref():
        return f"@{attr.ref_attr_name}"
    value = attr.value
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"[{', '.join(map(str, value[:8]))}, ...]"
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def _output_type(node: ir.Node, value: ir.Value | None) -> str | None:
    """A ``Cast``'s output type from its ``to`` (known where shape inference left it untyped)."""
    if node.op_type == "Cast" and "to" in node.attributes and value is node.outputs[0]:
        return f"tensor({ir.DataType(node.attributes['to'].as_int()).name.lower()})"
    return _value_type(value)


def _value_type(value: ir.Value | None) -> str | None:
    return _type_str(value.type) if value is not None and value.type is not None else None


def _variadic(formal) -> bool:
    return formal.option == onnx.defs.OpSchema.FormalParameterOption.Variadic


def _type_str(t: ir.TypeProtocol) -> str | None:
    """The schema spelling of a type (``tensor(float)``, ``seq(tensor(int64))``...), None if unknown."""
    if isinstance(t, ir.TensorType):
        return f"tensor({t.dtype.name.lower()})" if t.dtype is not None else None
    inner = getattr(t, "elem_type", None)
    inner_str = _type_str(inner) if inner is not None else None
    if inner_str is None:
        return None
    if isinstance(t, ir.SequenceType):
        return f"seq({inner_str})"
    if isinstance(t, ir.OptionalType):
        return f"optional({inner_str})"
    return None


def rank_of(value: ir.Value | None) -> int | None:
    return len(value.shape) if value is not None and value.shape is not None else None


def dims_of(value: ir.Value | None) -> list[int] | None:
    """The static dimensions of ``value``, None unless every one is known."""
    if value is None or value.shape is None or not value.shape.is_static():
        return None
    return [int(d) for d in value.shape]


def input_at(node: ir.Node, index: int) -> ir.Value | None:
    return node.inputs[index] if index < len(node.inputs) else None


def known_value(value: ir.Value | None, ctx: Context, what: str) -> np.ndarray:
    """The value of ``value`` at conversion time, or a refusal naming ``what`` needs it."""
    c = constant_input(value, ctx.src)
    if not c.known:
        raise Refusal(f"{what} must be known when converting, but {c.how}")
    return c.value


def _note_constant(node: ir.Node, value: ir.Value, c: Constant, ctx: Context) -> None:
    if c.how == "folded":
        ctx.notes.append(f"{node.op_type} node {node.name!r}: input {value.name!r} computed from constants and "
                         f"fixed shapes was folded to {c.value.tolist()}")
    elif c.how == "overridable initializer":
        ctx.notes.append(f"{node.op_type} node {node.name!r}: input {value.name!r} is also a graph input; its "
                         f"initializer {c.value.tolist()} became an attribute, so feeding it no longer changes "
                         "the result")


# -- inputs that were attributes ------------------------------------------------------------------------
_ONES = (lambda a: bool(np.all(a == 1)), "all ones")
_FALSE = (lambda a: not bool(np.any(a)), "false")
REDUCE_OPS = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
           "ReduceProd", "ReduceSumSquare")

#: operator -> version from which these inputs replace attributes (see :class:`Move`)
MOVES: dict[str, dict[int, list[Move]]] = {
    "Unsqueeze": {13: [Move(1, "axes")]}, "Squeeze": {13: [Move(1, "axes")]}, "ReduceSum": {13: [Move(1, "axes")]},
    **{op: {18: [Move(1, "axes")]} for op in REDUCE_OPS},
    "Split": {13: [Move(1, "split")]},
    "Pad": {11: [Move(1, "pads"), Move(2, "value")]},
    "Clip": {11: [Move(1, "min"), Move(2, "max")]},
    "Slice": {10: [Move(1, "starts"), Move(2, "ends"), Move(3, "axes"), Move(4, None, None, *_ONES)]},
    "TopK": {10: [Move(1, "k")]},
    "Dropout": {12: [Move(1, "ratio"), Move(2, None, None, *_FALSE)]},
    "Upsample": {9: [Move(1, "scales")]},
    "DFT": {20: [Move(2, "axis", absent=-2)]},
}


def _attribute(name: str, array: np.ndarray, target: onnx.defs.OpSchema) -> ir.Attr:
    """``array`` as the attribute ``name`` of ``target`` (its type from the schema)."""
    kind = target.attributes[name].type
    flat = np.asarray(array).reshape(-1)
    types = onnx.defs.OpSchema.AttrType
    if kind == types.INTS:
        return ir.AttrInt64s(name, [int(v) for v in flat])
    if kind == types.FLOATS:
        return ir.AttrFloat32s(name, [float(v) for v in flat])
    if flat.size != 1:
        raise Refusal(f"attribute {name} takes one value, the input holds {flat.size}")
    if kind == types.INT:
        return ir.AttrInt64(name, int(flat[0]))
    if kind == types.FLOAT:
        return ir.AttrFloat32(name, float(flat[0]))
    raise Refusal(f"attribute {name} is of type {kind}")


def inputs_to_attributes(node: ir.Node, ctx: Context) -> Rewrite:
    """Down across a version whose :data:`MOVES` turned attributes into inputs: each input's value, known
    when converting (:func:`constant_input`), becomes the attribute again."""
    moves = MOVES[node.op_type][ctx.src]
    target = schema(node.op_type, ctx.dst)
    done = []
    for move in moves:
        value = input_at(node, move.index)
        if value is None:
            if move.attribute is not None and move.absent is not None:
                node.attributes[move.attribute] = _attribute(move.attribute, np.array([move.absent]), target)
                done.append(f"{move.attribute}={move.absent} (the input's default)")
            continue
        formal = schema(node.op_type, ctx.src).inputs[move.index].name
        what = (f"input {move.index} ({value.name!r}) becomes the attribute {move.attribute!r} at opset {ctx.dst}, "
                "so its value" if move.attribute else f"input {move.index} ({formal}, {value.name!r}) does not exist "
                f"at opset {ctx.dst}, so its value")
        c = constant_input(value, ctx.src)
        if not c.known:
            raise Refusal(f"{what} must be known when converting, but {c.how} (onnx: 'input is not in initializer')")
        _note_constant(node, value, c, ctx)
        if move.attribute is None:
            if not move.neutral(c.value):
                raise Refusal(f"{what} must be {move.neutral_text}; it is {c.value.tolist()}")
            continue
        node.attributes[move.attribute] = _attribute(move.attribute, c.value, target)
        done.append(f"{move.attribute}={c.value.reshape(-1).tolist()}")
    first = min(m.index for m in moves)
    node.resize_inputs(min(first, len(node.inputs)))
    return Rewrite([], None, f"input(s) as attribute(s): {', '.join(done)}" if done else "")


def reduce_axes(node: ir.Node, ctx: Context) -> Rewrite:
    """Reduce* 18 (ReduceSum 13) -> older: ``axes`` input as attribute; ``noop_with_empty_axes=1`` with no
    or empty axes computes the identity, which the older versions express as ``Identity``."""
    noop = node.attributes.pop("noop_with_empty_axes", None)
    noop = noop.as_int() if noop is not None else None
    axes = input_at(node, 1)
    value = constant_input(axes, ctx.src) if axes is not None else None
    empty = axes is None or (value.known and value.value.size == 0)
    if noop and empty:
        b = Builder(node.name, ctx)
        return Rewrite(b.nodes, [b.op("Identity", node.inputs[0])], "noop_with_empty_axes=1 and no axes: Identity")
    if noop and not value.known:
        raise Refusal("noop_with_empty_axes=1 with axes only known at run time: whether they are empty "
                      "(the identity) cannot be told")
    if empty:  # noop 0: every axis, as no axes attribute means below
        node.resize_inputs(1)
        return Rewrite([], None, "" if axes is None else "empty axes: reduce over all axes")
    done = inputs_to_attributes(node, ctx)
    return Rewrite([], None, done.how + ("" if noop is None else f"; noop_with_empty_axes={noop} dropped"))


# -- negative axes (opset 11) --------------------------------------------------------------------------
#: operator -> (attribute, rank offset): from opset 11 the attribute may count from the back; its valid range
#: is that of input 0's rank plus the offset (1 for OneHot's output axis; the number of axes for Unsqueeze).
NEGATIVE_AXES: dict[str, tuple[str, int | Callable[[list[int]], int]]] = {
    **{op: ("axis", 0) for op in ("ArgMax", "ArgMin", "Compress", "Concat", "Flatten", "Gather", "Hardmax",
                                  "LogSoftmax", "Softmax", "Split", "TopK", "Scatter")},
    **{op: ("axes", 0) for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                  "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
                                  "Squeeze")},
    "Unsqueeze": ("axes", len), "OneHot": ("axis", 1),
}


def from_front(values: list[int], rank: int | None, what: str) -> list[int]:
    """``values`` (axes) counted from the front, or a refusal when one is negative and ``rank`` unknown."""
    if all(v >= 0 for v in values):
        return values
    if rank is None:
        raise Refusal(f"{what} {values} counts from the back, which the older version does not allow, and the "
                      "rank is unknown")
    return [v + rank if v < 0 else v for v in values]


def nonnegative_axes(node: ir.Node, ctx: Context) -> Rewrite:
    """Down across opset 11, which allowed negative axes: counted from the front against the known rank."""
    name, offset = NEGATIVE_AXES[node.op_type]
    attr = node.attributes.get(name)
    if attr is None or attr.is_ref():
        return Rewrite([], None, "")
    values = list(attr.as_ints()) if attr.type == ir.AttributeType.INTS else [attr.as_int()]
    rank = rank_of(node.inputs[0]) if node.inputs else None
    if rank is not None:
        rank += offset(values) if callable(offset) else offset
    fixed = from_front(values, rank, name)
    if fixed == values:
        return Rewrite([], None, "")
    node.attributes[name] = (ir.AttrInt64s(name, fixed) if attr.type == ir.AttributeType.INTS
                             else ir.AttrInt64(name, fixed[0]))
    return Rewrite([], None, f"{name} {values} counted from the front: {fixed}")


def nonnegative_indices(b: Builder, indices: ir.Value, bound: ir.Value | int | None, ctx: Context,
                         what: str) -> tuple[ir.Value, str]:
    """``indices`` that may be negative (from opset 11), made non-negative: constants against a known
    ``bound``, others by ``Where(i < 0, i + bound, i)`` (``bound``: the length indexed into)."""
    const = constant_input(indices, ctx.src)
    if const.known and (const.value >= 0).all():
        return indices, f"its constant {what} are not negative"
    if const.known and isinstance(bound, int):
        fixed = np.where(const.value < 0, const.value + bound, const.value).astype(const.value.dtype)
        return b.const(fixed), f"constant negative {what} counted from the front against {bound}"
    if bound is None:
        raise Refusal(f"its {what} may be negative and the length they index is unknown")
    dtype = indices.dtype if indices.dtype is not None else ir.DataType.INT64
    if isinstance(bound, int):
        bound = b.const(np.array(bound, dtype=dtype.numpy()))
    elif bound.dtype != dtype:
        bound = b.op("Cast", bound, to=dtype)
    negative = b.op("Less", indices, b.const(np.array(0, dtype=dtype.numpy())))
    return b.op("Where", negative, b.op("Add", indices, bound), indices), \
        f"negative {what} counted from the front at run time: Where(i < 0, i + n, i)"


def axis_length(b: Builder, data: ir.Value, axis: int) -> ir.Value | int:
    dims = data.shape
    if dims is not None and axis < len(dims) and isinstance(dims[axis], int):
        return int(dims[axis])
    return b.op("Gather", b.op("Shape", data), b.const(np.array(axis, dtype=np.int64)), axis=0)


def adapt(node: ir.Node, ctx: Context, step: Step) -> Rewrite:
    """Take ``node`` across one version change with ``step``: its handler, then the schema checks.

    Raises
    ------
    Refusal
        when the node cannot be expressed at ``ctx.dst``.
    """
    done = step.handler(node, ctx) if step.handler is not None else Rewrite([], None, "")
    if done.outputs is not None:
        return done
    dropped = fit(node, ctx)
    how = done.how or f"kept as is: {step.what}"
    if dropped:
        how = f"{how}; {', '.join(dropped)} dropped (the value its absence means)" if how else \
            f"{', '.join(dropped)} dropped (the value its absence means)"
    return Rewrite(done.nodes, None, how)


def apply(node: ir.Node, rewrite: Rewrite) -> list[ir.Node]:
    """Put ``rewrite`` in place in ``node``'s graph; returns the nodes added."""
    graph = node.graph
    for new_node in rewrite.nodes:  # what described the node (source scope, statistics) describes its parts
        new_node.metadata_props.update(node.metadata_props)
    if rewrite.outputs is None:
        if rewrite.nodes:
            graph.insert_before(node, rewrite.nodes)
        return list(rewrite.nodes)
    outputs = list(rewrite.outputs) + [None] * (len(node.outputs) - len(rewrite.outputs))
    unused = [v for v, n in zip(node.outputs, outputs) if n is None and (v.uses() or v.is_graph_output())]
    if unused:
        raise Refusal(f"output {unused[0].name!r} has no equivalent at the target opset")
    pairs = [(v, n) for v, n in zip(node.outputs, outputs) if n is not None]
    for old, new in pairs:  # the same values: the same type and shape
        if new.type is None:
            new.type = old.type
        if new.shape is None:
            new.shape = old.shape
    ir.convenience.replace_nodes_and_values(graph, node, [node], rewrite.nodes, [o for o, _ in pairs],
                                            [n for _, n in pairs])
    return list(rewrite.nodes)
