"""Streaming, mergeable statistics of one tensor.

A :class:`TensorAccumulator` sees a tensor batch after batch (:meth:`~TensorAccumulator.update`) and keeps a
state whose size depends on its settings only, never on the number of values seen. Two accumulators that
saw different parts of the data merge (:meth:`~TensorAccumulator.merge`) into the state one pass over all
of it gives:

* exactly, for the counts (values, NaN, +inf, -inf, zeros), minimum, maximum and every histogram bin;
* to rounding (about 1e-15 relative), for the mean and the population variance, merged with the pairwise
  update of Chan, Golub & LeVeque (1979), "Updating formulae and a pairwise algorithm for computing sample
  variances" (each slice of a batch is reduced to float64 sums of values and squares per channel; a channel
  whose mean is large next to its spread, where their difference would cancel, is summed again about its
  mean, the two-pass formula);
* within the stated rank error, for quantiles: exact for the values sampled while there are at most ``held``
  of them (:class:`~onegraph.stats.quantiles.Quantiles`), then from a KLL sketch (Karnin, Lang & Liberty
  2016, "Optimal quantile approximation in streams"), Apache DataSketches' implementation
  (``datasketches.kll_doubles_sketch``). With parameter ``k`` a quantile's rank is off by at most
  ``kll_doubles_sketch.get_normalized_rank_error(k, False)`` (1.33% for k = 200) with 99% confidence;
  merged sketches keep the bound.

The sketch costs about 50 ns per value, five to ten times every other statistic together. With ``sketch_rate`` p < 1
each finite value enters it with probability p (Bernoulli sampling, the same p in every shard, so merged
samples are Bernoulli samples of the union); given the m values kept, they are a simple random sample of all
values, for which Hoeffding's inequality (1963, which covers sampling without replacement) bounds the rank
error of each of the 11 reported quantiles by ``sqrt(ln(2 * 11 / 0.01) / (2 m))`` at once with 99%
confidence. :attr:`TensorStats.quantile_rank_error` is the sum of both terms (98% confidence); for p = 1 it
is the sketch's alone.

NaN, +inf and -inf are counted and kept out of every other statistic. All arithmetic is in float64, whatever
the tensor's type (float16 and bfloat16 values are exact in float64).

The histogram has at most ``bins`` bins of width ``2**e`` whose edges are multiples of the width. ``e`` is
the smallest exponent for which the range seen so far fits in ``bins`` bins, so it depends on the range
only, not on the order the data came in; when the range grows, pairs of bins are summed (``e`` + 1) until it
fits again. A coarser histogram of an aligned grid is an exact sum of a finer one, so merged histograms are
bin for bin the one-pass histogram.

Outlier counts beyond a threshold (Tukey's fences ``Q1 - k IQR`` / ``Q3 + k IQR`` for k = 1.5 and 3, the IQR
taken as at least 4 units in the last place of the tensor's type at the quartiles so that values differing only
by rounding — a softmax output summing to 1 ± 1 ulp — are not outliers; and
``mean ± k std``) need the threshold, known only at the end; they are read from the histogram, which bounds
them exactly: :class:`OutlierCount` carries ``count_min <= true count <= count_max`` (the bins wholly beyond
the threshold, plus the one bin it cuts) and an estimate interpolated in that bin.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onegraph.errors import ConfigError, DataError, whole_number
from onegraph.stats.quantiles import Quantiles, sketch_parameter
from onegraph.stats.sampling import Words, bernoulli_indices

__all__ = ["QUANTILE_PROBS", "TUKEY_KS", "Histogram", "OutlierCount", "ChannelStats", "TensorStats",
           "TensorAccumulator", "merge_all"]

#: probabilities of the quantiles a summary lists
QUANTILE_PROBS = (0.0001, 0.001, 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99, 0.999, 0.9999)
#: Tukey fence multipliers of the IQR
TUKEY_KS = (1.5, 3.0)
_RATES = {2.0 ** -j for j in range(9)}
#: confidence of each bound term (KLL's and the sampling's): 99% each, 98% together
_DELTA = 0.01
#: values per slice of a batch processed at once (see TensorAccumulator.update)
_CHUNK = 1 << 17


# -- summaries (what a model carries) --------------------------------------------------------------
@dataclass(frozen=True)
class Histogram:
    """Counts of finite values in bins ``[(first_bin + i) * 2**width_log2, (first_bin + i + 1) * 2**width_log2)``.

    Bin edges are exact (multiples of a power of two), so the histogram is stored as integers.
    """

    width_log2: int
    first_bin: int
    counts: tuple[int, ...]

    @property
    def width(self) -> float:
        return math.ldexp(1.0, self.width_log2)

    @property
    def edges(self) -> np.ndarray:
        """``len(counts) + 1`` bin edges, float64."""
        return np.ldexp(np.arange(self.first_bin, self.first_bin + len(self.counts) + 1, dtype=np.float64),
                        self.width_log2)


@dataclass(frozen=True)
class OutlierCount:
    """Finite values below ``low`` or above ``high``; the exact count lies in ``[count_min, count_max]``."""

    low: float
    high: float
    count: float
    count_min: int
    count_max: int


@dataclass(frozen=True)
class ChannelStats:
    """Per-channel statistics along ``axis`` (one entry per channel; None where a channel had no finite value)."""

    axis: int
    count: tuple[int, ...]
    min: tuple[float | None, ...]
    max: tuple[float | None, ...]
    mean: tuple[float | None, ...]
    std: tuple[float | None, ...]


@dataclass(frozen=True)
class TensorStats:
    """The statistics of one tensor over all the data seen.

    ``count`` is the number of finite values; ``size`` every value (finite, NaN, +inf, -inf). ``min``,
    ``max``, ``absmax``, ``mean``, ``std`` (population, ddof = 0) and ``zero_fraction`` are over the finite
    values and None when there are none. ``quantiles`` maps a probability to a value whose rank is within
    ``quantile_rank_error`` of it (99% confidence; 98% when the sketch saw a sample). ``outliers`` keys:
    ``tukey_1.5``, ``tukey_3``, ``std_<k>``. ``source`` says where the figures come from: ``calibration``
    or ``recovered`` (ranges read back from a quantized model: only ``min`` / ``max`` set).
    """

    count: int = 0
    size: int = 0
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    min: float | None = None
    max: float | None = None
    absmax: float | None = None
    mean: float | None = None
    std: float | None = None
    zero_fraction: float | None = None
    quantiles: dict[float, float] = field(default_factory=dict)
    quantile_rank_error: float | None = None
    histogram: Histogram | None = None
    outliers: dict[str, OutlierCount] = field(default_factory=dict)
    channels: ChannelStats | None = None
    samples: int = 0
    dtype: str | None = None
    shape: tuple | None = None
    source: str = "calibration"

    @property
    def range(self) -> tuple[float, float] | None:
        """``(min, max)`` of the finite values, or None."""
        return None if self.min is None else (self.min, self.max)


# -- the accumulator -------------------------------------------------------------------------------
class TensorAccumulator:
    """Streaming, mergeable statistics of one tensor (see the module docstring for the guarantees).

    Parameters
    ----------
    name:
        Tensor name, used in error messages.
    channel_axis:
        Axis along which per-channel min / max / mean / std are kept (negative counts from the end), or
        None for none. Tensors of rank <= ``channel_axis`` get no per-channel statistics.
    bins:
        Maximum number of histogram bins (the histogram keeps between ``bins / 2`` and ``bins`` of them).
    sketch_k:
        KLL sketch parameter; memory grows with ``k``, rank error falls as about ``1.7 / k``.
    std_k:
        Multipliers ``k`` for the counts of values beyond ``mean ± k std``.
    sketch_rate:
        Probability that a value enters the quantile sketch: 1, or a power of two down to 1/256.
    seed:
        Seed of the sampling (None: fresh entropy; a copy, pickled or merged, samples with fresh entropy). The
        KLL sketch past ``held`` values compacts with DataSketches' own unseeded generator.
    held:
        Values of the sample kept as they are before the sketch takes over (:class:`~onegraph.stats.quantiles.
        Quantiles`): up to this many, the quantiles are exact for the values sampled.

    Memory: ``bins`` int64 counters, ``held`` doubles at most, then the KLL sketch (O(k log(n / k)) doubles:
    about 1,000 for k = 200 at any practical n), and four float64 arrays per channel.
    """

    def __init__(self, name: str = "tensor", *, channel_axis: int | None = 1, bins: int = 1024,
                 sketch_k: int = 200, std_k: Sequence[float] = (3.0,), sketch_rate: float = 1.0,
                 seed: int | None = None, held: int = 1 << 15) -> None:
        bins = whole_number("bins", bins, 2, hint="give bins >= 2, e.g. 1024")
        sketch_k = sketch_parameter("sketch_k", sketch_k)
        held = whole_number("held", held, 0, hint="give held >= 0, e.g. 32768")
        if channel_axis is not None:
            channel_axis = whole_number("channel_axis", channel_axis, None,
                                        hint="give the channel axis as an integer (1 for NCHW, -1 for NHWC) or None")
        std_k = _multipliers(std_k)
        if seed is not None:
            seed = whole_number("seed", seed, 0, hint="give seed as an integer >= 0, or None for fresh entropy")
        if isinstance(sketch_rate, bool) or sketch_rate not in _RATES:
            raise ConfigError(f"sketch_rate={sketch_rate!r} is not 1 or a power of two down to 1/256",
                              hint="give sketch_rate as 1, 1/2, 1/4 ... 1/256")
        self.sketch_rate = float(sketch_rate)
        self._rng = Words(seed)
        self.name = name
        self.channel_axis = channel_axis
        self.bins = int(bins)
        self.sketch_k = int(sketch_k)
        self.std_k = std_k
        self.size = self.count = self.nan = self.posinf = self.neginf = self.zeros = self.samples = 0
        self.min = math.inf
        self.max = -math.inf
        self.mean = 0.0
        self.m2 = 0.0
        self.dtype: str | None = None
        self.shape: tuple | None = None
        self._sketch = Quantiles(self.sketch_k, held)
        self._e: int | None = None  # histogram bin width exponent
        self._first = 0
        self._counts = np.zeros(0, dtype=np.int64)
        self._axis: int | None = None  # the channel axis, resolved on the first batch
        self._ch: dict[str, np.ndarray] | None = None

    # -- updating ---------------------------------------------------------------------------------
    def update(self, values: Any, samples: int | None = None) -> TensorAccumulator:
        """Add a batch of values (any shape) holding ``samples`` samples (default: its first axis' length).

        Raises
        ------
        DataError
            when the batch's channel count differs from the earlier batches'.
        """
        arr = np.asarray(values)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        if arr.dtype.kind in "OSUcMm" or arr.dtype.fields is not None:  # ml_dtypes' floats (kind V) are numbers
            raise DataError(f"tensor {self.name!r}: a batch of dtype {arr.dtype.name} has no numeric statistics",
                            hint="give the tensor's values as a numeric (bool, integer or float) array")
        if samples is not None:
            samples = whole_number("samples", samples, 0, hint="give the batch's number of samples, >= 0")
        self.samples += arr.shape[0] if samples is None else samples
        if arr.size == 0:  # an empty batch says nothing about the tensor's type or shape
            return self
        if self.dtype is None:
            self.dtype = arr.dtype.name
        self._note_shape(arr.shape)
        # slices of about _CHUNK values along the first axis (never one much smaller than the others): the
        # float64 copy and the temporaries (~20 bytes per value) stay in the CPU's caches, and numpy's
        # per-call overhead (~40 operations per slice) stays small next to the work
        rows = len(arr)
        parts = max(1, round(arr.size / _CHUNK))
        step = max(1, -(-rows // parts))
        for start in range(0, rows, step):
            self._update_part(arr[start:start + step])
        return self

    def _update_part(self, part: np.ndarray) -> None:
        """Fold one slice of a batch in: vectorized passes over a ``(rows, channels * inner)`` view.

        In order: per-channel min and max (reductions over the rows, which numpy vectorizes across the
        columns, short rows folded into wide ones: :func:`_over_rows`); when all of them are finite, so is
        every value (NaN and ±inf propagate through min / max) and no mask is built; one float64 copy, from
        which the per-channel sums of values and squares are taken (:func:`_moments`); the zero count; a
        Bernoulli sample of that copy into the sketch, one ``update`` per slice; the histogram, its bin
        indices computed in place in the copy and counted with ``np.bincount``.
        """
        # float32 / float64 are reduced as they are (sums accumulate in float64); narrower types (float16,
        # bfloat16, small integers) are widened to float32, exactly; others to float64
        x = part if part.dtype in (np.float32, np.float64) else part.astype(
            np.float32 if np.can_cast(part.dtype, np.float32) else np.float64)
        self.size += x.size
        if x.size == 0:
            return
        x2, channels = self._as_rows(x)
        cmin = _per_channel(_over_rows(x2, _column_min, np.minimum), channels, np.minimum)
        cmax = _per_channel(_over_rows(x2, _column_max, np.maximum), channels, np.maximum)
        finite = None
        wide = x2.astype(np.float64)  # C-contiguous, this function's own
        if not (np.isfinite(cmin).all() and np.isfinite(cmax).all()):
            finite = np.isfinite(x2)
            bad = x2[~finite]
            nan = int(np.isnan(bad).sum())
            pos = int((bad > 0).sum())
            self.nan += nan
            self.posinf += pos
            self.neginf += bad.size - nan - pos
            cmin = _per_channel(np.where(finite, x2, math.inf).min(axis=0), channels, np.minimum)
            cmax = _per_channel(np.where(finite, x2, -math.inf).max(axis=0), channels, np.maximum)
            np.copyto(wide, 0.0, where=~finite)
        moments = _moments(wide, channels, cmin, cmax, finite)
        if self._axis is not None:
            self._ch = moments if self._ch is None else _merge_channels(self._ch, moments, self.name)
        n = moments["count"]
        if finite is not None:
            has = n > 0
            if not has.any():
                return
            n, cmin, cmax, moments = n[has], cmin[has], cmax[has], {k: moments[k][has] for k in ("mean", "m2")}
        total = int(n.sum())
        # the whole tensor's moments from the channels' (Chan et al.'s pairwise formula)
        mean = float(n @ moments["mean"]) / total
        deviation = moments["mean"] - mean
        m2 = float(moments["m2"].sum() + n @ (deviation * deviation))
        self._combine_moments(total, mean, m2)
        self.min = min(self.min, float(cmin.min()))
        self.max = max(self.max, float(cmax.max()))
        if finite is None:
            self.zeros += int(np.count_nonzero(x2 == 0))
            values = wide.reshape(-1)
        else:
            values = wide[finite]
            self.zeros += int(np.count_nonzero(values == 0))
        # the sample for the sketch is taken from the float64 copy (datasketches takes writable float64
        # arrays only) before the histogram overwrites it
        if self.sketch_rate < 1.0:
            self._sketch.update(values[bernoulli_indices(self._rng, total, self.sketch_rate)])
        else:
            self._sketch.update(values)
        self._add_to_histogram(values)

    def _as_rows(self, x: np.ndarray) -> tuple[np.ndarray, int]:
        """``x`` as ``(rows, channels * inner)`` (axes before the channel axis, then the channel axis and those
        after it), and the number of channels; ``(first axis, rest)`` and 1 channel without a channel axis."""
        if self.channel_axis is not None and x.ndim:
            axis = self.channel_axis if self.channel_axis >= 0 else x.ndim + self.channel_axis
            if 0 <= axis < x.ndim:
                if self._axis is None:
                    self._axis = axis
                return x.reshape(math.prod(x.shape[:axis]), -1), int(x.shape[axis])
        return x.reshape(x.shape[0] if x.ndim > 1 else 1, -1), 1

    def _note_shape(self, shape: tuple) -> None:
        # dimensions that vary between batches (the batch axis, dynamic axes) are recorded as None
        if self.shape is None:
            self.shape = tuple(shape)
        elif len(self.shape) == len(shape):
            self.shape = tuple(a if a == b else None for a, b in zip(self.shape, shape))

    def _combine_moments(self, n: int, mean: float, m2: float) -> None:
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.m2 += m2 + delta * delta * self.count * n / total
        self.count = total

    # -- histogram on an aligned power-of-two grid -----------------------------------------------
    def _fits(self, e: int, lo: float, hi: float) -> bool:
        return math.floor(math.ldexp(hi, -e)) - math.floor(math.ldexp(lo, -e)) < self.bins

    def _exponent(self, lo: float, hi: float) -> int:
        """The smallest bin width exponent for which ``[lo, hi]`` fits in ``bins`` bins.

        Bounded below so that ``value / 2**e`` stays below 2**52 (bin indices exact in float64).
        """
        absmax = max(abs(lo), abs(hi))
        e = math.frexp(absmax)[1] - 52 if absmax > 0 else -1074
        span = hi / 2 - lo / 2  # halves: hi - lo may overflow
        if span > 0:
            e = max(e, math.frexp(span)[1] - self.bins.bit_length() - 1)
        if self._e is not None:
            e = max(e, self._e)
        while not self._fits(e, lo, hi):
            e += 1
        return e

    def _add_to_histogram(self, values: np.ndarray) -> None:
        """Count ``values`` (finite, float64, 1-D; overwritten) into the histogram, regridded first when the
        range grew."""
        e = self._exponent(self.min, self.max)
        first = math.floor(math.ldexp(self.min, -e))
        length = math.floor(math.ldexp(self.max, -e)) - first + 1
        if (e, first, length) == (self._e, self._first, len(self._counts)):
            counts = self._counts
        else:
            counts = _regridded(self, e, first, length)
        # multiplying by a power of two is exact (ldexp is 15x slower); floor before subtracting ``first``:
        # v - first may round up to the next integer when v is tiny and first is not
        if -1000 < e < 1000:
            values *= math.ldexp(1.0, -e)
        else:
            values = np.ldexp(values, -e)
        np.floor(values, out=values)
        counts += np.bincount(_bin_index(values, first), minlength=length)
        self._e, self._first, self._counts = e, first, counts

    # -- merging ----------------------------------------------------------------------------------
    def merge(self, other: TensorAccumulator) -> TensorAccumulator:
        """Fold ``other`` (same settings, another part of the data) into this accumulator; returns self. Merging
        an accumulator into itself counts its data twice, as merging an equal copy does.

        Raises
        ------
        DataError
            for accumulators with different settings or channel counts (before anything is changed).
        """
        if not isinstance(other, TensorAccumulator):
            raise DataError(f"tensor {self.name!r}: cannot merge a {type(other).__name__} into its statistics",
                            hint="merge TensorAccumulator objects (Calibration.accumulators holds them)")
        differ = [f"{name} {mine!r} / {theirs!r}" for name, mine, theirs in self._differences(other)]
        if differ:
            raise DataError(f"tensor {self.name!r}: cannot merge statistics collected with different settings "
                            f"({', '.join(differ)})",
                            hint="collect every part with the same settings (calibrate: the same sketch_per_sample, "
                                 "sketch_k, bins, std_k and channel_axis)")
        if other is self:  # the sketch cannot merge itself
            other = copy.deepcopy(other)
        channels = self._ch  # checked before anything changes: a channel count that differs raises
        if other._ch is not None:
            channels = other._ch if self._ch is None else _merge_channels(self._ch, other._ch, self.name)
        if other.shape is not None:
            self._note_shape(other.shape)
        self.dtype = self.dtype or other.dtype
        self.size += other.size
        self.samples += other.samples
        self.nan += other.nan
        self.posinf += other.posinf
        self.neginf += other.neginf
        if other._ch is not None:
            self._axis = other._axis if self._axis is None else self._axis
        self._ch = channels
        if other.count == 0:
            return self
        if self.count == 0:
            self._e, self._first, self._counts = other._e, other._first, other._counts.copy()
        else:
            self.min, self.max = min(self.min, other.min), max(self.max, other.max)
            e = self._exponent(self.min, self.max)
            e = max(e, other._e)
            first = math.floor(math.ldexp(self.min, -e))
            length = math.floor(math.ldexp(self.max, -e)) - first + 1
            counts = _regridded(self, e, first, length) + _regridded(other, e, first, length)
            self._e, self._first, self._counts = e, first, counts
        self.min, self.max = min(self.min, other.min), max(self.max, other.max)
        self.zeros += other.zeros
        self._combine_moments(other.count, other.mean, other.m2)
        self._sketch.merge(other._sketch)
        return self

    def _differences(self, other: TensorAccumulator) -> list[tuple[str, Any, Any]]:
        """The settings in which ``other`` differs from this accumulator (a channel axis counted from the end
        and the same axis counted from the start are the same once a batch has resolved both)."""
        found = [(name, getattr(self, name), getattr(other, name))
                 for name in ("bins", "sketch_k", "std_k", "sketch_rate") if getattr(self, name) != getattr(other, name)]
        same_axis = self.channel_axis == other.channel_axis or (
            self._axis is not None and self._axis == other._axis)
        if not same_axis:
            found.append(("channel_axis", self.channel_axis, other.channel_axis))
        return found

    # -- state for transport ----------------------------------------------------------------------
    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_rng"] = None  # a copy samples with fresh entropy
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._rng = Words()

    # -- results ----------------------------------------------------------------------------------
    @property
    def var(self) -> float:
        return self.m2 / self.count if self.count else math.nan

    def quantile(self, q: float) -> float | None:
        """A value whose rank is within ``quantile_rank_error`` of ``q`` (None when no finite value was seen)."""
        if isinstance(q, bool) or not isinstance(q, (int, float, np.floating, np.integer)) or not 0 <= q <= 1:
            raise ConfigError(f"quantile q={q!r} is not a probability from 0 to 1", hint="give q in [0, 1], e.g. 0.99")
        return None if self._sketch.is_empty() else self._sketch.get_quantile(float(q))

    @property
    def quantile_rank_error(self) -> float:
        """Bound on the rank error of the reported quantiles (see the module docstring): the sketch's (0 while
        it holds every value it was given) plus, when sampling, the sampling's."""
        error = self._sketch.normalized_rank_error()
        if self.sketch_rate < 1.0:
            kept = max(int(self._sketch.n), 1)
            error += math.sqrt(math.log(2 * len(QUANTILE_PROBS) / _DELTA) / (2 * kept))
        return min(error, 1.0)  # a rank is within 1 of any other: beyond that the bound says nothing more

    def histogram(self) -> Histogram | None:
        if self.count == 0:
            return None
        return Histogram(self._e, self._first, tuple(self._counts.astype(np.int64).tolist()))

    def outliers_beyond(self, low: float, high: float) -> OutlierCount:
        """Bounds on the number of finite values ``< low`` or ``> high``, read from the histogram.

        Raises :class:`ConfigError` for a NaN threshold."""
        if math.isnan(low) or math.isnan(high):
            raise ConfigError(f"outlier thresholds ({low}, {high}) hold NaN", hint="give numbers (±inf: no bound)")
        lo_min, lo_max, lo_est = self._count_below(low)
        hi_min, hi_max, hi_est = self._count_above(high)
        return OutlierCount(low, high, lo_est + hi_est, lo_min + hi_min, lo_max + hi_max)

    def _cut(self, t: float) -> tuple[int, float]:
        """Index of the bin holding ``t`` (relative to the first) and the fraction of it below ``t``."""
        scaled = math.ldexp(t, -self._e)
        index = math.floor(scaled) - self._first
        return index, scaled - math.floor(scaled)

    def _count_below(self, t: float) -> tuple[int, int, float]:
        if self.count == 0 or t <= self.min:
            return 0, 0, 0.0
        if t > self.max:
            return self.count, self.count, float(self.count)
        i, frac = self._cut(t)
        full = int(self._counts[:i].sum())
        cut = int(self._counts[i]) if frac > 0 else 0  # t on an edge cuts no bin
        if cut and i == -self._first:  # t cuts the bin [0, width): its zeros, counted exactly, are all below t
            return full + self.zeros, full + cut, full + self.zeros + (cut - self.zeros) * frac
        return full, full + cut, full + cut * frac

    def _count_above(self, t: float) -> tuple[int, int, float]:
        if self.count == 0 or t >= self.max:
            return 0, 0, 0.0
        if t < self.min:
            return self.count, self.count, float(self.count)
        i, frac = self._cut(t)
        full = int(self._counts[i + 1:].sum())
        cut = int(self._counts[i])  # values equal to t are not above it
        if i == -self._first:  # t (>= 0) cuts the bin [0, width): none of its zeros is above t (a ReLU's many)
            cut -= self.zeros
        return full, full + cut, full + cut * (1.0 - frac)

    def result(self) -> TensorStats:
        """The :class:`TensorStats` of everything seen so far."""
        common = dict(size=self.size, nan=self.nan, posinf=self.posinf, neginf=self.neginf, samples=self.samples,
                      dtype=self.dtype, shape=self.shape, channels=self._channel_stats())
        if self.count == 0:
            return TensorStats(**common)
        std = math.sqrt(self.var)
        quantiles, outliers = {}, {}
        if not self._sketch.is_empty():  # a sampled sketch may have kept none of a few values
            quantiles = dict(zip(QUANTILE_PROBS, self._sketch.get_quantiles(QUANTILE_PROBS)))
            q1, q3 = quantiles[0.25], quantiles[0.75]
            spread = max(q3 - q1, _rounding(max(abs(q1), abs(q3)), self.dtype))
            for k in TUKEY_KS:
                outliers[f"tukey_{k:g}"] = self.outliers_beyond(q1 - k * spread, q3 + k * spread)
        for k in self.std_k:
            if math.isfinite(self.mean) and math.isfinite(std):  # sums beyond float64's range leave them NaN
                outliers[f"std_{k:g}"] = self.outliers_beyond(self.mean - k * std, self.mean + k * std)
        return TensorStats(
            count=self.count, min=self.min, max=self.max, absmax=max(-self.min, self.max), mean=self.mean, std=std,
            zero_fraction=self.zeros / self.count, quantiles=quantiles,
            quantile_rank_error=self.quantile_rank_error if quantiles else None, histogram=self.histogram(),
            outliers=outliers, **common)

    def _channel_stats(self) -> ChannelStats | None:
        if self._ch is None:
            return None
        ch = self._ch
        has = ch["count"] > 0

        every = bool(has.all())

        def col(a: np.ndarray) -> tuple:  # tolist: Python floats at C speed (a layer has 1,000s of channels)
            values = a.astype(np.float64).tolist()
            return tuple(values) if every else tuple(v if ok else None for v, ok in zip(values, has.tolist()))

        var = np.divide(ch["m2"], ch["count"], out=np.zeros(len(has)), where=has)
        return ChannelStats(self._axis, tuple(ch["count"].astype(np.int64).tolist()), col(ch["min"]), col(ch["max"]),
                            col(ch["mean"]), col(np.sqrt(var)))


