"""Quantiles held exactly answer as DataSketches' KLL sketch does while it holds every value; past ``held``
values the sketch takes over, through merges and pickling."""

from __future__ import annotations

import pickle

import datasketches
import numpy as np
import pandas as pd
from conftest import DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from onegraph.stats.accumulators import QUANTILE_PROBS
from onegraph.stats.quantiles import Quantiles

RANKS = [0.0, *QUANTILE_PROBS, 0.3, 1.0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(-1e6, 1e6, width=32), min_size=0, max_size=30), min_size=1, max_size=6))
def test_held_values_answer_as_an_exact_kll_sketch(batches):
    """Up to k values the KLL sketch is exact: it is the reference for ranks and quantiles, ties included."""
    held, sketch = Quantiles(200, held=10_000), datasketches.kll_doubles_sketch(200)
    for b in batches:
        values = np.array(b, dtype=np.float64)
        held.update(values)
        sketch.update(values)
    assert held.n == sketch.n and not held.is_estimation_mode() and held.normalized_rank_error() == 0
    if sketch.is_empty():
        assert held.is_empty()
        return
    assert held.get_quantiles(RANKS) == list(sketch.get_quantiles(RANKS))
    for v in {*np.concatenate([np.array(b) for b in batches]).tolist(), -2e6, 0.5, 2e6}:
        for inclusive in (False, True):
            assert held.get_rank(v, inclusive) == sketch.get_rank(v, inclusive), (v, inclusive)


def weather() -> np.ndarray:
    frame = pd.read_csv(DATA / "seattle-weather.csv")  # 1,461 days x 4 real columns
    return frame[["precipitation", "temp_max", "temp_min", "wind"]].to_numpy(np.float64).reshape(-1)


def within_bound(q: Quantiles, values: np.ndarray) -> None:
    eps = q.normalized_rank_error()
    for r, v in zip(QUANTILE_PROBS, q.get_quantiles(QUANTILE_PROBS)):
        assert (values < v).mean() - eps <= r <= (values <= v).mean() + eps, (r, v)


def test_past_held_values_the_sketch_takes_over_through_merges_and_pickles():
    x = weather()
    parts = np.array_split(x, 5)
    small = [Quantiles(200, held=2_000) for _ in parts]
    for q, part in zip(small, parts):
        q.update(part[:600])
        q.update(part[600:])
    assert not any(q.is_estimation_mode() for q in small)  # 1,169 values each: held
    copies = [pickle.loads(pickle.dumps(q)) for q in small]
    assert [c.get_quantiles(QUANTILE_PROBS) for c in copies] == [q.get_quantiles(QUANTILE_PROBS) for q in small]
    merged = copies[0]
    for other in copies[1:]:
        merged.merge(other)  # 5,844 values: past held -> a sketch fed the held values
    assert merged.n == len(x) and merged.is_estimation_mode() and 0 < merged.normalized_rank_error() < 0.02
    within_bound(merged, x)
    again = pickle.loads(pickle.dumps(merged))
    assert again.get_quantiles(QUANTILE_PROBS) == merged.get_quantiles(QUANTILE_PROBS)
    exact = Quantiles(200, held=0)
    exact.update(x[:10])
    exact.merge(small[1])  # a sketch merging held values
    assert exact.n == 10 + small[1].n


def test_exact_quantiles_equal_numpy_order_statistics():
    x = weather()
    q = Quantiles(200, held=len(x))
    q.update(x)
    s = np.sort(x)
    assert q.get_quantiles(QUANTILE_PROBS) == [s[min(int(r * len(s)), len(s) - 1)] for r in QUANTILE_PROBS]
    assert q.get_rank(s[100]) == (x < s[100]).mean() and q.get_rank(s[100], True) == (x <= s[100]).mean()
    np.testing.assert_array_equal(q._values(), x)  # answering leaves the held values as they were
