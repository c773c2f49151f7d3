"""Separable resampling: per-axis tap tables computed in the graph, applied tap by tap.

Every resize onegraph emits is two 1-D passes (width, then height), each a *table* of ``K`` taps per output
pixel: ``index [out, K]`` (input positions, int64) and ``weight [out, K]``. A pass is
``y[..., i, ...] = sum_k weight[i, k] * x[..., index[i, k], ...]``, written as an ONNX ``Loop`` over the ``K``
taps (one ``Gather``, ``Mul``, ``Add`` per tap), so memory stays the size of the output and work is
``O(out * K)``, as in the libraries (a dense resampling matrix would cost ``O(out * in)``).

The tables are computed *in the graph* from the input's runtime size, by the same formulas, in the same
floating-point order, as the library's C code (cited per function), so one model takes images of any size.
The input size is a 0-d int64 tensor; the output size is a Python int.

Tables of the antialiasing filters (Pillow's ``precompute_coeffs``, torch's
``_compute_indices_min_size_weights_aa``, which was ported from Pillow) are computed in double like Pillow.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir

from onegraph.emit import BOOL, DOUBLE, FLOAT, INT64, GraphBuilder

__all__ = ["INT32", "SUPPORT", "Table", "size_of", "arange", "reciprocal", "const_int", "column", "row",
           "antialias_table", "fixed_point", "pil_nearest_table", "torch_nearest_table",
           "torch_linear_table", "torch_cubic_table", "torch_antialias_table", "torch_uint8_table",
           "opencv_nearest_table", "opencv_linear_table", "torch_area_table", "apply"]

INT32 = ir.DataType.INT32
from onegraph.frame.tensors import Val, maximum, minimum, where

#: Pillow's filter supports (src/libImaging/Resample.c: BOX, BILINEAR, BICUBIC), also torch's antialias ones
SUPPORT = {"box": 0.5, "bilinear": 1.0, "bicubic": 2.0}


@dataclasses.dataclass(frozen=True)
class Table:
    """The taps of one axis: ``index`` int64 ``[out, K]``, ``weight`` ``[out, K]``, ``taps`` int64 scalar ``K``."""

    index: Val
    weight: Val
    taps: Val
    #: for averages that divide after summing (torch's area mode): the count per output, ``[out, 1]``
    count: Val | None = None


def size_of(g: GraphBuilder, x: ir.Value, axis: int) -> Val:
    """The runtime length of ``x`` along ``axis`` as a 0-d int64 value."""
    dim = g.op("Shape", x, start=axis, end=axis + 1, dtype=INT64)
    return Val(g, g.op("Squeeze", dim, g.const(np.array([0], np.int64), "axes"), dtype=INT64), INT64)


def arange(n: Val) -> Val:
    """int64 ``[n]``: 0, 1, ..., n - 1."""
    g = n.g
    return Val(g, g.op("Range", g.const(np.int64(0), "zero"), n.value, g.const(np.int64(1), "one"), dtype=INT64),
               INT64)


def reciprocal(v: Val) -> Val:
    """``1.0 / v`` as ONNX ``Reciprocal``, never ``Div(1, v)``: onnxruntime's basic graph optimizations
    (``DivMulFusion``) rewrite ``Mul(y, Div(1, v))`` into ``Div(y, v)``, which rounds differently from the
    libraries' ``y * (1.0 / v)`` and moves an index across a pixel boundary now and then."""
    return v.unary("Reciprocal")


def const_int(g: GraphBuilder, value: int) -> Val:
    """A 0-d int64 constant."""
    return Val(g, g.const(np.int64(value), "int"), INT64)


def column(v: Val) -> Val:
    """``[n]`` -> ``[n, 1]``."""
    g = v.g
    return Val(g, g.op("Unsqueeze", v.value, g.const(np.array([1], np.int64), "axes"), dtype=v.dtype), v.dtype)


def row(v: Val) -> Val:
    """``[n]`` -> ``[1, n]``."""
    g = v.g
    return Val(g, g.op("Unsqueeze", v.value, g.const(np.array([0], np.int64), "axes"), dtype=v.dtype), v.dtype)