def _regridded(acc: TensorAccumulator, e: int, first: int, length: int) -> np.ndarray:
    """``acc``'s histogram counts on the coarser grid ``e`` from bin ``first``, ``length`` bins (exact sums)."""
    out = np.zeros(length, dtype=np.int64)
    if acc._e is None or not len(acc._counts):
        return out
    index = (np.arange(acc._first, acc._first + len(acc._counts), dtype=np.int64) >> (e - acc._e)) - first
    np.add.at(out, index, acc._counts)
    return out


#: 1.5 * 2**52: an integer-valued float64 ``v`` with ``|v| < 2**51``, plus this, holds ``v`` in its low bits
_MAGIC = 1.5 * 2.0**52
_MAGIC_BITS = int(np.array(_MAGIC).view(np.int64))


def _bin_index(floored: np.ndarray, first: int) -> np.ndarray:
    """``floored - first`` as int64 (``floored``: float64 floors of the scaled values, overwritten; the
    differences are bin indices, small non-negative integers).

    Adding ``1.5 * 2**52 - first`` (an integer, exact in float64 for ``|first| < 2**51``) gives
    ``1.5 * 2**52 + index`` exactly (an integer below 2**53), whose bits minus the constant's are the index:
    two in-place passes, where float -> int64 conversion (no vector instruction on x86) costs more than the
    rest of the histogram."""
    if abs(first) >= 1 << 51:
        return np.subtract(floored, first, dtype=np.int64, casting="unsafe")
    floored += float(_MAGIC - first)
    index = floored.view(np.int64)
    index -= _MAGIC_BITS
    return index


