"""The quantiles of one tensor: its values held exactly while they are few, a KLL sketch once they are many.

A KLL sketch (Karnin, Lang & Liberty 2016; Apache DataSketches' ``kll_doubles_sketch``) costs about 40 ns per
value it takes and ~5 ms to import. A short calibration samples a few thousand to a few tens of thousands of
values per tensor: :class:`Quantiles` keeps them as they are, up to ``held`` values, and answers from them
exactly. Past ``held`` values they go into a sketch in one chunk, and later values into the sketch.

The answers follow DataSketches' conventions (its default, exclusive ranks), so that a summary answers the
same whether it holds the values or a sketch that still holds every value (``n <= k``):

* ``get_quantile(q)`` is the ``floor(q * n)``-th smallest value (0-based; the largest for ``q = 1``), the
  smallest value ``v`` with at least ``q * n`` values below it;
* ``get_rank(v, inclusive)`` is the fraction of values ``< v`` (``<= v`` when inclusive).

Memory: at most ``held`` float64 values, then the sketch's (O(k log(n / k)) doubles).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from onegraph.errors import ConfigError, DataError, whole_number

__all__ = ["Quantiles", "sketch_parameter"]


def sketch_parameter(name: str, k: object) -> int:
    """``k`` as the parameter of a KLL sketch, a whole number from 8 to 65535 (DataSketches' own bounds, which it
    states naming no parameter); :class:`~onegraph.errors.ConfigError` naming ``name`` otherwise."""
    hint = f"give {name} from 8 to 65535, e.g. 200"
    k = whole_number(name, k, 8, hint=hint)
    if k > 65535:
        raise ConfigError(f"{name}={k} is more than 65535, the largest k of the KLL sketch", hint=hint)
    return k


class Quantiles:
    """Quantile summary of a stream of float64 values (see the module docstring).

    Parameters
    ----------
    k:
        Parameter of the KLL sketch used past ``held`` values (8 to 65535).
    held:
        Values kept exactly before the sketch takes over.
    """

    def __init__(self, k: int, held: int) -> None:
        self.k = sketch_parameter("k", k)
        self.held = int(held)
        self._parts: list[np.ndarray] = []
        self._count = 0
        self._sketch = None  # datasketches.kll_doubles_sketch once past ``held`` values

    # -- updating ---------------------------------------------------------------------------------
    def update(self, values: np.ndarray) -> None:
        """Add ``values``: 1-D, finite (NaN has no rank: leave it out, as :class:`TensorAccumulator` does), read
        as float64; copied when held."""
        if self._sketch is None and self._count + len(values) <= self.held:
            if len(values):
                self._parts.append(np.array(values, dtype=np.float64))
                self._count += len(values)
            return
        self._to_sketch()
        # datasketches takes C-contiguous, writable float64 arrays only
        self._sketch.update(np.require(values, np.float64, ["C", "W"]))

    def merge(self, other: Quantiles) -> None:
        """Add every value ``other`` summarizes (held values exactly, a sketch by DataSketches' merge).

        Raises :class:`~onegraph.errors.DataError` for summaries of different ``k``."""
        if other.k != self.k:
            raise DataError(f"cannot merge quantile summaries of different k ({self.k} and {other.k})",
                            hint="summarize every part with the same k")
        if self._sketch is None and other._sketch is None and self._count + other._count <= self.held:
            self._parts.extend(other._parts)
            self._count += other._count
            return
        self._to_sketch()
        if other._sketch is not None:
            self._sketch.merge(other._sketch)
        else:
            for part in other._parts:
                self._sketch.update(part)

    def _to_sketch(self) -> None:
        if self._sketch is None:
            import datasketches

            self._sketch = datasketches.kll_doubles_sketch(self.k)
            if self._parts:
                self._sketch.update(self._values())
            self._parts, self._count = [], 0

    def _values(self) -> np.ndarray:
        if len(self._parts) != 1:
            self._parts = [np.concatenate(self._parts) if self._parts else np.zeros(0)]
        return self._parts[0]

    # -- results ----------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of values summarized."""
        return int(self._sketch.n) if self._sketch is not None else self._count

    def is_empty(self) -> bool:
        return self.n == 0

    def is_estimation_mode(self) -> bool:
        """Whether the answers are estimates (a sketch that no longer holds every value)."""
        return self._sketch is not None and self._sketch.is_estimation_mode()

    def normalized_rank_error(self) -> float:
        """The sketch's rank error bound for single quantiles (99% confidence); 0 while values are held."""
        return float(self._sketch.normalized_rank_error(False)) if self.is_estimation_mode() else 0.0

    def get_quantiles(self, ranks: Sequence[float]) -> list[float]:
        """The values at normalized ``ranks`` (each in [0, 1]); raises ``ValueError`` when empty and
        :class:`~onegraph.errors.ConfigError` for a rank outside [0, 1]."""
        for r in ranks:
            if not 0 <= r <= 1:  # NaN too
                raise ConfigError(f"rank {r!r} is not in [0, 1]", hint="give normalized ranks, e.g. 0.5 for the median")
        if self._sketch is not None:
            return [float(v) for v in self._sketch.get_quantiles(list(ranks))]
        values = self._values()
        n = len(values)
        if n == 0:
            raise ValueError("no quantile of an empty summary")
        # DataSketches' exclusive rank: the first value whose cumulative count exceeds rank * n
        ordered = np.sort(values)  # a copy (the held values keep their order); numpy's vectorized sort beats
        # a partition at the 11 ranks by 4x
        return [float(ordered[min(int(r * n), n - 1)]) for r in ranks]

    def get_quantile(self, rank: float) -> float:
        return self.get_quantiles([rank])[0]

    def get_rank(self, value: float, inclusive: bool = False) -> float:
        """Fraction of the values ``< value`` (``<= value`` when ``inclusive``)."""
        if self._sketch is not None:
            return float(self._sketch.get_rank(value, inclusive))
        values = self._values()
        below = np.count_nonzero(values <= value if inclusive else values < value)
        return below / len(values) if len(values) else float("nan")

    # -- state for transport ----------------------------------------------------------------------
    def __getstate__(self) -> dict:
        return {"k": self.k, "held": self.held, "values": self._values() if self._sketch is None else None,
                "sketch": None if self._sketch is None else self._sketch.serialize()}

    def __setstate__(self, state: dict) -> None:
        self.k, self.held = state["k"], state["held"]
        self._sketch = None
        if state["sketch"] is not None:
            import datasketches

            self._sketch = datasketches.kll_doubles_sketch.deserialize(state["sketch"])
        values = state["values"]
        self._parts = [] if values is None or not len(values) else [np.asarray(values, dtype=np.float64)]
        self._count = sum(len(p) for p in self._parts)
