"""Spark ML feature stages -> ONNX nodes, computing what each stage's ``transform`` computes, in double.

Every emitter takes the stage and the columns it reads and returns the columns it writes, keyed by Spark
column name: a scalar column is one :class:`~onegraph.emit.Col`, a Spark ``Vector`` column a list of them
(one per element). Spark's ``handleInvalid`` modes map onto onegraph's:

* ``"error"``: a check output (:meth:`~onegraph.emit.GraphBuilder.flag`), so scoring raises
  :class:`~onegraph.errors.UnknownCategoryError` / :class:`~onegraph.errors.OutOfRangeError` naming the column
  where Spark throws;
* ``"keep"``: the value Spark keeps (the extra index, NaN, the extra bucket);
* ``"skip"``: the row is kept but marked in the boolean output ``skipped`` (a graph cannot drop rows, and
  scoring keeps one output row per input row); Spark's rows are the ones with ``skipped == False``.

onnxmltools' Spark ML converters (1.16, checked) are not used for these stages: they compute in float32
(``Scaler``, ``Imputer``), their ``StringIndexer`` ignores ``handleInvalid``, and their ``OneHotEncoder``
refuses Spark's default (``handleInvalid="error"`` with ``dropLast=True``).

Sources: Spark 4 ``org.apache.spark.ml.feature`` (``StringIndexerModel``, ``OneHotEncoderModel``,
``VectorAssembler.assemble``, ``ImputerModel``, ``StandardScalerModel`` / ``getTransformFunc``,
``MinMaxScalerModel``, ``Bucketizer.binarySearchForBuckets``); ``QuantileDiscretizer`` fits a ``Bucketizer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

import numpy as np
import onnx_ir as ir

from onegraph.emit import BOOL, DOUBLE, INT64, Col, GraphBuilder
from onegraph.errors import ExportError
from onegraph.registry import registrar

__all__ = ["Skips", "registry", "stage_emitter", "supported_stages", "columns_io", "string_indexer",
           "one_hot_encoder", "vector_assembler", "imputer", "standard_scaler", "min_max_scaler",
           "bucketizer"]

Column = Union[Col, list[Col]]  # a scalar column, or the elements of a Vector column
StageEmitter = Callable[[Any, GraphBuilder, dict[str, Column], "Skips"], dict[str, Column]]
_STAGES: dict[str, StageEmitter] = {}


class Skips:
    """The rows a ``handleInvalid="skip"`` stage would drop, OR-ed over the stages ([N] bool, or None)."""

    def __init__(self) -> None:
        self.value: ir.Value | None = None

    def add(self, g: GraphBuilder, rows: ir.Value) -> None:
        self.value = rows if self.value is None else g.op("Or", self.value, rows, dtype=BOOL)


#: a decorator factory registering emitters in a table by Spark ML class name (so pyspark is imported only by
#: whoever holds a Spark object): ``@register("ClassName", ...)``
registry = registrar


#: ``@stage("StringIndexerModel")`` registers ``fn(stage, g, columns, skips) -> columns written``
stage = registry(_STAGES)


def stage_emitter(obj: Any) -> StageEmitter | None:
    return _STAGES.get(type(obj).__name__)


def supported_stages() -> list[str]:
    return sorted(_STAGES)


def columns_io(obj: Any) -> tuple[list[str], list[str]]:
    """The columns a feature stage reads and writes (``inputCol`` / ``inputCols`` and their outputs)."""
    def param(name: str) -> Any:
        p = obj.getParam(name) if obj.hasParam(name) else None
        return obj.getOrDefault(p) if p is not None and obj.isDefined(p) else None

    ins = param("inputCols") or ([param("inputCol")] if param("inputCol") else [])
    outs = param("outputCols") or ([param("outputCol")] if param("outputCol") else [])
    return list(ins), list(outs)


def _scalar(columns: dict[str, Column], name: str, stage_obj: Any) -> Col:
    col = columns[name]
    if isinstance(col, list):
        raise ExportError(f"{type(stage_obj).__name__} reads column {name!r} as a number, but it is a vector",
                          hint="check the stage's inputCol(s)")
    return col


def _double(g: GraphBuilder, columns: dict[str, Column], name: str, stage_obj: Any) -> ir.Value:
    """A numeric column as ``[N]`` double (Spark casts to double; int64 missing -> NaN)."""
    return g.vector(g.as_double(_scalar(columns, name, stage_obj)))


def _vector(columns: dict[str, Column], name: str, stage_obj: Any) -> list[Col]:
    col = columns[name]
    if not isinstance(col, list):
        raise ExportError(f"{type(stage_obj).__name__} reads column {name!r} as a vector, but it is a scalar",
                          hint="assemble it with VectorAssembler first")
    return col


def _num(g: GraphBuilder, value: Any, name: str) -> ir.Value:
    return g.const(np.asarray(value, np.float64), name)


def _cast(g: GraphBuilder, value: ir.Value, to: ir.DataType) -> ir.Value:
    return g.op("Cast", value, to=to, dtype=to)


def _invalid(g: GraphBuilder, mode: str, rows: ir.Value, column: str, skips: Skips, kind: str = "unknown_category",
             **detail: Any) -> None:
    """Spark's ``handleInvalid`` for ``rows`` ([N] bool): a check output (error) or the skipped rows."""
    if mode == "error":
        g.flag(rows, kind, column, **detail)
    elif mode == "skip":
        skips.add(g, rows)


