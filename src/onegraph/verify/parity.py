"""Parity: do the source objects and the graph give the same answers on the same rows?"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from onegraph.contract.tables import as_pandas
from onegraph.contract.columns import MISSING_STRING


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


def parity(pipeline: Any, model: Any, data: Any, *, onnx_model: Any = None, rtol: float = 1e-6,
           atol: float = 1e-12) -> ParityReport:
    """Run the source objects and the graph on the same rows and compare every output.

    Parameters
    ----------
    pipeline, model:
        The fitted preprocessing and model, as given to :func:`onegraph.build` (either may be None; a
        ``Pipeline`` ending in a model is split).
    data:
        The rows (any table onegraph reads).
    onnx_model:
        The graph to check (path, bytes or ModelProto); built from ``pipeline`` and ``model`` when None.
    rtol, atol:
        A number agrees when ``|graph - source| <= atol + rtol * |source|``; labels and text must be equal.

    Returns
    -------
    ParityReport
        One :class:`OutputParity` per output (classifier: label agreement and probability differences;
        regressor: prediction differences; preprocessing only: one per transformed column).
    """
    from onegraph.export.build import build, split_pipeline
    from onegraph.runtime.session import Session

    pipeline, model = split_pipeline(pipeline, model)
    frame = as_pandas(data)
    if onnx_model is None:
        onnx_model = build(pipeline, model, frame, check_parity=False)
    session = Session(onnx_model)
    got = session.run(frame)
    expected = _expected(pipeline, model, frame)
    outputs = []
    features = [o for o in session.outputs if o.get("role") == "feature"]
    for out in session.outputs:
        if out.get("role") == "check":
            continue
        column = out.get("column", out["name"])
        if out.get("role") == "feature":
            # transformed columns are compared in order: a step may not name its outputs
            column = features.index(out)
        if column not in expected:
            continue
        outputs.append(compare(out.get("column", out["name"]), got[out["name"]], expected[column], rtol=rtol,
                               atol=atol, exact=out.get("role") == "label"))
    return ParityReport(outputs, len(frame), rtol, atol)


def _expected(pipeline: Any, model: Any, frame: pd.DataFrame) -> dict[str, Any]:
    from onegraph.export.build import input_columns

    x = frame
    if pipeline is not None:
        x = pipeline.transform(frame)
    elif model is not None:
        x = frame[input_columns(None, model, frame)]
    if model is None:
        return {i: _as_graph_values(f"column {i}", c) for i, c in enumerate(_columns(x))}
    from sklearn.base import is_classifier

    if hasattr(model, "predict_proba"):
        return {"label": np.asarray(model.predict(x)), "probabilities": np.asarray(model.predict_proba(x))}
    if is_classifier(model):
        return {"label": np.asarray(model.predict(x))}
    return {"prediction": np.asarray(model.predict(x))}


def _columns(x: Any) -> list[Any]:
    if hasattr(x, "toarray"):
        x = x.toarray()
    if hasattr(x, "to_pandas") and not isinstance(x, pd.DataFrame):
        x = x.to_pandas()
    if isinstance(x, pd.DataFrame):
        return [x.iloc[:, j] for j in range(x.shape[1])]
    arr = np.asarray(x)
    return [arr[:, j] for j in range(arr.shape[1])]


def _as_graph_values(name: str, values: Any) -> np.ndarray:
    """A source output column in the graph's representation (datetimes as int64 ns, missing text as the
    marker...), so both sides are compared the same way."""
    from onegraph.errors import OnegraphError
    from onegraph.contract.columns import spec_for
    from onegraph.contract.feeds import to_feed

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


def compare(name: str, got: Any, expected: Any, *, rtol: float, atol: float, exact: bool = False) -> OutputParity:
    """Compare one output: numbers within ``atol + rtol * |expected|`` (NaN where NaN), else equality.

    ``exact``: numbers must be equal too (class labels).
    """
    got = np.asarray(got)
    expected = np.asarray(expected)
    rows = len(expected)
    if got.shape != expected.shape and got.size == expected.size:
        got = got.reshape(expected.shape)
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
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(both, 0.0, np.abs(g - e))
        diff = np.where(g_nan ^ e_nan, np.inf, diff)
        same_inf = np.isinf(g) & np.isinf(e) & (g == e)
        diff = np.where(same_inf, 0.0, diff)
        rel = np.where(diff == 0, 0.0, diff / np.maximum(np.abs(e), np.finfo(np.float64).tiny))
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
