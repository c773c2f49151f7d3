"""How a node of a default-domain operator crosses one version change of its operator, step by step.

A conversion from opset ``a`` to opset ``b`` moves one opset at a time (as onnx's version converter does).
At each step, the nodes whose operator changed at that opset cross the change: converting down from opset
``v`` to ``v - 1``, a node of an operator with a definition introduced at ``v`` must become a node valid at
``v - 1``. Every such change between opsets 8 and 21 is classified in one of four tables, keyed by
``(operator, version)`` (the ``since_version`` of the newer definition):

* :data:`TYPE_ONLY`: the change only admitted more types or reworded the documentation; a node crosses it
  when its types are admitted by the older definition;
* :data:`ADAPTERS`: onegraph's own :class:`Step`: the schema checks below, after a handler when the change
  needs one (inputs that became attributes, negative axes, new modes...);
* :data:`ONNX`: onnx's version converter has a correct adapter; the node is left to it;
* :data:`IMPOSSIBLE`: the older opset cannot express the change: refused, with the reason.

``tests/test_opset_steps.py`` walks every change of every operator between opsets 7 and 21 in onnx's schema
registry and fails for one left out of these tables. Changes outside them (opsets above 21) are left to
onnx's converter; where it has no adapter and the schemas differ only in types or in attributes added with a
default, the schema checks convert the node.

The schema checks (:func:`fit`) run after every step's handler: an attribute the older definition lacks is
dropped when it holds the value its absence means (its default, or a neutral value such as all-ones
``dilations``), else the node is refused naming it; absent trailing optional inputs are trimmed; every
required input must be given; every input and output type must be admitted, and inputs sharing a type
parameter in the older definition must share one type.

Inputs that became attributes (:data:`MOVES`: ``axes`` of Squeeze / Unsqueeze / Reduce*, ``split``,
``pads``, Clip's ``min`` / ``max``, Slice's ``starts`` / ``ends`` / ``axes``, TopK's ``K``, Dropout's
``ratio``, Upsample's ``scales``, DFT's ``axis``) take their value from :func:`constant_input`:
initializers, ``Constant`` nodes of any ``value_*`` form, and computations of constants and fixed shapes,
folded; a value only known at run time is refused, naming the tensor. Negative axes (allowed from opset 11:
:data:`NEGATIVE_AXES`) are counted from the front when the rank is known, else refused.

Handlers build their nodes with :class:`Builder` (constants as ``Constant`` nodes, so the same steps work in
function bodies, which cannot hold initializers); the nodes they emit are valid at the step's older opset
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
           "first_version", "fit", "only_types_and_defaults", "MOVES", "NEGATIVE_AXES", "TYPE_ONLY", "ADAPTERS",
           "ONNX", "IMPOSSIBLE", "UP_ADAPTERS", "classify", "down_step", "up_step", "adapt", "apply"]


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
        raise Refusal(f"{node.op_type} does not exist at opset {ctx.dst}" + (f" (only from opset {first})" if first else ""))
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


def _rank(value: ir.Value | None) -> int | None:
    return len(value.shape) if value is not None and value.shape is not None else None


def _dims(value: ir.Value | None) -> list[int] | None:
    """The static dimensions of ``value``, None unless every one is known."""
    if value is None or value.shape is None or not value.shape.is_static():
        return None
    return [int(d) for d in value.shape]


def _input(node: ir.Node, index: int) -> ir.Value | None:
    return node.inputs[index] if index < len(node.inputs) else None


def _known(value: ir.Value | None, ctx: Context, what: str) -> np.ndarray:
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
_REDUCE = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
           "ReduceProd", "ReduceSumSquare")

#: operator -> version from which these inputs replace attributes (see :class:`Move`)
MOVES: dict[str, dict[int, list[Move]]] = {
    "Unsqueeze": {13: [Move(1, "axes")]}, "Squeeze": {13: [Move(1, "axes")]}, "ReduceSum": {13: [Move(1, "axes")]},
    **{op: {18: [Move(1, "axes")]} for op in _REDUCE},
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
        value = _input(node, move.index)
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
    axes = _input(node, 1)
    empty = axes is None or (constant_input(axes, ctx.src).known and constant_input(axes, ctx.src).value.size == 0)
    if noop is not None and noop.as_int() and empty:
        b = Builder(node.name, ctx)
        return Rewrite(b.nodes, [b.op("Identity", node.inputs[0])], "noop_with_empty_axes=1 and no axes: Identity")
    if noop is not None and noop.as_int() and not constant_input(axes, ctx.src).known:
        raise Refusal("noop_with_empty_axes=1 with axes only known at run time: whether they are empty "
                      "(the identity) cannot be told")
    if axes is not None and constant_input(axes, ctx.src).known and constant_input(axes, ctx.src).value.size == 0:
        node.resize_inputs(1)  # empty axes, noop 0: every axis, as no axes attribute means below
        return Rewrite([], None, "empty axes: reduce over all axes")
    done = inputs_to_attributes(node, ctx)
    return Rewrite([], None, done.how + ("" if noop is None else f"; noop_with_empty_axes={noop.as_int()} dropped"))


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


def _front(values: list[int], rank: int | None, what: str) -> list[int]:
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
    rank = _rank(node.inputs[0]) if node.inputs else None
    if rank is not None:
        rank += offset(values) if callable(offset) else offset
    fixed = _front(values, rank, name)
    if fixed == values:
        return Rewrite([], None, "")
    node.attributes[name] = (ir.AttrInt64s(name, fixed) if attr.type == ir.AttributeType.INTS
                             else ir.AttrInt64(name, fixed[0]))
    return Rewrite([], None, f"{name} {values} counted from the front: {fixed}")


def _nonnegative_indices(b: Builder, indices: ir.Value, bound: ir.Value | int | None, ctx: Context,
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


def _axis_length(b: Builder, data: ir.Value, axis: int) -> ir.Value | int:
    dims = data.shape
    if dims is not None and axis < len(dims) and isinstance(dims[axis], int):
        return int(dims[axis])
    return b.op("Gather", b.op("Shape", data), b.const(np.array(axis, dtype=np.int64)), axis=0)


def gather(node: ir.Node, ctx: Context) -> Rewrite:
    """Gather / Scatter 11 -> 10 and below: negative axis and indices made non-negative (Scatter's indices are
    input 1 as Gather's)."""
    axes = nonnegative_axes(node, ctx)
    axis = node.attributes.get_int("axis", 0)
    b = Builder(node.name, ctx)
    indices = constant_input(node.inputs[1], ctx.src)
    bound = None if indices.known and (indices.value >= 0).all() else _axis_length(b, node.inputs[0], axis)
    fixed, how = _nonnegative_indices(b, node.inputs[1], bound, ctx, "indices")
    if fixed is not node.inputs[1]:
        node.replace_input_with(1, fixed)
    return Rewrite(b.nodes, None, f"{axes.how}; {how}")


def scatter_elements(node: ir.Node, ctx: Context) -> Rewrite:
    """ScatterElements-11 (no earlier version) -> Scatter-9, its definition with non-negative axis and indices."""
    node.op_type = "Scatter"
    done = gather(node, ctx)
    return Rewrite(done.nodes, None, f"as Scatter-9; {done.how}")


def one_hot(node: ir.Node, ctx: Context) -> Rewrite:
    """OneHot 11 -> 9: negative axis (of the output) and negative indices (of ``depth``) from the front."""
    axes = nonnegative_axes(node, ctx)
    b = Builder(node.name, ctx)
    depth = constant_input(node.inputs[1], ctx.src)
    bound = int(depth.value.reshape(-1)[0]) if depth.known else node.inputs[1]
    fixed, how = _nonnegative_indices(b, node.inputs[0], bound, ctx, "indices")
    if fixed is not node.inputs[0]:
        node.replace_input_with(0, fixed)
    return Rewrite(b.nodes, None, f"{axes.how}; {how}")


def slice_axes(node: ir.Node, ctx: Context) -> Rewrite:
    """Slice 11 -> 10: negative ``axes`` (input 3) counted from the front."""
    axes = _input(node, 3)
    if axes is None:
        return Rewrite([], None, "")
    c = constant_input(axes, ctx.src)
    b = Builder(node.name, ctx)
    if c.known:
        fixed = _front([int(a) for a in c.value.reshape(-1)], _rank(node.inputs[0]), "axes")
        if fixed == [int(a) for a in c.value.reshape(-1)]:
            return Rewrite([], None, "")
        node.replace_input_with(3, b.const(np.array(fixed, dtype=c.value.dtype)))
        return Rewrite(b.nodes, None, f"axes {c.value.tolist()} counted from the front: {fixed}")
    fixed, how = _nonnegative_indices(b, axes, _rank(node.inputs[0]), ctx, "axes")
    node.replace_input_with(3, fixed)
    return Rewrite(b.nodes, None, how)


def scan_axes(node: ir.Node, ctx: Context) -> Rewrite:
    """Scan 11 -> 9: negative ``scan_input_axes`` / ``scan_output_axes`` counted from the front."""
    n_scan = node.attributes.get_int("num_scan_inputs", 0)
    n_state = len(node.inputs) - n_scan
    done = []
    for name, values in (("scan_input_axes", node.inputs[n_state:]), ("scan_output_axes", node.outputs[n_state:])):
        attr = node.attributes.get(name)
        if attr is None:
            continue
        axes = list(attr.as_ints())
        fixed = [a if a >= 0 else a + r if (r := _rank(v)) is not None else a for a, v in zip(axes, values)]
        if any(a < 0 for a in fixed):
            raise Refusal(f"{name} {axes} count from the back and the ranks are unknown")
        if fixed != axes:
            node.attributes[name] = ir.AttrInt64s(name, fixed)
            done.append(f"{name} {axes} -> {fixed}")
    return Rewrite([], None, "; ".join(done))


def scan_9(node: ir.Node, ctx: Context) -> Rewrite:
    """Scan-9 -> Scan-8, which scans a batch of sequences: every input gets a batch axis of 1 (Unsqueeze),
    every output loses it (Squeeze); the body is the same. (onnx's Scan_9_8 only relabels the shapes, which
    changes the graph's inputs.) Scan-8 scans axis 0 of each sequence forwards or backwards only."""
    for name in ("scan_input_axes", "scan_output_axes", "scan_output_directions"):
        values = node.attributes.get_ints(name, None)
        if values is not None and any(values):
            raise Refusal(f"{name}={list(values)}: Scan-8 scans and stacks along the first axis, forwards")
    b = Builder(node.name, ctx)
    batched = [b.op("Unsqueeze", v, axes=[0]) for v in node.inputs]
    attrs = {"body": node.attributes["body"].as_graph(), "num_scan_inputs": node.attributes.get_int("num_scan_inputs")}
    directions = node.attributes.get_ints("scan_input_directions", None)
    if directions is not None:
        attrs["directions"] = list(directions)
    for a in ("body",):
        node.attributes.pop(a)
    outs = b.op("Scan", None, *batched, outputs=len(node.outputs), **attrs)
    outs = outs if isinstance(outs, list) else [outs]
    return Rewrite(b.nodes, [b.op("Squeeze", o, axes=[0]) for o in outs], "as Scan-8 over a batch of one")


def scan_up_9(node: ir.Node, ctx: Context) -> Rewrite:
    """Scan-8 -> Scan-9 (up): a batch of one sequence (the leading axis of every input is 1) as Scan-9 on the
    sequence (Squeeze in, Unsqueeze out); a longer batch would need a Loop around it. (onnx's Scan_8_9 only
    relabels the shapes.)"""
    if node.inputs and node.inputs[0] is not None:
        raise Refusal("sequence_lens given: Scan-9 scans whole sequences")
    values = list(node.inputs[1:])
    if any(v is None or v.shape is None or not len(v.shape) or v.shape[0] != 1 for v in values):
        raise Refusal("the batch axis of its inputs is not known to be 1: Scan-9 scans one sequence")
    b = Builder(node.name, ctx)
    attrs = {"body": node.attributes["body"].as_graph(), "num_scan_inputs": node.attributes.get_int("num_scan_inputs")}
    directions = node.attributes.get_ints("directions", None)
    if directions is not None:
        attrs["scan_input_directions"] = list(directions)
    node.attributes.pop("body")
    outs = b.op("Scan", *[b.op("Squeeze", v, axes=[0]) for v in values],
                outputs=len(node.outputs), **attrs)
    outs = outs if isinstance(outs, list) else [outs]
    return Rewrite(b.nodes, [b.op("Unsqueeze", o, axes=[0]) for o in outs], "as Scan-9 on the one sequence")


def top_k(node: ir.Node, ctx: Context) -> Rewrite:
    """TopK 11 -> 10: negative axis from the front; ``largest=0`` as ``-TopK(-x)`` (float types, where
    negation is exact); ``sorted=0`` leaves the order unspecified, so the sorted result of TopK-10 is one."""
    axes = nonnegative_axes(node, ctx)
    sort = node.attributes.pop("sorted", None)
    largest = node.attributes.pop("largest", None)
    how = axes.how + ("; sorted=0: the sorted order is one of the orders it allows" if sort is not None
                      and not sort.as_int() else "")
    if largest is None or largest.as_int():
        return Rewrite([], None, how)
    x = node.inputs[0]
    if x.dtype is None or not x.dtype.is_floating_point():
        raise Refusal(f"largest=0 on {x.dtype.name.lower() if x.dtype else 'an unknown type'} input: negation "
                      "(to take the largest) is only exact for floating-point values")
    b = Builder(node.name, ctx)
    values, indices = b.op("TopK", b.op("Neg", x), node.inputs[1], outputs=2, axis=node.attributes.get_int("axis", -1))
    return Rewrite(b.nodes, [b.op("Neg", values), indices], f"{how}; largest=0 as -TopK(-x)")


# -- other changes --------------------------------------------------------------------------------------
def constant_values(node: ir.Node, ctx: Context) -> Rewrite:
    """Constant-12 (``value_float(s)`` / ``value_int(s)`` / ``value_string(s)``) -> ``value``."""
    forms = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64, "value_ints": np.int64,
             "value_string": object, "value_strings": object}
    for name, dtype in forms.items():
        attr = node.attributes.pop(name, None)
        if attr is not None:
            if attr.is_ref():
                raise Refusal(f"its {name} refers to the function attribute {attr.ref_attr_name!r}")
            value = attr.value
            value = [v.decode() if isinstance(v, bytes) else v for v in value] if isinstance(value, (list, tuple)) \
                else value.decode() if isinstance(value, bytes) else value
            node.attributes["value"] = ir.AttrTensor("value", ir.tensor(np.array(value, dtype=dtype)))
            return Rewrite([], None, f"{name} as a value tensor")
    return Rewrite([], None, "")


