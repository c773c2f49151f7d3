"""Streaming, mergeable tensor statistics equal numpy's on the concatenated data."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from conftest import DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from onegraph.errors import DataError
from onegraph.stats.accumulators import QUANTILE_PROBS, TensorAccumulator, merge_all


def real_matrix() -> np.ndarray:
    """Seattle weather's numeric columns (1,461 days x 4), float32, with NaN / inf / zeros planted."""
    frame = pd.read_csv(DATA / "seattle-weather.csv")
    x = frame[["precipitation", "temp_max", "temp_min", "wind"]].to_numpy(np.float32).copy()
    x[[3, 500, 900], 1] = np.nan
    x[[10, 11], 2] = np.inf
    x[700, 3] = -np.inf
    return x


def check_against_numpy(stats, x: np.ndarray, axis: int | None = 1) -> None:
    values = np.asarray(x, dtype=np.float64)
    finite = values[np.isfinite(values)]
    assert stats.size == values.size
    assert stats.count == finite.size
    assert stats.nan == np.isnan(values).sum()
    assert stats.posinf == np.isposinf(values).sum()
    assert stats.neginf == np.isneginf(values).sum()
    assert stats.min == finite.min() and stats.max == finite.max()
    assert stats.absmax == np.abs(finite).max()
    assert stats.zero_fraction == (finite == 0).sum() / finite.size
    # 1e-9 relative; a mean that is 0 up to rounding (a standardized column) is compared at the scale of
    # the data, which no summation order can beat
    np.testing.assert_allclose(stats.mean, finite.mean(), rtol=1e-9, atol=1e-13 * stats.absmax)
    np.testing.assert_allclose(stats.std, finite.std(), rtol=1e-9, atol=1e-13 * stats.absmax)
    # histogram: exact counts per bin, bins found independently with searchsorted on the edges
    edges = stats.histogram.edges
    expected = np.bincount(np.searchsorted(edges, finite, side="right") - 1, minlength=len(edges) - 1)
    assert list(stats.histogram.counts) == expected.tolist()
    # quantiles: the rank of each returned value is within the sketch's stated bound
    eps = stats.quantile_rank_error
    for p, v in stats.quantiles.items():
        assert (finite < v).mean() - eps <= p <= (finite <= v).mean() + eps, (p, v)
    # outlier counts: the exact count lies in the bounds
    for key, o in stats.outliers.items():
        exact = int(((finite < o.low) | (finite > o.high)).sum())
        assert o.count_min <= exact <= o.count_max, key
        assert o.count_min <= o.count <= o.count_max
    if axis is not None and values.ndim > axis:
        moved = np.moveaxis(np.where(np.isfinite(values), values, np.nan), axis, 0).reshape(values.shape[axis], -1)
        assert stats.channels.axis == axis
        assert list(stats.channels.count) == np.isfinite(moved).sum(axis=1).tolist()
        assert list(stats.channels.min) == np.nanmin(moved, axis=1).tolist()
        assert list(stats.channels.max) == np.nanmax(moved, axis=1).tolist()
        np.testing.assert_allclose(stats.channels.mean, np.nanmean(moved, axis=1), rtol=1e-9,
                                   atol=1e-13 * stats.absmax)
        np.testing.assert_allclose(stats.channels.std, np.nanstd(moved, axis=1), rtol=1e-9,
                                   atol=1e-13 * stats.absmax)


@pytest.mark.parametrize("held", [1 << 15, 1000, 0])
def test_batches_equal_numpy_on_real_data(held):
    """5,838 finite values: held exactly (quantiles exact, rank error 0), or past ``held`` in a KLL sketch
    (within its stated bound)."""
    x = real_matrix()
    acc = TensorAccumulator("weather", held=held)
    for start in range(0, len(x), 100):
        acc.update(x[start:start + 100])
    stats = acc.result()
    check_against_numpy(stats, x)
    assert stats.samples == len(x) and stats.dtype == "float32" and stats.shape == (None, 4)
    assert set(stats.quantiles) == set(QUANTILE_PROBS)
    if held > stats.count:
        finite = np.sort(x[np.isfinite(x)].astype(np.float64))
        # DataSketches' exclusive rank: the floor(q n)-th smallest value
        assert stats.quantiles == {q: finite[min(int(q * len(finite)), len(finite) - 1)] for q in QUANTILE_PROBS}
        assert stats.quantile_rank_error == 0
    else:
        assert 0 < stats.quantile_rank_error < 0.02