def _block(g: GraphBuilder, matrix: ir.Value, name: str, width: int) -> list[Col]:
    return g.block(matrix, [f"{name}_{i}" for i in range(width)], "float", DOUBLE)


# -- string indexing ------------------------------------------------------------------------------
@stage("StringIndexerModel")
def string_indexer(obj: Any, g: GraphBuilder, columns: dict[str, Column], skips: Skips) -> dict[str, Column]:
    ins, outs = columns_io(obj)
    mode = obj.getHandleInvalid()
    written = {}
    for src, dst, labels in zip(ins, outs, obj.labelsArray):
        col = _scalar(columns, src, obj)
        if col.kind != "string":
            raise ExportError(f"StringIndexerModel reads {src!r} as {col.kind}; only text columns are supported",
                              hint="cast the column to string before the StringIndexer")
        index = g.op("LabelEncoder", g.vector(col), domain="ai.onnx.ml", dtype=INT64,
                     keys_strings=[str(v) for v in labels], values_int64s=list(range(len(labels))),
                     default_int64=-1)
        unseen = g.op("Equal", index, g.const(np.int64(-1), "unseen"), dtype=BOOL)  # missing values too
        _invalid(g, mode, unseen, src, skips, hint="fit on data that includes them, or set the StringIndexer's "
                 "handleInvalid='keep' (or 'skip')")
        value = _cast(g, index, DOUBLE)
        if mode == "keep":  # unseen labels and nulls get index numLabels
            value = g.op("Where", unseen, _num(g, len(labels), "n_labels"), value, dtype=DOUBLE)
        written[dst] = Col(dst, "float", value, DOUBLE)
    return written


# -- one-hot encoding -----------------------------------------------------------------------------
@stage("OneHotEncoderModel")
def one_hot_encoder(obj: Any, g: GraphBuilder, columns: dict[str, Column], skips: Skips) -> dict[str, Column]:
    ins, outs = columns_io(obj)
    keep = obj.getHandleInvalid() == "keep"
    drop_last = obj.getDropLast()
    written = {}
    for src, dst, size in zip(ins, outs, obj.categorySizes):
        x = _double(g, columns, src, obj)
        valid = g.op("And", g.op("GreaterOrEqual", x, _num(g, 0.0, "zero"), dtype=BOOL),
                     g.op("Less", x, _num(g, size, "n_categories"), dtype=BOOL), dtype=BOOL)  # NaN: invalid
        invalid = g.op("Not", valid, dtype=BOOL)
        _invalid(g, "keep" if keep else "error", invalid, src, skips,
                 hint="fit on data that includes them, or set the OneHotEncoder's handleInvalid='keep'")
        # label.toInt truncates; an invalid label takes index numCategories (kept) or -1 (refused above)
        index = g.op("Floor", g.op("Where", valid, x, _num(g, size if keep else -1, "invalid_index"), dtype=DOUBLE),
                     dtype=DOUBLE)
        width = size + (1 if keep else 0) - (1 if drop_last else 0)
        hot = g.op("Equal", g.op("Unsqueeze", index, g.const(np.array([1], np.int64), "axes"), dtype=DOUBLE),
                   _num(g, np.arange(width, dtype=np.float64), "categories"), dtype=BOOL)
        written[dst] = _block(g, _cast(g, hot, DOUBLE), dst, width)  # the dropped last index: all zeros
    return written


# -- vector assembly ------------------------------------------------------------------------------
@stage("VectorAssembler")
def vector_assembler(obj: Any, g: GraphBuilder, columns: dict[str, Column], skips: Skips) -> dict[str, Column]:
    ins, (dst,) = columns_io(obj)
    elements: list[Col] = []
    for name in ins:
        col = columns[name]
        elements.extend(col if isinstance(col, list) else [g.as_double(col)])
    matrix = g.matrix(elements, DOUBLE)
    mode = obj.getHandleInvalid()
    if mode != "keep":  # "error" throws on null / NaN, "skip" drops the row
        bad = g.op("ReduceMax", _cast(g, g.op("IsNaN", matrix, dtype=BOOL), DOUBLE),
                   g.const(np.array([1], np.int64), "axes"), keepdims=0, dtype=DOUBLE)
        bad = _cast(g, bad, BOOL)
        _invalid(g, mode, bad, ins[0] if len(ins) == 1 else dst, skips, kind="out_of_range",
                 covers="no missing values (VectorAssembler handleInvalid='error')",
                 hint="impute the missing values before the VectorAssembler, or set handleInvalid='keep'")
    return {dst: _block(g, matrix, dst, len(elements))}