def gemm_c(node: ir.Node, ctx: Context) -> Rewrite:
    """Gemm-11 (C optional) -> Gemm-9: an absent C is a zero, broadcast to (M, N)."""
    if _input(node, 2) is not None:
        return Rewrite([], None, "")
    dtype = node.inputs[0].dtype
    if dtype is None:
        raise Refusal("C is absent and the type of A (for a zero C) is unknown")
    b = Builder(node.name, ctx)
    node.resize_inputs(3)
    node.replace_input_with(2, b.const(np.zeros((), dtype=dtype.numpy())))
    return Rewrite(b.nodes, None, "absent C given as a zero")


def pow_exponent(node: ir.Node, ctx: Context) -> Rewrite:
    """Pow-12 (exponent of its own type) -> Pow-7 (one type): the exponent cast to the base's type."""
    base, exponent = node.inputs
    if base.dtype is None or exponent.dtype is None or base.dtype == exponent.dtype:
        return Rewrite([], None, "")
    b = Builder(node.name, ctx)
    node.replace_input_with(1, b.op("Cast", exponent, to=base.dtype))
    return Rewrite(b.nodes, None, f"exponent cast from {exponent.dtype.name.lower()} to {base.dtype.name.lower()}")


def dropout_mask(node: ir.Node, ctx: Context) -> Rewrite:
    """Dropout-10 (boolean mask) -> Dropout-7 (mask of the input's type): refused when the mask is read."""
    if len(node.outputs) > 1 and (node.outputs[1].uses() or node.outputs[1].is_graph_output()):
        raise Refusal("its mask output is read: it is boolean from Dropout-10, of the input's type before")
    if len(node.outputs) > 1:
        node.resize_outputs(1)
    return Rewrite([], None, "")


