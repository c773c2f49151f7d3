"""onegraph's handlers for the version changes of single operators (see :mod:`onegraph.convert.steps` for how
a step runs, and :data:`onegraph.convert.opset_adapters.ADAPTERS` for where each is used).

Each takes a node of the newer definition and its :class:`~onegraph.convert.steps.Context` (the step's
opsets) and returns a :class:`~onegraph.convert.steps.Rewrite`: the node changed in place (and the schema
checks then run), or the nodes replacing it, valid at the older opset; or raises
:class:`~onegraph.convert.steps.Refusal` saying what the older opset cannot express. The sources are the
operators' definitions in the ONNX specification (docs/Changelog.md), version by version.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from onegraph.convert.constants import constant_input
from onegraph.convert.steps import (
    Builder,
    Context,
    Refusal,
    Rewrite,
    axis_length,
    dims_of,
    from_front,
    input_at,
    inputs_to_attributes,
    known_value,
    nonnegative_axes,
    nonnegative_indices,
    rank_of,
)

__all__ = ["gather", "scatter_elements", "one_hot", "slice_axes", "scan_axes", "scan_9", "scan_up_9", "top_k",
           "constant_values", "gemm_c", "pow_exponent", "dropout_mask", "dropout_inputs", "depth_to_space",
           "quantize_axis", "quantize_dtype", "layer_normalization", "group_normalization", "reshape", "shape",
           "softmax", "split", "pad_axes", "pad_wrap", "scatter_reduction", "roi_align", "grid_sample",
           "batch_normalization", "optional_get", "optional_has", "cast_saturate", "if_shapes", "resize_11",
           "resize_10", "resize_13", "resize_18", "resize_19", "resize_up_13", "resize_up_11", "upsample_up_10",
           "clip_up_11"]


def gather(node: ir.Node, ctx: Context) -> Rewrite:
    """Gather / Scatter 11 -> 10 and below: negative axis and indices made non-negative (Scatter's indices are
    input 1 as Gather's)."""
    axes = nonnegative_axes(node, ctx)
    axis = node.attributes.get_int("axis", 0)
    b = Builder(node.name, ctx)
    indices = constant_input(node.inputs[1], ctx.src)
    bound = None if indices.known and (indices.value >= 0).all() else axis_length(b, node.inputs[0], axis)
    fixed, how = nonnegative_indices(b, node.inputs[1], bound, ctx, "indices")
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
    fixed, how = nonnegative_indices(b, node.inputs[0], bound, ctx, "indices")
    if fixed is not node.inputs[0]:
        node.replace_input_with(0, fixed)
    return Rewrite(b.nodes, None, f"{axes.how}; {how}")


def slice_axes(node: ir.Node, ctx: Context) -> Rewrite:
    """Slice 11 -> 10: negative ``axes`` (input 3) counted from the front."""
    axes = input_at(node, 3)
    if axes is None:
        return Rewrite([], None, "")
    c = constant_input(axes, ctx.src)
    b = Builder(node.name, ctx)
    if c.known:
        fixed = from_front([int(a) for a in c.value.reshape(-1)], rank_of(node.inputs[0]), "axes")
        if fixed == [int(a) for a in c.value.reshape(-1)]:
            return Rewrite([], None, "")
        node.replace_input_with(3, b.const(np.array(fixed, dtype=c.value.dtype)))
        return Rewrite(b.nodes, None, f"axes {c.value.tolist()} counted from the front: {fixed}")
    fixed, how = nonnegative_indices(b, axes, rank_of(node.inputs[0]), ctx, "axes")
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
        fixed = [a if a >= 0 else a + r if (r := rank_of(v)) is not None else a for a, v in zip(axes, values)]
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
    if input_at(node, 2) is not None:
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
    x, scale, zp = node.inputs[0], node.inputs[1], input_at(node, 2)
    if _scalar(scale) and _scalar(zp):
        return Rewrite([], None, "scalar scale" + ("; axis dropped" if axis is not None else ""))
    rank = rank_of(x)
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
    zp = input_at(node, 2)
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


def _standardize(b: Builder, x: ir.Value, axes: list[int], eps: float, ctx: Context
                 ) -> tuple[ir.Value, ir.Value, ir.Value]:
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
    bias = input_at(node, 2)
    axis = node.attributes.get_int("axis", -1)
    rank = rank_of(x)
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
    rank = rank_of(x)
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
    rank = rank_of(x)
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
    rank = rank_of(x)
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
    axes = input_at(node, 3)
    if axes is None:
        return Rewrite([], None, "")
    rank = rank_of(node.inputs[0])
    listed = from_front([int(a) for a in known_value(axes, ctx, "its axes").reshape(-1)], rank, "axes")
    pads = known_value(node.inputs[1], ctx, "its pads (to spread over every axis)").reshape(-1)
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
    dims = dims_of(x)
    if dims is None:
        raise Refusal("mode wrap needs the input's shape, which is not fixed")
    pads = known_value(node.inputs[1], ctx, "its pads").reshape(-1)
    axes = input_at(node, 3)
    rank = len(dims)
    listed = (list(range(rank)) if axes is None
              else from_front([int(a) for a in known_value(axes, ctx, "its axes").reshape(-1)], rank, "axes"))
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
    rank = rank_of(node.inputs[0])
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
    value = input_at(node, 0)
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
    dims = dims_of(inputs[0])
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


def _renamed(node: ir.Node, ctx: Context, op_type: str, how: str) -> Rewrite:
    """``node`` as ``op_type``, same inputs and ``mode``: Upsample-9 and Resize-10 are one definition."""
    b = Builder(node.name, ctx)
    out = b.op(op_type, *node.inputs, mode=node.attributes.get_string("mode", "nearest"))
    return Rewrite(b.nodes, [out], how)


def resize_10(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize-10 (no earlier version) -> Upsample-9, its same definition under its old name."""
    return _renamed(node, ctx, "Upsample", "rewritten as Upsample-9")


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
        rank = rank_of(node.inputs[0])
        axes = from_front(list(axes_attr.as_ints()), rank, "axes")
        if rank is None:
            raise Refusal("axes need the input's rank, which is unknown")
        b = Builder(node.name, ctx)
        for index, fill in ((2, 1.0), (3, None)):
            value = input_at(node, index)
            if value is None:
                continue
            given = known_value(value, ctx, f"its {'scales' if index == 2 else 'sizes'} (for some axes)").reshape(-1)
            if fill is None:
                dims = dims_of(node.inputs[0])
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
        if input_at(node, 3) is not None:
            raise Refusal(f"keep_aspect_ratio_policy={policy!r} on sizes: only 'stretch' exists before opset 18")
        del node.attributes["keep_aspect_ratio_policy"]
        done.append(f"keep_aspect_ratio_policy={policy!r} dropped: it only applies to sizes")
    return Rewrite(pending, None, "; ".join(done) or "")


def resize_19(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize-19 ``half_pixel_symmetric`` -> 18: it is ``half_pixel`` whenever the output length is the
    input length times the scale exactly (sizes given, or whole products)."""
    if node.attributes.get_string("coordinate_transformation_mode", "half_pixel") != "half_pixel_symmetric":
        return Rewrite([], None, "")
    policy = node.attributes.get_string("keep_aspect_ratio_policy", "stretch")
    exact = input_at(node, 3) is not None and policy == "stretch"
    if not exact:
        dims = dims_of(node.inputs[0])
        scales = constant_input(input_at(node, 2), ctx.src)
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


def resize_up_11(node: ir.Node, ctx: Context) -> Rewrite:
    """Resize-10 -> Resize-11 (up): Resize-10 maps coordinates ``asymmetric``-ally (x_original = x_resized /
    scale); Resize-11's default is ``half_pixel``, which onnx's Resize_10_11 adapter leaves in place (every
    ``linear`` resize moved by half a pixel). ``nearest`` rounds as onnxruntime's Resize-10 kernel does, down
    where a scale is above 1 and up where it is below; scales on both sides of 1 have no Resize-11 form."""
    mode = node.attributes.get_string("mode", "nearest")
    attrs = {"mode": mode, "coordinate_transformation_mode": "asymmetric"}
    how = "coordinate_transformation_mode asymmetric (Resize-10's mapping)"
    if mode == "nearest":
        scales = constant_input(input_at(node, 1), ctx.src)
        if not scales.known:
            raise Refusal(f"nearest with scales that are not constant ({scales.how}): Resize-10 rounds down where "
                          "it up-samples and up where it down-samples, which Resize-11 cannot choose at run time")
        s = scales.value.astype(np.float64).ravel()
        if np.any(s > 1) and np.any(s < 1):
            raise Refusal(f"nearest with scales {s.tolist()} on both sides of 1: Resize-10 rounds down where it "
                          "up-samples and up where it down-samples, one nearest_mode in Resize-11")
        attrs["nearest_mode"] = "ceil" if np.any(s < 1) else "floor"
        how += f", nearest_mode {attrs['nearest_mode']}"
    b = Builder(node.name, ctx)
    out = b.op("Resize", node.inputs[0], b.const(np.zeros(0, np.float32)), node.inputs[1], **attrs)
    return Rewrite(b.nodes, [out], how)


def upsample_up_10(node: ir.Node, ctx: Context) -> Rewrite:
    """Upsample-9 -> Resize-10 (up): the same definition under its new name, so that the step to 11 is
    onegraph's (:func:`resize_up_11`), not onnx's adapter."""
    return _renamed(node, ctx, "Resize", "rewritten as Resize-10")


def clip_up_11(node: ir.Node, ctx: Context) -> Rewrite:
    """Clip-6 -> Clip-11 (up): the ``min`` / ``max`` attributes become inputs of the input's own type (Clip-11's
    constraint T for all three); onnx's Clip_10_11 adapter makes them float32 whatever the input, and a
    double or float16 Clip then fails to load. An absent ``min`` beside a ``max`` is Clip-6's default, the
    lowest float32."""
    lo, hi = node.attributes.get("min"), node.attributes.get("max")
    x = node.inputs[0]
    dtype = x.dtype if x is not None else None
    if dtype is None:
        raise Refusal("the type of its input is not known: Clip-11 takes min and max of that type")
    np_type = dtype.numpy()
    b = Builder(node.name, ctx)
    bounds: list[ir.Value | None] = []
    if lo is not None or hi is not None:
        low = lo.as_float() if lo is not None else float(np.finfo(np.float32).min)
        with np.errstate(over="ignore"):  # the lowest float32 is -inf in float16, the same bound there
            bounds.append(b.const(np.array(low).astype(np_type)))
    if hi is not None:
        bounds.append(b.const(np.array(hi.as_float()).astype(np_type)))
    out = b.op("Clip", x, *bounds)
    return Rewrite(b.nodes, [out], f"min / max as {dtype.name.lower()} inputs")