def _outputs(g: GraphBuilder, n_out: int) -> Val:
    return Val(g, g.const(np.arange(n_out, dtype=np.int64), "out_index"), INT64)


def _trunc(x: Val) -> Val:
    """C's ``(int)x`` (toward zero) as int64 (``Cast`` from floating point truncates, as C does)."""
    return x.cast(INT64)


# -- filters, as written in Pillow's Resample.c (torch's aa filters compute the same functions) --------------
def _filter(kind: str, x: Val) -> Val:
    if kind == "box":  # box_filter: 1 on (-0.5, 0.5]
        return where((x > -0.5) & (x <= 0.5), 1.0, 0.0)
    ax = abs(x)
    if kind == "bilinear":  # bilinear_filter
        return where(ax < 1.0, 1.0 - ax, 0.0)
    if kind == "bicubic":  # bicubic_filter, a = -0.5 (Keys); C folds a + 2.0 = 1.5 and a + 3.0 = 2.5
        inner = (ax * 1.5 - 2.5) * ax * ax + 1.0
        outer = (((ax - 5.0) * ax + 8.0) * ax - 4.0) * -0.5
        return where(ax < 1.0, inner, where(ax < 2.0, outer, 0.0))
    raise ValueError(kind)


def antialias_table(n_in: Val, n_out: int, kind: str, form: str = "pil") -> Table:
    """Pillow's ``precompute_coeffs`` (Pillow 13.0 ``src/libImaging/Resample.c``; torch 2.13's
    ``_compute_indices_min_size_weights_aa`` is the same algorithm): the filter stretched by the downscaling
    factor, normalized per output pixel; weights double.

    ``center = (i + 0.5) * scale``, ``xmin = max((int)(center - support + 0.5), 0)``, ``xmax = min((int)(center +
    support + 0.5), in) - xmin``, ``w_j = filter((j + xmin - center + 0.5) / filterscale)`` for ``j < xmax``,
    divided by their sum (taken in order, as Pillow's loop does: a ``CumSum``). ``form="torch"`` writes the
    bicubic filter as torch's ``aa_filter<double>`` does (``cubic_convolution1/2``, the same function).
    """
    g = n_in.g
    fin = n_in.cast(DOUBLE)
    scale = fin / float(n_out)
    filterscale = maximum(scale, 1.0)
    support = filterscale * SUPPORT[kind]
    taps = support.unary("Ceil").cast(INT64) * 2 + 1
    center = column(_outputs(g, n_out).cast(DOUBLE) + 0.5) * scale
    ss = reciprocal(filterscale)
    xmin = maximum(_trunc(center - support + 0.5), 0)
    xmax = minimum(_trunc(center + support + 0.5), n_in) - xmin
    k = row(arange(taps))
    x = ((k + xmin).cast(DOUBLE) - center + 0.5) * ss
    w = _torch_filter(kind, x, -0.5) if form == "torch" else _filter(kind, x)
    w = where(k < xmax, w, 0.0)
    total = Val(g, g.op("CumSum", w.value, g.const(np.int64(1), "axis"), dtype=DOUBLE), DOUBLE)
    total = Val(g, g.op("Gather", total.value, (taps - 1).value, axis=1, dtype=DOUBLE), DOUBLE)
    total = column(total)
    w = where(total != 0.0, w / where(total != 0.0, total, 1.0), w)
    return Table(minimum(k + xmin, n_in - 1), w, taps)


def fixed_point(weight: Val, bits: int = 22) -> Val:
    """Pillow's ``normalize_coeffs_8bpc``: ``(int)(w * 2**bits + 0.5)``, ``(int)(w * 2**bits - 0.5)`` for
    negative weights (22 = ``PRECISION_BITS``), as int64."""
    y = weight * float(1 << bits)
    return where(weight < 0.0, (y - 0.5).unary("Ceil"), (y + 0.5).floor()).cast(INT64)