def _multipliers(std_k: Any) -> tuple[float, ...]:
    """``std_k`` as a tuple of finite positive floats; :class:`ConfigError` naming it otherwise."""
    try:
        given = list(std_k) if not isinstance(std_k, (str, bytes)) else None  # once: a generator reads once
        values = None if given is None or any(isinstance(k, bool) for k in given) else tuple(map(float, given))
    except (TypeError, ValueError):
        values = None
    if values is None or not all(math.isfinite(k) and k > 0 for k in values):
        raise ConfigError(f"std_k={std_k!r} is not a list of positive numbers",
                          hint="give std_k as a list of positive numbers, e.g. (3.0,) or [2, 3]")
    return values


def _rounding(value: float, dtype: str | None) -> float:
    """4 units in the last place of ``value`` in the tensor's type (float64 when unknown): below it, two values
    differ by rounding alone."""
    try:
        kind = np.dtype(dtype) if dtype else np.dtype(np.float64)
    except TypeError:  # bfloat16 and other names numpy lacks
        kind = np.dtype(np.float32)
    if kind.kind != "f":
        kind = np.dtype(np.float64)
    return 4.0 * float(np.spacing(np.asarray(value, kind)))


#: a channel whose sum of squares exceeds this many times its sum of squared deviations (|mean| > ~8 std) is
#: summed again about its mean: the difference of the two sums would lose more than 6 of float64's 53 bits
_CANCELLATION = 64.0


