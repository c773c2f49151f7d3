"""``onegraph.build``: fitted preprocessing + fitted model -> one verified ONNX model."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import onnx
import pandas as pd
import sklearn

from onegraph.contract.columns import ColumnSpec, spec_for
from onegraph.contract.tables import as_pandas
from onegraph.emit import DOUBLE, Col, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export import assemble
from onegraph.export.adapters.contract import qualified_name
from onegraph.export.members import (
    NOT_NUMBERS,
    feature_matrix,
    members,
    table_pipelines,
)
from onegraph.export.sources import (
    column_key,
    expected_outputs,
    input_columns,
    split_pipeline,
)
from onegraph.verify.parity import check_tolerances, outputs_parity

__all__ = ["build", "MAX_FEATURE_OUTPUTS"]

#: a preprocessing built without a model gives one graph output per column (a Gather from its block each):
#: 4,096 columns (a HashingVectorizer's) take 30 s to build and 12 s to score 222 rows; wider is refused
#: (HashingVectorizer's default 2^20 columns would be a million outputs). A model after it reads the block
#: inside the graph, whatever its width.
MAX_FEATURE_OUTPUTS = 8192


def build(preprocessing: Any, model: Any = None, sample: Any = None, *, path: str | os.PathLike | None = None,
          check_parity: bool = True, rtol: float | None = None, atol: float | None = None, name: str = "onegraph",
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
        (labels must be identical; numbers within ``atol + rtol * |expected|``). Default: the model's own
        precision: ``1e-6`` / ``1e-12`` for scikit-learn's double models and LightGBM, ``1e-5`` / ``1e-5``
        for XGBoost and CatBoost (float32 sums); the report and the refusal name the tolerance used.
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
    if path is not None:  # before the export's work: a path that cannot take the model is said at once
        from onegraph.io import check_output_path

        check_output_path(path, model=True)
    check_tolerances(rtol=rtol, atol=atol)  # before the graph is emitted, not after
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
    # the columns the pipeline was fitted on, in its order: scikit-learn's own transform (the parity
    # reference) refuses a frame with others beside them
    frame = frame[[column_key(frame, n) for n in names]]
    specs = [spec_for(n, frame.iloc[:, i]) for i, n in enumerate(names)]
    if model is None and preprocessing is not None:
        _refuse_wide_early(preprocessing, frame.head(1))
    g, outputs = _emit(preprocessing, model, specs, name)
    specs = [s.model_copy(update={"date_format": g.date_formats[s.name]}) if s.name in g.date_formats else s
             for s in specs]
    trained = _training_metadata(preprocessing, model, frame)

    rtol, atol = _tolerance(model, rtol, atol)

    def verify(proto: onnx.ModelProto) -> Any:
        return outputs_parity(proto, frame, expected_outputs(preprocessing, model, frame), rtol=rtol, atol=atol)

    return assemble.finish(g, specs, outputs, trained, given=metadata, functions=functions,
                           verify=verify if check_parity else None,
                           what="the graph diverges from the source pipeline", path=path,
                           parity_hint=lambda: _parity_hint(preprocessing, model, frame))


def _parity_hint(preprocessing: Any, model: Any, frame: pd.DataFrame) -> str | None:
    """The likely cause of a divergence where the answer turns on a tie the data make: equally distant
    neighbours, or values on a discretizer's bin edges (which are training values) computed by an earlier step
    within an ulp of numpy's result; or None in a text column, a value to scikit-learn's SimpleImputer and
    missing to the graph."""
    if model is not None and hasattr(model, "_fit_X") and hasattr(model, "kneighbors"):
        return ("neighbours at equal distances (duplicate or evenly spaced rows) may be ordered differently by "
                "scikit-learn's search and the graph's TopK; the model was not written. Try algorithm='brute', "
                "another n_neighbors, or data without exact ties")
    from sklearn.impute import KNNImputer, SimpleImputer
    from sklearn.preprocessing import KBinsDiscretizer, OneHotEncoder, OrdinalEncoder

    steps = [preprocessing, *(preprocessing.get_params(deep=True).values() if hasattr(preprocessing, "get_params")
                              else ())]
    keeping = [kind for kind, found in (("its SimpleImputer keeps None as a value (it imputes NaN only)",
                                         any(isinstance(obj, SimpleImputer) for obj in steps)),
                                        ("its OneHotEncoder / OrdinalEncoder learn None and NaN as two categories",
                                         any(isinstance(obj, (OneHotEncoder, OrdinalEncoder)) for obj in steps)))
               if found]
    if keeping:
        said = "in scikit-learn, " + " and ".join(keeping)
        holding = [str(c) for c in frame.columns if frame[c].dtype == object and any(v is None for v in frame[c])]
        if holding:
            return (f"column {holding[0]!r} holds None: {said}, and the graph reads None and NaN as one missing "
                    "value; the model was not written. Fit on frame.fillna(np.nan), or use onegraph.frame.SimpleImputer "
                    "/ onegraph.frame.OneHotEncoder, which treat both as missing")
        arrow = [str(c) for c in frame.columns if isinstance(frame[c].dtype, pd.ArrowDtype)
                 and frame[c].dtype.kind in "OUS" and frame[c].isna().any()]
        if arrow:
            return (f"column {arrow[0]!r} holds nulls (polars / Arrow), which reach scikit-learn as None: {said}, "
                    "and the graph reads None and NaN as one missing value; the model was not written. Fit and "
                    "build on a pandas frame with NaN for missing text (frame.to_pandas().fillna(np.nan)), or use "
                    "onegraph.frame.SimpleImputer / onegraph.frame.OneHotEncoder")
    if any(isinstance(obj, KNNImputer) for obj in steps):
        return ("a KNNImputer's donors at equal distances (rounded measurements make ties common; distances over "
                "the features both rows hold) may be chosen differently by scikit-learn and the graph's TopK; the "
                "model was not written. Try another n_neighbors, weights='distance', or a SimpleImputer")
    if any(isinstance(obj, KBinsDiscretizer) for obj in steps):
        return ("a KBinsDiscretizer's bin edges are values of its training column: a value on an edge, computed by "
                "a step before it to within an ulp of numpy (log1p, a power, a scaler), can fall in the next bin; "
                "the model was not written. Discretize the raw column, or round the values before binning")
    return None


def _tolerance(model: Any, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """The parity tolerance: the caller's, else the model adapter's (``Adapter.tolerance``)."""
    from onegraph.export.adapters.choose import adapt

    tol = (1e-6, 1e-12)
    for member in _boosting_members(model):  # the loosest: a float32 XGBoost inside a voting ensemble included
        member_tol = adapt(member).tolerance
        tol = (max(tol[0], member_tol[0]), max(tol[1], member_tol[1]))
    return (tol[0] if rtol is None else rtol, tol[1] if atol is None else atol)


def _boosting_members(obj: Any, depth: int = 0) -> Iterator[Any]:
    """The XGBoost / LightGBM / CatBoost models in ``obj``: itself, or its fitted members at any depth (a voting
    ensemble's ``estimators_``, a calibrated classifier's, a pipeline's steps), found in its attributes."""
    if type(obj).__module__.split(".")[0] in ("xgboost", "lightgbm", "catboost"):
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(obj)
        except Exception:  # noqa: BLE001 - an unfitted template (a meta-estimator's `estimator` parameter)
            return
        yield obj
        return
    if depth > 6 or not (hasattr(obj, "get_params") or type(obj).__module__.startswith("sklearn.")):
        return  # scikit-learn's own holders too: CalibratedClassifierCV's _CalibratedClassifier
    for value in getattr(obj, "__dict__", {}).values():  # Cython holders (a tree's Tree) have none
        items = value if isinstance(value, (list, tuple)) else value.values() if isinstance(value, dict) else [value]
        for item in items:
            if isinstance(item, tuple):  # a pipeline's (name, step)
                item = item[-1]
            yield from _boosting_members(item, depth + 1)


def _emit(preprocessing: Any, model: Any, specs: list[ColumnSpec], name: str) -> tuple[GraphBuilder, list[dict]]:
    """The builder holding the pipeline's nodes, and the metadata entries of its outputs."""
    from onegraph.export.adapters.choose import emit_model
    from onegraph.export.adapters.sklearn import emit_step, step_name

    g = GraphBuilder(name)
    cols = assemble.graph_inputs(g, specs)
    input_names = {s.name for s in specs}
    zones = {s.name: s.tz for s in specs if s.tz}
    if preprocessing is not None:
        cols = emit_step(preprocessing, g, cols, step_name(preprocessing))
        if not cols:
            raise ExportError("the preprocessing outputs no column", hint="check its column selection")
    if model is not None:
        from onegraph.export.adapters.trees import emit_hgb_trees, hgb_categories

        # a HistGradientBoosting model encoding the DataFrame's categorical columns itself: its encoder first
        own = getattr(model, "_preprocessor", None) is not None
        if own:
            with g.scope(step_name(model), model):
                cols = hgb_categories(model, g, cols)
        names = getattr(model, "feature_names_in_", None)
        if table_pipelines([m for _, m in members(model)], cols) and names is not None and [
                str(n) for n in names] == [c.name for c in cols]:  # its members start from the table's columns
            x = feature_matrix(g, cols)
        else:
            _check_model_inputs(model, cols)
            x = g.matrix(cols, DOUBLE)
        with g.scope(step_name(model), model):
            result = emit_hgb_trees(model, g, x) if own else emit_model(model, g, x)
        return g, assemble.declare_outputs(g, result, input_names)
    _refuse_wide(len(cols))
    outputs: list[dict] = []
    for c in cols:
        value = g.vector(c)
        if value.is_graph_input() and value.name == c.name:  # a column passed through: the input is the output
            out_name = c.name
            g.graph.outputs.append(value)
        else:
            out_name = assemble.output_name(c.name, input_names)
            g.output(value, out_name, c.dtype)
        entry = {"name": out_name, "column": c.name, "role": "feature", "kind": c.kind}
        if c.kind == "datetime" and zones.get(c.name):
            entry["tz"] = zones[c.name]  # scored back as tz-aware datetimes
        outputs.append(entry)
    return g, outputs


def _refuse_wide(width: int) -> None:
    if width > MAX_FEATURE_OUTPUTS:
        raise ExportError(f"the preprocessing outputs {width} columns, one graph output each: above the "
                          f"{MAX_FEATURE_OUTPUTS} built without a model",
                          hint="build it with the model it feeds, or fewer columns (HashingVectorizer's n_features)")


def _refuse_wide_early(preprocessing: Any, row: pd.DataFrame) -> None:
    """The width check of a preprocessing-only graph before its nodes are emitted (emitting a default
    HashingVectorizer's 2**20 columns takes ~10 s): the width of scikit-learn's transform of one row."""
    try:
        width = np.shape(preprocessing.transform(row))[-1]
    except Exception:  # noqa: BLE001 - the emitter and the parity check report what fails; this is a shortcut
        return
    _refuse_wide(int(width))


def _check_model_inputs(model: Any, cols: list[Col]) -> None:
    """A model takes a matrix of numbers, as many as it was fitted on: say which columns are not, or how many
    it takes against how many reach it, and what to do."""
    fitted = getattr(model, "n_features_in_", None)
    if isinstance(fitted, (int, np.integer)) and int(fitted) != len(cols):
        raise ExportError(f"{type(model).__name__} was fitted on {int(fitted)} features but the preprocessing gives "
                          f"{len(cols)}", hint="fit the model on the preprocessing's output (or pass them as one "
                          "Pipeline)")
    bad = [c for c in cols if c.kind in NOT_NUMBERS]
    if not bad:
        return
    names = ", ".join(repr(c.name) for c in bad[:5]) + (" ..." if len(bad) > 5 else "")
    if getattr(model, "_preprocessor", None) is not None or getattr(model, "categorical_features", None) not in (
            None, "from_dtype"):
        raise ExportError(f"{type(model).__name__} uses native categorical features ({names}), which cannot be "
                          "exported yet", hint="one-hot or ordinal-encode those columns before the model")
    inner = _members_with_own_preprocessing(model)
    if inner:
        raise ExportError(f"{type(model).__name__}'s member(s) {', '.join(inner)} are pipelines that encode the "
                          f"table's {bad[0].kind} column(s) {names} themselves; onegraph exports a "
                          f"{type(model).__name__} on the numbers one shared preprocessing gives",
                          hint=f"share one preprocessing: make_pipeline(preprocessing, {type(model).__name__}(...)) "
                          "with members that take its output")
    raise ExportError(f"{type(model).__name__} takes numbers, but {bad[0].kind} column(s) {names} reach it",
                      hint="encode them before the model (onegraph.frame.OneHotEncoder, OrdinalEncoder, DateParts)")


def _members_with_own_preprocessing(model: Any) -> list[str]:
    """Names of the pipelines among a meta-estimator's members."""
    from sklearn.pipeline import Pipeline

    return [repr(name) for name, member in members(model) if isinstance(member, Pipeline)]


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