def pil_nearest_table(n_in: Val, n_out: int) -> Table:
    """Pillow's NEAREST resize (``ImagingScaleAffine``, ``Geometry.c``): the source position starts at
    ``a / 2`` with ``a = in / out`` and is *accumulated* (``xo += a``, in double: a ``CumSum``), index
    ``(int)xo`` (clamped to the image; the accumulated error never reaches a pixel's width)."""
    g = n_in.g
    a = n_in.cast(DOUBLE) / float(n_out)
    steps = where(_outputs(g, n_out) == 0, a * 0.5, a)
    xo = Val(g, g.op("CumSum", steps.value, g.const(np.int64(0), "axis"), dtype=DOUBLE), DOUBLE)
    index = minimum(maximum(xo.floor().cast(INT64), 0), n_in - 1)
    return _single(index)


def _single(index: Val) -> Table:
    g = index.g
    one = Val(g, g.const(np.float64(1.0), "one"), DOUBLE)
    ones = Val(g, g.op("Expand", one.value, g.op("Shape", index.value, dtype=INT64), dtype=DOUBLE), DOUBLE)
    return Table(column(index), column(ones), Val(g, g.const(np.int64(1), "one"), INT64))


# -- torch.nn.functional.interpolate (aten/src/ATen/native/UpSample.h, cpu/UpSampleKernel.cpp) ---------
def _float32(g: GraphBuilder, value: ir.Value) -> ir.Value:
    return g.op("Cast", value, to=FLOAT, dtype=FLOAT)


def torch_nearest_table(n_in: Val, n_out: int, exact: bool = False) -> Table:
    """``mode="nearest"``: ``min((int64)floorf(i * scale), in - 1)``, ``mode="nearest-exact"``:
    ``floorf((i + 0.5) * scale)``; ``scale = (float)in / out`` and the product in float32
    (``nearest_neighbor_compute_source_index``), so the graph computes them in float32 too."""
    g = n_in.g
    scale = g.op("Div", _float32(g, n_in.value), g.const(np.float32(n_out), "n_out"), dtype=FLOAT)
    pos = np.arange(n_out, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0))
    src = g.op("Floor", g.op("Mul", g.const(pos, "pos"), scale, dtype=FLOAT), dtype=FLOAT)
    index = minimum(Val(g, g.op("Cast", src, to=INT64, dtype=INT64), INT64), n_in - 1)
    return _single(index)


def _cc1(x: Val, a: float) -> Val:
    # cubic_convolution1: ((A + 2) * x - (A + 3)) * x * x + 1, in the table's precision
    return (x * (a + 2) - (a + 3)) * x * x + 1.0


def _cc2(x: Val, a: float) -> Val:
    # cubic_convolution2: ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a


def _torch_scale(n_in: Val, n_out: int) -> Val:
    # area_pixel_compute_scale<float>: (float)input_size / output_size
    return n_in.cast(FLOAT) / float(n_out)


def _torch_source(n_in: Val, n_out: int, cubic: bool) -> Val:
    # area_pixel_compute_source_index<float>: scale * (i + 0.5f) - 0.5f, clamped at 0 unless cubic
    g = n_in.g
    pos = Val(g, g.const(np.arange(n_out, dtype=np.float32).reshape(-1, 1) + np.float32(0.5), "pos"), FLOAT)
    # torch's CPU build contracts ``scale * x - 0.5`` into one fused multiply-add (one rounding): the product of
    # two floats is exact in double, so the double result rounded once to float32 is the FMA's
    src = (pos.cast(DOUBLE) * _torch_scale(n_in, n_out).cast(DOUBLE) - 0.5).cast(FLOAT)
    return src if cubic else maximum(src, 0.0)


def _guard(src: Val, n_in: Val) -> tuple[Val, Val]:
    # guard_index_and_lambda: index = min((int64)floorf(src), in - 1), lambda = clamp(src - index, 0, 1)
    index = minimum(src.floor().cast(INT64), n_in - 1)
    return index, minimum(maximum(src - index.cast(FLOAT), 0.0), 1.0)


