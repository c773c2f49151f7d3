"""Scale / zero point equal onnxruntime.quantization's for the same ranges; range methods behave."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnxruntime.quantization import quant_utils
from onnxruntime.quantization.calibrate import HistogramCollector

from onegraph.stats.accumulators import TensorAccumulator
from onegraph.stats.qparams import (
    INTEGER_TYPES,
    QuantizationError,
    centered_histogram,
    entropy_threshold,
    float8_scale,
    quant_params,
    scale_zero_point,
)

RANGES = [(-1.0, 3.0), (-1.0, 1.0), (0.0, 0.0), (0.0, 6.0), (-6.0, 0.0), (0.5, 2.0), (-2.0, -0.5), (-1e-3, 2e-3),
          (-3.4e3, 1.7e4), (-7.3, 0.01), (1e-30, 2e-30), (-1e-45, 1e-45), (-65000.0, 65000.0)]


@pytest.mark.parametrize("quant_type", list(INTEGER_TYPES))
@pytest.mark.parametrize("symmetric,reduce_range", [(False, False), (True, False), (False, True), (True, True)])
def test_equal_to_onnxruntime_compute_scale_zp(quant_type, symmetric, reduce_range):
    onnx_type = INTEGER_TYPES[quant_type][1]
    qmin, qmax = quant_utils.get_qmin_qmax_for_qType(onnx_type, reduce_range=reduce_range, symmetric=symmetric)
    for (lo, hi), dtype in itertools.product(RANGES, (np.float32, np.float16)):
        if dtype == np.float16 and max(abs(lo), abs(hi)) > 6e4:
            continue
        rmin, rmax = np.array(lo, dtype=dtype), np.array(hi, dtype=dtype)
        zp_ort, scale_ort = quant_utils.compute_scale_zp(rmin, rmax, qmin, qmax, symmetric=symmetric)
        scale, zp = scale_zero_point(lo, hi, quant_type, symmetric=symmetric, reduce_range=reduce_range, dtype=dtype)
        assert scale.dtype == scale_ort.dtype and zp.dtype == zp_ort.dtype, (lo, hi)
        assert scale == scale_ort and zp == zp_ort, (lo, hi, dtype, scale, scale_ort, zp, zp_ort)
        assert np.isfinite(scale) and scale > 0


def test_examples_from_the_issue():
    scale, zp = scale_zero_point(-1.0, 3.0, "uint8")
    assert scale == np.float32(4 / 255) and zp == 64
    assert scale_zero_point(-1.0, 1.0, "uint8", symmetric=True)[1] == 128
    assert scale_zero_point(0.0, 0.0, "uint8") == (np.float32(1.0), np.uint8(0))


def test_per_channel_vectors_equal_per_tensor_calls():
    lo, hi = np.array([-1.0, 0.0, -5.0, 0.0]), np.array([3.0, 0.0, 2.0, 1e-3])
    scale, zp = scale_zero_point(lo, hi, "int8", symmetric=True)
    for i in range(4):
        assert (scale[i], zp[i]) == scale_zero_point(lo[i], hi[i], "int8", symmetric=True)


@pytest.mark.parametrize("lo,hi", [(-np.inf, 1.0), (0.0, np.inf), (np.nan, 1.0)])
def test_non_finite_ranges_are_refused(lo, hi):
    # onnxruntime returns an infinite / NaN scale here without an error
    with pytest.raises(QuantizationError, match="'act'.*not finite"):
        scale_zero_point(lo, hi, "uint8", tensor="act")


def test_range_beyond_the_float_type_is_refused():
    with pytest.raises(QuantizationError, match="overflows float16"):
        scale_zero_point(-1e5, 1e5, "uint8", dtype=np.float16)


def test_float8_scale_matches_onnxruntime():
    rng = np.random.default_rng(0)
    data = rng.normal(0, 2.5, size=10_000).astype(np.float32)
    stats = TensorAccumulator("w", channel_axis=None).update(data).result()
    zero, scale_ort = quant_utils.compute_scale_zp_float8(onnx.TensorProto.FLOAT8E4M3FN, np.std(data))
    np.testing.assert_allclose(float8_scale(stats, "float8e4m3fn"), scale_ort, rtol=1e-6)
    import ml_dtypes

    assert float8_scale(stats, "float8e5m2", method="absmax") == np.float32(stats.absmax / 57344.0)
    q = quant_params(stats, "float8e4m3fn")
    assert q.zero_point.dtype == ml_dtypes.float8_e4m3fn and float(q.zero_point) == 0.0


def heavy_tailed_stats(seed: int = 0):
    rng = np.random.default_rng(seed)
    outliers = rng.uniform(20, 60, size=300) * rng.choice([-1, 1], size=300)
    data = np.concatenate([rng.normal(0.3, 1.0, size=200_000), outliers])
    return data, TensorAccumulator("x", channel_axis=None).update(data).result()


def test_entropy_threshold_equals_onnxruntime_on_the_same_histogram():
    _, stats = heavy_tailed_stats()
    counts, edges = centered_histogram(stats.histogram, max_bins=1024)
    assert counts.sum() == stats.count  # rebuilt exactly from the aligned histogram
    for bins in (128, 64):
        ours = entropy_threshold(counts, edges, bins)
        theirs = HistogramCollector.get_entropy_threshold(None, (counts, edges.astype(np.float32), edges[0], edges[-1]),
                                                          bins)
        assert ours == (float(theirs[0]), float(theirs[1]))


def qdq_mse(data: np.ndarray, lo: float, hi: float) -> float:
    scale, zp = scale_zero_point(lo, hi, "uint8")
    scale, zp = float(scale), float(zp)
    q = np.clip(np.round(data / scale) + zp, 0, 255)
    return float(np.mean(((q - zp) * scale - data) ** 2))


def test_percentile_entropy_mse_ranges_on_heavy_tails():
    data, stats = heavy_tailed_stats(1)
    width = stats.histogram.width
    p = quant_params(stats, "uint8", method="percentile", percentile=99.9)
    lo_true, hi_true = np.percentile(data, [0.05, 99.95], method="inverted_cdf")
    assert lo_true - width <= float(p.rmin) <= lo_true and hi_true <= float(p.rmax) <= hi_true + width
    sym = quant_params(stats, "int8", method="percentile", percentile=99.9, symmetric=True)
    cut = np.percentile(np.abs(data), 99.9, method="inverted_cdf")
    assert cut <= float(sym.rmax) <= cut + width
    entropy = quant_params(stats, "uint8", method="entropy")
    assert stats.min < float(entropy.rmin) < float(entropy.rmax) < stats.max  # tails clipped
    # mse: the chosen alpha * [min, max] is (up to the histogram's bin-centre approximation) the best of the
    # same 200 candidates measured on the data itself
    mse = quant_params(stats, "uint8", method="mse")
    brute = min(qdq_mse(data, a * stats.min, a * stats.max) for a in np.arange(1, 201) / 200)
    chosen = qdq_mse(data, float(mse.rmin), float(mse.rmax))
    assert chosen <= 1.05 * brute and chosen < qdq_mse(data, stats.min, stats.max)


def test_per_channel_needs_minmax_and_channels():
    x = np.random.default_rng(2).normal(size=(100, 3)) * [1.0, 10.0, 100.0]
    stats = TensorAccumulator("x").update(x).result()
    q = quant_params(stats, "int8", symmetric=True, per_channel=True)
    assert q.axis == 1 and q.scale.shape == (3,)
    np.testing.assert_array_equal(q.scale, scale_zero_point(x.min(0), x.max(0), "int8", symmetric=True)[0])
    with pytest.raises(QuantizationError, match="per-channel ranges come from min/max only"):
        quant_params(stats, per_channel=True, method="entropy")
    with pytest.raises(QuantizationError, match="unknown calibration method"):
        quant_params(stats, method="kl")


def test_a_tensor_without_finite_values_is_named_only_when_its_name_is_given():
    """TensorStats carry no name: without ``tensor=`` the error says "the tensor" (it said "tensor 'tensor'")."""
    stats = TensorAccumulator("body_mass_g").update(np.full((4, 1), np.nan)).result()
    with pytest.raises(QuantizationError, match=r"^the tensor has no finite value"):
        quant_params(stats)
    with pytest.raises(QuantizationError, match=r"^tensor 'body_mass_g' has no finite value"):
        quant_params(stats, tensor="body_mass_g")
