"""Categorical columns: one-hot, ordinal, frequency and target encoding, rare-category grouping.

One-hot and ordinal encoding wrap scikit-learn's encoders (``categories_``, ``drop``, ``handle_unknown``, infrequent categories,
missing values as a category) and emit one ``ai.onnx.ml.LabelEncoder`` per column (a hash lookup from
the category to its output position, in double for numbers and NaN included, so high-cardinality columns
stay fast) followed, for one-hot, by a ``Gather`` of rows of a constant 0/1 table (several columns' codes added
into one lookup while the table is small; ``OneHot`` for a column with many categories).

How each category maps to an output is not re-derived from scikit-learn's rules: the fitted encoder is
*probed* with one row per known category (and one unknown value), so drop / infrequent / missing-category
handling in the graph is exactly what ``transform`` does. The one-hot probe asks for sparse output, so
exporting costs memory linear in the number of categories. With ``handle_unknown="error"`` the graph gets an
extra boolean output ``onegraph.check:unknown:<column>`` and :func:`onegraph.score` raises
:class:`~onegraph.errors.UnknownCategoryError` naming the column and the values.

Frequency and target encoding and rare-category grouping are lookups too: one ``LabelEncoder`` from the
category to its learned value, with a default for categories never seen in fit.
"""

from __future__ import annotations

import copy
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
import sklearn.preprocessing
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions

from onegraph.contract.columns import MISSING_STRING, ColumnSpec, category_text
from onegraph.contract.outputs import CHECK_PREFIXES
from onegraph.emit import (
    BOOL,
    DOUBLE,
    FLOAT,
    INT64,
    INT64_MIN,
    STRING,
    Col,
    GraphBuilder,
    register_emitter,
    to_tensor,
)
from onegraph.errors import ExportError
from onegraph.frame.transformers.base import ColumnWise, category_values, texts
from onegraph.frame.transformers.wrapped import SklearnBacked

__all__ = ["CHECK_UNKNOWN", "ONE_HOT_TABLE", "PROBE_CELLS", "probes", "OneHotEncoder", "OrdinalEncoder", "encoder_keys", "label_lookup",
           "lookup_index", "emit_one_hot_encoder", "emit_ordinal_encoder", "FrequencyEncoder",
           "TargetEncoder", "emit_target_encoder", "RareCategoryGrouper"]

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
    return v is None or v is pd.NaT or (isinstance(v, (float, np.floating)) and np.isnan(v)) or (
        isinstance(v, (np.datetime64, np.timedelta64)) and np.isnat(v))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating, np.bool_))


def _unknown_value(cats: np.ndarray) -> Any:
    """A value of the categories' type that no category is (the unknown row of :func:`probes`)."""
    if cats.dtype == object and any(not _is_missing(c) and not _is_number(c) for c in cats):
        # text, or the values of a pandas category column of other types (Interval, Period, Timestamp, date),
        # which the graph reads as their text (:func:`encoder_keys`)
        return "\uffff\uffffunknown"
    if cats.dtype.kind in "Mm":  # a category column of naive datetimes / timedeltas: one tick past the last
        present = cats[~np.isnat(cats)]
        step = np.timedelta64(1, np.datetime_data(cats.dtype)[0])
        return present.max() + step if present.size else np.zeros(1, dtype=cats.dtype)[0] + step
    if cats.dtype.kind in "iu":  # integer categories: an integer no category is (exact, however large)
        known = {int(c) for c in cats}
        return next(v for v in (max(known) + 1, min(known) - 1, 0) if v not in known and -2**63 < v < 2**63)
    finite = [float(c) for c in cats if not _is_missing(c)]
    return (max(finite) if finite else 0.0) + 1.5


#: the most cells (rows x input columns) of one probe frame: columns are probed together while their
#: categories fit, so a wide table costs a few ``transform`` calls, not one per column over all columns
PROBE_CELLS = 1 << 22


