"""Bernoulli sampling of a stream of values, for the quantile sketch, without ``numpy.random``.

Importing ``numpy.random`` costs 6-7 ms (every bit generator and the legacy ``RandomState``), as much as the
statistics of a 20-batch calibration; the words a sample needs come instead from SplitMix64 (Steele, Lea &
Flood 2014, "Fast splittable pseudorandom number generators", OOPSLA; the output function of Vigna's
``splitmix64.c``), whose outputs pass BigCrush: its ``i``-th word is a fixed mix of ``state + i * golden``, so a
block of words is a few vectorized passes of numpy's wrapping ``uint64`` arithmetic (as fast as numpy's own raw
words).
"""

from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["Words", "bernoulli_indices"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_MASK = (1 << 64) - 1


class Words:
    """A stream of pseudo-random 64-bit words (SplitMix64), seeded with ``seed`` (an int >= 0; None: 8 bytes
    of ``os.urandom``)."""

    __slots__ = ("_state",)

    def __init__(self, seed: int | None = None) -> None:
        self._state = (int.from_bytes(os.urandom(8), "little") if seed is None else seed) & _MASK

    def next(self, n: int) -> np.ndarray:
        """The next ``n`` words, ``uint64 [n]``."""
        z = np.arange(1, n + 1, dtype=np.uint64)
        z *= _GOLDEN  # wraps modulo 2**64, as SplitMix64 does
        z += np.uint64(self._state)
        self._state = (self._state + n * int(_GOLDEN)) & _MASK
        z ^= z >> np.uint64(30)
        z *= _MIX1
        z ^= z >> np.uint64(27)
        z *= _MIX2
        z ^= z >> np.uint64(31)
        return z


def bernoulli_indices(words: Words, n: int, p: float) -> np.ndarray:
    """Indices (int64, ascending) of the ``n`` Bernoulli(p) trials that succeed, ``p`` a power of two down to
    1/256.

    For p >= 1/8, a random byte per trial, kept when its low ``log2(1 / p)`` bits are 0 (probability p
    exactly). Below, only the about ``n p`` kept indices are drawn (a random number per value would cost more
    than the sketch saves): the gaps between successes are geometric, ``floor(E / -ln(1 - p)) + 1`` for a
    standard exponential ``E = -ln U``, ``U`` uniform on (0, 1] from a word's top 53 bits
    (``P(gap > k) = (1 - p)**k``)."""
    if p >= 1 / 8:
        draws = words.next(-(-n // 8)).view(np.uint8)[:n]
        return np.flatnonzero((draws & (round(1 / p) - 1)) == 0)
    expected = n * p
    rate = -math.log1p(-p)

    def gaps(size: int) -> np.ndarray:
        u = (words.next(size) >> np.uint64(11)).astype(np.float64)
        u += 1.0
        u *= 2.0 ** -53  # (0, 1]: log is finite
        gap = np.log(u)
        gap /= -rate
        return gap.astype(np.int64) + 1  # truncation is the floor of these positive values

    index = np.cumsum(gaps(int(expected + 6 * math.sqrt(expected) + 16))) - 1
    while index[-1] < n - 1:  # rare: more successes than 6 standard deviations above the mean
        index = np.concatenate([index, index[-1] + np.cumsum(gaps(len(index)))])
    return index[: np.searchsorted(index, n)]
