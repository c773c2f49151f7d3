"""Does a runtime compute what the spec says? Every intermediate tensor compared, first divergence named.

``onegraph compare MODEL [--data DATA] [--against reference|ort-basic|ort-all|OTHER.onnx]``:

* ``reference`` (default): onnxruntime (all optimizations) against onnx's ``ReferenceEvaluator``, the
  executable form of the operator specification. Every typed node output is exposed as a graph output for
  onnxruntime (which keeps it from fusing across those tensors: each node is checked against its spec), and
  the reference evaluator returns every intermediate tensor itself.
* ``ort-basic`` / ``ort-all``: onnxruntime with graph optimizations disabled against the same runtime at
  the basic / all level. Exposing a tensor keeps onnxruntime from fusing it away, so only the tensors that
  survive the optimizations (read from the optimized model onnxruntime writes) are exposed and compared;
  the fused kernels are then compared at their boundaries.
* a path to another ``.onnx`` file: both models in onnxruntime, tensors with the same names compared (the
  original and a converted model, or a model and an edited copy).

Model-local functions are inlined first (:mod:`onegraph.verify.intermediates`): the nodes of a function body
are compared one by one, named with the call-site node's name as prefix. Nodes are walked in topological
order and the first one with an output beyond tolerance is named, with its operator, the statistics of its
inputs (as the first side computed them) and the difference; later divergences are listed too.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from onegraph.check.loader import load_model
from onegraph.errors import ConfigError, OnegraphError
from onegraph.verify.feeds import model_feeds
from onegraph.verify.intermediates import expose, inlined, with_types
from onegraph.verify.lowprec import reference_run
from onegraph.verify.parity import check_tolerances
from onegraph.verify.runs import as_array, run, session

__all__ = ["AGAINST", "TensorStats", "Divergence", "CompareReport", "compare_runtimes"]

AGAINST = ("reference", "ort-basic", "ort-all")


@dataclasses.dataclass
class TensorStats:
    """Summary of one tensor: shape, dtype, min / max / mean / std of its finite values, NaN and inf counts."""

    name: str
    shape: list[int]
    dtype: str
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    nan: int = 0
    inf: int = 0

    @classmethod
    def of(cls, name: str, value: Any) -> TensorStats:
        a = as_array(value)
        s = cls(name, list(a.shape), str(a.dtype))
        if a.dtype.kind in "fiub" or a.dtype.name == "bfloat16":
            f = a.astype(np.float64)
            s.nan, s.inf = int(np.isnan(f).sum()), int(np.isinf(f).sum())
            finite = f[np.isfinite(f)]
            if finite.size:
                s.min, s.max = float(finite.min()), float(finite.max())
                s.mean, s.std = float(finite.mean()), float(finite.std())
        return s

    def __str__(self) -> str:
        head = f"{self.name} {self.dtype}{self.shape}"
        if self.min is None:
            return head + (f" (nan {self.nan}, inf {self.inf})" if self.nan or self.inf else "")
        extra = f", nan {self.nan}" if self.nan else ""
        extra += f", inf {self.inf}" if self.inf else ""
        return (f"{head} min {self.min:.4g} max {self.max:.4g} mean {self.mean:.4g} std {self.std:.4g}{extra}")


@dataclasses.dataclass
class Divergence:
    """One node whose output differs between the two sides beyond tolerance (``max_rel``: the largest
    difference over the tensor's largest magnitude)."""

    node: str
    op_type: str
    output: str
    max_abs: float
    max_rel: float
    inputs: list[TensorStats] = dataclasses.field(default_factory=list)
    first_side: TensorStats | None = None
    second_side: TensorStats | None = None


@dataclasses.dataclass
class CompareReport:
    """Result of :func:`compare_runtimes`."""

    sides: tuple[str, str]
    compared: int
    nodes: int
    divergences: list[Divergence]
    rtol: float
    atol: float
    inputs: str = ""
    skipped: list[str] = dataclasses.field(default_factory=list)
    #: whether the graph outputs agree (None when no graph output was compared)
    outputs_agree: bool | None = None

    @property
    def ok(self) -> bool:
        return not self.divergences

    @property
    def first(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self) | {"ok": self.ok}

    def __str__(self) -> str:
        a, b = self.sides
        lines = [f"compared {self.compared} tensors of {self.nodes} nodes: {a} vs {b} on {self.inputs} "
                 f"(rtol {self.rtol:g}, atol {self.atol:g})"]
        if self.ok:
            lines.append("no divergence")
            return "\n".join(lines)
        d = self.first
        lines.append(f"first divergence: node {d.node!r} ({d.op_type}), output {d.output!r}: "
                     f"max abs diff {d.max_abs:.4g}, max rel diff {d.max_rel:.4g}")
        for s in d.inputs:
            lines.append(f"  input  {s}")
        lines.append(f"  {a:<10} {d.first_side}")
        lines.append(f"  {b:<10} {d.second_side}")
        if len(self.divergences) > 1:
            later = ", ".join(f"{x.node} ({x.op_type})" for x in self.divergences[1:6])
            more = f" and {len(self.divergences) - 6} more" if len(self.divergences) > 6 else ""
            lines.append(f"then {len(self.divergences) - 1} more node(s) diverge: {later}{more}")
        if self.outputs_agree is not None:
            lines.append("the model's outputs agree: the divergence does not reach them" if self.outputs_agree
                         else "the model's outputs differ too")
        return "\n".join(lines)


def compare_runtimes(model: Any, data: Any = None, *, against: str = "reference", rows: int = 16,
                     rtol: float = 1e-4, atol: float = 1e-5) -> CompareReport:
    """Run ``model`` two ways on the same inputs and name the first node where they diverge.

    Parameters
    ----------
    model:
        Path, bytes or ``onnx.ModelProto``.
    data:
        Inputs (see :func:`onegraph.verify.feeds.model_feeds`); None generates them.
    against:
        ``reference``, ``ort-basic``, ``ort-all``, or a path to another model (see the module doc).
    rtol, atol:
        A float tensor agrees when every element is within ``atol + rtol * max |tensor|`` (the tolerance
        scales with the tensor's magnitude, so cancellation near zero in one element does not count as a
        divergence; float16 / bfloat16 tensors use at least 1e-2 for both); integer, boolean and string
        tensors must be equal. The reported relative difference is ``max |a - b| / max |b|``.

    Returns
    -------
    CompareReport

    rows:
        Rows to generate, or the most rows taken from ``data`` (at least 1).

    Raises
    ------
    OnegraphError
        for an unknown ``against``, or when nothing could be compared; ConfigError for ``rows`` < 1;
        DataError for data without rows; RuntimeFailure when a runtime cannot run the model (naming the
        node for the reference evaluator).
    """
    if rows < 1:
        raise ConfigError(f"rows must be at least 1 (got {rows})", hint="compare needs rows to run")
    check_tolerances(rtol=rtol, atol=atol)
    original = load_model(model)
    feeds = model_feeds(original, data, rows=rows)  # refuses data without rows
    flat = with_types(inlined(original))
    if against == "reference":
        exposed, _ = expose(flat)
        first = run(exposed, feeds, level="all", what="the model (onnxruntime)")
        second = reference_run(flat, feeds, intermediate=True)
        sides = ("onnxruntime", "reference")
    elif against in ("ort-basic", "ort-all"):
        level = against.split("-")[1]
        exposed, _ = expose(flat, _surviving(flat, level))
        first = run(exposed, feeds, level="disabled", what="the model (no optimization)")
        second = run(exposed, feeds, level=level, what=f"the model ({level} optimizations)")
        sides = ("ort-none", against)
    elif Path(against).suffix == ".onnx" or os.path.exists(against):
        other = with_types(inlined(load_model(against)))
        first = run(expose(flat)[0], feeds, what="the model")
        second = run(expose(other)[0], feeds, what=f"model {against}")
        sides = ("model", Path(against).name)
    else:
        raise OnegraphError(f"unknown --against {against!r}",
                            hint="use reference, ort-basic, ort-all or the path of another .onnx model")
    n = next((len(v) for v in feeds.values() if np.ndim(v)), 1)
    report = CompareReport(sides, 0, len(flat.graph.node), [], rtol, atol,
                           inputs=f"{n} rows of data" if data is not None else f"generated inputs ({n} rows, seed 0)")
    known = dict(feeds)
    known.update({t.name: onnx.numpy_helper.to_array(t) for t in flat.graph.initializer})
    known.update(first)
    for node in flat.graph.node:
        for name in node.output:
            if not name or name not in first or name not in second:
                continue
            report.compared += 1
            diff = _difference(first[name], second[name], rtol, atol)
            if diff is None:
                continue
            report.divergences.append(Divergence(
                node.name or f"({node.op_type} producing {name})", node.op_type, name, diff[0], diff[1],
                [TensorStats.of(i, known[i]) for i in node.input if i and i in known],
                TensorStats.of(name, first[name]), TensorStats.of(name, second[name])))
            break
    if not report.compared:
        raise OnegraphError(f"no tensor of the model was computed by both {sides[0]} and {sides[1]}: "
                            "nothing to compare", hint="check that the model has typed outputs")
    compared = [o.name for o in flat.graph.output if o.name in first and o.name in second]
    if compared:
        report.outputs_agree = all(_difference(first[o], second[o], rtol, atol) is None for o in compared)
    return report


def _surviving(model: onnx.ModelProto, level: str) -> set[str]:
    """Tensor names of ``model`` still present after onnxruntime's optimizations at ``level``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "optimized.onnx")
        session(model, level=level, optimized_path=path, what="the model")
        optimized = onnx.load(path, load_external_data=False)
    return {o for n in optimized.graph.node for o in n.output} | {o.name for o in optimized.graph.output}


def _difference(a: Any, b: Any, rtol: float, atol: float) -> tuple[float, float] | None:
    """(max abs, max rel) difference when ``a`` and ``b`` differ beyond tolerance, else None."""
    x, y = as_array(a), as_array(b)
    if x.shape != y.shape:
        return float("inf"), float("inf")
    low = {x.dtype.name, y.dtype.name} & {"float16", "bfloat16"}
    if low:
        rtol, atol = max(rtol, 1e-2), max(atol, 1e-2)
    if x.dtype.kind in "fc" or y.dtype.kind in "fc" or low:
        xf, yf = x.astype(np.float64), y.astype(np.float64)
        finite = np.isfinite(yf)
        scale = float(np.abs(yf[finite]).max()) if finite.any() else 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            same = (xf == yf) | (np.isnan(xf) & np.isnan(yf)) | (np.abs(xf - yf) <= atol + rtol * scale)
            if same.all():
                return None
            d = np.where(same, 0.0, np.abs(xf - yf))
            d = np.where(np.isnan(d), np.inf, d)
            return float(d.max()), float(d.max() / max(scale, np.finfo(np.float64).tiny))
    if x.dtype.kind in "iub" and y.dtype.kind in "iub":
        if np.array_equal(x, y):
            return None
        d = np.abs(x.astype(np.float64) - y.astype(np.float64))
        return float(d.max()), float((d / np.maximum(np.abs(y.astype(np.float64)), 1)).max())
    if np.array_equal(x.astype(str), y.astype(str)):
        return None
    return float("inf"), float("inf")
