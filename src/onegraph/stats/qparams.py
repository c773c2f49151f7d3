"""Quantization parameters (scale, zero point) from tensor statistics.

Collecting statistics (:mod:`onegraph.stats.accumulators`) is separate from turning them into a range and
the range into a scale and zero point, as in ONNX Runtime's quantization tools. For the same range the
results equal ``onnxruntime.quantization.quant_utils.compute_scale_zp``: the range is widened to include
0, made ``[-absmax, absmax]`` when symmetric; ``scale = (rmax - rmin) / (qmax - qmin)`` in float64, stored
in the tensor's float type; ``zero_point = round(qmin - rmin / scale)`` (symmetric:
``round((qmin + qmax) / 2)``); a scale below the float type's smallest normal number becomes 1 with zero
point 0 (a range ``[0, 0]``). ``qmin`` / ``qmax`` are ONNX Runtime's: the full range of the type; int8 /
int16 symmetric drop the most negative value (-127..127); ``reduce_range`` uses 7 of 8 bits (and the
same reduction for 16 and 4 bits).

Unlike ``compute_scale_zp``, a range that is not finite raises :class:`QuantizationError` (ONNX Runtime
returns an infinite or NaN scale), and a scale that overflows the float type raises too: no range ever
gives a zero, NaN or infinite scale.

Ranges (:func:`choose_range`):

* ``minmax``: the minimum and maximum (per channel with ``per_channel=True``);
* ``percentile``: ONNX Runtime's ``PercentileCalibrater`` rule on the statistics' histogram (symmetric: the
  ``percentile`` of ``|x|``; otherwise ``(100 - percentile) / 2`` cut from each side), to one histogram bin;
* ``entropy``: the threshold minimizing the KL divergence between the histogram and its quantized version
  (NVIDIA, "8-bit inference with TensorRT", GTC 2017), ONNX Runtime's ``EntropyCalibrater`` algorithm run
  on a zero-centred histogram rebuilt exactly from the statistics' aligned one;
* ``mse``: the range ``alpha * [min, max]`` (alpha in 1/200 .. 1) minimizing the mean squared error of
  quantize-dequantize over the histogram (values at bin centres).

float8 (``float8e4m3fn``, ``float8e5m2``) has a scale only (zero point 0): ``std`` matches ONNX Runtime's
``compute_scale_zp_float8`` (tensor std / std of the type's finite values); ``absmax`` maps the largest
magnitude to the type's largest finite value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import onnx

from onegraph.errors import OnegraphError
from onegraph.stats.accumulators import Histogram, TensorStats

__all__ = ["QuantizationError", "INTEGER_TYPES", "FLOAT8_TYPES", "FULL_RANGES", "METHODS", "QuantParams",
           "qrange", "scale_zero_point", "float8_scale", "check_options", "choose_range", "percentile_range",
           "centered_histogram", "entropy_threshold", "mse_range", "quant_params"]


class QuantizationError(OnegraphError):
    """Quantization parameters cannot be derived (no finite range, unknown type, method needs data it lacks)."""


#: quantized type -> (numpy dtype of the zero point, ONNX TensorProto data type)
INTEGER_TYPES: dict[str, tuple[Any, int]] = {
    "uint8": (np.uint8, onnx.TensorProto.UINT8),
    "int8": (np.int8, onnx.TensorProto.INT8),
    "uint16": (np.uint16, onnx.TensorProto.UINT16),
    "int16": (np.int16, onnx.TensorProto.INT16),
    "uint4": (ml_dtypes.uint4, onnx.TensorProto.UINT4),
    "int4": (ml_dtypes.int4, onnx.TensorProto.INT4),
}
FLOAT8_TYPES: dict[str, tuple[Any, int]] = {
    "float8e4m3fn": (ml_dtypes.float8_e4m3fn, onnx.TensorProto.FLOAT8E4M3FN),
    "float8e5m2": (ml_dtypes.float8_e5m2, onnx.TensorProto.FLOAT8E5M2),
}
# ONNX Runtime's ONNX_INT_TYPE_RANGE / _SYMMETRIC_RANGE / _REDUCED_RANGE (quant_utils.py)
FULL_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767),
         "uint4": (0, 15), "int4": (-8, 7)}
_SYMMETRIC = {"int8": (-127, 127), "int16": (-32767, 32767)}
_REDUCED = {"uint8": (0, 127), "int8": (-64, 64), "uint16": (0, 32767), "int16": (-16384, 16384),
            "uint4": (0, 7), "int4": (-4, 3)}
METHODS = ("minmax", "percentile", "entropy", "mse")


@dataclass(frozen=True)
class QuantParams:
    """Scale and zero point of one tensor.

    ``scale`` is a float array (shape ``()`` per tensor, ``(C,)`` per channel along ``axis``), ``zero_point``
    an array of the quantized type (``float8`` types: 0). ``rmin`` / ``rmax`` are the range they cover.
    """

    scale: np.ndarray
    zero_point: np.ndarray
    quant_type: str
    axis: int | None = None
    symmetric: bool = False
    reduce_range: bool = False
    method: str = "minmax"
    rmin: np.ndarray | None = None
    rmax: np.ndarray | None = None

    def describe(self) -> dict:
        """JSON-able description (what :mod:`onegraph.stats.annotate` records next to the initializers)."""
        return {"type": self.quant_type, "axis": self.axis, "symmetric": self.symmetric,
                "reduce_range": self.reduce_range, "method": self.method}


def _label(tensor: str | None) -> str:
    """How an error names the tensor: by its name when the caller gave it (the statistics carry none)."""
    return f"tensor {tensor!r}" if tensor is not None else "the tensor"


def qrange(quant_type: str, *, symmetric: bool = False, reduce_range: bool = False) -> tuple[int, int]:
    """``(qmin, qmax)`` of an integer quantized type, as ONNX Runtime's ``get_qmin_qmax_for_qType``.

    Raises
    ------
    QuantizationError
        for a type that is not one of :data:`INTEGER_TYPES`.
    """
    if quant_type not in FULL_RANGES:
        raise QuantizationError(f"unknown integer quantization type {quant_type!r}",
                                hint=f"use one of {', '.join(FULL_RANGES)}")
    if reduce_range:
        return _REDUCED[quant_type]
    if symmetric and quant_type in _SYMMETRIC:
        return _SYMMETRIC[quant_type]
    return FULL_RANGES[quant_type]


def scale_zero_point(rmin: Any, rmax: Any, quant_type: str = "uint8", *, symmetric: bool = False,
                     reduce_range: bool = False, dtype: Any = np.float32,
                     tensor: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Scale and zero point for the range ``[rmin, rmax]`` (scalars or per-channel arrays).

    Equal to ``onnxruntime.quantization.quant_utils.compute_scale_zp(rmin, rmax, qmin, qmax, symmetric)``
    with ``rmin`` / ``rmax`` given in ``dtype`` (see the module docstring). Examples: ``[-1, 3]`` uint8 ->
    scale 4/255, zero point 64; ``[-1, 1]`` uint8 symmetric -> zero point 128; ``[0, 0]`` -> scale 1, zero
    point 0.

    Returns
    -------
    (scale, zero_point)
        ``scale`` of ``dtype`` (float32 by default), ``zero_point`` of the quantized type's dtype, both of
        the broadcast shape of ``rmin`` and ``rmax``.

    Raises
    ------
    QuantizationError
        when a bound is NaN or infinite (naming ``tensor``), or the scale overflows ``dtype``.
    """
    qmin, qmax = qrange(quant_type, symmetric=symmetric, reduce_range=reduce_range)
    dtype = np.dtype(dtype)
    lo = np.asarray(rmin, dtype=np.float64)
    hi = np.asarray(rmax, dtype=np.float64)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise QuantizationError(f"{_label(tensor)}: range [{_show(lo)}, {_show(hi)}] is not finite",
                                hint="collect statistics (they leave NaN and inf out) or clip the range")
    with np.errstate(over="ignore"):  # a bound beyond the float type becomes inf: refused below
        lo, hi = np.broadcast_arrays(lo.astype(dtype).astype(np.float64), hi.astype(dtype).astype(np.float64))
    lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
    if symmetric:
        absmax = np.maximum(np.abs(lo), hi)
        lo, hi = -absmax, absmax
    scale = (hi - lo) / (float(qmax) - float(qmin))
    with np.errstate(over="ignore", invalid="ignore"):
        stored = scale.astype(dtype)
    finfo = np.finfo(dtype)
    tiny = finfo.smallest_subnormal if dtype == np.float16 else finfo.tiny
    too_small = (stored if dtype == np.float16 else scale) < tiny
    if not np.isfinite(stored).all():
        raise QuantizationError(f"{_label(tensor)}: the scale of range [{_show(lo)}, {_show(hi)}] overflows {dtype}",
                                hint="quantize with a wider float type or clip the range")
    if symmetric:
        zero = np.full(scale.shape, np.round((qmin + qmax) / 2.0))
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            zero = np.round(qmin - lo / scale)
    zero = np.where(too_small, 0.0, zero)
    stored = np.where(too_small, dtype.type(1.0), stored).astype(dtype)
    zp_dtype = INTEGER_TYPES[quant_type][0]
    return stored, np.clip(zero, qmin, qmax).astype(zp_dtype)


