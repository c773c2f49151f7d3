"""Tensor statistics carried by the model, and the passes that write, read and strip them.

Where they live
---------------
* Per tensor, in ``ValueInfoProto.metadata_props`` of the tensor (graph input, output or ``value_info``
  entry), under the key :data:`STATS_KEY` (``onegraph.stats``): one JSON document, below.
* Derived scale and zero point, as initializers referenced from the standard
  ``GraphProto.quantization_annotation`` entry of the tensor (``TensorAnnotation.tensor_name`` = the tensor,
  ``quant_parameter_tensor_names``: ``SCALE_TENSOR`` -> scale initializer, ``ZERO_POINT_TENSOR`` -> zero-point
  initializer). Initializers onegraph adds are named ``<tensor>.onegraph_scale`` /
  ``<tensor>.onegraph_zero_point``; ranges recovered from a quantized model reference the model's own
  QuantizeLinear / DequantizeLinear parameters instead.

onnx-ir (``ir.Value.metadata_props`` and ``ir.Value.meta["quant_parameter_tensor_names"]``) reads and writes
both, so every pass on an ``onnx_ir.Model`` keeps them; ``onnx.version_converter`` drops both, so convert
opsets before annotating. onnx-ir's ``RemoveUnusedNodesPass`` removes initializers no node reads, such as
the scale / zero-point initializers added here: run it before annotating, or re-annotate after it.

The JSON document (schema version 1; the pydantic models are in :mod:`onegraph.stats.document`)
------------------------------------
Keys (absent or ``null`` when unknown; floats are finite JSON numbers)::

    version          int     1 (SCHEMA_VERSION); a reader refuses a newer major version
    source           str     "calibration" (onegraph.stats.calibrate) or "recovered" (read back from Q/DQ
                             or QLinear* parameters: only min / max, the float range the quantization
                             represents)
    samples          int     samples (first-axis entries) seen
    dtype            str     numpy name of the tensor's element type as observed ("float32", ...)
    shape            list    observed shape, null for dimensions that varied (the batch axis)
    size             int     values seen, finite or not
    count            int     finite values; every statistic below is over these only
    nan, posinf, neginf  int NaN, +inf, -inf values
    min, max, absmax, mean, std   float   std is the population std (ddof = 0)
    zero_fraction    float   share of finite values equal to 0
    quantiles        object  {"0.5": value, ...} for probabilities 0.0001 .. 0.9999 (exact or KLL)
    quantile_rank_error float  bound on the rank error of those quantiles (99% confidence; 98% with sampling)
    histogram        object  {"width_log2": e, "first_bin": k, "counts": [c0, c1, ...]}: c_i finite values
                             in [(k + i) * 2**e, (k + i + 1) * 2**e)
    outliers         object  {"tukey_1.5" | "tukey_3" | "std_<k>": {"low", "high", "count", "count_min",
                             "count_max"}}: values < low or > high; count_min <= exact count <= count_max,
                             count an interpolated estimate. Tukey: low/high = Q1 -/+ k IQR (sketch
                             quartiles); std_k: mean -/+ k std
    channels         object  {"axis": a, "count": [...], "min": [...], "max": [...], "mean": [...],
                             "std": [...]}: per index along axis a
    quantization     object  how the SCALE_TENSOR / ZERO_POINT_TENSOR initializers were derived:
                             {"type": "uint8", "axis": null | a, "symmetric": bool, "reduce_range": bool,
                             "method": "minmax" | "percentile" | "entropy" | "mse" | "float8_std" |
                             "float8_absmax" | "recovered"}
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
from pydantic import ValidationError

from onegraph.check import irsafe
from onegraph.check.loader import load_ir, load_model
from onegraph.errors import ConfigError, OnegraphError
from onegraph.stats.accumulators import (
    ChannelStats,
    Histogram,
    OutlierCount,
    TensorStats,
)
from onegraph.stats.document import SCHEMA_VERSION, StatsDocument
from onegraph.stats.qparams import FLOAT8_TYPES, INTEGER_TYPES, QuantParams

__all__ = ["STATS_KEY", "SCHEMA_VERSION", "QUANT_KEY", "SCALE_TENSOR", "ZERO_POINT_TENSOR",
           "StatsFormatError", "stats_to_dict", "stats_from_dict", "AnnotateStatsPass", "StripStatsPass",
           "annotate", "strip", "read_stats", "read_qparams"]

STATS_KEY = "onegraph.stats"
QUANT_KEY = "quant_parameter_tensor_names"  # onnx-ir's Value.meta key for quantization_annotation
SCALE_TENSOR = "SCALE_TENSOR"
ZERO_POINT_TENSOR = "ZERO_POINT_TENSOR"
_SCALE_SUFFIX = ".onegraph_scale"
_ZERO_POINT_SUFFIX = ".onegraph_zero_point"


class StatsFormatError(OnegraphError):
    """A tensor's ``onegraph.stats`` document or quantization annotation is malformed."""

    def __init__(self, tensor: str, message: str) -> None:
        super().__init__(f"tensor {tensor!r}: {message}",
                         hint="strip the statistics (`onegraph stats strip`) and calibrate again")
        self.tensor = tensor