@pytest.mark.parametrize("shards", [2, 7])
def test_merging_shards_equals_one_pass(shards):
    x = real_matrix()
    one = TensorAccumulator("t").update(x).result()
    parts = [TensorAccumulator("t") for _ in range(shards)]
    rng = np.random.default_rng(shards)
    cuts = np.sort(rng.choice(np.arange(1, len(x)), size=3 * shards, replace=False))
    for i, chunk in enumerate(np.split(x, cuts)):
        parts[i % shards].update(chunk)  # uneven, interleaved shards
    merged = merge_all(parts).result()
    for key in ("size", "count", "nan", "posinf", "neginf", "min", "max", "absmax", "zero_fraction", "samples"):
        assert getattr(merged, key) == getattr(one, key), key
    assert merged.histogram == one.histogram  # bin for bin
    np.testing.assert_allclose(merged.mean, one.mean, rtol=1e-9)
    np.testing.assert_allclose(merged.std, one.std, rtol=1e-9)
    assert merged.channels.min == one.channels.min and merged.channels.count == one.channels.count
    np.testing.assert_allclose(merged.channels.std, one.channels.std, rtol=1e-9)
    check_against_numpy(merged, x)  # merged quantiles keep the bound


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=0, max_size=40),
                min_size=1, max_size=6), st.integers(2, 64))
def test_any_batches_and_merge_order(batches, bins):
    arrays = [np.array(b, dtype=np.float32) for b in batches]
    whole = np.concatenate(arrays)
    one = TensorAccumulator("t", bins=bins, channel_axis=None)
    for a in arrays:
        one.update(a)
    reverse = [TensorAccumulator("t", bins=bins, channel_axis=None).update(a) for a in reversed(arrays)]
    merged = merge_all(reverse).result()
    stats = one.result()
    if np.isfinite(whole).any():
        check_against_numpy(stats, whole, axis=None)
        assert merged.histogram == stats.histogram and len(stats.histogram.counts) <= bins
    else:
        assert stats.count == 0 and stats.min is None and stats.histogram is None
    assert (merged.count, merged.nan, merged.posinf, merged.neginf) == (stats.count, stats.nan, stats.posinf,
                                                                        stats.neginf)


def test_float16_and_bfloat16_are_accumulated_in_float64():
    import ml_dtypes

    rng = np.random.default_rng(0)
    base = rng.normal(1000.0, 3.0, size=(5000, 3))
    for dtype in (np.float16, ml_dtypes.bfloat16):
        x = base.astype(dtype)
        stats = TensorAccumulator("half").update(x).result()
        exact = x.astype(np.float64)
        np.testing.assert_allclose(stats.mean, exact.mean(), rtol=1e-12)
        np.testing.assert_allclose(stats.std, exact.std(), rtol=1e-9)
        assert stats.min == exact.min() and stats.dtype == np.dtype(dtype).name


def test_memory_is_bounded_independent_of_samples():
    rng = np.random.default_rng(1)
    sizes = []
    for n in (10_000, 1_000_000):
        acc = TensorAccumulator("t", bins=512)
        data = rng.standard_t(3, size=n)  # heavy tails: the range keeps growing
        for start in range(0, n, 10_000):
            acc.update(data[start:start + 10_000].reshape(-1, 10))
        sizes.append(len(pickle.dumps(acc)))
        assert len(acc._counts) <= 512
    assert sizes[1] < 1.5 * sizes[0]  # 100x the data, about the same state


def test_pickled_accumulators_merge():
    x = real_matrix()
    a, b = TensorAccumulator("t").update(x[:700]), TensorAccumulator("t").update(x[700:])
    merged = pickle.loads(pickle.dumps(a)).merge(pickle.loads(pickle.dumps(b))).result()
    check_against_numpy(merged, x)