def float8_scale(stats: TensorStats, quant_type: str = "float8e4m3fn", *, method: str = "std",
                 dtype: Any = np.float32, tensor: str | None = None) -> np.ndarray:
    """Scale of a float8 quantization (zero point 0).

    ``method="std"``: ``std / std(finite values of the float8 type)``, ONNX Runtime's
    ``compute_scale_zp_float8``; ``"absmax"``: ``absmax / largest finite value of the type``.

    Raises
    ------
    QuantizationError
        for an unknown type or method, or statistics without finite values / with a zero spread.
    """
    if quant_type not in FLOAT8_TYPES:
        raise QuantizationError(f"unknown float8 type {quant_type!r}", hint=f"use one of {', '.join(FLOAT8_TYPES)}")
    f8 = FLOAT8_TYPES[quant_type][0]
    if method == "std":
        spread, reference = stats.std, float(np.std(_float8_values(f8)))
    elif method == "absmax":
        spread, reference = stats.absmax, float(ml_dtypes.finfo(f8).max)
    else:
        raise QuantizationError(f"unknown float8 scale method {method!r}", hint="use 'std' or 'absmax'")
    if spread is None or not spread > 0 or not math.isfinite(spread):
        raise QuantizationError(f"{_label(tensor)}: no finite non-zero {method} to derive a float8 scale from",
                                hint="calibrate on data where the tensor varies")
    scale = np.asarray(spread / reference, dtype=dtype)
    if not (np.isfinite(scale) and scale > 0):
        raise QuantizationError(f"{_label(tensor)}: float8 scale {spread / reference!r} does not fit "
                                f"{np.dtype(dtype)}")
    return scale


