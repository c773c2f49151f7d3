"""onegraph's own opset adapters, for the operators onnx's version converter has none for or gets wrong.

Each adapter rewrites one node of a graph at opset ``src`` into nodes that are valid **at opset ``dst``**,
or raises :class:`Refusal` saying why no equivalent exists. The nodes it emits live in the private domain
:data:`TARGET_DOMAIN` while onnx's converter runs, so the converter passes them through untouched; the
domain is set back to the default one afterwards (see :mod:`onegraph.convert.opset`). Constants are emitted
as ``Constant`` nodes, so the same adapters work in function bodies, which cannot hold initializers.

Adapters (operator: what it does):

* operators whose version changes only admitted more types or reworded the documentation (Identity 13/14/16,
  Conv 11, Cast 13/19/21, ...; :data:`TYPE_ONLY`): kept as they are when the node's attributes exist at
  ``dst`` (or hold the value their absence means) and the types of its inputs and outputs (a Cast's ``to``)
  are admitted there (``Identity`` 16 -> 15, "No Adapter For Conv");
* ``Gather`` 11 -> 10: negative indices are valid from opset 11 only; constant indices are normalized
  against the known axis length, computed ones by ``Where(indices < 0, indices + dim, indices)``;
* ``Resize`` 11+ -> ``Resize``-10 / ``Upsample``-9 / ``Upsample``-7: the old operators map coordinates
  ``asymmetric``-ally and round ``nearest`` down; the node converts when it computes the same (that
  mapping, or ``nearest`` with whole scale factors, where every mapping picks the same pixel), else refuses;
* ``Shape`` 15 -> 14 and below: ``start`` / ``end`` become a ``Slice`` of the whole shape;
* ``Reshape`` 14 -> 13 and below: ``allowzero=1`` dropped when the (constant) shape holds no 0;
* ``Split`` 18 -> 13..17 and below: ``num_outputs`` becomes explicit sizes (the axis length must be known
  when it does not divide evenly);
* ``LayerNormalization`` 17 -> below 17 (no earlier version): decomposed into ReduceMean / Sub / Mul / Sqrt /
  Div, computed in float32 when ``stash_type`` asks for it;
* ``Softmax`` / ``LogSoftmax`` / ``Hardmax`` 13 -> 12: equal when the axis is the last one; otherwise the
  axis is moved last by a Transpose, since the old versions flatten every axis from ``axis`` on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.convert.constants import TARGET_DOMAIN, constant_input

__all__ = ["TYPE_ONLY", "SAME_MEANING_SINCE", "Refusal", "Context", "Rewrite", "Builder", "schema", "since",
           "relabel", "gather", "resize", "split", "layer_normalization", "reshape", "shape", "softmax",
           "ADAPTERS", "PREEMPT", "preempted", "adapt", "apply"]

MORE_TYPES = "new versions only admit more types"
#: operators whose version bumps (in the default domain) changed only the admitted types or the text
TYPE_ONLY = {
    "Identity": "new versions only admit more types (bfloat16, sequences, optionals, float8, int4)",
    "Conv": "Conv-11 only reworded the documentation (onnx/onnx#2414)",
    "ConvTranspose": "ConvTranspose-11 only reworded the documentation",
    "Relu": MORE_TYPES, "Abs": MORE_TYPES,
    "Neg": MORE_TYPES, "Sigmoid": MORE_TYPES,
    "Tanh": MORE_TYPES, "Exp": MORE_TYPES,
    "Log": MORE_TYPES, "Sqrt": MORE_TYPES,
    "Reciprocal": MORE_TYPES, "Floor": MORE_TYPES,
    "Ceil": MORE_TYPES, "Add": MORE_TYPES,
    "Sub": MORE_TYPES, "Mul": MORE_TYPES,
    "Div": MORE_TYPES, "MatMul": MORE_TYPES,
    "Gemm": "new versions only admit more types (and make C optional)",
    "Transpose": MORE_TYPES, "Flatten": MORE_TYPES,
    "Concat": MORE_TYPES, "Equal": MORE_TYPES,
    "Greater": MORE_TYPES, "Less": MORE_TYPES,
    "Where": MORE_TYPES, "Not": MORE_TYPES,
    "Max": MORE_TYPES, "Min": MORE_TYPES,
    "Sum": MORE_TYPES, "Mean": MORE_TYPES,
    "Shape": "Shape-15 added optional start/end attributes", "Size": MORE_TYPES,
    "Reshape": "Reshape-14 added the optional allowzero attribute",
    "Constant": "new versions only added value_* attributes",
    "ConstantOfShape": "new versions only admit more types (bfloat16, float8, int4)",
    "Expand": MORE_TYPES, "Gather": "Gather-13 only admits bfloat16", "Squeeze": "Squeeze-21 and later only admit more types",
    "Unsqueeze": "Unsqueeze-21 and later only admit more types",
    "IsNaN": "IsNaN-13 and later only admit more types (bfloat16, float8)",
    "IsInf": "IsInf-20 only admits float8 types",
    "ArgMax": "ArgMax-12 added select_last_index (default 0), 13 bfloat16",
    "ArgMin": "ArgMin-12 added select_last_index (default 0), 13 bfloat16",
    "Mod": "Mod-13 only admits bfloat16", "NonZero": "NonZero-13 only admits bfloat16",
    "GatherElements": "GatherElements-13 only admits bfloat16",
    "ScatterND": "ScatterND-13 admits bfloat16, 16 and 18 add reduction (default none)",
    "OneHot": "OneHot-11 and later only admit more types", "Compress": "Compress-11 and later only admit more types",
    "TopK": "TopK-11 and later only admit more types", "Slice": "Slice-11 and later only admit more types",
    "Clip": "Clip-12 and later only admit more types", "Pow": "Pow-12 and later only admit more types",
    "GreaterOrEqual": "GreaterOrEqual-16 only admits bfloat16", "LessOrEqual": "LessOrEqual-16 only admits bfloat16",
    "And": MORE_TYPES, "Or": MORE_TYPES,
    "Xor": MORE_TYPES, "Sin": MORE_TYPES,
    "Cos": MORE_TYPES, "Erf": MORE_TYPES,
    "LSTM": "LSTM-14 added layout (default 0) and bfloat16",
    "Cast": "new versions only admit more types (bfloat16, float8, int4, float4) and add saturate / round_mode "
            "for float8 and float4 targets",
}


#: TYPE_ONLY operators whose meaning changed at an earlier version: converting down across it is refused
#: (operator -> (version, what changed then)).
SAME_MEANING_SINCE = {
    "ArgMax": (11, "negative axes"), "ArgMin": (11, "negative axes"), "OneHot": (11, "negative axes and indices"),
    "Compress": (11, "negative axes"), "TopK": (11, "negative axes, largest and sorted"),
    "Slice": (11, "negative axes"), "Clip": (11, "min and max as inputs"), "Gather": (11, "negative indices"),
    "ScatterND": (11, "the operator"), "GatherElements": (11, "the operator"),
    "Squeeze": (13, "axes as an input"), "Unsqueeze": (13, "axes as an input"),
}


class Refusal(Exception):
    """No adapter can convert this node: the message says why."""


@dataclasses.dataclass
class Context:
    """Where a node is converted: its graph (or function body), source and target opsets."""

    graph: ir.Graph
    src: int
    dst: int


@dataclasses.dataclass
class Rewrite:
    """The nodes replacing a node (at the target opset), the values replacing its outputs, and how."""

    nodes: list[ir.Node]
    outputs: list[ir.Value | None]
    how: str


class Builder:
    """Emits nodes of the target opset (in :data:`TARGET_DOMAIN`) named after the node they replace."""

    def __init__(self, base: str) -> None:
        self.base = base or "node"
        self.nodes: list[ir.Node] = []

    def op(self, op_type: str, *inputs: ir.Value | None, outputs: int = 1, **attrs):
        node = ir.node(op_type, list(inputs), attrs or None, domain=TARGET_DOMAIN, num_outputs=outputs,
                       name=f"{self.base}/{op_type}_{len(self.nodes)}")
        for i, out in enumerate(node.outputs):
            out.name = f"{self.base}/{op_type}_{len(self.nodes)}_out{i}"
        self.nodes.append(node)
        return node.outputs[0] if outputs == 1 else list(node.outputs)

    def const(self, array) -> ir.Value:
        return self.op("Constant", value=ir.tensor(np.asarray(array)))


def schema(op_type: str, opset: int, domain: str = "") -> onnx.defs.OpSchema | None:
    """The definition of ``op_type`` in force at ``opset`` (None when it does not exist yet)."""
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


def since(op_type: str, opset: int, domain: str = "") -> int | None:
    s = schema(op_type, opset, domain)
    return s.since_version if s is not None else None


# -- adapters ---------------------------------------------------------------------------------------
def relabel(node: ir.Node, ctx: Context) -> Rewrite:
    """Keep a node of a :data:`TYPE_ONLY` operator when it is valid as it is at ``dst``."""
    target = schema(node.op_type, ctx.dst)
    if target is None:
        first = schema(node.op_type, max(ctx.src, ctx.dst))
        raise Refusal(f"{node.op_type} does not exist at opset {ctx.dst}" +
                      (f" (only from opset {_first_version(node.op_type)})" if first is not None else ""))
    if node.op_type not in TYPE_ONLY:
        raise Refusal(f"no onegraph adapter for {node.op_type}")
    version, change = SAME_MEANING_SINCE.get(node.op_type, (0, ""))
    if ctx.dst < version <= ctx.src:  # upwards, the older meaning is a case of the newer one
        raise Refusal(f"{node.op_type}-{version} changed {change}: it is not the same operator at opset {ctx.dst}")
    allowed_attrs = set(target.attributes)
    source = schema(node.op_type, ctx.src)
    for name in [a for a in node.attributes if a not in allowed_attrs]:
        if _is_default(node.attributes[name], source):
            del node.attributes[name]  # set to the value its absence means: the older version is the same
    extra = [a for a in node.attributes if a not in allowed_attrs]
    if extra:
        raise Refusal(f"attribute(s) {', '.join(extra)} do not exist in {node.op_type}-{target.since_version}")
    if len(node.inputs) > len(target.inputs) and not (target.inputs and _variadic(target.inputs[-1])):
        raise Refusal(f"{node.op_type}-{target.since_version} takes at most {len(target.inputs)} inputs")
    constraints = {c.type_param_str: set(c.allowed_type_strs) for c in target.type_constraints}
    for i, value in enumerate(node.inputs):
        if value is None or value.type is None:
            continue
        formal = target.inputs[min(i, len(target.inputs) - 1)]
        allowed = constraints.get(formal.type_str)
        actual = _type_str(value.type)
        if allowed is not None and actual is not None and actual not in allowed:
            raise Refusal(f"input {value.name!r} is {actual}, which {node.op_type}-{target.since_version} does not admit")
    for i, actual in enumerate(_output_types(node)):
        formal = target.outputs[min(i, len(target.outputs) - 1)] if target.outputs else None
        allowed = constraints.get(formal.type_str) if formal is not None else None
        if allowed is not None and actual is not None and actual not in allowed:
            raise Refusal(f"output {node.outputs[i].name!r} is {actual}, which {node.op_type}-{target.since_version} "
                          "does not admit")
    node.domain = TARGET_DOMAIN
    return Rewrite([], list(node.outputs), f"kept as is: {TYPE_ONLY[node.op_type]}")


def _first_version(op_type: str) -> int:
    return min(v for v in range(1, onnx.defs.onnx_opset_version() + 1) if schema(op_type, v) is not None)


def _is_default(attr: ir.Attr, source: onnx.defs.OpSchema | None) -> bool:
    """True when ``attr`` holds the default value of its definition in ``source``."""
    if source is None or attr.is_ref() or attr.name not in source.attributes:
        return False
    default = source.attributes[attr.name].default_value
    if default is None or not default.name:
        return False
    return onnx.helper.get_attribute_value(default) == onnx.helper.get_attribute_value(
        ir.serde.serialize_attribute(attr))


def _output_types(node: ir.Node) -> list[str | None]:
    """Schema spellings of ``node``'s output types: a ``Cast``'s from its ``to`` attribute (known even
    where shape inference left the output untyped), others from the inferred types."""
    if node.op_type == "Cast" and "to" in node.attributes:
        return [f"tensor({ir.DataType(node.attributes['to'].as_int()).name.lower()})"]
    return [_type_str(v.type) if v is not None and v.type is not None else None for v in node.outputs]


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


def gather(node: ir.Node, ctx: Context) -> Rewrite:
    """Gather 11+ -> 10 and below: negative indices made non-negative (11+ -> 11+ changed only types)."""
    if ctx.dst >= 11:
        return relabel(node, ctx)
    data, indices = node.inputs[0], node.inputs[1]
    axis = node.attributes.get_int("axis", 0)
    b = Builder(node.name)
    const = constant_input(indices, ctx.src)
    if const.known and (const.value >= 0).all():
        node.domain = TARGET_DOMAIN
        return Rewrite([], list(node.outputs), "kept as is: its constant indices are not negative")
    dims = data.shape if data is not None else None
    if const.known and dims is not None and len(dims) > (axis % len(dims)) and isinstance(dims[axis], int):
        fixed = np.where(const.value < 0, const.value + dims[axis], const.value).astype(const.value.dtype)
        out = b.op("Gather", data, b.const(fixed), axis=axis)
        return Rewrite(b.nodes, [out], f"constant negative indices normalized against axis length {dims[axis]}")
    if ctx.dst < 9:
        raise Refusal("its indices may be negative and Where/Less do not exist before opset 9")
    if axis < 0:
        if dims is None:
            raise Refusal("its axis is negative and the rank of its data is unknown")
        axis += len(dims)
    index_type = indices.dtype if indices.dtype is not None else ir.DataType.INT64
    shape = b.op("Shape", data)
    dim = b.op("Gather", shape, b.const(np.array(axis, dtype=np.int64)), axis=0)
    dim = b.op("Cast", dim, to=index_type)
    zero = b.const(np.array(0, dtype=index_type.numpy()))
    neg = b.op("Less", indices, zero)
    fixed = b.op("Where", neg, b.op("Add", indices, dim), indices)
    out = b.op("Gather", data, fixed, axis=axis)
    return Rewrite(b.nodes, [out], "negative indices normalized at run time: Where(i < 0, i + dim, i)")


def resize(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize 11+ -> Resize-10, Upsample-9 or Upsample-7 when they compute the same."""
    attrs = node.attributes
    mode = attrs.get_string("mode", "nearest")
    ctm = attrs.get_string("coordinate_transformation_mode", "half_pixel")
    nearest_mode = attrs.get_string("nearest_mode", "round_prefer_floor")
    if attrs.get_int("antialias", 0) or "axes" in attrs or attrs.get_string("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise Refusal("it uses antialias, axes or keep_aspect_ratio_policy, which the old versions do not have")
    if mode not in ("nearest", "linear"):
        raise Refusal(f"mode {mode!r} does not exist before opset 11 (only 'nearest' and 'linear')")
    x = node.inputs[0]
    scales = _resize_scales(node, ctx)
    whole = bool(np.all(scales >= 1) and np.all(scales == np.round(scales)))
    if mode == "nearest" and not (whole and ctm in ("asymmetric", "half_pixel", "pytorch_half_pixel")
                                  and (ctm != "asymmetric" or nearest_mode == "floor")):
        raise Refusal(f"nearest with coordinate_transformation_mode={ctm!r}, nearest_mode={nearest_mode!r} and "
                      f"scales {scales.tolist()} picks other pixels than the old versions' asymmetric floor mapping")
    if mode == "linear" and ctm != "asymmetric":
        raise Refusal(f"linear with coordinate_transformation_mode={ctm!r}: the old versions only interpolate "
                      "'asymmetric'-ally (PyTorch's align_corners=False is 'half_pixel')")
    b = Builder(node.name)
    if ctx.dst >= 10:
        out = b.op("Resize", x, b.const(scales), mode=mode)
        what = "Resize-10"
    elif ctx.dst >= 9:
        out = b.op("Upsample", x, b.const(scales), mode=mode)
        what = "Upsample-9"
    elif ctx.dst >= 7:
        out = b.op("Upsample", x, mode=mode, scales=[float(s) for s in scales])
        what = "Upsample-7"
    else:
        raise Refusal("Upsample before opset 7 has another definition")
    return Rewrite(b.nodes, [out], f"rewritten as {what} (scales {scales.tolist()}, mode {mode})")


def _resize_scales(node: ir.Node, ctx: Context) -> np.ndarray:
    inputs = list(node.inputs) + [None] * 4
    scales = constant_input(inputs[2], ctx.src)
    if scales.known and scales.value.size:
        return scales.value.astype(np.float32)
    sizes = constant_input(inputs[3], ctx.src)
    x = inputs[0]
    if sizes.known and x is not None and x.shape is not None and x.shape.is_static():
        dims = np.array([int(d) for d in x.shape], dtype=np.float32)
        return (sizes.value.astype(np.float32) / dims).astype(np.float32)
    raise Refusal(f"its scales are not constant ({scales.how}) and its sizes cannot be turned into scales "
                  f"({sizes.how}, input shape {x.shape if x is not None else None})")


def split(node: ir.Node, ctx: Context) -> Rewrite:
    """Split 13+/18 -> older versions: sizes given the way ``dst`` takes them."""
    axis = node.attributes.get_int("axis", 0)
    n = len(node.outputs)
    inputs = list(node.inputs) + [None]
    sizes = None
    if inputs[1] is not None:
        c = constant_input(inputs[1], ctx.src)
        if not c.known:
            raise Refusal(f"its split sizes are not constant: {c.how}")
        sizes = [int(s) for s in c.value.reshape(-1)]
    x = inputs[0]
    dim = x.shape[axis] if x is not None and x.shape is not None and len(x.shape) > abs(axis) - (axis < 0) else None
    if sizes is None and "num_outputs" in node.attributes:
        if isinstance(dim, int) and dim % n:
            chunk = -(-dim // n)
            sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
        elif not isinstance(dim, int):
            raise Refusal("num_outputs on an axis of unknown length: equal parts are only equivalent when it "
                          "divides evenly, which cannot be checked")
    if axis < 0 and ctx.dst < 11:
        if x is None or x.shape is None:
            raise Refusal("negative axis before opset 11 needs the input's rank")
        axis += len(x.shape)
    b = Builder(node.name)
    if ctx.dst >= 13:
        extra = [b.const(np.array(sizes, dtype=np.int64))] if sizes else []
        outs = b.op("Split", x, *extra, outputs=n, axis=axis)
    elif sizes:
        outs = b.op("Split", x, outputs=n, axis=axis, split=sizes)
    else:
        outs = b.op("Split", x, outputs=n, axis=axis)
    outs = outs if isinstance(outs, list) else [outs]
    return Rewrite(b.nodes, outs, f"sizes {sizes} given as {'an input' if ctx.dst >= 13 else 'an attribute'}"
                   if sizes else "equal parts")


def layer_normalization(node: ir.Node, ctx: Context) -> Rewrite:
    """LayerNormalization-17 -> ReduceMean / Sub / Mul / Sqrt / Div at ``dst`` < 17."""
    x, scale = node.inputs[0], node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    axis = node.attributes.get_int("axis", -1)
    eps = node.attributes.get_float("epsilon", 1e-5)
    stash = node.attributes.get_int("stash_type", 1)
    rank = len(x.shape) if x is not None and x.shape is not None else None
    if axis >= 0 and rank is None and ctx.dst < 11:
        raise Refusal("the rank of its input is unknown")
    axes = list(range(axis, rank)) if rank is not None and axis >= 0 else list(range(axis, 0))
    if rank is not None:
        axes = [a % rank for a in axes] if ctx.dst < 11 else axes
    b = Builder(node.name)
    low = x.dtype in (ir.DataType.FLOAT16, ir.DataType.BFLOAT16) and stash == 1
    xf = b.op("Cast", x, to=ir.DataType.FLOAT) if low else x
    dtype = np.float32 if (low or x.dtype in (None, ir.DataType.FLOAT)) else x.dtype.numpy()

    def mean(v: ir.Value) -> ir.Value:
        if ctx.dst >= 18:
            return b.op("ReduceMean", v, b.const(np.array(axes, dtype=np.int64)), keepdims=1)
        return b.op("ReduceMean", v, axes=axes, keepdims=1)

    mu = mean(xf)
    d = b.op("Sub", xf, mu)
    var = mean(b.op("Mul", d, d))
    std = b.op("Sqrt", b.op("Add", var, b.const(np.array(eps, dtype=dtype))))
    y = b.op("Div", d, std)
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


def reshape(node: ir.Node, ctx: Context) -> Rewrite:
    """Reshape-14 -> 13 and below: ``allowzero=1`` only matters when the shape holds a 0."""
    if node.attributes.get_int("allowzero", 0):
        shape = constant_input(node.inputs[1], ctx.src)
        if not shape.known:
            raise Refusal(f"allowzero=1 with a shape that is not constant ({shape.how}): a 0 in it would "
                          "mean 'keep the dimension' at the target opset")
        if (shape.value == 0).any():
            raise Refusal(f"allowzero=1 with a 0 in its shape {shape.value.tolist()}: the target opset "
                          "copies that dimension instead")
        del node.attributes["allowzero"]
    return relabel(node, ctx)


def shape(node: ir.Node, ctx: Context) -> Rewrite:
    """Shape-15 (``start`` / ``end``) -> 14 and below: the whole shape, then ``Slice`` of it (Shape's
    ``start`` and ``end`` count from the back when negative and are clamped to the rank, as Slice's are)."""
    start = node.attributes.get_int("start", 0)
    end = node.attributes.get("end")
    if ctx.dst >= 15 or (start == 0 and end is None):
        node.attributes.pop("start", None)
        return relabel(node, ctx)
    stop = end.as_int() if end is not None else np.iinfo(np.int64).max
    b = Builder(node.name)
    whole = b.op("Shape", node.inputs[0])
    if ctx.dst >= 10:
        out = b.op("Slice", whole, b.const(np.array([start], np.int64)), b.const(np.array([stop], np.int64)),
                   b.const(np.array([0], np.int64)))
    else:
        out = b.op("Slice", whole, starts=[start], ends=[stop], axes=[0])
    return Rewrite(b.nodes, [out], f"start={start}, end={end.as_int() if end is not None else None} "
                                   "as Slice of the whole shape")


def softmax(node: ir.Node, ctx: Context) -> Rewrite:
    """Softmax-13 family -> 12: the old versions coerce the input to 2-D at ``axis``."""
    axis = node.attributes.get_int("axis", -1)
    x = node.inputs[0]
    rank = len(x.shape) if x is not None and x.shape is not None else None
    if rank is None and axis != -1:
        raise Refusal("the rank of its input is unknown, so whether its axis is the last one cannot be told")
    b = Builder(node.name)
    if axis == -1 or (rank is not None and axis % rank == rank - 1):
        out = b.op(node.op_type, x, axis=-1 if rank is None else rank - 1)
        return Rewrite(b.nodes, [out], "axis is the last one: same result")
    a = axis % rank
    perm = [i for i in range(rank) if i != a] + [a]
    inverse = [perm.index(i) for i in range(rank)]
    t = b.op("Transpose", x, perm=perm)
    y = b.op(node.op_type, t, axis=rank - 1)
    out = b.op("Transpose", y, perm=inverse)
    return Rewrite(b.nodes, [out], f"axis {axis} moved last by Transpose {perm}")


#: op_type -> adapter used when converting down (and, for relabel, in either direction)
ADAPTERS: dict[str, Callable[[ir.Node, Context], Rewrite]] = {
    "Gather": gather,
    "Resize": resize,
    "Split": split,
    "Reshape": reshape,
    "Shape": shape,
    "LayerNormalization": layer_normalization,
    "Softmax": softmax,
    "LogSoftmax": softmax,
    "Hardmax": softmax,
}


#: operators onnx's converter converts down *wrongly*: op -> version whose down conversion it gets wrong.
#: (It turns Softmax-13 with axis=0 into Softmax-11 with axis=0, which normalizes over all axes at once.)
PREEMPT = {"Softmax": 13, "LogSoftmax": 13, "Hardmax": 13}


def preempted(src: int, dst: int) -> set[str]:
    """Operators whose conversion from ``src`` to ``dst`` onegraph does itself rather than onnx's converter."""
    return {op for op, version in PREEMPT.items() if dst < version <= src}


def adapt(node: ir.Node, ctx: Context) -> Rewrite:
    """Rewrite ``node`` for opset ``ctx.dst`` with onegraph's adapter for its operator.

    Raises
    ------
    Refusal
        when no adapter exists for the operator or the node cannot be expressed at ``ctx.dst``.
    """
    adapter = ADAPTERS.get(node.op_type, relabel)
    if adapter is not relabel and ctx.dst > ctx.src:
        adapter = relabel
    return adapter(node, ctx)


def apply(node: ir.Node, rewrite: Rewrite) -> None:
    """Put ``rewrite`` in place of ``node`` in its graph (nothing to do for a node kept as is)."""
    if not rewrite.nodes:
        return
    graph = node.graph
    outputs = list(rewrite.outputs) + [None] * (len(node.outputs) - len(rewrite.outputs))
    old = [v for v, new in zip(node.outputs, outputs) if new is not None]
    new = [v for v in outputs if v is not None]
    unused = [v for v, n in zip(node.outputs, outputs) if n is None and (v.uses() or v.is_graph_output())]
    if unused:
        raise Refusal(f"output {unused[0].name!r} has no equivalent at the target opset")
    for new_node in rewrite.nodes:  # what described the node (source scope, statistics) describes its parts
        new_node.metadata_props.update(node.metadata_props)
    ir.convenience.replace_nodes_and_values(graph, node, [node], rewrite.nodes, old, new)