def test_mismatched_channels_and_settings_are_refused():
    acc = TensorAccumulator("conv").update(np.zeros((2, 3, 4)))
    with pytest.raises(DataError, match="'conv'.*4 channels where earlier batches had 3"):
        acc.update(np.zeros((2, 4, 4)))
    with pytest.raises(DataError, match="different settings"):
        acc.merge(TensorAccumulator("conv", bins=16))


def test_empty_and_non_finite_only():
    stats = TensorAccumulator("t").update(np.array([np.nan, np.inf, -np.inf])).result()
    assert (stats.count, stats.nan, stats.posinf, stats.neginf) == (0, 1, 1, 1)
    assert stats.min is None and stats.mean is None and stats.histogram is None and stats.quantiles == {}


def test_values_differing_by_rounding_alone_are_not_tukey_outliers():
    """A softmax output of the digits CNN sums to 1 within a few float32 ulps: its row sums have an IQR of 0,
    and Tukey's fences at [1, 1] would call every rounded sum an outlier. The IQR is floored at 4 ulps of
    the type at the quartiles; a real outlier is still counted."""
    import onnxruntime as ort
    from sklearn.datasets import load_digits

    session = ort.InferenceSession(str(DATA / "digits-cnn.onnx"), providers=["CPUExecutionProvider"])
    images = load_digits().images.astype(np.float32)[:, None] / 16.0
    name = session.get_inputs()[0].name
    logits = session.run(None, {name: images})[0]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    sums = (e / e.sum(axis=1, keepdims=True)).sum(axis=1, dtype=np.float32).reshape(-1, 1)
    assert sums.min() != sums.max() and np.abs(sums - 1).max() < 4 * np.spacing(np.float32(1))
    stats = TensorAccumulator("sums").update(sums).result()
    assert stats.outliers["tukey_1.5"].count_max == 0
    far = np.vstack([sums, [[1.5]]]).astype(np.float32)
    assert TensorAccumulator("sums").update(far).result().outliers["tukey_1.5"].count_min == 1


@pytest.mark.parametrize("settings, named", [
    ({"std_k": 3}, "std_k"), ({"std_k": (float("nan"),)}, "std_k"), ({"std_k": (-1.0,)}, "std_k"),
    ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"), ({"channel_axis": "1"}, "channel_axis"),
    ({"sketch_rate": True}, "sketch_rate"), ({"held": -1}, "held")])
def test_unusable_settings_are_refused_naming_them(settings, named):
    from onegraph.errors import ConfigError

    with pytest.raises(ConfigError, match=named):
        TensorAccumulator("t", **settings)


def test_batches_that_are_not_numbers_or_miscount_samples_are_refused():
    from onegraph.errors import ConfigError

    acc = TensorAccumulator("t")
    with pytest.raises(DataError, match="'t'.*dtype str"):
        acc.update(np.array(["1.5", "2"]))
    with pytest.raises(DataError, match="complex"):
        acc.update(np.array([1 + 2j]))
    with pytest.raises(ConfigError, match="samples=-1"):
        acc.update(real_matrix(), samples=-1)
    assert acc.samples == 0 and acc.count == 0  # nothing of the refused batches was counted


def test_an_empty_first_batch_does_not_fix_the_type_or_shape():
    x = real_matrix()[:8].astype(np.float16)
    acc = TensorAccumulator("t").update(np.zeros(0)).update(x)
    stats = acc.result()
    assert stats.dtype == "float16" and stats.shape == (8, 4) and stats.count == np.isfinite(x).sum()


@pytest.mark.parametrize("held", [1 << 15, 0])
def test_a_quantile_outside_zero_to_one_is_refused_whether_held_or_sketched(held):
    from onegraph.errors import ConfigError

    acc = TensorAccumulator("t", held=held).update(real_matrix())
    for q in (-0.5, 1.5, float("nan"), True):
        with pytest.raises(ConfigError, match="probability"):
            acc.quantile(q)
    finite = np.sort(real_matrix()[np.isfinite(real_matrix())].astype(np.float64))
    eps = acc.quantile_rank_error
    for q in (0.0, 0.5, 1.0):
        v = acc.quantile(q)
        assert (finite < v).mean() - eps <= q <= (finite <= v).mean() + eps