def _float8_values(f8: Any) -> np.ndarray:
    values = np.arange(256, dtype=np.uint8).view(f8).astype(np.float32)
    return values[np.isfinite(values)]


# -- ranges ---------------------------------------------------------------------------------------
def check_options(quant_type: str | None, method: str) -> None:
    """Refuse an unknown quantization type or range method before any calibration runs.

    Raises
    ------
    QuantizationError
        naming the value and the valid ones.
    """
    known = {**INTEGER_TYPES, **FLOAT8_TYPES}
    if quant_type is not None and quant_type not in known:
        raise QuantizationError(f"unknown quantization type {quant_type!r}",
                                hint=f"use one of {', '.join(known)}, or none for statistics only")
    if method not in METHODS:
        raise QuantizationError(f"unknown calibration method {method!r}", hint=f"use one of {', '.join(METHODS)}")


def choose_range(stats: TensorStats, method: str = "minmax", *, symmetric: bool = False, per_channel: bool = False,
                 percentile: float = 99.999, num_quantized_bins: int = 128, quant_type: str = "uint8",
                 tensor: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The float range ``(rmin, rmax)`` to quantize ``stats``' tensor with (see the module docstring).

    Raises
    ------
    QuantizationError
        for an unknown method, statistics without a finite value, or a per-channel range by a method other
        than ``minmax`` (the statistics keep no per-channel histogram).
    """
    if method not in METHODS:
        raise QuantizationError(f"unknown calibration method {method!r}", hint=f"use one of {', '.join(METHODS)}")
    if per_channel:
        if method != "minmax":
            raise QuantizationError(f"{_label(tensor)}: per-channel ranges come from min/max only, not {method}",
                                    hint="use method='minmax' with per_channel=True")
        if stats.channels is None or any(v is None for v in stats.channels.min):
            raise QuantizationError(f"{_label(tensor)}: no per-channel statistics (or a channel without values)",
                                    hint="calibrate with a channel_axis that this tensor has")
        return np.array(stats.channels.min, dtype=np.float64), np.array(stats.channels.max, dtype=np.float64)
    if stats.min is None:
        raise QuantizationError(f"{_label(tensor)} has no finite value in the statistics",
                                hint="calibrate on data that reaches this tensor with finite values")
    if method == "minmax":
        return np.float64(stats.min), np.float64(stats.max)
    if stats.histogram is None:
        raise QuantizationError(f"{_label(tensor)}: method {method!r} needs a histogram, the statistics have none",
                                hint="calibrate with onegraph (recovered ranges carry min/max only)")
    if method == "percentile":
        lo, hi = percentile_range(stats.histogram, percentile, symmetric=symmetric)
    elif method == "entropy":
        counts, edges = centered_histogram(stats.histogram)
        lo, hi = entropy_threshold(counts, edges, num_quantized_bins)
    else:
        lo, hi = mse_range(stats, quant_type, symmetric=symmetric)
    return np.float64(max(lo, stats.min)), np.float64(min(hi, stats.max))


def percentile_range(hist: Histogram, percentile: float, *, symmetric: bool = False) -> tuple[float, float]:
    """ONNX Runtime's percentile rule on ``hist``: bins holding the cut points, widened to their outer edges."""
    if not 0 <= percentile <= 100:
        raise QuantizationError(f"percentile {percentile} is not in [0, 100]")
    counts = np.asarray(hist.counts, dtype=np.float64)
    edges = hist.edges
    if symmetric:
        folded, abs_edges = _folded(hist)
        cdf = np.cumsum(folded) / folded.sum()
        i = min(int(np.searchsorted(cdf, percentile / 100.0)), len(folded) - 1)
        return -float(abs_edges[i + 1]), float(abs_edges[i + 1])
    cut = (100.0 - percentile) / 200.0
    cdf = np.cumsum(counts) / counts.sum()
    left = min(int(np.searchsorted(cdf, cut)), len(counts) - 1)
    right = min(int(np.searchsorted(cdf, 1.0 - cut)), len(counts) - 1)
    return float(edges[left]), float(edges[right + 1])


def _folded(hist: Histogram) -> tuple[np.ndarray, np.ndarray]:
    """Histogram of ``|x|`` on the same aligned grid: bin ``k < 0`` folds onto bin ``-k - 1``."""
    index = np.arange(hist.first_bin, hist.first_bin + len(hist.counts))
    folded_index = np.where(index < 0, -index - 1, index)
    folded = np.bincount(folded_index, weights=np.asarray(hist.counts, dtype=np.float64))
    return folded, np.ldexp(np.arange(len(folded) + 1, dtype=np.float64), hist.width_log2)


def centered_histogram(hist: Histogram, max_bins: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """``hist`` on bins symmetric around 0 (``[-T, T]``, an even number of bins), as ONNX Runtime's entropy
    collector builds it; exact, since the grid is aligned. Pairs of bins are summed while there are more
    than ``max_bins``."""
    e, first, counts = hist.width_log2, hist.first_bin, np.asarray(hist.counts, dtype=np.int64)
    half = max(-first, first + len(counts), 1)
    while 2 * half > max_bins:
        index = np.arange(first, first + len(counts)) >> 1
        first = int(index[0])
        counts = np.bincount(index - first, weights=counts).astype(np.int64)
        e += 1
        half = max(-first, first + len(counts), 1)
    out = np.zeros(2 * half, dtype=np.int64)
    out[first + half:first + half + len(counts)] = counts
    return out, np.ldexp(np.arange(-half, half + 1, dtype=np.float64), e)


def entropy_threshold(counts: np.ndarray, edges: np.ndarray, num_quantized_bins: int = 128) -> tuple[float, float]:
    """ONNX Runtime's ``HistogramCollector.get_entropy_threshold`` (TensorRT's KL calibration), vectorized.

    ``counts`` is a histogram centred on 0 (``len(counts) + 1`` ``edges``). For each candidate
    ``[edges[z - i], edges[z + i + 1]]`` (``z`` the middle bin, ``i`` from ``num_quantized_bins // 2``), the
    clipped distribution ``p`` (outliers folded into its end bins) is compared with ``q``, ``p`` merged into
    ``num_quantized_bins`` bins and spread back over its non-empty bins; the candidate of least KL divergence
    wins. The same float32 smoothing and truncations as ONNX Runtime, so equal histograms give equal
    thresholds. Returns the range before clamping to ``[min, max]``.
    """
    hist = np.asarray(counts, dtype=np.int64)
    n = hist.size
    zero = n // 2
    half_q = num_quantized_bins // 2
    cumulative = np.concatenate([[0], np.cumsum(hist)])
    best, best_div = None, math.inf
    for i in range(half_q, zero + 1):
        start, end = zero - i, min(zero + i + 1, n)
        sliced = hist[start:end]
        p = sliced.copy()
        p[0] += cumulative[start]
        p[-1] += cumulative[n] - cumulative[end]
        nonzero = p != 0
        merged = sliced.size // num_quantized_bins
        used = merged * num_quantized_bins
        quantized = sliced[:used].reshape(num_quantized_bins, merged).sum(axis=1)
        quantized[-1] += sliced[used:].sum()
        norm = nonzero[:used].reshape(num_quantized_bins, merged).sum(axis=1)
        spread = np.zeros(num_quantized_bins, dtype=np.int64)
        np.floor_divide(quantized, norm, out=spread, where=norm != 0)  # ORT stores a/norm in an int64 array
        q = np.zeros(p.size, dtype=np.int64)
        q[:used] = np.repeat(spread, merged)
        div = _kl(_smooth(p), _smooth(q))
        if div < best_div or best is None:
            best, best_div = (float(edges[start]), float(edges[end])), div
    if best is None:  # fewer bins than quantized bins: nothing to clip
        return float(edges[0]), float(edges[-1])
    return best


def _smooth(p: np.ndarray, eps: float = 0.0001) -> np.ndarray | None:
    """ONNX Runtime's ``smooth_distribution`` (float32)."""
    zeros = p == 0
    n_zeros = int(zeros.sum())
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        return None
    eps1 = eps * float(n_zeros) / float(n_nonzeros)
    out = p.astype(np.float32)
    out += eps * zeros.astype(np.float32) + (-eps1) * (~zeros).astype(np.float32)
    return out


def _kl(p: np.ndarray | None, q: np.ndarray | None) -> float:
    """ONNX Runtime's ``entropy`` (scipy.stats.entropy in float32); inf for a malformed distribution."""
    if p is None or q is None:
        return math.inf
    p = p / np.sum(p)
    q = q / np.sum(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = p * np.log(p / q)
    terms[(p == 0) & (q >= 0)] = 0
    terms[~((p > 0) & (q > 0))] = np.inf
    return float(np.float32(np.sum(terms)))


def mse_range(stats: TensorStats, quant_type: str = "uint8", *, symmetric: bool = False,
              candidates: int = 200) -> tuple[float, float]:
    """The range ``alpha * [min, max]`` (alpha = k / candidates) of least quantize-dequantize squared error
    over the histogram, values taken at bin centres."""
    hist = stats.histogram
    if quant_type in FLOAT8_TYPES or hist is None:
        raise QuantizationError("the mse range needs an integer type and a histogram")
    qmin, qmax = qrange(quant_type, symmetric=symmetric)
    counts = np.asarray(hist.counts, dtype=np.float64)
    edges = hist.edges
    centres = np.clip((edges[:-1] + edges[1:]) / 2, stats.min, stats.max)
    alphas = np.arange(1, candidates + 1) / candidates
    lo, hi = np.minimum(alphas * stats.min, 0.0), np.maximum(alphas * stats.max, 0.0)
    if symmetric:
        absmax = np.maximum(-lo, hi)
        lo, hi = -absmax, absmax
    scale = (hi - lo) / (qmax - qmin)
    scale = np.where(scale > 0, scale, 1.0)
    zero = np.round(qmin - lo / scale)
    q = np.clip(np.round(centres[None, :] / scale[:, None]) + zero[:, None], qmin, qmax)
    err = ((q - zero[:, None]) * scale[:, None] - centres[None, :]) ** 2 @ counts
    k = int(np.argmin(err))
    return float(alphas[k] * stats.min), float(alphas[k] * stats.max)


# -- all together ---------------------------------------------------------------------------------
def quant_params(stats: TensorStats, quant_type: str = "uint8", *, method: str = "minmax", symmetric: bool = False,
                 reduce_range: bool = False, per_channel: bool = False, percentile: float = 99.999,
                 num_quantized_bins: int = 128, float8_method: str = "std", dtype: Any = np.float32,
                 tensor: str | None = None) -> QuantParams:
    """Scale and zero point of a tensor from its statistics: :func:`choose_range` then
    :func:`scale_zero_point` (integer types) or :func:`float8_scale` (float8 types).

    Parameters
    ----------
    stats:
        The tensor's :class:`~onegraph.stats.accumulators.TensorStats` (calibrated or read from a model).
    quant_type:
        ``uint8``, ``int8``, ``uint16``, ``int16``, ``uint4``, ``int4``, ``float8e4m3fn`` or ``float8e5m2``.
    method:
        ``minmax``, ``percentile``, ``entropy`` or ``mse`` (integer types; float8 uses ``float8_method``).
    per_channel:
        One scale / zero point per channel along ``stats.channels.axis`` (``minmax`` only).
    dtype:
        Float type of the scale (the tensor's type in a QuantizeLinear: float32, float16...).

    Raises
    ------
    QuantizationError
        see :func:`choose_range`, :func:`scale_zero_point`, :func:`float8_scale`.
    """
    if quant_type in FLOAT8_TYPES:
        if per_channel:
            raise QuantizationError(f"{_label(tensor)}: per-channel float8 scales are not supported")
        scale = float8_scale(stats, quant_type, method=float8_method, dtype=dtype, tensor=tensor)
        zero = np.zeros((), dtype=FLOAT8_TYPES[quant_type][0])
        return QuantParams(scale, zero, quant_type, None, True, False, f"float8_{float8_method}")
    lo, hi = choose_range(stats, method, symmetric=symmetric, per_channel=per_channel, percentile=percentile,
                          num_quantized_bins=num_quantized_bins, quant_type=quant_type, tensor=tensor)
    scale, zero = scale_zero_point(lo, hi, quant_type, symmetric=symmetric, reduce_range=reduce_range, dtype=dtype,
                                   tensor=tensor)
    axis = stats.channels.axis if per_channel else None
    return QuantParams(scale, zero, quant_type, axis, symmetric, reduce_range, method, np.asarray(lo), np.asarray(hi))


def _show(a: np.ndarray) -> str:
    return str(a.tolist() if a.ndim == 0 else a.tolist()[:4])