def torch_linear_table(n_in: Val, n_out: int) -> Table:
    """``mode="bilinear"``, ``align_corners=False``, no antialias (``compute_indices_weights_linear``, float32):
    taps ``i0`` and ``i0 + (i0 < in - 1)``, weights ``1 - lambda``, ``lambda``."""
    g = n_in.g
    i0, lam = _guard(_torch_source(n_in, n_out, cubic=False), n_in)
    index = _concat([i0, minimum(i0 + 1, n_in - 1)])
    weight = _concat([1.0 - lam, lam])
    return Table(index, weight, Val(g, g.const(np.int64(2), "two"), INT64))


def torch_cubic_table(n_in: Val, n_out: int, a: float = -0.75) -> Table:
    """``mode="bicubic"``, ``align_corners=False``, no antialias (``HelperInterpCubic::compute_indices_weights``,
    float32): taps ``i0 - 1 .. i0 + 2`` clamped to the image, weights ``get_cubic_upsample_coefficients(t)``
    with ``A = -0.75``."""
    g = n_in.g
    i0, t = _guard(_torch_source(n_in, n_out, cubic=True), n_in)
    index = _concat([minimum(maximum(i0 + d, 0), n_in - 1) for d in (-1, 0, 1, 2)])
    weight = _concat([_cc2(t + 1.0, a), _cc1(t, a), _cc1(1.0 - t, a), _cc2((1.0 - t) + 1.0, a)])
    return Table(index, weight, Val(g, g.const(np.int64(4), "four"), INT64))


def _torch_filter(kind: str, x: Val, a: float) -> Val:
    # HelperInterpLinear / HelperInterpCubic::aa_filter
    ax = abs(x)
    if kind == "bilinear":
        return where(ax < 1.0, 1.0 - ax, 0.0)
    return where(ax < 1.0, _cc1(ax, a), where(ax < 2.0, _cc2(ax, a), 0.0))


def torch_antialias_table(n_in: Val, n_out: int, kind: str) -> Table:
    """``antialias=True`` (``_compute_index_ranges_weights`` / ``_compute_indices_min_size_weights_aa``,
    torch 2.13): Pillow's algorithm, computed in float32 where torch stores float32 (scale, center, support,
    weights, their sum) and in double where its C++ expressions promote (``center - support + 0.5``, the filter's
    argument ``(j + xmin - center + 0.5) * invscale``); filters ``aa_filter`` (bicubic: Keys, ``a = -0.5``)."""
    g = n_in.g
    scale = _torch_scale(n_in, n_out)
    big = scale >= 1.0
    half = SUPPORT[kind]
    support = where(big, (scale.cast(DOUBLE) * half).cast(FLOAT), scale * 0.0 + half)
    taps = support.cast(DOUBLE).unary("Ceil").cast(INT64) * 2 + 1
    pos = Val(g, g.const(np.arange(n_out, dtype=np.float32).reshape(-1, 1) + np.float32(0.5), "pos"), FLOAT)
    center = pos * scale
    invscale = where(big, reciprocal(scale.cast(DOUBLE)).cast(FLOAT), scale * 0.0 + 1.0)
    xmin = maximum(_trunc((center - support).cast(DOUBLE) + 0.5), 0)
    xmax = minimum(_trunc((center + support).cast(DOUBLE) + 0.5), n_in) - xmin
    k = row(arange(taps))
    x = (((k + xmin).cast(FLOAT) - center).cast(DOUBLE) + 0.5) * invscale.cast(DOUBLE)
    w = where(k < xmax, _torch_filter(kind, x.cast(FLOAT), -0.5), 0.0)
    total = Val(g, g.op("CumSum", w.value, g.const(np.int64(1), "axis"), dtype=FLOAT), FLOAT)
    total = column(Val(g, g.op("Gather", total.value, (taps - 1).value, axis=1, dtype=FLOAT), FLOAT))
    w = where(total != 0.0, w / where(total != 0.0, total, 1.0), w)
    return Table(minimum(k + xmin, n_in - 1), w, taps)


