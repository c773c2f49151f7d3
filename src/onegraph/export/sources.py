"""What the source objects say: the predictor at the end of a pipeline, the columns the first step was fitted
on, a column of the sample by the name the graph gives it, and what they compute on rows (the values parity
compares the graph with)."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import is_classifier, is_outlier_detector, is_regressor
from sklearn.pipeline import Pipeline

from onegraph.errors import DataError, ExportError, MissingColumnError, OnegraphError
from onegraph.verify.parity import as_graph_values

__all__ = [
    "column_key",
    "double_attributes",
    "double_reference",
    "expected_outputs",
    "flattened",
    "input_columns",
    "is_predictor",
    "model_files",
    "split_pipeline",
    "wrapper_inside",
]


def split_pipeline(preprocessing: Any, model: Any) -> tuple[Any, Any]:
    """``(preprocessing, predictor)``: a pipeline's final predictor separated from the steps before it.

    ``build(pipeline)`` and ``build(None, pipeline)`` alike, and ``build(pre, pipeline)`` (``pre`` then the
    pipeline's own steps), so the steps go through onegraph's emitters and the predictor through its adapter;
    a whole ``Pipeline`` given as the model would otherwise reach skl2onnx as one unknown estimator.
    A hyper-parameter search is first replaced by its refitted ``best_estimator_``, a wrapper of a pipeline
    turned into that pipeline ending in the wrapper, and a pipeline ending in a pipeline into one
    (:func:`flattened`).
    """
    preprocessing, model = flattened(preprocessing), flattened(model)
    if model is not None and isinstance(preprocessing, Pipeline) and is_predictor(preprocessing.steps[-1][1]):
        raise ExportError(f"the preprocessing pipeline ends in a model ({type(preprocessing.steps[-1][1]).__name__}) "
                          f"and a model ({type(model).__name__}) is given too",
                          hint="pass the pipeline alone, build(pipeline), or its transformer steps "
                               "(pipeline[:-1]) as the preprocessing")
    if model is None and isinstance(preprocessing, Pipeline) and is_predictor(preprocessing.steps[-1][1]):
        steps = preprocessing.steps
        pre = Pipeline(steps[:-1]) if len(steps) > 1 else None
        return pre, steps[-1][1]
    if model is None and is_predictor(preprocessing):
        return None, preprocessing
    if isinstance(model, Pipeline) and is_predictor(model.steps[-1][1]):
        steps = model.steps[:-1]
        if preprocessing is not None:
            name = "preprocessing"
            while name in {step for step, _ in steps}:  # Pipeline refuses repeated step names
                name = f"_{name}"
            steps = [(name, preprocessing), *steps]
        return (Pipeline(steps) if steps else None), model.steps[-1][1]
    return preprocessing, model


def flattened(obj: Any) -> Any:
    """``obj`` with a hyper-parameter search replaced by its refitted ``best_estimator_``
    (:func:`~onegraph.export.adapters.models.searched`), a wrapper of a pipeline by that pipeline ending in the
    wrapper (:func:`wrapper_inside`), and a ``Pipeline`` whose last step is (one of those around) a pipeline
    ending in a predictor — ``make_pipeline(make_pipeline(preprocessing, model))``, what a helper wrapping a
    fitted pipeline makes — by one pipeline of the outer steps then the inner ones (an inner step's name is
    prefixed with its pipeline's where the outer steps use it), which predicts the same on every row."""
    from onegraph.export.adapters.models import searched

    obj = wrapper_inside(searched(obj))
    if not isinstance(obj, Pipeline) or not obj.steps:
        return obj
    outer, last = obj.steps[-1]
    inner = flattened(last)
    if not isinstance(inner, Pipeline) or not is_predictor(inner.steps[-1][1]):
        return obj
    names = {name for name, _ in obj.steps[:-1]}
    steps = [(f"{outer}_{name}" if name in names else name, step) for name, step in inner.steps]
    return Pipeline([*obj.steps[:-1], *steps])


def wrapper_inside(obj: Any) -> Any:
    """``obj``, or for a fitted wrapper of one estimator whose fitted estimator is a ``Pipeline(steps...,
    predictor)``: ``Pipeline(steps..., wrapper')``, ``wrapper'`` a copy of the wrapper around ``predictor``
    alone. The wrappers: ``TunedThresholdClassifierCV`` / ``FixedThresholdClassifier`` (``estimator_``),
    ``TransformedTargetRegressor`` (``regressor_``). Each predicts from its fitted estimator's response, and a
    pipeline's response is its last step's on the transformed rows, so the copy predicts the same on every
    row; the steps then share onegraph's preprocessing instead of being refused as a member's own.
    """
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.model_selection import (
        FixedThresholdClassifier,
        TunedThresholdClassifierCV,
    )

    from onegraph.export.adapters.models import unfrozen

    if isinstance(obj, TransformedTargetRegressor):
        attribute = "regressor_"
    elif isinstance(obj, (FixedThresholdClassifier, TunedThresholdClassifierCV)):
        attribute = "estimator_"
    else:
        return obj
    inner = unfrozen(getattr(obj, attribute, None))
    if inner is None and isinstance(obj, FixedThresholdClassifier):  # unfitted around a fitted estimator
        inner = unfrozen(obj.estimator)
    if not isinstance(inner, Pipeline) or not is_predictor(inner.steps[-1][1]):
        return obj
    name, last = inner.steps[-1]
    wrapped = copy.copy(obj)
    setattr(wrapped, attribute, last)
    for seen in ("n_features_in_", "feature_names_in_"):  # the columns it takes are now the last step's
        if seen not in vars(wrapped):
            continue  # not held (a property reading the estimator: TransformedTargetRegressor's)
        if hasattr(last, seen):
            setattr(wrapped, seen, getattr(last, seen))
        else:
            delattr(wrapped, seen)
    return Pipeline([*inner.steps[:-1], (name, wrapped)])


def is_predictor(obj: Any) -> bool:
    """A classifier, regressor or outlier detector (scikit-learn's estimator types of a pipeline's last step)."""
    return is_classifier(obj) or is_regressor(obj) or is_outlier_detector(obj)


def input_columns(preprocessing: Any, model: Any, frame: pd.DataFrame) -> list[str]:
    """The columns the first fitted object was fitted on (all of ``frame``'s when it does not say).

    Raises
    ------
    ExportError
        when the object was fitted on unnamed columns of another count; MissingColumnError naming a column
        it was fitted on that ``frame`` lacks; DataError naming a column name ``frame`` holds twice.
    """
    first = preprocessing if preprocessing is not None else model
    names = getattr(first, "feature_names_in_", None)
    if names is None:
        n = getattr(first, "n_features_in_", frame.shape[1])
        if n != frame.shape[1]:
            raise ExportError(f"{type(first).__name__} was fitted on {n} unnamed columns but the sample has "
                              f"{frame.shape[1]}", hint="fit on a DataFrame so columns are matched by name")
        return _once([str(c) for c in frame.columns], frame)
    names = [str(n) for n in names]
    present = {str(c) for c in frame.columns}
    if type(first).__module__.split(".")[0] == "lightgbm":
        names = _lightgbm_names(names, frame, present)
    for n in names:
        if n not in present:
            raise MissingColumnError(n, sorted(present))
    return _once(names, frame)


def _lightgbm_names(names: list[str], frame: pd.DataFrame, present: set[str]) -> list[str]:
    """LightGBM's feature names as the table's own: LightGBM stores a column fitted as ``"bill length"`` as
    ``"bill_length"`` (each space an underscore, in its C++ ``Dataset``) and says so in ``feature_names_in_``,
    while its ``predict`` takes the table as it was. A name absent from ``frame`` is the one column it
    renames to that name (``present``: the frame's column names as text)."""
    renamed: dict[str, list[str]] = {}
    for c in map(str, frame.columns):
        renamed.setdefault(c.replace(" ", "_"), []).append(c)
    return [n if n in present or len(renamed.get(n, [])) != 1 else renamed[n][0] for n in names]


def _once(names: list[str], frame: pd.DataFrame) -> list[str]:
    """``names``, each the name of one column of ``frame`` (one graph input per name: two could not be told
    apart at scoring)."""
    counts = pd.Index(map(str, frame.columns)).value_counts()
    for n in names:
        if counts.get(n, 0) > 1:
            raise DataError(f"column {n!r} appears more than once in the sample", hint="drop or rename the duplicates")
    return names


def column_key(frame: pd.DataFrame, name: str) -> Any:
    """The label of ``frame``'s column whose ``str()`` is ``name`` (columns may be named by ints)."""
    if name in frame.columns:
        return name
    for c in frame.columns:
        if str(c) == name:
            return c
    raise MissingColumnError(name, [str(c) for c in frame.columns])


def expected_outputs(pipeline: Any, model: Any, frame: pd.DataFrame) -> dict[Any, Any]:
    """What the source objects give on ``frame``: ``label`` / ``probabilities`` (classifier), ``prediction``
    (regressor), or the transformed columns by position (no model), in the graph's representation.

    Float32 / float16 columns are given to them as float64 (:func:`double_reference`): the graph reads their
    exact values and computes in double, where scikit-learn on float32 data computes in float32 (its answer
    ~1e-7 relative away, and any value computed as 0 from cancelling terms an absolute float32 rounding); for the
    same reason the objects' float32 fitted attributes (PCA's ``mean_`` and ``components_`` from float32 data)
    are read as float64, in copies (:func:`double_attributes`).

    Raises
    ------
    ExportError
        when the source objects themselves fail on ``frame`` (naming the exception: the sample is not data
        they take).
    """
    frame = _as_sklearn_reads(double_reference(frame))
    pipeline, model = double_attributes(pipeline), double_attributes(model)
    try:
        return _expected(pipeline, model, frame)
    except OnegraphError:
        raise
    except Exception as exc:  # noqa: BLE001 - scikit-learn's and the libraries' own errors on the sample
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ExportError(f"the source pipeline itself fails on the sample ({type(exc).__name__}: {first[:300]}), "
                          "so the graph cannot be compared with it",
                          hint="give build a sample the pipeline takes (the frame it was fitted on, with its "
                               "dtypes and missing values)") from None


def _expected(pipeline: Any, model: Any, frame: pd.DataFrame) -> dict[Any, Any]:
    x = frame
    if pipeline is not None:
        x = pipeline.transform(frame)
    elif model is not None:
        x = frame[[column_key(frame, n) for n in input_columns(None, model, frame)]]  # columns named 0, 1...
    if model is None:
        return {i: as_graph_values(f"column {i}", c) for i, c in enumerate(_columns(x))}
    from sklearn.base import is_classifier

    if is_outlier_detector(model):
        return {"label": np.asarray(model.predict(x)), "score": np.asarray(model.decision_function(x))}
    if hasattr(model, "predict_proba"):
        return {"label": np.asarray(model.predict(x)), "probabilities": np.asarray(model.predict_proba(x))}
    if is_classifier(model):
        return {"label": np.asarray(model.predict(x))}
    return {"prediction": np.asarray(model.predict(x))}


def double_attributes(obj: Any) -> Any:
    """``obj`` (a fitted estimator, possibly holding others) with every float32 / float16 array attribute of a
    fitted object (a name ending in ``_``) as float64: a deep copy when there is one, else ``obj`` itself."""
    if obj is None or next(_narrow_attributes(obj, set()), None) is None:
        return obj
    import copy

    wide = copy.deepcopy(obj)
    for owner, name in list(_narrow_attributes(wide, set())):
        setattr(owner, name, getattr(owner, name).astype(np.float64))
    return wide


def _children(obj: Any) -> list[Any]:
    found = []
    for v in vars(obj).values() if hasattr(obj, "__dict__") else ():
        items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else [v]
        for item in items:
            for part in item if isinstance(item, tuple) else [item]:  # ColumnTransformer's (name, step, columns)
                if hasattr(part, "get_params"):
                    found.append(part)
    return found


def _narrow_attributes(obj: Any, seen: set[int]) -> Iterator[tuple[Any, str]]:
    """(object, attribute name) of every float32 / float16 fitted array in ``obj`` and the objects it holds."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    for name, v in vars(obj).items() if hasattr(obj, "__dict__") else ():
        if name.endswith("_") and isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.itemsize < 8:
            yield obj, name
    for child in _children(obj):
        yield from _narrow_attributes(child, seen)


def double_reference(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its float32 / float16 columns (numpy, pandas ``Float32``, Arrow) as float64, the same
    values exactly; ``frame`` itself when it has none."""
    wider = {}
    for j, dtype in enumerate(frame.dtypes):
        if isinstance(dtype, np.dtype):
            if dtype.kind == "f" and dtype.itemsize < 8:
                wider[j] = np.dtype(np.float64)
        elif isinstance(dtype, pd.Float32Dtype):
            wider[j] = pd.Float64Dtype()
        elif isinstance(dtype, pd.ArrowDtype):
            import pyarrow as pa

            if pa.types.is_float32(dtype.pyarrow_dtype) or pa.types.is_float16(dtype.pyarrow_dtype):
                wider[j] = pd.ArrowDtype(pa.float64())
    if not wider:
        return frame
    out = frame.copy(deep=False)
    for j, dtype in wider.items():
        out.isetitem(j, frame.iloc[:, j].astype(dtype))
    return out


def _as_sklearn_reads(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with Arrow-backed text columns (a polars or Arrow sample, converted) as object columns whose
    missing values are None: what scikit-learn reads from the polars frame itself (its checks cannot compare
    ``pd.NA``: "boolean value of NA is ambiguous")."""
    text = [j for j, dtype in enumerate(frame.dtypes) if isinstance(dtype, pd.ArrowDtype) and dtype.kind in "OUS"]
    if not text:
        return frame
    out = frame.copy(deep=False)
    for j in text:
        out.isetitem(j, pd.Series(frame.iloc[:, j].to_numpy(dtype=object, na_value=None), index=frame.index,
                                  dtype=object))
    return out


def _columns(x: Any) -> list[Any]:
    if hasattr(x, "toarray"):
        x = x.toarray()
    if hasattr(x, "to_pandas") and not isinstance(x, pd.DataFrame):
        x = x.to_pandas()
    if isinstance(x, pd.DataFrame):
        return [x.iloc[:, j] for j in range(x.shape[1])]
    arr = np.asarray(x)
    return [arr[:, j] for j in range(arr.shape[1])]


def model_files(objects: Sequence[Any]) -> list[Any]:
    """The files among ``objects``: paths, and the paths an :class:`OnnxModel` was read from."""
    from onegraph.export.adapters.onnx_file import OnnxModel

    files = []
    for obj in objects:
        source = obj.model if isinstance(obj, OnnxModel) else obj
        if isinstance(source, (str, os.PathLike)):
            files.append(source)
    return files
