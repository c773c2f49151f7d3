"""``onegraph.build``: fitted preprocessing + fitted model -> one verified ONNX model."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
import pandas as pd
import sklearn
from sklearn.base import is_classifier, is_regressor
from sklearn.pipeline import Pipeline

import onegraph
from onegraph.emit import BOOL, DOUBLE, FLOAT, INT64, STRING, Col, GraphBuilder
from onegraph.errors import ExportError, MissingColumnError, ParityError
from onegraph.export.adapters.contract import qualified_name
from onegraph.contract.tables import as_pandas
from onegraph.contract.columns import ColumnSpec, spec_for
from onegraph.contract import metadata as meta
from onegraph.check import guard

_INPUT_TYPES = {"double": DOUBLE, "float": FLOAT, "int64": INT64, "bool": BOOL, "string": STRING}


def split_pipeline(preprocessing: Any, model: Any) -> tuple[Any, Any]:
    """Separate a final predictor from the preprocessing when ``model`` is not given."""
    if model is None and isinstance(preprocessing, Pipeline) and _is_predictor(preprocessing.steps[-1][1]):
        steps = preprocessing.steps
        pre = Pipeline(steps[:-1]) if len(steps) > 1 else None
        return pre, steps[-1][1]
    if model is None and _is_predictor(preprocessing):
        return None, preprocessing
    return preprocessing, model


def _is_predictor(obj: Any) -> bool:
    return is_classifier(obj) or is_regressor(obj)


def input_columns(preprocessing: Any, model: Any, frame: pd.DataFrame) -> list[str]:
    """The columns the first fitted object was fitted on (all of ``frame``'s when it does not say)."""
    first = preprocessing if preprocessing is not None else model
    names = getattr(first, "feature_names_in_", None)
    if names is None:
        n = getattr(first, "n_features_in_", frame.shape[1])
        if n != frame.shape[1]:
            raise ExportError(f"{type(first).__name__} was fitted on {n} unnamed columns but the sample has "
                              f"{frame.shape[1]}", hint="fit on a DataFrame so columns are matched by name")
        return [str(c) for c in frame.columns]
    names = [str(n) for n in names]
    present = {str(c) for c in frame.columns}
    for n in names:
        if n not in present:
            raise MissingColumnError(n, sorted(present))
    return names


def build(preprocessing: Any, model: Any = None, sample: Any = None, *, path: str | os.PathLike | None = None,
          check_parity: bool = True, rtol: float = 1e-6, atol: float = 1e-12, name: str = "onegraph",
          metadata: Mapping[str, Any] | None = None, functions: bool = True) -> onnx.ModelProto:
    """Turn a fitted preprocessing and a fitted model into one ONNX model, verified on ``sample``.

    Parameters
    ----------
    preprocessing:
        A fitted onegraph transformer, scikit-learn ``Pipeline`` / ``ColumnTransformer`` / ``FeatureUnion``
        (mixing onegraph's and scikit-learn's transformers), or None. A ``Pipeline`` ending in a model is
        split when ``model`` is None.
    model:
        A fitted scikit-learn classifier or regressor, or None for a preprocessing-only graph whose outputs
        are the transformed columns (named by ``get_feature_names_out``).
    sample:
        A table (pandas / polars / Arrow / dict / records) with the input columns, as the data will come:
        its dtypes decide the graph inputs (see :mod:`onegraph.contract.columns`); its rows are used for the
        parity check.
    path:
        If given, the model is written there (atomically) after it passes the parity check.
    check_parity, rtol, atol:
        Run the source objects and the graph on ``sample`` and refuse a model whose outputs differ
        (labels must be identical; numbers within ``atol + rtol * |expected|``).
    metadata:
        Fields of :mod:`onegraph.contract.metadata` to record (``author``, ``license``, ``intended_use``,
        ``lineage``, ``training_data`` name...), over the ones build fills: ``created_at``, ``producer``,
        ``source_library``, ``training_algorithm``, ``hyperparameters`` (``get_params``), ``training_data``
        (rows, columns and content hash of ``sample``, taken to be the training data), ``inputs``,
        ``outputs``, ``precision``. Dict fields are merged key by key.
    functions:
        Emit each step (transformer, model) as a call of a model-local function named after it (domain
        ``onegraph.frame`` for onegraph's transformers, ``sklearn.preprocessing`` ... for scikit-learn's;
        name = class, overload = the step's path), so the graph reads, in Netron, as the pipeline it came
        from. onnxruntime inlines the functions when it loads the model. False: one flat graph.

    Returns
    -------
    onnx.ModelProto
        One graph input per used column (``[N]``), outputs ``label`` (``[N]``) and ``probabilities``
        (``[N, n_classes]`` double) for a classifier, ``prediction`` (``[N]`` double) for a regressor.
        Opsets: ai.onnx 21, ai.onnx.ml 5. The input schema and output roles are in ``metadata_props``.

    Raises
    ------
    ExportError
        for an unfitted or unsupported object (naming it and its path in the pipeline).
    MissingColumnError
        when ``sample`` lacks a column the preprocessing was fitted on.
    ParityError
        when the graph's outputs differ from the source objects' on ``sample`` (naming the output).
    MetadataError
        for a ``metadata`` value that does not follow the schema (naming the key).
    """
    if sample is None:
        raise ExportError("build needs a sample of the input rows", hint="pass sample=<a DataFrame of inputs>")
    for what, obj in (("preprocessing", preprocessing), ("model", model)):
        if obj is not None and not hasattr(obj, "get_params"):
            raise ExportError(f"{what} must be a fitted scikit-learn-compatible object, not a {type(obj).__name__}",
                              hint="pass the fitted transformer / pipeline / estimator itself")
    preprocessing, model = split_pipeline(preprocessing, model)
    if preprocessing is None and model is None:
        raise ExportError("nothing to build: both preprocessing and model are None")
    frame = as_pandas(sample)
    if len(frame) == 0:
        raise ExportError("the sample has no rows", hint="give at least one row (more make a better parity check)")
    names = input_columns(preprocessing, model, frame)
    if "" in names:
        raise ExportError("a column has an empty name, which an ONNX graph input cannot have",
                          hint="rename it (e.g. frame.rename(columns={'': 'unnamed'})) and fit again")
    specs = [spec_for(n, frame[_column_key(frame, n)]) for n in names]

    ir_model, specs, outputs = _emit(preprocessing, model, specs, name)
    if functions:
        from onegraph.passes import group_steps

        group_steps(ir_model)
    trained = _training_metadata(preprocessing, model, frame[[_column_key(frame, n) for n in names]])
    proto = _finish(ir_model, specs, outputs, model, trained, metadata or {})
    guard.trust(proto.SerializeToString())  # made and checked here: opening it needs no pre-check
    if check_parity:
        from onegraph.verify.parity import parity

        refuse_divergence(parity(preprocessing, model, frame, onnx_model=proto, rtol=rtol, atol=atol),
                          "the graph diverges from the source pipeline")
    if path is not None:
        from onegraph.io import save_model

        save_model(proto, path)
    return proto


def refuse_divergence(report: Any, what: str) -> None:
    """Raise ParityError (``what`` on output(s) ..., then the report) unless ``report.ok``."""
    if not report.ok:
        raise ParityError(f"{what} on output(s) {', '.join(report.failed)}:\n{report}", report)


def _column_key(frame: pd.DataFrame, name: str) -> Any:
    if name in frame.columns:
        return name
    for c in frame.columns:
        if str(c) == name:
            return c
    raise MissingColumnError(name, [str(c) for c in frame.columns])


def _emit(preprocessing: Any, model: Any, specs: list[ColumnSpec], name: str):
    from onegraph.export.adapters.models import emit_model, unscored_labels_missing
    from onegraph.export.adapters.sklearn import emit_step, step_name

    g = GraphBuilder(name)
    cols = [Col(s.name, s.kind, g.input(s.name, _INPUT_TYPES[s.onnx_type]), _INPUT_TYPES[s.onnx_type]) for s in specs]
    input_names = {s.name for s in specs}
    zones = {s.name: s.tz for s in specs if s.tz}
    if preprocessing is not None:
        cols = emit_step(preprocessing, g, cols, step_name(preprocessing))
        if not cols:
            raise ExportError("the preprocessing outputs no column", hint="check its column selection")
    outputs: list[dict] = []
    if model is not None:
        _check_model_inputs(model, cols)
        x = g.matrix(cols, DOUBLE)
        with g.scope(step_name(model), model):
            result = emit_model(model, g, x)
        for role, value in unscored_labels_missing(g, result.values).items():
            entry = {"name": _output_name(role, input_names), "column": role, "role": role}
            shape = ["N"]
            if role == "probabilities":
                entry["classes"] = result.classes
                shape = ["N", len(result.classes)]
            elif value.shape is not None and len(value.shape) == 2:
                shape = ["N", value.shape[1]]
            g.output(value, entry["name"], value.dtype, shape)
            outputs.append(entry)
    else:
        for c in cols:
            value = g.vector(c)
            out_name = c.name if value.is_graph_input() and value.name == c.name else _output_name(c.name, input_names)
            if value.is_graph_input() and value.name == c.name:
                g.graph.outputs.append(value)
            else:
                g.output(value, out_name, c.dtype)
            entry = {"name": out_name, "column": c.name, "role": "feature", "kind": c.kind}
            if c.kind == "datetime" and zones.get(c.name):
                entry["tz"] = zones[c.name]  # scored back as tz-aware datetimes
            outputs.append(entry)
    outputs.extend(g.checks)
    ir_model = g.to_model()
    _clean(ir_model)
    used = {v.name for v in ir_model.graph.inputs}
    return ir_model, [s for s in specs if s.name in used], outputs


def _check_model_inputs(model: Any, cols: list[Col]) -> None:
    """A model takes a matrix of numbers: say which columns are not, and what to do."""
    bad = [c for c in cols if c.kind in ("string", "datetime", "timedelta")]
    if not bad:
        return
    names = ", ".join(repr(c.name) for c in bad[:5]) + (" ..." if len(bad) > 5 else "")
    if getattr(model, "_preprocessor", None) is not None or getattr(model, "categorical_features", None) not in (
            None, "from_dtype"):
        raise ExportError(f"{type(model).__name__} uses native categorical features ({names}), which cannot be "
                          "exported yet", hint="one-hot or ordinal-encode those columns before the model")
    raise ExportError(f"{type(model).__name__} takes numbers, but {bad[0].kind} column(s) {names} reach it",
                      hint="encode them before the model (onegraph.frame.OneHotEncoder, OrdinalEncoder, DateParts)")


def _output_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name.out`` when an input column already has that name (values are named once)."""
    out = name
    while out in taken:
        out += ".out"
    taken.add(out)
    return out


def _clean(model: ir.Model) -> None:
    """Drop nodes and inputs nothing uses, name every value uniquely, sort the nodes."""
    from onnx_ir.passes.common import NameFixPass, RemoveUnusedNodesPass, TopologicalSortPass

    RemoveUnusedNodesPass()(model)
    graph = model.graph
    outputs = {id(o) for o in graph.outputs}
    keep = [v for v in graph.inputs if v.uses() or id(v) in outputs]
    if len(keep) != len(graph.inputs):
        graph.inputs.clear()
        graph.inputs.extend(keep)
    NameFixPass()(model)
    TopologicalSortPass()(model)


def _training_metadata(preprocessing: Any, model: Any, frame: pd.DataFrame) -> dict[str, Any]:
    """The fields of the metadata schema build knows from the source objects and the sample."""
    from onegraph.meta.model import jsonable_params, source_library, table_hash

    source = model if model is not None else preprocessing
    fields: dict[str, Any] = {"source_library": source_library(source) or f"scikit-learn {sklearn.__version__}"}
    data: dict[str, Any] = {"rows": len(frame), "columns": [str(c) for c in frame.columns]}
    try:
        data["content_hash"] = table_hash(frame)
    except TypeError:  # unhashable cells (lists, dicts): the rows and columns still say what was used
        pass
    fields["training_data"] = data
    if model is not None:
        fields["training_algorithm"] = qualified_name(model)
        fields["hyperparameters"] = jsonable_params(model)
    return fields


def _finish(ir_model: ir.Model, specs: list[ColumnSpec], outputs: list[dict], model: Any,
            trained: dict[str, Any], given: Mapping[str, Any]) -> onnx.ModelProto:
    from onegraph.meta.model import dtypes_in_use

    ir_model.producer_name = "onegraph"
    ir_model.producer_version = onegraph.__version__
    fields = {
        "meta_version": meta.SCHEMA_VERSION,
        "created_at": meta.now_rfc3339(),
        "producer": f"onegraph {onegraph.__version__}",
        **trained,
        "inputs": [s.to_dict() for s in specs],
        "outputs": [_jsonable(o) for o in outputs],
        "precision": {"dtypes": dtypes_in_use(ir.to_proto(ir_model))},
    }
    for key, value in given.items():
        merged = isinstance(fields.get(key), dict) and isinstance(value, Mapping)
        fields[key] = {**fields[key], **value} if merged else value
    ir_model.metadata_props.update(meta.encode(fields))
    proto = ir.to_proto(ir_model)
    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as exc:  # checker raises ValidationError / InferenceError
        raise ExportError(f"the built graph does not pass the ONNX checker: {exc}",
                          hint="report this pipeline to onegraph") from None
    return proto


def _jsonable(entry: dict) -> dict:
    out = dict(entry)
    if "classes" in out:
        out["classes"] = [c.item() if isinstance(c, np.generic) else c for c in out["classes"]]
    return out