def test_merging_names_the_settings_that_differ_and_takes_only_accumulators():
    x = real_matrix()
    a = TensorAccumulator("t", bins=64).update(x[:700])
    with pytest.raises(DataError, match=r"bins 64 / 1024.*sketch_rate 1.0 / 0.5"):
        a.merge(TensorAccumulator("t", sketch_rate=0.5).update(x[700:]))
    for other in (None, a.result()):
        with pytest.raises(DataError, match="cannot merge a"):
            a.merge(other)
    with pytest.raises(DataError, match="nothing to merge"):
        merge_all([])
    # one axis written from the start and from the end: the same channels once a batch resolved both
    cube = x[:1452].reshape(-1, 4, 3)
    first, last = TensorAccumulator("c", channel_axis=1), TensorAccumulator("c", channel_axis=-2)
    merged = first.update(cube[:100]).merge(last.update(cube[100:])).result()
    assert merged.channels.count == TensorAccumulator("c").update(cube).result().channels.count


def test_zeros_of_a_relu_like_tensor_are_not_counted_as_outliers():
    """Days with more than 3 mm of rain, as ``max(precipitation - 3, 0)``: over three quarters are exactly 0, so
    Q1 = Q3 = 0 and Tukey's fences sit just around 0. The zeros (counted exactly) are inside the fences: the
    count is that of the positive values, not of every value in the histogram's bin at 0."""
    frame = pd.read_csv(DATA / "seattle-weather.csv")
    x = np.maximum(frame["precipitation"].to_numpy(np.float32) - 3.0, 0.0).reshape(-1, 1)
    stats = TensorAccumulator("relu", channel_axis=None).update(x).result()
    assert stats.quantiles[0.25] == stats.quantiles[0.75] == 0.0
    exact = int((x > 0).sum())
    for key in ("tukey_1.5", "tukey_3"):
        o = stats.outliers[key]
        assert exact == int(((x < o.low) | (x > o.high)).sum())
        assert o.count_min <= exact <= o.count_max == exact and o.count == exact, key


def test_the_rank_error_bound_is_at_most_one():
    acc = TensorAccumulator("t", sketch_rate=1 / 256).update(real_matrix()[:3])
    assert acc.quantile_rank_error <= 1.0


@pytest.mark.parametrize("rows", [100, 1461])
def test_an_accumulator_merged_into_itself_counts_its_data_twice(rows):
    """As merging an equal copy does, past the held values too (the sketch itself cannot merge itself)."""
    x = np.tile(real_matrix()[:rows], (30, 1)) if rows > 1000 else real_matrix()[:rows]
    acc = TensorAccumulator("t", held=1000).update(x)
    expected = TensorAccumulator("t", held=1000).update(x).merge(TensorAccumulator("t", held=1000).update(x)).result()
    got = acc.merge(acc).result()
    assert (got.count, got.size, got.nan, got.samples) == (expected.count, expected.size, expected.nan, 2 * len(x))
    assert got.histogram == expected.histogram and got.min == expected.min and got.max == expected.max
    assert got.mean == pytest.approx(expected.mean, rel=1e-12) and got.std == pytest.approx(expected.std, rel=1e-12)
    assert got.channels.count == expected.channels.count
    # every quantile within the stated rank error of the doubled data's (the same values, each twice; a value
    # repeated spans the ranks from its first to its last place)
    values = np.sort(x[np.isfinite(x)].astype(np.float64))
    slack = got.quantile_rank_error + 1 / len(values)
    for q, v in got.quantiles.items():
        low, high = np.searchsorted(values, v, side="left") / len(values), np.searchsorted(values, v, "right") / len(values)
        assert low - slack <= q <= high + slack


def test_a_merge_refused_for_its_channel_count_changes_nothing():
    x = real_matrix()
    acc = TensorAccumulator("t").update(x[:100])
    before = acc.result()
    with pytest.raises(DataError, match="channels"):
        acc.merge(TensorAccumulator("t").update(x[:100, :3]))
    assert acc.result() == before
