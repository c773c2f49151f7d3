"""Categorical columns: one-hot and ordinal encoding.

Both wrap scikit-learn's encoders (``categories_``, ``drop``, ``handle_unknown``, infrequent categories,
missing values as a category) and emit one ``ai.onnx.ml.LabelEncoder`` per column (a hash lookup from
the category to its output position, in double for numbers and NaN included, so high-cardinality columns
stay fast) followed, for one-hot, by ``OneHot``.

How each category maps to an output is not re-derived from scikit-learn's rules: the fitted encoder is
*probed* with one row per known category (and one unknown value), so drop / infrequent / missing-category
handling in the graph is exactly what ``transform`` does. With ``handle_unknown="error"`` the graph gets an
extra boolean output ``onegraph.check:unknown:<column>`` and :func:`onegraph.score` raises
:class:`~onegraph.errors.UnknownCategoryError` naming the column and the values.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import sklearn.preprocessing

from onegraph.emit import BOOL, CHECK_PREFIXES, DOUBLE, FLOAT, INT64, Col, GraphBuilder, register_emitter, to_tensor
from onegraph.errors import ExportError
from onegraph.frame.schema import MISSING_STRING
from onegraph.frame.transformers.base import category_values
from onegraph.frame.transformers.wrapped import SklearnBacked

#: Prefix of the boolean graph outputs that flag rows a step refuses (see :func:`onegraph.score`).
CHECK_UNKNOWN = CHECK_PREFIXES["unknown_category"]


class OneHotEncoder(SklearnBacked):
    """One 0/1 column per category (``<column>_<category>``), as :class:`sklearn.preprocessing.OneHotEncoder`.

    Takes text, category, bool and integer columns (and floats, whose values are categories). Missing
    values form their own category (``<column>_nan``) when present in fit. ``handle_unknown``: ``"error"``
    (scoring refuses unseen categories), ``"ignore"`` (all zeros) or ``"infrequent_if_exist"`` (counted
    with the infrequent categories grouped by ``min_frequency`` / ``max_categories``).
    """

    sklearn_class = sklearn.preprocessing.OneHotEncoder
    convert = staticmethod(category_values)

    def __init__(self, *, categories: Any = "auto", drop: Any = None, handle_unknown: str = "error",
                 min_frequency: Any = None, max_categories: int | None = None) -> None:
        self.categories = categories
        self.drop = drop
        self.handle_unknown = handle_unknown
        self.min_frequency = min_frequency
        self.max_categories = max_categories

    def _sklearn_params(self) -> dict:
        return {**self.get_params(), "sparse_output": False, "dtype": np.float64}


class OrdinalEncoder(SklearnBacked):
    """Each category becomes its index in ``categories_`` (a float), as :class:`sklearn.preprocessing.OrdinalEncoder`.

    Missing values encode to ``encoded_missing_value`` (NaN by default); unseen categories to
    ``unknown_value`` when ``handle_unknown="use_encoded_value"``, else scoring refuses them.
    """

    sklearn_class = sklearn.preprocessing.OrdinalEncoder
    convert = staticmethod(category_values)

    def __init__(self, *, categories: Any = "auto", handle_unknown: str = "error", unknown_value: Any = None,
                 encoded_missing_value: float = np.nan, min_frequency: Any = None,
                 max_categories: int | None = None) -> None:
        self.categories = categories
        self.handle_unknown = handle_unknown
        self.unknown_value = unknown_value
        self.encoded_missing_value = encoded_missing_value
        self.min_frequency = min_frequency
        self.max_categories = max_categories

    def _sklearn_params(self) -> dict:
        return {**self.get_params(), "dtype": np.float64}


# -- probing the fitted encoder -------------------------------------------------------------------
def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, (float, np.floating)) and np.isnan(v))


def _unknown_value(cats: np.ndarray) -> Any:
    if cats.dtype == object and any(isinstance(c, str) for c in cats):
        return "\uffff\uffffunknown"
    finite = [float(c) for c in cats if not _is_missing(c)]
    return (max(finite) if finite else 0.0) + 1.5


def _probe(est: Any, feature: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``transform`` output rows for each known category of ``feature`` and for an unknown one.

    Returns (rows for the categories, row for the unknown value or None when the encoder refuses unknowns).
    The output is restricted to the columns of ``feature``.
    """
    cats = est.categories_
    widths = getattr(est, "_n_features_outs", None) if hasattr(est, "drop_idx_") else [1] * len(cats)
    if widths is None:
        raise ExportError(f"{type(est).__name__} lacks the fitted layout onegraph reads (_n_features_outs)",
                          hint="use scikit-learn >= 1.2")
    start = int(sum(widths[:feature]))
    stop = start + int(widths[feature])
    values = list(cats[feature])
    refuses = est.handle_unknown == "error"
    if not refuses:
        values.append(_unknown_value(cats[feature]))
    dtype = object if any(c.dtype == object for c in cats) else np.float64
    probe = np.empty((len(values), len(cats)), dtype=dtype)
    for j, c in enumerate(cats):
        probe[:, j] = c[0]
    probe[:, feature] = np.asarray(values, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = est.transform(probe)
    out = np.asarray(out.toarray() if hasattr(out, "toarray") else out, dtype=np.float64)[:, start:stop]
    if refuses:
        return out, None
    return out[:-1], out[-1]


def _keys(col: Col, cats: np.ndarray) -> tuple[str, np.ndarray]:
    """LabelEncoder keys matching how the column is held in the graph: strings, or doubles (NaN included)."""
    if col.kind == "string":
        return "string", np.asarray([MISSING_STRING if _is_missing(c) else str(c) for c in cats], dtype=object)
    return "double", np.asarray([np.nan if _is_missing(c) else float(c) for c in cats], dtype=np.float64)


def _lookup(g: GraphBuilder, col: Col, keys: np.ndarray, values: np.ndarray, default: Any):
    """``ai.onnx.ml.LabelEncoder`` (v4, tensor attributes) from the column to ``values``.

    A text column an imputer filled is read before filling, with the missing marker mapped where the fill
    value maps: the same result, without the imputer's nodes.
    """
    vals = np.asarray(values)
    if col.filled_from is not None:
        source, fill = col.filled_from
        hit = np.flatnonzero(keys == fill)
        mapped = vals[hit[0]] if hit.size else np.asarray(default, dtype=vals.dtype)
        keep = keys != MISSING_STRING
        keys = np.append(keys[keep], np.asarray([MISSING_STRING], dtype=object))
        vals = np.append(vals[keep], mapped)
        col = source
    x = g.vector(col) if col.kind == "string" else g.vector(g.as_double(col))
    return g.op("LabelEncoder", x, domain="ai.onnx.ml",
                keys_tensor=to_tensor(keys), values_tensor=to_tensor(vals),
                default_tensor=to_tensor(np.asarray([default], dtype=vals.dtype)),
                dtype=INT64 if vals.dtype == np.int64 else DOUBLE)


def _check_unknown(g: GraphBuilder, col: Col, keys: np.ndarray) -> None:
    """Add the boolean output flagging rows whose value is not a known category."""
    known = _lookup(g, col, keys, np.zeros(len(keys), np.int64), 1)
    flag = g.op("Cast", known, to=BOOL, dtype=BOOL)
    g.flag(flag, "unknown_category", col.name)


@register_emitter(sklearn.preprocessing.OneHotEncoder)
def emit_one_hot_encoder(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    if len(cols) != len(est.categories_):
        raise ExportError(f"OneHotEncoder was fitted on {len(est.categories_)} columns but receives {len(cols)}")
    names = [str(n) for n in est.get_feature_names_out([c.name for c in cols])]
    blocks = []
    for i, col in enumerate(cols):
        rows, unknown = _probe(est, i)
        width = rows.shape[1]
        if width == 0:
            continue
        # position of the 1 for each category; ``width`` (out of OneHot's range) gives all zeros
        position = np.where(rows.any(axis=1), rows.argmax(axis=1), width).astype(np.int64)
        default = width if unknown is None or not unknown.any() else int(unknown.argmax())
        kind, keys = _keys(col, est.categories_[i])
        index = _lookup(g, col, keys, position, default)
        blocks.append(g.op("OneHot", index, g.const(np.int64(width), "depth"),
                           g.const(np.array([0.0, 1.0], np.float32), "onehot_values"), axis=-1, dtype=FLOAT))
        if unknown is None:
            _check_unknown(g, col, keys)
    if not blocks:
        return []
    block = blocks[0] if len(blocks) == 1 else g.op("Concat", *blocks, axis=1, dtype=FLOAT)
    return g.block(g.op("Cast", block, to=DOUBLE), names, "float", DOUBLE)


@register_emitter(sklearn.preprocessing.OrdinalEncoder)
def emit_ordinal_encoder(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    if len(cols) != len(est.categories_):
        raise ExportError(f"OrdinalEncoder was fitted on {len(est.categories_)} columns but receives {len(cols)}")
    names = [str(n) for n in est.get_feature_names_out([c.name for c in cols])]
    out = []
    for i, col in enumerate(cols):
        rows, unknown = _probe(est, i)
        kind, keys = _keys(col, est.categories_[i])
        default = np.nan if unknown is None else float(unknown[0])
        value = _lookup(g, col, keys, rows[:, 0].astype(np.float64), default)
        if unknown is None:
            _check_unknown(g, col, keys)
        out.append(Col(names[i], "float", value, DOUBLE))
    return out
