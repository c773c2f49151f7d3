"""``onegraph.build``: fitted preprocessing + fitted model -> one verified ONNX model."""

from __future__ import annotations

import os
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
from onegraph.frame.data import as_pandas
from onegraph.frame.schema import ColumnSpec, spec_for
from onegraph.frame.transformers.categorical import CHECK_UNKNOWN
from onegraph.meta import schema as meta

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
          functions: bool = True) -> onnx.ModelProto:
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
        its dtypes decide the graph inputs (see :mod:`onegraph.frame.schema`); its rows are used for the
        parity check.
    path:
        If given, the model is written there (atomically) after it passes the parity check.
    check_parity, rtol, atol:
        Run the source objects and the graph on ``sample`` and refuse a model whose outputs differ
        (labels must be identical; numbers within ``atol + rtol * |expected|``).
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
    """
    if sample is None:
        raise ExportError("build needs a sample of the input rows", hint="pass sample=<a DataFrame of inputs>")
    preprocessing, model = split_pipeline(preprocessing, model)
    if preprocessing is None and model is None:
        raise ExportError("nothing to build: both preprocessing and model are None")
    frame = as_pandas(sample)
    if len(frame) == 0:
        raise ExportError("the sample has no rows", hint="give at least one row (more make a better parity check)")
    names = input_columns(preprocessing, model, frame)
    specs = [spec_for(n, frame[_column_key(frame, n)]) for n in names]

    ir_model, specs, outputs = _emit(preprocessing, model, specs, name)
    if functions:
        from onegraph.passes import group_steps

        group_steps(ir_model)
    proto = _finish(ir_model, specs, outputs, model)
    if check_parity:
        from onegraph.verify.parity import parity

        report = parity(preprocessing, model, frame, onnx_model=proto, rtol=rtol, atol=atol)
        if not report.ok:
            raise ParityError(f"the graph diverges from the source pipeline on output(s) "
                              f"{', '.join(report.failed)}:\n{report}", report)
    if path is not None:
        from onegraph.io import save_model

        save_model(proto, path)
    return proto


def _column_key(frame: pd.DataFrame, name: str) -> Any:
    if name in frame.columns:
        return name
    for c in frame.columns:
        if str(c) == name:
            return c
    raise MissingColumnError(name, [str(c) for c in frame.columns])


def _emit(preprocessing: Any, model: Any, specs: list[ColumnSpec], name: str):
    from onegraph.export.adapters.models import emit_model
    from onegraph.export.adapters.sklearn import emit_step, step_name

    g = GraphBuilder(name)
    cols = [Col(s.name, s.kind, g.input(s.name, _INPUT_TYPES[s.onnx_type]), _INPUT_TYPES[s.onnx_type]) for s in specs]
    input_names = {s.name for s in specs}
    if preprocessing is not None:
        cols = emit_step(preprocessing, g, cols, step_name(preprocessing))
        if not cols:
            raise ExportError("the preprocessing outputs no column", hint="check its column selection")
    outputs: list[dict] = []
    if model is not None:
        x = g.matrix(cols, DOUBLE)
        with g.scope(step_name(model), model):
            result = emit_model(model, g, x)
        for role, value in result.values.items():
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
            outputs.append({"name": out_name, "column": c.name, "role": "feature", "kind": c.kind})
    for out in g.graph.outputs:
        if out.name.startswith(CHECK_UNKNOWN):
            outputs.append({"name": out.name, "column": out.name[len(CHECK_UNKNOWN):], "role": "check",
                            "check": "unknown_category"})
    ir_model = g.to_model()
    _clean(ir_model)
    used = {v.name for v in ir_model.graph.inputs}
    return ir_model, [s for s in specs if s.name in used], outputs


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


def _finish(ir_model: ir.Model, specs: list[ColumnSpec], outputs: list[dict], model: Any) -> onnx.ModelProto:
    ir_model.producer_name = "onegraph"
    ir_model.producer_version = onegraph.__version__
    fields = {
        "meta_version": meta.SCHEMA_VERSION,
        "created_at": meta.now_rfc3339(),
        "producer": f"onegraph {onegraph.__version__}",
        "source_library": f"scikit-learn {sklearn.__version__}",
        "inputs": [s.to_dict() for s in specs],
        "outputs": [_jsonable(o) for o in outputs],
    }
    if model is not None:
        fields["training_algorithm"] = qualified_name(model)
    ir_model.metadata_props.update(meta.encode(fields))
    proto = ir.to_proto(ir_model)
    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as exc:  # checker raises ValidationError / InferenceError
        raise ExportError(f"the built graph does not pass the ONNX checker: {exc}",
                          hint="report this pipeline to onegraph") from None
    return proto


def qualified_name(obj: Any) -> str:
    """``sklearn.linear_model.LogisticRegression``: the public module path (private parts dropped)."""
    module = ".".join(p for p in type(obj).__module__.split(".") if not p.startswith("_"))
    return f"{module}.{type(obj).__qualname__}"


def _jsonable(entry: dict) -> dict:
    out = dict(entry)
    if "classes" in out:
        out["classes"] = [c.item() if isinstance(c, np.generic) else c for c in out["classes"]]
    return out