# -- JSON <-> TensorStats ---------------------------------------------------------------------------
def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _nums(xs: Any) -> list:
    return [_num(x) for x in xs]


def stats_to_dict(stats: TensorStats, quantization: dict | None = None) -> dict:
    """The JSON-able document (schema above) of ``stats``."""
    doc: dict[str, Any] = {"version": SCHEMA_VERSION, "source": stats.source, "samples": stats.samples,
                           "dtype": stats.dtype, "shape": list(stats.shape) if stats.shape is not None else None,
                           "size": stats.size, "count": stats.count, "nan": stats.nan, "posinf": stats.posinf,
                           "neginf": stats.neginf}
    for key in ("min", "max", "absmax", "mean", "std", "zero_fraction", "quantile_rank_error"):
        doc[key] = _num(getattr(stats, key))
    doc["quantiles"] = {f"{p:g}": _num(v) for p, v in stats.quantiles.items()}
    h = stats.histogram
    doc["histogram"] = None if h is None else {"width_log2": h.width_log2, "first_bin": h.first_bin,
                                               "counts": list(h.counts)}
    doc["outliers"] = {k: {"low": _num(o.low), "high": _num(o.high), "count": _num(o.count),
                           "count_min": o.count_min, "count_max": o.count_max} for k, o in stats.outliers.items()}
    c = stats.channels
    doc["channels"] = None if c is None else {"axis": c.axis, "count": list(c.count), "min": _nums(c.min),
                                              "max": _nums(c.max), "mean": _nums(c.mean), "std": _nums(c.std)}
    if quantization is not None:
        doc["quantization"] = quantization
    return doc


def stats_from_dict(doc: Mapping[str, Any], tensor: str = "tensor") -> tuple[TensorStats, dict | None]:
    """``(TensorStats, quantization description or None)`` from a document (:class:`StatsDocument`).

    Raises :class:`StatsFormatError` naming the tensor and the field at fault.
    """
    try:
        d = StatsDocument.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise StatsFormatError(tensor, f"malformed {STATS_KEY} document ({where}: {first['msg']})") from None
    except RecursionError:
        raise StatsFormatError(tensor, f"malformed {STATS_KEY} document (nested too deeply)") from None
    if d.version > SCHEMA_VERSION:
        raise StatsFormatError(tensor, f"statistics schema version {d.version} is newer than this onegraph's "
                                       f"({SCHEMA_VERSION})")
    h, c = d.histogram, d.channels
    stats = TensorStats(
        count=d.count, size=d.size, nan=d.nan, posinf=d.posinf, neginf=d.neginf, min=d.min, max=d.max,
        absmax=d.absmax, mean=d.mean, std=d.std, zero_fraction=d.zero_fraction,
        quantiles={float(p): v for p, v in (d.quantiles or {}).items()},
        quantile_rank_error=d.quantile_rank_error,
        histogram=None if h is None else Histogram(h.width_log2, h.first_bin, tuple(h.counts)),
        outliers={k: OutlierCount(_inf(o.low, -1), _inf(o.high, 1), o.count, o.count_min, o.count_max)
                  for k, o in (d.outliers or {}).items()},
        channels=None if c is None else ChannelStats(c.axis, tuple(c.count), tuple(c.min), tuple(c.max),
                                                     tuple(c.mean), tuple(c.std)),
        samples=d.samples, dtype=d.dtype, shape=None if d.shape is None else tuple(d.shape), source=d.source)
    quantization = doc.get("quantization") if isinstance(doc, Mapping) else None
    return stats, quantization


def _inf(x: float | None, sign: int) -> float:
    return sign * math.inf if x is None else float(x)


# -- passes ---------------------------------------------------------------------------------------
def _values(graph: ir.Graph) -> dict[str, ir.Value]:
    """Every named value of the main graph: inputs, initializers, node outputs."""
    found = {v.name: v for v in graph.inputs}
    found.update(graph.initializers)
    for node in graph:
        found.update((v.name, v) for v in node.outputs if v.name)
    return found