def dropout_inputs(node: ir.Node, ctx: Context) -> Rewrite:
    """Dropout-12 -> 10: ``ratio`` as attribute, ``training_mode`` must be false (inference); ``seed`` only
    matters in training and is dropped."""
    seed = node.attributes.pop("seed", None)
    done = inputs_to_attributes(node, ctx)
    return Rewrite([], None, done.how + ("; seed dropped (it only matters in training)" if seed is not None else ""))


def depth_to_space(node: ir.Node, ctx: Context) -> Rewrite:
    """DepthToSpace-11 ``mode=CRD`` -> Reshape / Transpose / Reshape (the ``DCR`` order is DepthToSpace-1's)."""
    mode = node.attributes.get_string("mode", "DCR")
    if mode == "DCR":
        node.attributes.pop("mode", None)
        return Rewrite([], None, "mode DCR, DepthToSpace-1's")
    dims = node.inputs[0].shape
    if dims is None or len(dims) != 4 or not all(isinstance(d, int) for d in list(dims)[1:]):
        raise Refusal("mode CRD needs the input's channels, height and width, which are not known")
    _, c, h, w = list(dims)
    s = node.attributes.get_int("blocksize")
    b = Builder(node.name, ctx)
    x = b.op("Reshape", node.inputs[0], b.const(np.array([0, c // (s * s), s, s, h, w], np.int64)))
    x = b.op("Transpose", x, perm=[0, 1, 4, 2, 5, 3])
    out = b.op("Reshape", x, b.const(np.array([0, c // (s * s), h * s, w * s], np.int64)))
    return Rewrite(b.nodes, [out], "mode CRD as Reshape / Transpose / Reshape")


def _scalar(value: ir.Value | None) -> bool:
    return value is None or (value.shape is not None and (len(value.shape) == 0 or list(value.shape) == [1]))


def _along(b: Builder, v: ir.Value, axis: int, rank: int) -> ir.Value:
    """A 1-D ``v`` reshaped to broadcast along ``axis`` of a rank-``rank`` tensor."""
    shape = [1] * rank
    shape[axis] = -1
    return b.op("Reshape", v, b.const(np.array(shape, np.int64)))


def quantize_axis(node: ir.Node, ctx: Context) -> Rewrite:
    """(De)QuantizeLinear-13 -> 10: ``axis`` only matters for a 1-D scale (per channel), which the older
    versions lack; that one is computed from its definition (``Cast((x - zp) * scale)``,
    ``Cast(Clip(Round(x / scale) + zp))``)."""
    axis = node.attributes.pop("axis", None)
    x, scale, zp = node.inputs[0], node.inputs[1], _input(node, 2)
    if _scalar(scale) and _scalar(zp):
        return Rewrite([], None, "scalar scale" + ("; axis dropped" if axis is not None else ""))
    rank = _rank(x)
    if rank is None:
        raise Refusal("a scale per channel needs the input's rank, which is unknown")
    a = (axis.as_int() if axis is not None else 1) % rank
    b = Builder(node.name, ctx)
    scale = _along(b, scale, a, rank)
    if node.op_type == "DequantizeLinear":
        y = b.op("Cast", x, to=ir.DataType.FLOAT)
        if zp is not None:
            y = b.op("Sub", y, _along(b, b.op("Cast", zp, to=ir.DataType.FLOAT), a, rank))
        return Rewrite(b.nodes, [b.op("Mul", y, scale)], f"per-channel scale along axis {a}: (x - zp) * scale")
    target = zp.dtype if zp is not None else ir.DataType.UINT8
    if target not in (ir.DataType.UINT8, ir.DataType.INT8):
        raise Refusal(f"a per-channel quantization to {target.name.lower()} does not exist before opset 13")
    info = np.iinfo(target.numpy())
    y = b.op("Round", b.op("Div", x, scale))
    if zp is not None:
        y = b.op("Add", y, _along(b, b.op("Cast", zp, to=x.dtype), a, rank))
    y = b.op("Clip", y, b.const(np.array(info.min, x.dtype.numpy())), b.const(np.array(info.max, x.dtype.numpy())))
    return Rewrite(b.nodes, [b.op("Cast", y, to=target)], f"per-channel scale along axis {a}: "
                                                           "Cast(Clip(Round(x / scale) + zp))")


def quantize_dtype(node: ir.Node, ctx: Context) -> Rewrite:
    """QuantizeLinear-21 ``output_dtype`` -> 19: meaningful only when it is what the zero point (or its
    absence: uint8) gives."""
    attr = node.attributes.pop("output_dtype", None)
    if attr is None or not attr.as_int():
        return Rewrite([], None, "")
    zp = _input(node, 2)
    given = ir.DataType(attr.as_int())
    implied = zp.dtype if zp is not None else ir.DataType.UINT8
    if zp is not None and zp.dtype is None or given != implied:
        raise Refusal(f"output_dtype={given.name.lower()} differs from the type its zero point gives before "
                      f"opset 21 ({implied.name.lower() if implied else 'unknown'})")
    return Rewrite([], None, f"output_dtype {given.name.lower()} is the zero point's type")


def _float32(b: Builder, x: ir.Value, stash: int) -> tuple[ir.Value, bool]:
    low = x.dtype in (ir.DataType.FLOAT16, ir.DataType.BFLOAT16) and stash == 1
    return (b.op("Cast", x, to=ir.DataType.FLOAT) if low else x), low


def _mean(b: Builder, v: ir.Value, axes: list[int], ctx: Context) -> ir.Value:
    if ctx.dst >= 18:
        return b.op("ReduceMean", v, b.const(np.array(axes, dtype=np.int64)), keepdims=1)
    return b.op("ReduceMean", v, axes=axes, keepdims=1)


def _standardize(b: Builder, x: ir.Value, axes: list[int], eps: float, ctx: Context) -> tuple[ir.Value, ir.Value, ir.Value]:
    """``(x - mean) / sqrt(var + eps)`` over ``axes``: (normalized, mean, standard deviation)."""
    dtype = np.float32 if x.dtype in (None, ir.DataType.FLOAT) else x.dtype.numpy()
    mu = _mean(b, x, axes, ctx)
    d = b.op("Sub", x, mu)
    std = b.op("Sqrt", b.op("Add", _mean(b, b.op("Mul", d, d), axes, ctx), b.const(np.array(eps, dtype=dtype))))
    return b.op("Div", d, std), mu, std


def layer_normalization(node: ir.Node, ctx: Context) -> Rewrite:
    """LayerNormalization-17 (no earlier version) -> ReduceMean / Sub / Mul / Sqrt / Div, computed in float32
    when ``stash_type`` asks for it."""
    x, scale = node.inputs[0], node.inputs[1]
    bias = _input(node, 2)
    axis = node.attributes.get_int("axis", -1)
    rank = _rank(x)
    axes = list(range(axis, rank)) if rank is not None and axis >= 0 else list(range(axis, 0))
    b = Builder(node.name, ctx)
    xf, low = _float32(b, x, node.attributes.get_int("stash_type", 1))
    y, mu, std = _standardize(b, xf, axes, node.attributes.get_float("epsilon", 1e-5), ctx)
    if low:
        y = b.op("Cast", y, to=x.dtype)
    y = b.op("Mul", y, scale)
    if bias is not None:
        y = b.op("Add", y, bias)
    outs: list[ir.Value | None] = [y]
    if len(node.outputs) > 1:
        outs.append(mu)
    if len(node.outputs) > 2:
        outs.append(b.op("Reciprocal", std))
    return Rewrite(b.nodes, outs, f"decomposed into ReduceMean/Sub/Mul/Sqrt/Div over axes {axes}")


def group_normalization(node: ir.Node, ctx: Context) -> Rewrite:
    """GroupNormalization-21 (per-channel scale and bias; GroupNormalization-18 is deprecated and takes them
    per group) -> Reshape to [N, groups, -1], standardize, Reshape back, scale and bias per channel."""
    x, scale, bias = node.inputs
    rank = _rank(x)
    if rank is None:
        raise Refusal("the rank of its input is unknown")
    groups = node.attributes.get_int("num_groups")
    b = Builder(node.name, ctx)
    xf, low = _float32(b, x, node.attributes.get_int("stash_type", 1))
    g = b.op("Reshape", xf, b.const(np.array([0, groups, -1], np.int64)))
    y, _, _ = _standardize(b, g, [2], node.attributes.get_float("epsilon", 1e-5), ctx)
    y = b.op("Reshape", y, b.op("Shape", x))
    if low:
        y = b.op("Cast", y, to=x.dtype)
    y = b.op("Add", b.op("Mul", y, _along(b, scale, 1, rank)), _along(b, bias, 1, rank))
    return Rewrite(b.nodes, [y], f"decomposed over {groups} groups (GroupNormalization-18 is deprecated)")


def reshape(node: ir.Node, ctx: Context) -> Rewrite:
    """Reshape-14 -> 13: ``allowzero=1`` only matters when the shape holds a 0."""
    if node.attributes.get_int("allowzero", 0):
        shape = constant_input(node.inputs[1], ctx.src)
        if not shape.known:
            raise Refusal(f"allowzero=1 with a shape that is not constant ({shape.how}): a 0 in it would "
                          "mean 'keep the dimension' at the target opset")
        if (shape.value == 0).any():
            raise Refusal(f"allowzero=1 with a 0 in its shape {shape.value.tolist()}: the target opset "
                          "copies that dimension instead")
        del node.attributes["allowzero"]
        return Rewrite([], None, "allowzero=1 dropped: no 0 in its shape")
    return Rewrite([], None, "")


def shape(node: ir.Node, ctx: Context) -> Rewrite:
    """Shape-15 (``start`` / ``end``) -> 14: the whole shape, then ``Slice`` of it (Shape's ``start`` and
    ``end`` count from the back when negative and are clamped to the rank, as Slice's are)."""
    start = node.attributes.get_int("start", 0)
    end = node.attributes.get("end")
    if start == 0 and end is None:
        node.attributes.pop("start", None)
        return Rewrite([], None, "the whole shape")
    stop = end.as_int() if end is not None else np.iinfo(np.int64).max
    b = Builder(node.name, ctx)
    whole = b.op("Shape", node.inputs[0])
    out = b.op("Slice", whole, b.const(np.array([start], np.int64)), b.const(np.array([stop], np.int64)),
               b.const(np.array([0], np.int64)))
    return Rewrite(b.nodes, [out], f"start={start}, end={end.as_int() if end is not None else None} "
                                   "as Slice of the whole shape")


def softmax(node: ir.Node, ctx: Context) -> Rewrite:
    """Softmax-13 family -> 12: the old versions coerce the input to 2-D at ``axis``."""
    axis = node.attributes.get_int("axis", -1)
    x = node.inputs[0]
    rank = _rank(x)
    if rank is None and axis != -1:
        raise Refusal("the rank of its input is unknown, so whether its axis is the last one cannot be told")
    b = Builder(node.name, ctx)
    if axis == -1 or (rank is not None and axis % rank == rank - 1):
        out = b.op(node.op_type, x, axis=-1 if rank is None else rank - 1)
        return Rewrite(b.nodes, [out], "axis is the last one: same result")
    a = axis % rank
    perm = [i for i in range(rank) if i != a] + [a]
    inverse = [perm.index(i) for i in range(rank)]
    y = b.op(node.op_type, b.op("Transpose", x, perm=perm), axis=rank - 1)
    return Rewrite(b.nodes, [b.op("Transpose", y, perm=inverse)], f"axis {axis} moved last by Transpose {perm}")


def split(node: ir.Node, ctx: Context) -> Rewrite:
    """Split-18 ``num_outputs`` -> 13: explicit sizes (the axis length must be known when it does not divide
    evenly; equal parts need no sizes)."""
    n = node.attributes.pop("num_outputs", None)
    if n is None:
        return Rewrite([], None, "")
    axis = node.attributes.get_int("axis", 0)
    x = node.inputs[0]
    rank = _rank(x)
    dim = x.shape[axis] if rank is not None and -rank <= axis < rank else None
    n = n.as_int()
    if isinstance(dim, int) and dim % n:
        chunk = -(-dim // n)
        sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
        b = Builder(node.name, ctx)
        node.resize_inputs(2)
        node.replace_input_with(1, b.const(np.array(sizes, dtype=np.int64)))
        return Rewrite(b.nodes, None, f"num_outputs={n} as sizes {sizes}")
    if not isinstance(dim, int):
        raise Refusal("num_outputs on an axis of unknown length: equal parts are only equivalent when it "
                      "divides evenly, which cannot be checked")
    return Rewrite([], None, f"num_outputs={n}: equal parts")


def pad_axes(node: ir.Node, ctx: Context) -> Rewrite:
    """Pad-18 ``axes`` -> 13: pads given for every axis (0 for the others)."""
    axes = _input(node, 3)
    if axes is None:
        return Rewrite([], None, "")
    rank = _rank(node.inputs[0])
    listed = _front([int(a) for a in _known(axes, ctx, "its axes").reshape(-1)], rank, "axes")
    pads = _known(node.inputs[1], ctx, "its pads (to spread over every axis)").reshape(-1)
    if rank is None:
        raise Refusal("pads for some axes need the input's rank, which is unknown")
    full = np.zeros(2 * rank, dtype=np.int64)
    for i, a in enumerate(listed):
        full[a], full[a + rank] = pads[i], pads[i + len(listed)]
    b = Builder(node.name, ctx)
    node.replace_input_with(1, b.const(full))
    node.resize_inputs(3)
    return Rewrite(b.nodes, None, f"pads {pads.tolist()} of axes {listed} as {full.tolist()}")


def pad_wrap(node: ir.Node, ctx: Context) -> Rewrite:
    """Pad-19 ``mode=wrap`` -> 18: each padded axis as Concat(tail, x, head) of Slices."""
    if node.attributes.get_string("mode", "constant") != "wrap":
        return Rewrite([], None, "")
    x = node.inputs[0]
    dims = _dims(x)
    if dims is None:
        raise Refusal("mode wrap needs the input's shape, which is not fixed")
    pads = _known(node.inputs[1], ctx, "its pads").reshape(-1)
    axes = _input(node, 3)
    rank = len(dims)
    listed = (_front([int(a) for a in _known(axes, ctx, "its axes").reshape(-1)], rank, "axes") if axes is not None
              else list(range(rank)))
    b = Builder(node.name, ctx)
    y = x
    for i, a in enumerate(listed):
        before, after = int(pads[i]), int(pads[i + len(listed)])
        if not 0 <= before <= dims[a] or not 0 <= after <= dims[a]:
            raise Refusal(f"wrap pads ({before}, {after}) of axis {a} beyond its length {dims[a]} or negative")
        parts = []
        if before:
            parts.append(b.op("Slice", y, b.const(np.array([dims[a] - before])), b.const(np.array([dims[a]])),
                              b.const(np.array([a]))))
        parts.append(y)
        if after:
            parts.append(b.op("Slice", y, b.const(np.array([0])), b.const(np.array([after])), b.const(np.array([a]))))
        y = b.op("Concat", *parts, axis=a) if len(parts) > 1 else y
    if y is x:
        y = b.op("Identity", x)
    return Rewrite(b.nodes, [y], f"mode wrap as Concat of Slices (pads {pads.tolist()})")


def scatter_reduction(node: ir.Node, ctx: Context) -> Rewrite:
    """ScatterElements / ScatterND 18 -> 16: the ``max`` and ``min`` reductions do not exist before."""
    reduction = node.attributes.get_string("reduction", "none")
    if reduction in ("max", "min"):
        raise Refusal(f"reduction={reduction!r} exists from opset 18 only (16 has none, add and mul)")
    return Rewrite([], None, f"reduction {reduction!r} exists at opset 16")


def roi_align(node: ir.Node, ctx: Context) -> Rewrite:
    """RoiAlign-16 -> 10: RoiAlign-10 maps coordinates as ``output_half_pixel``, RoiAlign-16's default is
    ``half_pixel``."""
    ctm = node.attributes.pop("coordinate_transformation_mode", None)
    if ctm is None or ctm.as_string() != "output_half_pixel":
        raise Refusal(f"coordinate_transformation_mode={ctm.as_string() if ctm else 'half_pixel'!r} (the default "
                      "from opset 16): RoiAlign-10 only maps coordinates as 'output_half_pixel'")
    return Rewrite([], None, "output_half_pixel, RoiAlign-10's mapping")


def grid_sample(node: ir.Node, ctx: Context) -> Rewrite:
    """GridSample-20 -> 16: modes renamed (linear -> bilinear, cubic -> bicubic); 4-D inputs only."""
    mode = node.attributes.get_string("mode", "linear")
    rank = _rank(node.inputs[0])
    if rank != 4:
        raise Refusal(f"a rank-{rank if rank is not None else 'unknown'} input: GridSample-16 only samples 4-D "
                      "inputs")
    renamed = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    node.attributes["mode"] = ir.AttrString("mode", renamed)
    return Rewrite([], None, f"mode {mode!r} as {renamed!r}")


def batch_normalization(node: ir.Node, ctx: Context) -> Rewrite:
    """BatchNormalization-14 -> 9: inference only (``training_mode=0``, the running statistics not output)."""
    if node.attributes.get_int("training_mode", 0):
        raise Refusal("training_mode=1: BatchNormalization-9 outputs running statistics only in training, "
                      "with other outputs")
    if any(v.uses() or v.is_graph_output() for v in node.outputs[1:]):
        raise Refusal("its running_mean / running_var outputs are read")
    node.resize_outputs(1)
    return Rewrite([], None, "inference: one output")


def optional_get(node: ir.Node, ctx: Context) -> Rewrite:
    """OptionalGetElement-18 -> 15: of a plain tensor or sequence (allowed from 18) it is ``Identity``."""
    if isinstance(node.inputs[0].type, ir.OptionalType):
        return Rewrite([], None, "")
    b = Builder(node.name, ctx)
    return Rewrite(b.nodes, [b.op("Identity", node.inputs[0])], "of a tensor or sequence: Identity")


def optional_has(node: ir.Node, ctx: Context) -> Rewrite:
    """OptionalHasElement-18 -> 15: absent input (false) or plain tensor / sequence (true) as a constant."""
    value = _input(node, 0)
    if value is not None and (value.type is None or isinstance(value.type, ir.OptionalType)):
        return Rewrite([], None, "")
    b = Builder(node.name, ctx)
    return Rewrite(b.nodes, [b.const(np.array(value is not None))], f"constant {value is not None}")


def cast_saturate(node: ir.Node, ctx: Context) -> Rewrite:
    """Cast / CastLike 19 -> 13: ``saturate`` only acts on float8 targets, which the older versions lack (the
    schema checks refuse those): dropped."""
    saturate = node.attributes.pop("saturate", None)
    return Rewrite([], None, "saturate dropped (it only acts on float8 targets)" if saturate is not None
                   else "")


def if_shapes(node: ir.Node, ctx: Context) -> Rewrite:
    """If-11 -> 1: If-1's branches must produce outputs of one shape."""
    branches = [node.attributes[n].as_graph() for n in ("then_branch", "else_branch")]
    for a, c in zip(*(g.outputs for g in branches)):
        if a.shape is not None and c.shape is not None and a.shape.is_static() and c.shape.is_static() \
                and list(a.shape) != list(c.shape):
            raise Refusal(f"its branches output {a.name!r} {list(a.shape)} and {c.name!r} {list(c.shape)}: "
                          "If-1's branches must agree in shape")
    return Rewrite([], None, "")


# -- Resize --------------------------------------------------------------------------------------------
def _resize_scales(node: ir.Node, ctx: Context) -> np.ndarray:
    inputs = list(node.inputs) + [None] * 4
    scales = constant_input(inputs[2], ctx.src)
    if scales.known and scales.value.size:
        return scales.value.astype(np.float32)
    sizes = constant_input(inputs[3], ctx.src)
    dims = _dims(inputs[0])
    if sizes.known and dims is not None:
        return (sizes.value.astype(np.float32) / np.array(dims, dtype=np.float32)).astype(np.float32)
    raise Refusal(f"its scales are not constant ({scales.how}) and its sizes cannot be turned into scales "
                  f"({sizes.how}, input shape {inputs[0].shape if inputs[0] is not None else None})")


def resize_11(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize-11 -> Resize-10 when it computes the same: Resize-10 maps coordinates ``asymmetric``-ally and
    rounds ``nearest`` down, which any mapping matches for ``nearest`` with whole scale factors."""
    attrs = node.attributes
    mode = attrs.get_string("mode", "nearest")
    ctm = attrs.get_string("coordinate_transformation_mode", "half_pixel")
    nearest_mode = attrs.get_string("nearest_mode", "round_prefer_floor")
    if mode not in ("nearest", "linear"):
        raise Refusal(f"mode {mode!r} does not exist before opset 11 (only 'nearest' and 'linear')")
    scales = _resize_scales(node, ctx)
    whole = bool(np.all(scales >= 1) and np.all(scales == np.round(scales)))
    if mode == "nearest" and not (whole and ctm in ("asymmetric", "half_pixel", "pytorch_half_pixel")
                                  and (ctm != "asymmetric" or nearest_mode == "floor")):
        raise Refusal(f"nearest with coordinate_transformation_mode={ctm!r}, nearest_mode={nearest_mode!r} and "
                      f"scales {scales.tolist()} picks other pixels than the old versions' asymmetric floor mapping")
    if mode == "linear" and ctm != "asymmetric":
        raise Refusal(f"linear with coordinate_transformation_mode={ctm!r}: the old versions only interpolate "
                      "'asymmetric'-ally (PyTorch's align_corners=False is 'half_pixel')")
    b = Builder(node.name, ctx)
    out = b.op("Resize", node.inputs[0], b.const(scales), mode=mode)
    return Rewrite(b.nodes, [out], f"rewritten as Resize-10 (scales {scales.tolist()}, mode {mode})")


def resize_10(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize-10 (no earlier version) -> Upsample-9, its same definition under its old name."""
    b = Builder(node.name, ctx)
    out = b.op("Upsample", *node.inputs, mode=node.attributes.get_string("mode", "nearest"))
    return Rewrite(b.nodes, [out], "rewritten as Upsample-9")


def resize_13(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize-13 -> 11: ``roi`` and ``scales`` are required inputs at 11 (an empty tensor when unused: roi
    only counts for ``tf_crop_and_resize``, scales is empty when sizes are given)."""
    b = Builder(node.name, ctx)
    inputs = list(node.inputs) + [None] * (3 - len(node.inputs))
    done = []
    if len(node.inputs) < 3:
        node.resize_inputs(3)
    for index, name in ((1, "roi"), (2, "scales")):
        if inputs[index] is None:
            dtype = node.inputs[0].dtype if index == 1 and node.inputs[0].dtype in (
                ir.DataType.FLOAT16, ir.DataType.DOUBLE) else ir.DataType.FLOAT
            node.replace_input_with(index, b.const(np.array([], dtype=dtype.numpy())))
            done.append(name)
    return Rewrite(b.nodes, None, f"absent {' and '.join(done)} given as an empty tensor" if len(done) == 1 else
                   "absent roi and scales given as empty tensors" if done else "")


def resize_18(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize-18 -> 13: ``axes`` spread to every axis; ``antialias`` only acts when shrinking and
    ``keep_aspect_ratio_policy`` only on sizes, so both are dropped where they do nothing."""
    done = []
    policy = node.attributes.get_string("keep_aspect_ratio_policy", "stretch")
    axes_attr = node.attributes.pop("axes", None)
    if axes_attr is not None:
        rank = _rank(node.inputs[0])
        axes = _front(list(axes_attr.as_ints()), rank, "axes")
        if rank is None:
            raise Refusal("axes need the input's rank, which is unknown")
        b = Builder(node.name, ctx)
        for index, fill in ((2, 1.0), (3, None)):
            value = _input(node, index)
            if value is None:
                continue
            given = _known(value, ctx, f"its {'scales' if index == 2 else 'sizes'} (for some axes)").reshape(-1)
            if fill is None:
                dims = _dims(node.inputs[0])
                if dims is None:
                    raise Refusal("sizes for some axes need the input's shape, which is not fixed")
                full = np.array(dims, dtype=np.int64)
            else:
                full = np.full(rank, fill, dtype=np.float32)
            full[axes] = given
            node.replace_input_with(index, b.const(full))
        done.append(f"axes {axes} spread over all {rank} axes")
        pending = b.nodes
    else:
        pending = []
    if node.attributes.get_int("antialias", 0):
        scales = _resize_scales(node, ctx)
        if np.any(scales < 1):
            raise Refusal(f"antialias=1 while shrinking (scales {scales.tolist()}): no antialiasing before opset 18")
        del node.attributes["antialias"]
        done.append("antialias dropped: it does nothing when enlarging")
    if policy != "stretch":
        if _input(node, 3) is not None:
            raise Refusal(f"keep_aspect_ratio_policy={policy!r} on sizes: only 'stretch' exists before opset 18")
        del node.attributes["keep_aspect_ratio_policy"]
        done.append(f"keep_aspect_ratio_policy={policy!r} dropped: it only applies to sizes")
    return Rewrite(pending, None, "; ".join(done) or "")


def resize_19(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize-19 ``half_pixel_symmetric`` -> 18: it is ``half_pixel`` whenever the output length is the
    input length times the scale exactly (sizes given, or whole products)."""
    if node.attributes.get_string("coordinate_transformation_mode", "half_pixel") != "half_pixel_symmetric":
        return Rewrite([], None, "")
    exact = _input(node, 3) is not None and node.attributes.get_string("keep_aspect_ratio_policy", "stretch") == "stretch"
    if not exact:
        dims = _dims(node.inputs[0])
        scales = constant_input(_input(node, 2), ctx.src)
        exact = dims is not None and scales.known and bool(np.all(
            (np.array(dims) * scales.value) == np.floor(np.array(dims) * scales.value)))
        if "axes" in node.attributes:
            exact = False
    if not exact:
        raise Refusal("half_pixel_symmetric with output lengths that are not whole multiples of the input's: "
                      "no equivalent before opset 19")
    node.attributes["coordinate_transformation_mode"] = ir.AttrString("coordinate_transformation_mode", "half_pixel")
    return Rewrite([], None, "half_pixel_symmetric is half_pixel here (whole output lengths)")


def resize_up_13(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize-11 -> 13 (up): ``tf_half_pixel_for_nn`` was removed at 13."""
    if node.attributes.get_string("coordinate_transformation_mode", "half_pixel") == "tf_half_pixel_for_nn":
        raise Refusal("coordinate_transformation_mode='tf_half_pixel_for_nn' does not exist from opset 13")
    return Rewrite([], None, "")


# -- the tables -----------------------------------------------------------------------------------------
def _types(version: int, detail: str, ops: str) -> dict[tuple[str, int], str]:
    return {(op, version): f"new versions only admit more types ({detail})" for op in ops.split()}


_UNARY13 = ("Abs Ceil Erf Exp Floor Log Neg Reciprocal Relu Sigmoid Sign Sqrt Tanh IsNaN NonZero Identity Expand "
            "Tile Transpose Flatten Concat Gather GatherElements GatherND Gemm MatMul Max Min Mean Sum Mod Pow Equal "
            "Greater Less LRN MeanVarianceNormalization Pad Clip Reshape Shape Size Slice SpaceToDepth DepthToSpace "
            "ScatterElements ScatterND Cast Constant Dropout If Loop ArgMax ArgMin Add Sub Mul Div "
            "SoftmaxCrossEntropyLoss NegativeLogLikelihoodLoss ") + " ".join(_REDUCE)

#: (operator, version) -> why a node crosses that change as it is (the schema checks alone)
TYPE_ONLY: dict[tuple[str, int], str] = {
    **_types(13, "bfloat16", _UNARY13),
    **_types(14, "8- and 16-bit integers", "Add Sub Mul Div"),
    **_types(14, "signed integers", "Relu"),
    **_types(14, "float16, bfloat16", "CumSum"),
    **_types(14, "sequences", "Identity"),
    **_types(16, "bfloat16, optionals", "Identity If Loop LeakyRelu PRelu Where GreaterOrEqual "
                                                   "LessOrEqual Scan"),
    **_types(19, "float8; strings for Equal", "Constant Identity If Loop Reshape "
                                                                "Shape Size Scan Equal"),
    **_types(20, "bfloat16, float8", "ConstantOfShape IsInf IsNaN ReduceMax ReduceMin"),
    **_types(21, "int4, uint4, float8", "Cast CastLike Constant ConstantOfShape Identity If Loop Reshape "
                                                     "Shape Size Scan Squeeze Unsqueeze Transpose Flatten Pad "
                                                     "QLinearMatMul"),
    **_types(9, "integers, strings", "Constant Flatten Gemm Greater Less MatMul PRelu Cast"),
    **_types(12, "more integers", "Clip Max Min ReduceMax ReduceMin MaxPool"),
    ("Equal", 11): "new versions only admit more types (floating point, more integers)",
    ("Erf", 13): "new versions only admit more types (bfloat16; integers no longer)",
    ("Conv", 11): "only reworded the documentation (onnx/onnx#2414)",
    ("ConvTranspose", 11): "only reworded the documentation",
    **_types(11, "only reworded the pads and output shape formulas (onnx's converter: compatible)",
             "AveragePool MaxPool LpPool MaxUnpool"),
    ("NonMaxSuppression", 11): "only clarified that boxes with IoU strictly above the threshold are dropped",
    ("Loop", 11): "only allowed loop-carried values to change shape between iterations",
    ("Pow", 13): "new versions only admit more types (bfloat16)",
    ("Pow", 15): "new versions only admit more types (bfloat16 exponents)",
    ("BatchNormalization", 9): "dropped the spatial attribute (always spatial, BatchNormalization-7's default)",
    ("BatchNormalization", 15): "scale / bias and the statistics may each have their own type",
    ("DequantizeLinear", 19): "new versions only admit more types (float16 / bfloat16 scales, float8 inputs)",
    ("QuantizeLinear", 19): "new versions only admit more types (float16 / bfloat16 scales, float8 outputs: saturate is for those)",
}

_HALF = "attribute added with a default that keeps the older behaviour"

#: (operator, version) -> onegraph's step down across that change
ADAPTERS: dict[tuple[str, int], Step] = {
    **{(op, v): Step("inputs that were attributes", inputs_to_attributes)
       for op, vs in MOVES.items() for v in vs if op not in _REDUCE + ("ReduceSum", "Dropout")},
    **{(op, 18): Step("axes as an input, noop_with_empty_axes", reduce_axes) for op in _REDUCE},
    ("ReduceSum", 13): Step("axes as an input, noop_with_empty_axes; admits bfloat16", reduce_axes),
    ("Squeeze", 13): Step("axes as an input; admits bfloat16", inputs_to_attributes),
    ("Unsqueeze", 13): Step("axes as an input; admits bfloat16", inputs_to_attributes),
    ("Split", 13): Step("split sizes as an input; admits bfloat16", inputs_to_attributes),
    ("Dropout", 12): Step("ratio and training_mode as inputs, seed", dropout_inputs),
    ("Dropout", 10): Step("the mask output became boolean", dropout_mask),
    **{(op, 11): Step("negative axes", nonnegative_axes) for op in
       ("ArgMax", "ArgMin", "Compress", "Concat", "Flatten", "Hardmax", "LogSoftmax", "Softmax", "Split", "Squeeze",
        "Unsqueeze", "ReduceSum", *_REDUCE)},
    ("Gather", 11): Step("negative axis and indices", gather),
    ("ScatterElements", 11): Step("first version (Scatter-9 renamed, negative axis and indices)", scatter_elements),
    ("OneHot", 11): Step("negative axis and indices", one_hot),
    ("Slice", 11): Step("negative axes", slice_axes),
    ("Scan", 11): Step("negative scan axes", scan_axes),
    ("Scan", 9): Step("no batch axis; scan axes and directions", scan_9),
    ("TopK", 11): Step("negative axis, largest and sorted", top_k),
    ("If", 11): Step("branches may output different shapes", if_shapes),
    ("Constant", 12): Step("value_float(s) / value_int(s) / value_string(s)", constant_values),
    ("Constant", 11): Step("sparse_value; value no longer required"),
    **{(op, 13): Step("axis coerced to 2-D before, admits bfloat16", softmax) for op in ("Softmax", "LogSoftmax",
                                                                                         "Hardmax")},
    ("Gemm", 11): Step("C optional", gemm_c),
    ("Pow", 12): Step("the exponent has a type of its own", pow_exponent),
    ("Reshape", 14): Step("allowzero", reshape),
    ("Shape", 15): Step("start / end", shape),
    ("Split", 18): Step("num_outputs", split),
    ("Pad", 18): Step("axes input", pad_axes),
    ("Pad", 19): Step("wrap mode", pad_wrap),
    ("Resize", 10): Step("first version (Upsample-9 renamed)", resize_10),
    ("Resize", 11): Step("roi, sizes, coordinate mappings, cubic", resize_11),
    ("Resize", 13): Step("roi and scales optional", resize_13),
    ("Resize", 18): Step("axes, antialias, keep_aspect_ratio_policy", resize_18),
    ("Resize", 19): Step("half_pixel_symmetric", resize_19),
    ("LayerNormalization", 17): Step("first version", layer_normalization),
    ("GroupNormalization", 21): Step("scale and bias per channel, stash_type", group_normalization),
    ("DepthToSpace", 11): Step("mode (CRD)", depth_to_space),
    ("DequantizeLinear", 13): Step("axis (per-channel scale); admits bfloat16", quantize_axis),
    ("QuantizeLinear", 13): Step("axis (per-channel scale); admits bfloat16", quantize_axis),
    ("QuantizeLinear", 21): Step("output_dtype, block_size; admits int4 / int16", quantize_dtype),
    ("DequantizeLinear", 21): Step("block_size; admits int4 / int16"),
    ("ScatterElements", 16): Step("reduction (none, add, mul)"), ("ScatterND", 16): Step("reduction (none, add, mul)"),
    ("ScatterElements", 18): Step("reductions max and min", scatter_reduction),
    ("ScatterND", 18): Step("reductions max and min", scatter_reduction),
    ("RoiAlign", 16): Step("coordinate_transformation_mode, half_pixel by default", roi_align),
    ("GridSample", 20): Step("modes renamed, N-D inputs", grid_sample),
    ("BatchNormalization", 14): Step("training_mode; statistics of their own type", batch_normalization),
    ("OptionalGetElement", 18): Step("admits plain tensors and sequences", optional_get),
    ("OptionalHasElement", 18): Step("input optional, admits plain tensors and sequences", optional_has),
    ("ArgMax", 12): Step(f"select_last_index: {_HALF}"), ("ArgMin", 12): Step(f"select_last_index: {_HALF}"),
    ("AveragePool", 10): Step(f"ceil_mode: {_HALF}"), ("AveragePool", 19): Step(f"dilations: {_HALF}"),
    ("MaxPool", 10): Step(f"ceil_mode, dilations: {_HALF}"), ("LpPool", 18): Step(f"ceil_mode, dilations: {_HALF}"),
    ("GatherND", 12): Step(f"batch_dims: {_HALF}"),
    **{(op, 14): Step(f"layout: {_HALF}") for op in ("GRU", "LSTM", "RNN")},
    ("Cast", 19): Step("saturate (for float8 targets)", cast_saturate),
    ("CastLike", 19): Step("saturate (for float8 targets)", cast_saturate),
}

#: (operator, version) -> why onnx's converter's own adapter is trusted there
ONNX: dict[tuple[str, int], str] = {
    **{(op, 8): "multidirectional broadcasting (onnx: BroadcastBackwardCompatibility / Sum_8_7)"
       for op in ("Max", "Min", "Mean", "Sum")},
    ("MaxPool", 8): "storage_order and the Indices output (onnx: MaxPool_8_7)",
}

#: (operator, version) -> why no node of that version can be expressed at the version before
IMPOSSIBLE: dict[tuple[str, int], str] = {}

#: (operator, version) -> onegraph's step up across that change where onnx's adapter gets it wrong
UP_ADAPTERS: dict[tuple[str, int], Step] = {
    ("Resize", 13): Step("tf_half_pixel_for_nn removed", resize_up_13),
    ("Scan", 9): Step("no batch axis", scan_up_9),
}


def classify(op_type: str, version: int) -> tuple[str, str]:
    """How a node of ``op_type`` converts down across ``version``: (``type-only`` | ``onegraph`` | ``onnx`` |
    ``impossible`` | ``deprecated`` | ``unclassified``, what changed / why). A deprecated definition holds
    no valid node (there is nothing to convert down; up, onnx's converter replaces the operator)."""
    s = schema(op_type, version)
    if s is not None and s.since_version == version and s.deprecated:
        return "deprecated", f"{op_type} is deprecated from opset {version}"
    if (op_type, version) in IMPOSSIBLE:
        return "impossible", IMPOSSIBLE[(op_type, version)]
    if (op_type, version) in ADAPTERS:
        return "onegraph", ADAPTERS[(op_type, version)].what
    if (op_type, version) in TYPE_ONLY:
        return "type-only", TYPE_ONLY[(op_type, version)]
    if (op_type, version) in ONNX:
        return "onnx", ONNX[(op_type, version)]
    return "unclassified", ""


def down_step(op_type: str, version: int) -> Step | None:
    """onegraph's step down across ``version`` (None: onnx's converter's)."""
    if (op_type, version) in IMPOSSIBLE:
        reason = IMPOSSIBLE[(op_type, version)]

        def refuse(node: ir.Node, ctx: Context) -> Rewrite:
            raise Refusal(reason)
        return Step(reason, refuse)
    if (op_type, version) in ADAPTERS:
        return ADAPTERS[(op_type, version)]
    if (op_type, version) in TYPE_ONLY:
        return Step(TYPE_ONLY[(op_type, version)])
    return None


def up_step(op_type: str, version: int) -> Step | None:
    """onegraph's step up across ``version`` (None: onnx's converter's)."""
    return UP_ADAPTERS.get((op_type, version))


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