def _moments(wide: np.ndarray, channels: int, cmin: np.ndarray, cmax: np.ndarray,
             finite: np.ndarray | None) -> dict[str, np.ndarray]:
    """count, min, max, mean and sum of squared deviations (float64) of each channel of ``wide``, a float64
    ``(rows, channels * inner)`` array holding 0 where ``finite`` is False (None: every value counts).

    One pass for the sums and one for the sums of squares (``einsum``, no temporary); ``M2 = S2 - S1 * mean``.
    Where that difference would cancel (a mean far from 0 in units of the spread), the channel's values are
    summed again about the mean (two-pass), as Chan, Golub & LeVeque recommend."""
    rows, columns = wide.shape
    inner = columns // channels
    if finite is None:
        count = np.full(channels, rows * inner, dtype=np.int64)
    else:
        count = _per_channel(finite.sum(axis=0), channels, np.add)
    safe = np.maximum(count, 1)
    total = _per_channel(_over_rows(wide, _column_sums, np.add), channels, np.add)
    squares = _per_channel(_over_rows(wide, _column_squares, np.add), channels, np.add)
    mean = total / safe
    m2 = squares - total * mean
    # NaN-safe: sums that overflowed (float64 values beyond 1e154) are summed again too
    unsure = (count > 0) & ~(np.isfinite(squares) & (squares <= _CANCELLATION * m2))
    if unsure.any():
        centered = wide - np.repeat(mean, inner)
        if finite is not None:
            np.copyto(centered, 0.0, where=~finite)
        shift = _per_channel(_over_rows(centered, _column_sums, np.add), channels, np.add) / safe
        again = _per_channel(_over_rows(centered, _column_squares, np.add), channels, np.add) - count * shift * shift
        mean, m2 = np.where(unsure, mean + shift, mean), np.where(unsure, again, m2)
    return {"count": count, "min": cmin.astype(np.float64), "max": cmax.astype(np.float64), "mean": mean,
            "m2": np.maximum(m2, 0.0)}