class AnnotateStatsPass(ir.passes.InPlacePass):
    """Write statistics (and quantization parameters) into the tensors of a model.

    Parameters
    ----------
    stats:
        tensor name -> :class:`TensorStats`.
    qparams:
        tensor name -> :class:`~onegraph.stats.qparams.QuantParams`, written as initializers referenced from
        ``quantization_annotation``.
    references:
        tensor name -> ``(scale initializer, zero-point initializer or None, description)`` already in the model
        (ranges recovered from Q/DQ nodes), referenced as they are.

    Raises
    ------
    StatsFormatError
        for a tensor name the graph does not have.
    """

    def __init__(self, stats: Mapping[str, TensorStats], qparams: Mapping[str, QuantParams] | None = None,
                 references: Mapping[str, tuple[str, str | None, dict]] | None = None) -> None:
        super().__init__()
        self.stats = dict(stats)
        self.qparams = dict(qparams or {})
        self.references = dict(references or {})

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        values = _values(graph)
        for name in set(self.stats) | set(self.qparams) | set(self.references):
            if name not in values:
                raise StatsFormatError(name, "not a tensor of the model's main graph")
        for name, stats in self.stats.items():
            description = None
            if name in self.qparams:
                description = self.qparams[name].describe()
                self._write_qparams(graph, values, values[name], self.qparams[name])
            elif name in self.references:
                scale, zero, description = self.references[name]
                refs = {SCALE_TENSOR: scale}
                if zero is not None:
                    refs[ZERO_POINT_TENSOR] = zero
                values[name].meta[QUANT_KEY] = refs
            doc = stats_to_dict(stats, description)
            values[name].metadata_props[STATS_KEY] = json.dumps(doc, allow_nan=False, separators=(",", ":"))
        return ir.passes.PassResult(model, modified=bool(self.stats))

    @staticmethod
    def _write_qparams(graph: ir.Graph, values: dict[str, ir.Value], value: ir.Value, q: QuantParams) -> None:
        names = {}
        for key, suffix, array in ((SCALE_TENSOR, _SCALE_SUFFIX, q.scale), (ZERO_POINT_TENSOR, _ZERO_POINT_SUFFIX,
                                                                            q.zero_point)):
            name = value.name + suffix
            old = graph.initializers.get(name)
            if old is not None:  # re-annotating replaces onegraph's own parameters
                graph.initializers.pop(name)
            elif name in values:
                raise StatsFormatError(value.name, f"the model already has a tensor named {name!r}")
            init = ir.Value(name=name, const_value=ir.tensor(np.asarray(array), name=name))
            graph.register_initializer(init)
            names[key] = name
        value.meta[QUANT_KEY] = names


