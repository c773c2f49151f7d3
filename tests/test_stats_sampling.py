"""The sketch's Bernoulli sampler: SplitMix64 words as Vigna's reference computes them, and samples whose size
and spread are those of Bernoulli trials."""

from __future__ import annotations

import numpy as np
import pytest

from onegraph.stats.sampling import Words, bernoulli_indices

_MASK = (1 << 64) - 1


def _splitmix64(state: int, n: int) -> list[int]:
    """Vigna's splitmix64.c, one word at a time in Python integers."""
    out = []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        out.append(z ^ (z >> 31))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2**63 + 12345, 2**64 - 1])
def test_words_are_splitmix64s_whatever_the_blocks(seed):
    words = Words(seed)
    got = [w for size in (1, 7, 64, 3) for w in words.next(size).tolist()]
    assert got == _splitmix64(seed, 75)


@pytest.mark.parametrize("p", [1.0, 1 / 2, 1 / 8, 1 / 16, 1 / 64, 1 / 256])
def test_bernoulli_samples_have_the_size_and_spread_of_independent_trials(p):
    """Over 2M trials: the count within 5 standard deviations of n p, the successes spread evenly over 16
    equal stretches (chi-square with 15 degrees of freedom below 45, p-value ~1e-4), indices strictly
    increasing within range; gaps of a rate below 1/8 geometric (mean 1/p within 5 standard errors)."""
    n = 2_000_000
    index = bernoulli_indices(Words(7), n, p)
    k = len(index)
    assert abs(k - n * p) <= 5 * np.sqrt(n * p * (1 - p)) + 1e-9
    assert np.all(np.diff(index) > 0) and index[0] >= 0 and index[-1] < n
    counts = np.bincount(index * 16 // n, minlength=16)
    assert ((counts - k / 16) ** 2 / (k / 16)).sum() < 45
    if p < 1 / 8:
        gaps = np.diff(index)
        assert abs(gaps.mean() - 1 / p) <= 5 * np.sqrt((1 - p) / p**2 / len(gaps))


def test_unseeded_streams_differ():
    assert Words().next(4).tolist() != Words().next(4).tolist()