#: reductions over the rows of a slice fold rows into columns until a row holds at least this many values
_WIDE = 512


def _over_rows(a: np.ndarray, reduce: Any, combine: np.ufunc) -> np.ndarray:
    """``reduce`` (one figure per column of a 2-D array, over its rows) of ``a``, on a view of ``a`` whose rows
    hold ``k`` of its rows each when they are short, the ``k`` partial figures per column then combined
    with ``combine`` (rows left over are reduced on their own).

    numpy's reductions over the first axis vectorize across a row: on rows of 10 values they cost 20 times
    per value what they cost on rows of 500 (min / max exactly, sums to rounding in a different order)."""
    rows, columns = a.shape
    k = min(rows, -(-_WIDE // columns))
    if k <= 1:
        return reduce(a)
    body = rows - rows % k
    out = combine.reduce(reduce(a[:body].reshape(body // k, k * columns)).reshape(k, columns), axis=0)
    return out if body == rows else combine(out, reduce(a[body:]))


def _column_min(a: np.ndarray) -> np.ndarray:
    return np.minimum.reduce(a, axis=0)


def _column_max(a: np.ndarray) -> np.ndarray:
    return np.maximum.reduce(a, axis=0)


def _column_sums(a: np.ndarray) -> np.ndarray:
    """Sums over the rows of a 2-D array (one vectorized pass)."""
    return a[0].copy() if len(a) == 1 else np.add.reduce(a, axis=0)


def _column_squares(a: np.ndarray) -> np.ndarray:
    """Sums of squares over the rows of a 2-D array (``einsum``: one pass, no temporary)."""
    return np.einsum("ij,ij->j", a, a)


def _per_channel(columns: np.ndarray, channels: int, ufunc: np.ufunc) -> np.ndarray:
    """Reduce ``channels * inner`` per-column figures to one per channel."""
    return columns if len(columns) == channels else ufunc.reduce(columns.reshape(channels, -1), axis=1)


def _merge_channels(a: dict[str, np.ndarray], b: dict[str, np.ndarray], name: str) -> dict[str, np.ndarray]:
    if len(a["count"]) != len(b["count"]):
        raise DataError(f"tensor {name!r}: {len(b['count'])} channels where earlier batches had {len(a['count'])}",
                        hint="give batches of the same channel count, or set channel_axis=None")
    n = a["count"] + b["count"]
    delta = b["mean"] - a["mean"]
    safe = np.maximum(n, 1)
    return {
        "count": n,
        "min": np.minimum(a["min"], b["min"]),
        "max": np.maximum(a["max"], b["max"]),
        "mean": a["mean"] + delta * b["count"] / safe,
        "m2": a["m2"] + b["m2"] + delta * delta * a["count"] * b["count"] / safe,
    }


def merge_all(accumulators: Sequence[TensorAccumulator]) -> TensorAccumulator:
    """Merge accumulators of the same tensor (a copy; the inputs are left unchanged)."""
    if not accumulators:
        raise DataError("nothing to merge: the list of accumulators is empty", hint="give at least one accumulator")
    total = copy.deepcopy(accumulators[0])
    for acc in accumulators[1:]:
        total.merge(acc)
    return total