def probes(est: Any) -> list[tuple[Any, Any]]:
    """``transform``'s output for each known category of every input column and for an unknown one,
    restricted to that column's output columns: ``[(rows for the categories, row for the unknown value or
    None when the encoder refuses unknowns), ...]`` in input-column order.

    For a :class:`~sklearn.preprocessing.OneHotEncoder` scipy CSR matrices (``transform`` with
    ``sparse_output=True``, on a copy of the encoder: memory linear in the number of categories; dense, a
    ``(categories + 1) x categories`` probe of a 56,007-category column took 23.4 GiB), for an
    :class:`~sklearn.preprocessing.OrdinalEncoder` float64 arrays ``[n, 1]``. Columns are probed together
    (their values side by side, shorter ones padded with their first category) in frames of at most
    :data:`PROBE_CELLS` cells: ``transform`` encodes each column on its own, so a column's rows are what a
    probe of that column alone gives (one call per column over all columns took 32 of 40 s at 500 columns).
    """
    cats = est.categories_
    widths = getattr(est, "_n_features_outs", None) if hasattr(est, "drop_idx_") else [1] * len(cats)
    if widths is None:
        raise ExportError(f"{type(est).__name__} lacks the fitted layout onegraph reads (_n_features_outs)",
                          hint="use scikit-learn >= 1.2")
    stops = np.cumsum([int(w) for w in widths])
    refuses = est.handle_unknown == "error"
    values = [list(c) + ([] if refuses else [_unknown_value(c)]) for c in cats]
    # integer categories probe as int64: ids beyond 2**53 would merge through float64
    dtype = object if any(c.dtype == object or c.dtype.kind in "Mm" for c in cats) else (
        np.int64 if all(c.dtype.kind in "iu" for c in cats) else np.float64)
    encoder = copy.copy(est)  # the caller's encoder is left as it is
    encoder._sklearn_output_config = {"transform": "default"}  # arrays, whatever set_output asked
    if hasattr(est, "sparse_output"):
        encoder.sparse_output = True
    found: list[tuple[Any, Any]] = []
    for batch in _probe_batches([len(v) for v in values], len(cats)):
        probe = np.empty((max(len(values[j]) for j in batch), len(cats)), dtype=dtype)
        for j, c in enumerate(cats):
            probe[:, j] = c[0]
        for j in batch:
            probe[:len(values[j]), j] = np.asarray(values[j], dtype=dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = encoder.transform(probe)
        out = out.tocsr() if hasattr(out, "tocsr") else np.asarray(out, dtype=np.float64)
        for j in batch:
            block = out[:len(values[j]), stops[j] - int(widths[j]):stops[j]]
            if hasattr(block, "eliminate_zeros"):
                block.eliminate_zeros()
            found.append((block, None) if refuses else (block[:-1], block[-1:]))
    return found


def _probe_batches(lengths: list[int], columns: int) -> list[list[int]]:
    """Consecutive input columns whose probe frame (longest column x ``columns``) stays under
    :data:`PROBE_CELLS`; a column too long alone is a batch of its own."""
    batches: list[list[int]] = []
    longest = 0
    for j, n in enumerate(lengths):
        if batches and max(longest, n) * columns <= PROBE_CELLS:
            batches[-1].append(j)
            longest = max(longest, n)
        else:
            batches.append([j])
            longest = n
    return batches


def _positions(block: Any) -> np.ndarray:
    """int64 ``[n]``: the column of each row's 1 in a one-hot CSR ``block`` (``[n, width]``), ``width`` for a
    row of zeros (OneHot's out-of-range index, which gives all zeros)."""
    n, width = block.shape
    counts = np.diff(block.indptr)
    if counts.size and counts.max() > 1:  # never for a one-hot encoder: each row has one category
        raise ExportError("OneHotEncoder's transform gave a category two output columns; onegraph cannot map it")
    positions = np.full(n, width, dtype=np.int64)
    hit = counts == 1
    positions[hit] = block.indices[block.indptr[:-1][hit]]
    return positions


def encoder_keys(col: Col, cats: np.ndarray) -> tuple[str, np.ndarray]:
    """LabelEncoder keys matching how the column is held in the graph: strings; int64 nanoseconds for a
    datetime / timedelta column (scikit-learn's ``datetime64`` / ``Timestamp`` categories); int64 for an integer
    column whose categories are integers (exact beyond 2**53; a missing category as INT64_MIN, the column's
    missing value); else doubles (NaN included)."""
    if col.kind == "string":
        return "string", np.asarray([MISSING_STRING if _is_missing(c) else category_text(c) for c in cats],
                                    dtype=object)
    if col.kind in ("datetime", "timedelta"):  # int64 nanoseconds (UTC instants when tz-aware), NaT's INT64_MIN
        to = pd.Timestamp if col.kind == "datetime" else pd.Timedelta
        return "int64", np.asarray([INT64_MIN if _is_missing(c) else to(c).as_unit("ns").value for c in cats],
                                   dtype=np.int64)
    if col.dtype == INT64 and all(_is_missing(c) or _is_integer(c) for c in cats):
        return "int64", np.asarray([INT64_MIN if _is_missing(c) else int(c) for c in cats], dtype=np.int64)
    return "double", np.asarray([np.nan if _is_missing(c) else float(c) for c in cats], dtype=np.float64)


def _is_integer(c: Any) -> bool:
    return isinstance(c, (int, np.integer)) and not isinstance(c, bool) or (
        isinstance(c, (float, np.floating)) and float(c).is_integer() and abs(c) <= 2**53)


def label_lookup(g: GraphBuilder, col: Col, keys: np.ndarray, values: np.ndarray, default: Any):
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
    if col.kind == "string" or (col.dtype == INT64 and keys.dtype == np.int64):
        x = g.vector(col)
    elif col.dtype == INT64 and keys.dtype == np.float64 and np.all(np.isnan(keys) | (keys == np.round(keys))):
        # integer columns are looked up as they are (missing = INT64_MIN): no cast to double
        x = g.vector(col)
        keys = np.where(np.isnan(keys), float(INT64_MIN), keys).astype(np.int64)  # -2**63 is exact
    else:
        x = g.vector(g.as_double(col))
    dtype = INT64 if vals.dtype == np.int64 else STRING if vals.dtype == object else DOUBLE
    return g.op("LabelEncoder", x, domain="ai.onnx.ml",
                keys_tensor=to_tensor(keys), values_tensor=to_tensor(vals),
                default_tensor=to_tensor(np.asarray([default], dtype=vals.dtype)), dtype=dtype)


def lookup_index(g: GraphBuilder, col: Col, keys: np.ndarray):
    """int64 :class:`~onegraph.frame.tensors.Val`: the position of each value of ``col`` in ``keys``
    (strings, or doubles with NaN for missing), -1 where absent."""
    from onegraph.frame.tensors import Val

    return Val(g, label_lookup(g, col, keys, np.arange(len(keys), dtype=np.int64), -1), INT64)


#: what to set on each encoder so it takes unseen categories (the error's hint; OrdinalEncoder has no 'ignore')
UNKNOWN_HINTS = {
    "OneHotEncoder": "fit on data that includes them, or set handle_unknown='ignore' or 'infrequent_if_exist'",
    "OrdinalEncoder": "fit on data that includes them, or set handle_unknown='use_encoded_value' with "
                      "unknown_value=-1 (or np.nan)",
}


def _check_unknown(g: GraphBuilder, col: Col, keys: np.ndarray, encoder: str) -> None:
    """Add the boolean output flagging rows whose value is not a known category of ``encoder``."""
    known = label_lookup(g, col, keys, np.zeros(len(keys), np.int64), 1)
    flag = g.op("Cast", known, to=BOOL, dtype=BOOL)
    g.flag(flag, "unknown_category", col.name, hint=UNKNOWN_HINTS[encoder])


#: the most doubles a one-hot lookup table holds (512 KiB); columns with more categories use ``OneHot``
ONE_HOT_TABLE = 65536


@register_emitter(sklearn.preprocessing.OneHotEncoder)
def emit_one_hot_encoder(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """One-hot columns as rows of a constant table: each column's ``LabelEncoder`` gives the position of its 1
    (``width`` for a row of zeros) scaled by a stride, so that consecutive columns whose combined table stays
    under :data:`ONE_HOT_TABLE` doubles are one ``Add`` of their codes and one ``Gather`` of double rows (for
    the 0/1 values alike, the same values in fewer nodes). Larger columns use ``OneHot`` (float, cast)."""
    if len(cols) != len(est.categories_):
        raise ExportError(f"OneHotEncoder was fitted on {len(est.categories_)} columns but receives {len(cols)}")
    names = [str(n) for n in est.get_feature_names_out([c.name for c in cols])]
    encoded = []  # (column, keys, positions of the 1 per category, position for an unknown value, width)
    for i, (col, (rows, unknown)) in enumerate(zip(cols, probes(est))):
        width = rows.shape[1]
        if width:
            # position of the 1 for each category; ``width`` (out of range) gives all zeros
            _, keys = encoder_keys(col, est.categories_[i])
            encoded.append((col, keys, _positions(rows), width if unknown is None else int(_positions(unknown)[0]),
                            width))
            if unknown is None:
                _check_unknown(g, col, keys, "OneHotEncoder")
    if not encoded:
        return []
    blocks = [_one_hot_group(g, group) for group in _table_groups(encoded)]
    block = blocks[0] if len(blocks) == 1 else g.op("Concat", *blocks, axis=1, dtype=DOUBLE)
    return g.block(block, names, "float", DOUBLE)


def _table_groups(encoded: list[tuple]) -> list[list[tuple]]:
    """Consecutive columns grouped while the table of their combinations (``prod(width + 1)`` rows of
    ``sum(width)`` doubles) stays under :data:`ONE_HOT_TABLE`; a column too large alone is a group of its own."""
    groups: list[list[tuple]] = []
    rows = cells = 0
    for item in encoded:
        width = item[4]
        if groups and rows * (width + 1) * (cells + width) <= ONE_HOT_TABLE:
            groups[-1].append(item)
            rows, cells = rows * (width + 1), cells + width
        else:
            groups.append([item])
            rows, cells = width + 1, width
    return groups


def _one_hot_group(g: GraphBuilder, group: list[tuple]):
    """``[N, sum(width)]`` double one-hot block of ``group``'s columns (see :func:`emit_one_hot_encoder`)."""
    widths = [item[4] for item in group]
    if (widths[0] + 1) * widths[0] > ONE_HOT_TABLE:  # a large column alone: OneHot (float) then a cast
        col, keys, position, default, width = group[0]
        index = label_lookup(g, col, keys, position, default)
        hot = g.op("OneHot", index, g.const(np.int64(width), "depth"),
                   g.const(np.array([0.0, 1.0], np.float32), "onehot_values"), axis=-1, dtype=FLOAT)
        return g.op("Cast", hot, to=DOUBLE, dtype=DOUBLE)
    # code = sum(position_i * stride_i): the last column varies fastest
    strides = np.cumprod([1] + [w + 1 for w in widths[:0:-1]])[::-1].astype(np.int64)
    code = None
    for (col, keys, position, default, _), stride in zip(group, strides):
        index = label_lookup(g, col, keys, position * stride, int(default * stride))
        code = index if code is None else g.op("Add", code, index, dtype=INT64)
    # table row of each code: the columns' one-hot rows side by side (position == width: zeros)
    combos = np.indices([w + 1 for w in widths]).reshape(len(widths), -1)
    table = np.concatenate([np.eye(w + 1, w, dtype=np.float64)[c] for w, c in zip(widths, combos)], axis=1)
    return g.op("Gather", g.const(table, "onehot_table"), code, axis=0, dtype=DOUBLE)


@register_emitter(sklearn.preprocessing.OrdinalEncoder)
def emit_ordinal_encoder(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    if len(cols) != len(est.categories_):
        raise ExportError(f"OrdinalEncoder was fitted on {len(est.categories_)} columns but receives {len(cols)}")
    names = [str(n) for n in est.get_feature_names_out([c.name for c in cols])]
    out = []
    for i, (col, (rows, unknown)) in enumerate(zip(cols, probes(est))):
        kind, keys = encoder_keys(col, est.categories_[i])
        default = np.nan if unknown is None else float(unknown[0, 0])
        value = label_lookup(g, col, keys, rows[:, 0].astype(np.float64), default)
        if unknown is None:
            _check_unknown(g, col, keys, "OrdinalEncoder")
        out.append(Col(names[i], "float", value, DOUBLE))
    return out


# -- frequency, target and rare-category encodings -------------------------------------------------
def _value_table(g: GraphBuilder, col: Col, cats: list, values: np.ndarray, default: float) -> Col:
    """A double column: ``values[i]`` where ``col`` holds ``cats[i]`` (missing included), else ``default``."""
    _, keys = encoder_keys(col, np.asarray(cats, dtype=object))
    out = label_lookup(g, col, keys, np.asarray(values, dtype=np.float64), float(default))
    return Col(col.name, "float", out, DOUBLE)


class FrequencyEncoder(ColumnWise):
    """Each value becomes how often it occurs in fit: ``s.map(s_fit.value_counts(normalize, dropna=False))``.

    Parameters
    ----------
    normalize:
        False: counts; True: fractions of the rows seen in fit.
    unseen:
        Result for a value never seen in fit (default 0: it occurred zero times).

    Missing values are counted as one more value (their own frequency). Output float64, same names.
    """

    _parameter_constraints = {"normalize": ["boolean"], "unseen": [Real]}

    def __init__(self, *, normalize: bool = False, unseen: float = 0.0) -> None:
        self.normalize = normalize
        self.unseen = unseen

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        self.frequencies_ = {}

    def _fit_column(self, spec: ColumnSpec, values: pd.Series) -> None:
        categories = pd.Series(category_values(spec, values), dtype=object)
        self.frequencies_[spec.name] = categories.value_counts(normalize=self.normalize, dropna=False)

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray:
        categories = pd.Series(category_values(spec, values), dtype=object)
        table = self.frequencies_[spec.name]
        found = table.index.get_indexer(pd.Index(categories, dtype=object))
        return np.where(found >= 0, table.to_numpy(np.float64)[found], float(self.unseen))

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> Col:
        table = self.frequencies_[spec.name]
        return _value_table(g, col, list(table.index), table.to_numpy(np.float64), self.unseen)


class TargetEncoder(SklearnBacked):
    """Each category becomes a smoothed mean of the target, as :class:`sklearn.preprocessing.TargetEncoder`.

    ``fit_transform`` returns *out-of-fold* encodings (cross fitting with ``cv`` folds, so a row's own
    target does not leak into its feature: use it through a ``Pipeline``); ``transform`` and the graph use
    the encodings learned on all the data (``encodings_``), and ``target_mean_`` for categories never
    seen. Smoothing (``smooth``): ``"auto"`` (empirical Bayes) or a weight ``m`` in
    ``(n * mean_category + m * mean_target) / (n + m)``. Missing values are a category. Binary and
    continuous targets give one column per feature (same name); a multiclass target one per class
    (``<column>_<class>``).
    """

    sklearn_class = sklearn.preprocessing.TargetEncoder
    convert = staticmethod(category_values)

    def __init__(self, *, categories: Any = "auto", target_type: str = "auto", smooth: Any = "auto",
                 cv: Any = 5) -> None:
        self.categories = categories
        self.target_type = target_type
        self.smooth = smooth
        self.cv = cv

    def _fit_transform(self, frame: pd.DataFrame, y: Any) -> pd.DataFrame:
        """Fit, and return the out-of-fold encodings of ``frame`` (scikit-learn's cross fitting)."""
        self.estimator_ = clone(self.sklearn_class(**self._sklearn_params()))
        out = self.estimator_.fit_transform(self._matrix(frame), y)
        self._copy_learned()
        return pd.DataFrame(out, columns=self._names_out(), index=frame.index)


@register_emitter(sklearn.preprocessing.TargetEncoder)
def emit_target_encoder(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    names = [str(n) for n in est.get_feature_names_out([c.name for c in cols])]
    classes = len(est.classes_) if est.target_type_ == "multiclass" else 1
    means = np.atleast_1d(np.asarray(est.target_mean_, dtype=np.float64))
    out = []
    for i, col in enumerate(cols):
        for j in range(classes):
            enc = est.encodings_[i * classes + j]
            c = _value_table(g, col, list(est.categories_[i]), enc, means[j if classes > 1 else 0])
            out.append(c.renamed(names[len(out)]))
    return out


class RareCategoryGrouper(ColumnWise):
    """Replace categories seen too rarely in fit by one label (IBM's ``MinorityTransformer``).

    Parameters
    ----------
    min_count:
        Categories seen fewer times than this in fit are rare.
    min_frequency:
        Or: categories making up less than this fraction of the rows are rare.
    other:
        The label rare categories become.
    unseen:
        ``"other"`` (default): categories never seen in fit become ``other`` too; ``"keep"``: they stay.

    Text columns; missing values stay missing. pandas: ``s.where(s.isin(kept) | s.isna(), other)``.
    """

    accepts = ("string",)
    _parameter_constraints = {
        "min_count": [Interval(Integral, 0, None, closed="left"), None],
        "min_frequency": [Interval(Real, 0, 1, closed="both"), None],
        "other": [str],
        "unseen": [StrOptions({"other", "keep"})],
    }

    def __init__(self, *, min_count: int | None = None, min_frequency: float | None = None,
                 other: str = "other", unseen: str = "other") -> None:
        self.min_count = min_count
        self.min_frequency = min_frequency
        self.other = other
        self.unseen = unseen

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        if (self.min_count is None) == (self.min_frequency is None):  # two parameters: not declarable
            problem = "and min_frequency are both None" if self.min_count is None else "is given with min_frequency"
            raise self._refuse("min_count", problem, hint="give one of min_count or min_frequency")
        self.frequent_, self.rare_ = {}, {}

    def _fit_column(self, spec: ColumnSpec, values: pd.Series) -> None:
        counts = pd.Series(texts(spec, values), dtype=object).value_counts(dropna=True)
        limit = self.min_count if self.min_count is not None else self.min_frequency * len(values)
        self.frequent_[spec.name] = [str(v) for v in counts.index[counts.to_numpy() >= limit]]
        self.rare_[spec.name] = [str(v) for v in counts.index[counts.to_numpy() < limit]]

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray:
        s = pd.Series(texts(spec, values), dtype=object)
        keep = s.isin(self.frequent_[spec.name]) | s.isna()
        if self.unseen == "keep":
            keep |= ~s.isin(self.rare_[spec.name])
        return s.where(keep, self.other).to_numpy(object)

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> Col:
        from onegraph.frame.tensors import Val, where

        marked = self.rare_[spec.name] if self.unseen == "keep" else self.frequent_[spec.name]
        keys = np.asarray(marked + [MISSING_STRING], dtype=object)
        index = lookup_index(g, col, keys)
        x = Val(g, g.vector(col), STRING)
        # "other" mode: keys are the kept values (and missing); "keep" mode: keys are the rare ones
        grouped = (index < 0) if self.unseen == "other" else (index >= 0) & (index < len(marked))
        return Col(col.name, "string", where(grouped, str(self.other), x).value, STRING)
