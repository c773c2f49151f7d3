"""Parity: does a graph give the expected answers on the same rows? Output by output, labels and text exactly,
numbers within a stated tolerance (:func:`outputs_parity`, :func:`compare`).

The expected values come from elsewhere, computed independently: :func:`onegraph.parity` computes them with
the source scikit-learn objects (:mod:`onegraph.export.parity`), compose and merge with the source libraries
and chained sessions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from onegraph.contract.columns import MISSING_STRING

__all__ = ["OutputParity", "ParityReport", "outputs_parity", "compare", "check_tolerances", "as_graph_values",
           "parity_batch_rows", "PARITY_BATCH_BYTES"]


@dataclasses.dataclass
class OutputParity:
    """How one output of the graph compares with the source objects' on the same rows.

    ``max_abs`` / ``max_rel`` for numbers (NaN where only one side is NaN counts as infinite);
    ``agreement``: fraction of identical values for labels and text.
    """

    name: str
    rows: int
    max_abs: float | None = None
    max_rel: float | None = None
    agreement: float | None = None
    ok: bool = True

    def __str__(self) -> str:
        parts = [f"{self.name:<28}"]
        if self.agreement is not None:
            parts.append(f"agreement {self.agreement:8.2%}")
        if self.max_abs is not None:
            parts.append(f"max abs diff {self.max_abs:9.2e}  max rel diff {self.max_rel:9.2e}")
        parts.append("ok" if self.ok else "DIVERGES")
        return "  ".join(parts)


@dataclasses.dataclass
class ParityReport:
    """Per-output comparison of the graph (onnxruntime) with the source pipeline (Python)."""

    outputs: list[OutputParity]
    rows: int
    rtol: float
    atol: float

    @property
    def ok(self) -> bool:
        """True when every output agrees, and at least one output was compared."""
        return bool(self.outputs) and all(o.ok for o in self.outputs)

    @property
    def failed(self) -> list[str]:
        if not self.outputs:
            return ["(no output could be compared)"]
        return [o.name for o in self.outputs if not o.ok]

    def __str__(self) -> str:
        head = f"parity on {self.rows} rows (rtol {self.rtol:g}, atol {self.atol:g}):"
        return "\n".join([head] + [f"  {o}" for o in self.outputs])


#: bytes a parity run's widest intermediate value may take per onnxruntime call (see parity_batch_rows)
PARITY_BATCH_BYTES = 16 << 20


def parity_batch_rows(model: Any) -> int:
    """Rows per onnxruntime call when checking ``model`` (a ``ModelProto``; anything else: the session's
    default): a graph with a wide intermediate value (a one-hot block of 200,000 categories is 1.6 MB a row
    in double, as dense as the graph computes it) is run on batches whose widest value takes about
    :data:`PARITY_BATCH_BYTES`, so the check costs memory linear in the width, whatever the sample's rows.
    The width is the largest static second dimension of the graph's typed values, or its number of outputs."""
    graph = getattr(model, "graph", None)
    if graph is None:
        return 65536
    widest = len(graph.output)
    for info in (*graph.value_info, *graph.output):
        dims = info.type.tensor_type.shape.dim
        if len(dims) == 2 and dims[1].HasField("dim_value"):
            widest = max(widest, dims[1].dim_value)
    return int(max(1, min(65536, PARITY_BATCH_BYTES // (8 * max(widest, 1)))))


def outputs_parity(model: Any, data: Any, expected: Mapping[Any, Any], *, rtol: float = 1e-6,
                   atol: float = 1e-12) -> ParityReport:
    """Run ``model`` (in onnxruntime) on ``data`` and compare each output with its expected values.

    Parameters
    ----------
    model:
        A model onegraph made (path, bytes or ``onnx.ModelProto``): its metadata names each output's column
        and role.
    data:
        The rows (any table onegraph reads).
    expected:
        Output column (``label``, ``probabilities``, ``rf.prediction``...) -> values computed independently
        (the source library, numpy); transformed columns (role ``feature``) may instead be keyed by their
        position among the model's feature outputs (a step may not name its outputs). Outputs without an
        expected value are not compared.
    rtol, atol:
        A number agrees when ``|graph - expected| <= atol + rtol * |expected|``; labels and text must be equal.

    Returns
    -------
    ParityReport
        One :class:`OutputParity` per compared output.
    """
    from onegraph.runtime.session import Session

    session = Session(model, batch_size=parity_batch_rows(model))
    got = session.run(data, unsettled=True)
    # rows a check marks unsettled (scikit-learn's own answer there is arbitrary) are refused at scoring:
    # they are not compared
    unsettled = [got[o["name"]].reshape(-1) for o in session.outputs if o.get("role") == "check"
                 and o.get("unsettled") and o["name"] in got]
    keep = ~np.logical_or.reduce(unsettled) if unsettled else None
    features = [o for o in session.outputs if o.get("role") == "feature"]
    results = []
    for out in session.outputs:
        role = out.get("role")
        column = out.get("column", out["name"])
        key = features.index(out) if role == "feature" and features.index(out) in expected else column
        if role == "check" or key not in expected:
            continue
        values, wanted = got[out["name"]], expected[key]
        if keep is not None and not keep.all():
            values, wanted = np.asarray(values)[keep], np.asarray(wanted)[keep]
        results.append(compare(column, values, wanted, rtol=rtol, atol=atol, exact=role in ("label", "top_labels")))
    return ParityReport(results, len(next(iter(got.values()))) if got else 0, rtol, atol)


def as_graph_values(name: str, values: Any) -> np.ndarray:
    """A source output column in the graph's representation (datetimes as int64 ns, missing text as the
    marker...), so both sides are compared the same way."""
    from onegraph.contract.columns import spec_for
    from onegraph.contract.feeds import to_feed
    from onegraph.errors import OnegraphError

    try:
        return to_feed(spec_for(name, values), values)
    except OnegraphError:
        return np.asarray(values, dtype=object)


def _is_missing(values: np.ndarray) -> np.ndarray:
    if values.dtype != object:
        return np.asarray(pd.isna(values), dtype=bool)
    return np.asarray([v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v)
                       or (isinstance(v, str) and v == MISSING_STRING) for v in values.ravel()],
                      dtype=bool).reshape(values.shape)


def check_tolerances(**tolerances: float | None) -> None:
    """Raise :class:`~onegraph.errors.ConfigError` for a tolerance (``rtol=...``, ``atol=...``; None: the
    default, skipped) that is negative or not finite: ``diff <= atol + rtol * |expected|`` is then false for
    every difference (NaN) or for none, and a report would say identical outputs diverge."""
    import math

    from onegraph.errors import ConfigError

    for name, value in tolerances.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"{name} {value!r} is not a tolerance: give a finite number >= 0",
                              hint=f"e.g. --{name.replace('_', '-')} 1e-5 ({name}=1e-5 in Python)")


def compare(name: str, got: Any, expected: Any, *, rtol: float, atol: float, exact: bool = False) -> OutputParity:
    """Compare one output: numbers within ``atol + rtol * |expected|`` (NaN where NaN), else equality.

    ``exact``: numbers must be equal too (class labels).
    """
    got = np.asarray(got)
    expected = np.asarray(expected)
    rows = len(expected)
    if got.shape != expected.shape and got.size == expected.size and got.shape[:1] == expected.shape[:1]:
        got = got.reshape(expected.shape)  # [N, 1] for [N]; not [2N] for [N, 2], which pairs no row
    if got.shape != expected.shape:
        return OutputParity(name, rows, agreement=0.0, ok=False)
    if exact and (got.dtype.kind == "b") != (expected.dtype.kind == "b"):
        # 1 == True in numpy: a label of another type must not pass for the same label
        return OutputParity(name, rows, agreement=0.0, ok=False)
    numeric = got.dtype.kind in "fiub" and (expected.dtype.kind in "fiub" or _numeric_object(expected))
    if not numeric:
        g_miss, e_miss = _is_missing(got), _is_missing(expected)
        same = (g_miss & e_miss) | (~g_miss & ~e_miss & (got.astype(str) == expected.astype(str)))
        agreement = float(same.mean()) if same.size else 1.0
        return OutputParity(name, rows, agreement=agreement, ok=bool(same.all()))
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    g_nan, e_nan = np.isnan(g), np.isnan(e)
    both = g_nan & e_nan
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.where(both, 0.0, np.abs(g - e))
        diff = np.where(g_nan ^ e_nan, np.inf, diff)
        same_inf = np.isinf(g) & np.isinf(e) & (g == e)
        diff = np.where(same_inf, 0.0, diff)
        rel = np.where(diff == 0, 0.0, diff / np.abs(e))  # a difference from an expected 0: infinitely relative
        ok = bool(np.all(diff <= atol + rtol * np.where(np.isfinite(e), np.abs(e), 0.0)))
    result = OutputParity(name, rows, max_abs=float(diff.max()) if diff.size else 0.0,
                          max_rel=float(rel.max()) if rel.size else 0.0, ok=ok)
    if exact or (got.dtype.kind in "iub" and expected.dtype.kind in "iub"):
        same = (g == e) | both
        result.agreement = float(same.mean()) if same.size else 1.0
        result.ok = result.ok and (not exact or bool(same.all()))
    return result


def _numeric_object(values: np.ndarray) -> bool:
    if values.dtype != object:
        return False
    return all(isinstance(v, (int, float, np.number, bool, np.bool_)) or v is None for v in values.ravel()[:100])