def torch_uint8_table(n_in: Val, n_out: int, kind: str, antialias: bool) -> tuple[Table, Val]:
    """torch's uint8 kernels (``_compute_index_ranges_int16_weights``, torch 2.13 ``UpSampleKernel.cpp``):
    weights in double, then int16 fixed point with ``precision`` bits, the largest (< 22) for which the
    largest weight still fits in 15 bits; returns the table (int64 weights) and ``precision`` (0-d int64).

    antialias: Pillow's algorithm with torch's filters (:func:`antialias_table`). No antialias
    (``_compute_indices_min_size_weights``): the float path's source index and lambda in double, ``K`` = 2 / 4
    taps ``filter(j + 1 - K/2 - lambda)`` (bicubic ``a = -0.75``) starting at ``i0 - K/2 + 1``; taps outside
    the image add their weight to the first / last tap inside it, in order.
    """
    g = n_in.g
    if antialias:
        table = antialias_table(n_in, n_out, kind, form="torch")
    else:
        taps = 2 if kind == "bilinear" else 4
        half = taps // 2
        scale = n_in.cast(DOUBLE) / float(n_out)
        src = column(_outputs(g, n_out).cast(DOUBLE) + 0.5) * scale - 0.5
        src = src if kind == "bicubic" else maximum(src, 0.0)
        i0 = minimum(src.floor().cast(INT64), n_in - 1)
        lam = minimum(maximum(src - i0.cast(DOUBLE), 0.0), 1.0)
        lo = i0 - half + 1
        first = maximum(lo, 0)
        size = minimum(lo + taps, n_in) - first
        weights = [_torch_filter(kind, lam * 0.0 + float(j + 1 - half) - lam, -0.75) for j in range(taps)]
        # where tap j lands among the taps kept (wt_ptr[w_index] += w)
        lands = [minimum(maximum(lo + j, 0), n_in - 1) - first for j in range(taps)]
        merged = []
        for p in range(taps):
            acc = lam * 0.0
            for j in range(taps):
                acc = acc + where(lands[j] == p, weights[j], 0.0)
            merged.append(where(size > p, acc, 0.0))
        table = Table(minimum(_concat([first + p for p in range(taps)]), n_in - 1), _concat(merged),
                      Val(g, g.const(np.int64(taps), "taps"), INT64))
    wt_max = Val(g, g.op("ReduceMax", table.weight.value, keepdims=0, dtype=DOUBLE), DOUBLE)
    trials = Val(g, g.const(2.0 ** np.arange(1, 23, dtype=np.float64), "trials"), DOUBLE)
    fits = ((wt_max * trials + 0.5).floor() < float(1 << 15)).cast(INT64)
    # the loop stops at the first precision that does not fit; fitting is monotone, so that is the count
    precision = Val(g, g.op("ReduceSum", fits.value, keepdims=0, dtype=INT64), INT64)
    unit = Val(g, g.op("Pow", g.const(np.float64(2.0), "two"), precision.cast(DOUBLE).value, dtype=DOUBLE), DOUBLE)
    v = table.weight * unit
    coef = where(v < 0.0, (v - 0.5).unary("Ceil"), (v + 0.5).floor()).cast(INT64)
    return Table(table.index, coef, table.taps), precision


# -- OpenCV 5 cv::resize (modules/imgproc/src/resize.cpp) ---------------------------------------------
def opencv_nearest_table(n_in: Val, n_out: int) -> Table:
    """``INTER_NEAREST``: ``min(cvFloor(i * ifx), in - 1)`` with ``ifx = 1. / (out / in)`` in double (no
    half-pixel offset: OpenCV's documented nearest)."""
    g = n_in.g
    ifx = reciprocal(float(n_out) / n_in.cast(DOUBLE))
    index = minimum((_outputs(g, n_out).cast(DOUBLE) * ifx).floor().cast(INT64), n_in - 1)
    return _single(index)


