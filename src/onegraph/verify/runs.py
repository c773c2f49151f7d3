"""Running a model on feeds in onnxruntime, and comparing two runs output by output."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from onegraph.errors import RuntimeFailure
from onegraph.runtime.arrays import check_array_feeds
from onegraph.verify.parity import OutputParity, compare

__all__ = ["LEVELS", "session", "run", "as_array", "Agreement", "agreement"]

#: onnxruntime graph optimization levels by the names the CLI uses.
LEVELS = {
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def session(model: onnx.ModelProto | bytes, *, level: str = "all", what: str = "the model",
            optimized_path: str | None = None) -> ort.InferenceSession:
    """An onnxruntime CPU session, or :class:`RuntimeFailure` naming ``what`` could not be opened."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = LEVELS[level]
    if optimized_path:
        options.optimized_model_filepath = optimized_path
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    try:
        return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's own exception types
        raise RuntimeFailure(f"onnxruntime cannot open {what}: {str(exc).strip()[:600]}") from None


def run(model: onnx.ModelProto | bytes, feeds: dict[str, np.ndarray], *, level: str = "all",
        what: str = "the model") -> dict[str, Any]:
    """Every graph output of ``model`` on ``feeds``, by name (onnxruntime, CPU)."""
    sess = session(model, level=level, what=what)
    names = [o.name for o in sess.get_outputs()]
    wanted = {i.name for i in sess.get_inputs()}
    check_array_feeds(sess.get_inputs(), feeds, what,
                      missing_hint="compare models that take the same inputs, with data naming each of them")
    try:
        values = sess.run(names, {k: v for k, v in feeds.items() if k in wanted})
    except Exception as exc:  # onnxruntime's own exception types
        raise RuntimeFailure(f"onnxruntime failed to run {what}: {str(exc).strip()[:600]}") from None
    return dict(zip(names, values))


def as_array(value: Any) -> np.ndarray:
    """An output as an array: a sequence of maps (ZipMap) becomes a matrix, keys in sorted order."""
    if isinstance(value, list) and value and isinstance(value[0], dict):
        keys = sorted(value[0])
        return np.array([[row[k] for k in keys] for row in value], dtype=np.float64)
    if isinstance(value, list):
        return np.array(value, dtype=object)
    return np.asarray(value)


@dataclasses.dataclass
class Agreement:
    """How two runs of (versions of) a model agree, output by output."""

    outputs: list[OutputParity]
    rtol: float
    atol: float
    missing: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.outputs) and not self.missing and all(o.ok for o in self.outputs)

    def rows(self) -> list[dict]:
        return [dataclasses.asdict(o) for o in self.outputs]


def agreement(expected: dict[str, Any], got: dict[str, Any], *, rtol: float, atol: float) -> Agreement:
    """Compare ``got`` with ``expected`` for every output of ``expected`` (numbers within
    ``atol + rtol * |expected|``, NaN where NaN; integers, booleans and strings equal)."""
    outputs, missing = [], []
    for name, value in expected.items():
        if name not in got:
            missing.append(name)
            continue
        e, g = np.atleast_1d(as_array(value)), np.atleast_1d(as_array(got[name]))
        exact = e.dtype.kind in "iub" and g.dtype.kind in "iub"
        if e.dtype.kind in "fc" or g.dtype.kind in "fc":
            e, g = _float64(e), _float64(g)
        outputs.append(compare(name, g, e, rtol=rtol, atol=atol, exact=exact))
    return Agreement(outputs, rtol, atol, missing)


def _float64(a: np.ndarray) -> np.ndarray:
    try:
        return a.astype(np.float64)
    except (TypeError, ValueError):
        return a