class StripStatsPass(ir.passes.InPlacePass):
    """Remove every ``onegraph.stats`` document and ``quantization_annotation`` entry, and the scale /
    zero-point initializers they referenced that no node reads (a recovered range's Q/DQ parameters stay)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        referenced: set[str] = set()
        modified = False
        for value in _values(graph).values():
            if value.metadata_props.pop(STATS_KEY, None) is not None:
                modified = True
            refs = value.meta.pop(QUANT_KEY, None)
            if refs:
                referenced.update(refs.values())
                modified = True
        for name in referenced:
            init = graph.initializers.get(name)
            if init is not None and not init.uses() and init not in graph.outputs:
                graph.initializers.pop(name)
        return ir.passes.PassResult(model, modified=modified)


# -- entry points on files / protos ---------------------------------------------------------------
def _ir_model(model: Any) -> ir.Model:
    if isinstance(model, ir.Model):
        return model
    return load_ir(model)


def annotate(model: Any, stats: Mapping[str, TensorStats], qparams: Mapping[str, QuantParams] | None = None,
             references: Mapping[str, tuple[str, str | None, dict]] | None = None) -> onnx.ModelProto:
    """A copy of ``model`` (path, bytes, ModelProto or onnx_ir.Model) carrying ``stats`` and ``qparams``
    (see :class:`AnnotateStatsPass`); the input is not modified.

    Raises
    ------
    ConfigError
        when ``stats`` is not a mapping of tensor names to :class:`TensorStats` (or ``qparams`` not one of
        :class:`QuantParams`).
    """
    for name, given, kind in (("stats", stats, TensorStats), ("qparams", qparams, QuantParams)):
        if given is None and name == "qparams":
            continue
        if not isinstance(given, Mapping) or not all(isinstance(v, kind) for v in given.values()):
            raise ConfigError(f"{name} is a {type(given).__name__}, not a mapping of tensor names to "
                              f"{kind.__name__}", hint="compute them with onegraph.stats.calibrate(model, data).stats(), or "
                              "annotate in one step with onegraph.stats.annotate_model(model, data)")
    ir_model = irsafe.from_proto(irsafe.to_proto(model)) if isinstance(model, ir.Model) else _ir_model(model)
    AnnotateStatsPass(stats, qparams, references)(ir_model)
    return irsafe.to_proto(ir_model)


def strip(model: Any) -> onnx.ModelProto:
    """A copy of ``model`` without statistics or quantization annotations (:class:`StripStatsPass`); a model
    that carries none comes back as it was read (see :func:`stripped`)."""
    lean = stripped(model)
    if lean is not None:
        return lean
    return irsafe.to_proto(model) if isinstance(model, ir.Model) else load_model(model)


def stripped(model: Any) -> onnx.ModelProto | None:
    """``model`` without its statistics and quantization annotations, or None when it carries none (the
    round trip through onnx-ir would otherwise rewrite a model with nothing to strip, adding the value infos
    it infers)."""
    ir_model = irsafe.from_proto(irsafe.to_proto(model)) if isinstance(model, ir.Model) else _ir_model(model)
    if not StripStatsPass()(ir_model).modified:
        return None
    return irsafe.to_proto(ir_model)


def read_stats(model: Any) -> dict[str, TensorStats]:
    """tensor name -> :class:`TensorStats` carried by ``model``, in graph order.

    Raises
    ------
    ModelFileError
        for an unreadable model.
    StatsFormatError
        for a malformed document (naming the tensor).
    """
    out = {}
    for name, value in _values(_ir_model(model).graph).items():
        text = value.metadata_props.get(STATS_KEY)
        if text is None:
            continue
        out[name] = stats_from_dict(_document(name, text), name)[0]
    return out


def _document(tensor: str, text: str) -> dict:
    """The JSON object of a tensor's ``onegraph.stats`` entry; :class:`StatsFormatError` for anything else."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StatsFormatError(tensor, f"{STATS_KEY} is not JSON ({exc})") from None
    except RecursionError:
        raise StatsFormatError(tensor, f"{STATS_KEY} is JSON nested too deeply to be read") from None
    if not isinstance(doc, dict):
        raise StatsFormatError(tensor, f"{STATS_KEY} is not a JSON object")
    return doc


def read_qparams(model: Any) -> dict[str, QuantParams]:
    """tensor name -> :class:`QuantParams` referenced from ``quantization_annotation`` in ``model``.

    The quantized type comes from the ``onegraph.stats`` document when there is one, else from the zero
    point's type (uint8 without a zero point, as QuantizeLinear's default).

    Raises
    ------
    StatsFormatError
        for an annotation that references a tensor the model does not hold as an initializer.
    """
    graph = _ir_model(model).graph
    out = {}
    for name, value in _values(graph).items():
        refs = value.meta.get(QUANT_KEY)
        if not refs:
            continue
        scale = _constant(graph, name, refs.get(SCALE_TENSOR), "SCALE_TENSOR")
        zero_name = refs.get(ZERO_POINT_TENSOR)
        zero = _constant(graph, name, zero_name, "ZERO_POINT_TENSOR") if zero_name else np.zeros((), np.uint8)
        description = {}
        text = value.metadata_props.get(STATS_KEY)
        if text:
            description = _document(name, text).get("quantization") or {}
            if not isinstance(description, dict):
                raise StatsFormatError(name, f"the {STATS_KEY} document's quantization is not a JSON object")
        quant_type = description.get("type") or _type_name(zero.dtype)
        out[name] = QuantParams(scale, zero, quant_type, description.get("axis"),
                                bool(description.get("symmetric", False)),
                                bool(description.get("reduce_range", False)), description.get("method", "unknown"))
    return out


def _constant(graph: ir.Graph, tensor: str, name: str | None, key: str) -> np.ndarray:
    init = graph.initializers.get(name) if name else None
    if init is None or init.const_value is None:
        raise StatsFormatError(tensor, f"quantization_annotation {key} names {name!r}, which is not an initializer")
    return init.const_value.numpy()


def _type_name(dtype: np.dtype) -> str:
    for name, (np_type, _) in {**INTEGER_TYPES, **FLOAT8_TYPES}.items():
        if np.dtype(np_type) == dtype:
            return name
    return dtype.name