def opencv_linear_table(n_in: Val, n_out: int) -> Table:
    """``INTER_LINEAR`` coefficients: ``fx = (float)((i + 0.5) * scale - 0.5)``, ``sx = cvFloor(fx)``,
    ``fx -= sx`` (float32), border taps clamped with ``fx = 0``; weights ``1 - fx``, ``fx`` (float32)."""
    g = n_in.g
    scale = reciprocal(float(n_out) / n_in.cast(DOUBLE))
    fx = ((column(_outputs(g, n_out).cast(DOUBLE)) + 0.5) * scale - 0.5).cast(FLOAT)
    sx = fx.floor()
    fx = fx - sx
    sx = sx.cast(INT64)
    outside = (sx < 0) | (sx >= n_in - 1)
    fx = where(outside, 0.0, fx)
    sx = minimum(maximum(sx, 0), n_in - 1)
    return Table(_concat([sx, minimum(sx + 1, n_in - 1)]), _concat([1.0 - fx, fx]),
                 Val(g, g.const(np.int64(2), "two"), INT64))


def torch_area_table(n_in: Val, n_out: int) -> Table:
    """``mode="area"`` (``adaptive_avg_pool2d``): output ``i`` averages inputs ``floor(i * in / out)`` up to
    ``ceil((i + 1) * in / out)`` (``start_index`` / ``end_index``, integer arithmetic). torch sums the window
    and divides (``sum / kh / kw``): the weights are 1 and ``count`` holds the divisor."""
    g = n_in.g
    i = column(_outputs(g, n_out))
    start = (i * n_in) // n_out
    end = ((i + 1) * n_in + (n_out - 1)) // n_out
    count = end - start
    taps = (n_in + (n_out - 1)) // n_out + 1
    k = row(arange(taps))
    weight = where(k < count, 1.0, 0.0)
    return Table(minimum(k + start, n_in - 1), weight, taps, count.cast(DOUBLE))


def _concat(parts: list[Val]) -> Val:
    g = parts[0].g
    return Val(g, g.op("Concat", *[p.value for p in parts], axis=1, dtype=parts[0].dtype), parts[0].dtype)


# -- applying a table ---------------------------------------------------------------------------------
def apply(g: GraphBuilder, x: ir.Value, axis: int, rank: int, table: Table, n_out: int,
          dtype: ir.DataType) -> ir.Value:
    """``sum_k weight[:, k] * x[index[:, k]]`` along ``axis`` of ``x`` (rank ``rank``), computed in ``dtype``
    (``x`` and the weights are cast to it once); ``x``'s ``axis`` becomes ``n_out`` long."""
    xs = x if x.dtype == dtype else g.op("Cast", x, to=dtype, dtype=dtype)
    weight = table.weight if table.weight.dtype == dtype else table.weight.cast(dtype)
    trailing = g.const(np.array([n_out] + [1] * (rank - 1 - axis), np.int64), "tap_shape")

    def tap(i: ir.Value) -> ir.Value:
        idx = g.op("Gather", table.index.value, i, axis=1, dtype=INT64)
        w = g.op("Reshape", g.op("Gather", weight.value, i, axis=1, dtype=dtype), trailing, dtype=dtype)
        return g.op("Mul", g.op("Gather", xs, idx, axis=axis, dtype=dtype), w, dtype=dtype)

    start = tap(g.const(np.int64(0), "zero"))  # the first tap starts the sum (no zeros to fill)
    i = ir.Value(name=g.unique("tap"), type=ir.TensorType(INT64), shape=ir.Shape([]))
    cond = ir.Value(name=g.unique("cond"), type=ir.TensorType(BOOL), shape=ir.Shape([]))
    acc = ir.Value(name=g.unique("acc"), type=ir.TensorType(dtype))
    with g.subgraph("taps", [i, cond, acc]) as body:
        body.outputs.extend([g.op("Identity", cond, dtype=BOOL),
                             g.op("Add", acc, tap(g.op("Add", i, g.const(np.int64(1), "one"), dtype=INT64)),
                                  dtype=dtype)])
    rest = g.op("Sub", table.taps.value, g.const(np.int64(1), "one"), dtype=INT64)
    return g.op("Loop", rest, None, start, body=body, dtype=dtype)