# -- imputation -----------------------------------------------------------------------------------
@stage("ImputerModel")
def imputer(obj: Any, g: GraphBuilder, columns: dict[str, Column], skips: Skips) -> dict[str, Column]:
    ins, outs = columns_io(obj)
    surrogates = obj.surrogateDF.collect()[0].asDict()
    missing_value = float(obj.getMissingValue())
    written = {}
    for src, dst in zip(ins, outs):
        x = _double(g, columns, src, obj)
        missing = g.op("IsNaN", x, dtype=BOOL)  # nulls arrive as NaN
        if not np.isnan(missing_value):
            missing = g.op("Or", missing, g.op("Equal", x, _num(g, missing_value, "missing_value"), dtype=BOOL),
                           dtype=BOOL)
        value = g.op("Where", missing, _num(g, surrogates[src], f"surrogate_{src}"), x, dtype=DOUBLE)
        written[dst] = Col(dst, "float", value, DOUBLE)
    return written


# -- scaling --------------------------------------------------------------------------------------
@stage("StandardScalerModel")
def standard_scaler(obj: Any, g: GraphBuilder, columns: dict[str, Column], skips: Skips) -> dict[str, Column]:
    (src,), (dst,) = columns_io(obj)
    elements = _vector(columns, src, obj)
    x = g.matrix(elements, DOUBLE)
    if obj.getWithMean():
        x = g.op("Sub", x, _num(g, obj.mean.toArray(), "mean"), dtype=DOUBLE)
    if obj.getWithStd():
        std = obj.std.toArray()
        scale = np.divide(1.0, std, out=np.zeros_like(std), where=std != 0)  # Spark: 0 for a constant column
        x = g.op("Mul", x, _num(g, scale, "inverse_std"), dtype=DOUBLE)
    return {dst: _block(g, x, dst, len(elements))}


@stage("MinMaxScalerModel")
def min_max_scaler(obj: Any, g: GraphBuilder, columns: dict[str, Column], skips: Skips) -> dict[str, Column]:
    (src,), (dst,) = columns_io(obj)
    elements = _vector(columns, src, obj)
    x = g.matrix(elements, DOUBLE)
    lo, hi = obj.getMin(), obj.getMax()
    scale = hi - lo
    original_min = obj.originalMin.toArray()
    ranges = obj.originalMax.toArray() - original_min
    factor = np.divide(scale, ranges, out=np.zeros_like(ranges), where=ranges != 0)
    # Spark: (x - originalMin) * (scale / range) + min; a constant column (range 0) gives 0.5 * scale + min
    offset = np.where(ranges != 0, lo, 0.5 * scale + lo)
    x = g.op("Add", g.op("Mul", g.op("Sub", x, _num(g, original_min, "original_min"), dtype=DOUBLE),
                         _num(g, factor, "factor"), dtype=DOUBLE), _num(g, offset, "offset"), dtype=DOUBLE)
    return {dst: _block(g, x, dst, len(elements))}


# -- bucketing ------------------------------------------------------------------------------------
@stage("Bucketizer")
def bucketizer(obj: Any, g: GraphBuilder, columns: dict[str, Column], skips: Skips) -> dict[str, Column]:
    ins, outs = columns_io(obj)
    splits_list = obj.getSplitsArray() if obj.isSet(obj.splitsArray) else [obj.getSplits()]
    mode = obj.getHandleInvalid()
    written = {}
    for src, dst, splits in zip(ins, outs, splits_list):
        splits = np.asarray(splits, np.float64)
        x = _double(g, columns, src, obj)
        nan = g.op("IsNaN", x, dtype=BOOL)
        # bucket i holds [s_i, s_i+1); the last one also s_last: the count of inner splits <= x
        above = g.op("GreaterOrEqual", g.op("Unsqueeze", x, g.const(np.array([1], np.int64), "axes"), dtype=DOUBLE),
                     _num(g, splits[1:-1], "inner_splits"), dtype=BOOL)
        index = g.op("ReduceSum", _cast(g, above, DOUBLE), g.const(np.array([1], np.int64), "axes"), keepdims=0,
                     dtype=DOUBLE)
        outside = g.op("Or", g.op("Less", x, _num(g, splits[0], "first_split"), dtype=BOOL),
                       g.op("Greater", x, _num(g, splits[-1], "last_split"), dtype=BOOL), dtype=BOOL)
        g.flag(outside, "out_of_range", src, covers=f"[{splits[0]}, {splits[-1]}] (Bucketizer splits)",
               hint="refit the QuantileDiscretizer / Bucketizer with splits covering these values (-inf, inf)")
        _invalid(g, mode, nan, src, skips, kind="out_of_range", covers="no missing values (Bucketizer)",
                 hint="set handleInvalid='keep' to put missing values in an extra bucket")
        if mode == "keep":
            index = g.op("Where", nan, _num(g, len(splits) - 1, "nan_bucket"), index, dtype=DOUBLE)
        written[dst] = Col(dst, "float", index, DOUBLE)
    return written
