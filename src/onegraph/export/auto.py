"""Preprocessing and model chosen from the data, for ``onegraph build DATA --target COL``.

Per column kind (see :mod:`onegraph.contract.columns`):

* numbers and booleans: median imputation (with a missing-indicator when the column has gaps), then
  standard scaling;
* text and categories: missing values become their own category, then one-hot encoding of the 20 most
  frequent categories (the rest grouped as "infrequent"; categories unseen in fit count as infrequent);
* datetimes, and text columns whose values (95% or more of those present) are dates, such as a CSV's
  date column — ISO 8601, else one of :data:`DATE_FORMATS` (``%m/%d/%Y``, ``%d.%m.%Y``, ``%d-%b-%Y``,
  ``%m/%d/%Y %I:%M %p``..., named in a note): calendar parts (year, month, day, day of week, day of year;
  hour and minute when some value has a time of day) with :class:`~onegraph.frame.DateParts`, computed in the column's own
  time zone and parsed in the graph for text; then median imputation (missing dates) and scaling;
* durations are left out (a note says so).

Columns whose values are all distinct text (identifiers, free text) are left out too.

A text column whose values are nearly all numbers (:data:`NUMBER_SHARE` of those present or more) is most
likely a numeric column with a few stray entries (``?``, ``n/a``, a unit): it is still encoded as categories,
as the model will read it, and :attr:`Plan.notes` says so, naming the column and the stray values and rows, so
the user can blank them (missing) and build again to get a numeric column.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

from onegraph.contract.columns import MISSING_STRING, NA_INT64, spec_for
from onegraph.contract.dates import DATE_SHARE, looks_like_date
from onegraph.contract.feeds import to_feed
from onegraph.errors import ColumnTypeError, DataError, ExportError
from onegraph.frame.dateparse import date_format, parse_pandas
from onegraph.frame.transformers import (
    DateParts,
    OneHotEncoder,
    SimpleImputer,
    StandardScaler,
)

__all__ = ["CLASSIFIERS", "REGRESSORS", "MODEL_NAMES", "Plan", "infer_task", "known_target", "zero_padded", "check_task", "prepare",
           "DATE_SHARE", "DATE_FORMATS", "NUMBER_SHARE", "formatted_numbers", "stray_text", "plan", "make_model"]

CLASSIFIERS = {
    "logistic": ("sklearn.linear_model", "LogisticRegression", {"max_iter": 2000}),
    "random_forest": ("sklearn.ensemble", "RandomForestClassifier", {"n_estimators": 100}),
    "gradient_boosting": ("sklearn.ensemble", "GradientBoostingClassifier", {}),
    "hist_gradient_boosting": ("sklearn.ensemble", "HistGradientBoostingClassifier", {}),
    "decision_tree": ("sklearn.tree", "DecisionTreeClassifier", {}),
    "extra_trees": ("sklearn.ensemble", "ExtraTreesClassifier", {"n_estimators": 100}),
}
REGRESSORS = {
    "linear": ("sklearn.linear_model", "LinearRegression", {}),
    "ridge": ("sklearn.linear_model", "Ridge", {}),
    "random_forest": ("sklearn.ensemble", "RandomForestRegressor", {"n_estimators": 100}),
    "gradient_boosting": ("sklearn.ensemble", "GradientBoostingRegressor", {}),
    "hist_gradient_boosting": ("sklearn.ensemble", "HistGradientBoostingRegressor", {}),
    "decision_tree": ("sklearn.tree", "DecisionTreeRegressor", {}),
    "extra_trees": ("sklearn.ensemble", "ExtraTreesRegressor", {"n_estimators": 100}),
}
MODEL_NAMES = sorted(set(CLASSIFIERS) | set(REGRESSORS))


@dataclasses.dataclass
class Plan:
    """What ``build`` will fit: the preprocessing, the columns it uses and those it leaves out (why)."""

    preprocessing: ColumnTransformer
    numeric: list[str]
    text: list[str]
    skipped: dict[str, str]
    dates: list[str] = dataclasses.field(default_factory=list)
    #: column -> what the user should know about how it is used (see :func:`stray_text`)
    notes: dict[str, str] = dataclasses.field(default_factory=dict)
    #: left-out columns no graph input can hold (nested values): drop them from the frame before fitting
    unreadable: list[str] = dataclasses.field(default_factory=list)


def infer_task(target: pd.Series) -> str:
    """``"classification"`` for text / bool / category targets and integers with at most 20 values."""
    spec = spec_for(str(target.name), target)
    if spec.kind in ("string", "bool"):
        return "classification"
    if spec.kind == "int" and target.nunique(dropna=True) <= 20:
        return "classification"
    if spec.kind in ("float", "int"):
        return "regression"
    raise ColumnTypeError(str(target.name), f"a {spec.kind} column cannot be a prediction target",
                          hint="choose a numeric or categorical target")


def zero_padded(values: pd.Series) -> str | None:
    """For text values that are all digits (maybe signed), one of them with a zero before another digit
    (``007``, ``02134``, ``-01``: codes, which pandas' ``read_csv`` reads as the numbers 7, 2134, -1, merging
    ``01`` and ``+01``): the first such value; else None."""
    texts = values.dropna().astype(str)
    if len(texts) == 0 or not texts.str.fullmatch(r"[+-]?[0-9]+").all():
        return None
    padded = texts[texts.str.match(r"[+-]?0[0-9]")]
    return None if len(padded) == 0 else str(padded.iloc[0])


def known_target(frame: pd.DataFrame, target: str, written: pd.Series | None = None
                 ) -> tuple[pd.DataFrame, pd.Series]:
    """The rows of ``frame`` with a ``target`` value, without that column, and the target as the model learns
    it: the dtype its values would have had without the blank cells, or, given ``written`` (the column's
    cells as the file writes them, same rows) holding codes with leading zeros (:func:`zero_padded`), those
    texts (classes ``001``, ``002`` rather than 1, 2). A CSV's ``True``/``False`` column with
    blanks reads as object (Python bools and NaN; scikit-learn: "Unknown label type"), and its ``0``/``1``
    column as float64 (a regression where the same data from Parquet, ``Int64``, is a classification): the
    values left are bools, or integers, and become ``bool`` / ``int64``. A nullable target (Parquet's ``Int64``,
    ``boolean``) becomes its numpy dtype (scikit-learn's classes would be float64 labels)."""
    kept = frame[frame[target].notna()]
    y = kept.pop(target)
    if pd.api.types.is_float_dtype(y.dtype):
        _refuse_beyond_fitting(str(target), y, "the target")
    elif not pd.api.types.is_numeric_dtype(y.dtype) and not pd.api.types.is_bool_dtype(y.dtype):
        _refuse_marker(str(target), y)  # a class spelled U+FFFF would be the graph's missing label
    if written is not None and pd.api.types.is_numeric_dtype(y.dtype) and not pd.api.types.is_bool_dtype(y.dtype):
        as_written = written.loc[y.index]
        if zero_padded(as_written) is not None:
            return kept, as_written.astype(str).rename(target)
    numpy_dtype = getattr(y.dtype, "numpy_dtype", None)
    if numpy_dtype is not None and numpy_dtype.kind in "biuf":
        y = y.astype(numpy_dtype)
    if y.dtype == object and len(y) and all(isinstance(v, (bool, np.bool_)) for v in y):
        y = y.astype(bool)
    elif pd.api.types.is_float_dtype(y.dtype) and 0 < len(y) < len(frame):  # the blanks made it float
        values = y.to_numpy(dtype=float)
        if np.all(np.mod(values, 1) == 0) and np.all(np.abs(values) < 2**53):
            y = y.astype(np.int64)
    return kept, y


def check_task(target: pd.Series, task: str) -> str:
    """The task for ``target``: ``task`` checked against the values, or inferred when ``"auto"``.

    Raises :class:`~onegraph.errors.DataError` for a single-class target, a classification target with nearly
    one class per row (more than 20 classes and more than half the rows), or regression on text.
    """
    kind = spec_for(str(target.name), target).kind
    # numbers written as text fail both tasks: say so rather than send the user from one to the other
    formatted = formatted_numbers(target) if kind == "string" else None
    classes, rows = target.nunique(dropna=True), int(target.notna().sum())
    if task == "auto" and formatted and classes > 20:  # text, so classes; but surely meant as numbers
        raise DataError(f"target column {target.name!r} has {classes} distinct values, and {formatted}",
                        hint=f"{_AS_NUMBERS} for a regression, or give --task classification to use the texts as "
                             "classes")
    strays = _stray_numbers(target) if kind == "string" else None
    if task == "auto" and strays and classes > 20:  # numbers but for a few words: '?' made it text
        raise DataError(f"target column {target.name!r} has {classes} distinct values, and {strays}",
                        hint="make those cells empty (rows without a target are left out) for a regression, or "
                             "give --task classification to use the texts as classes")
    if task == "auto":
        task = infer_task(target)
    if task not in ("classification", "regression"):
        raise DataError(f"unknown task {task!r}", hint="use classification, regression or auto")
    if task == "classification" and classes < 2:
        raise DataError(f"target column {target.name!r} has a single class ({target.dropna().iloc[0]!r})",
                        hint="a classifier needs at least two classes in the data")
    if task == "classification" and classes > max(20, rows // 2):
        raise DataError(f"target column {target.name!r} has {classes} classes in {rows} rows: nearly one per row "
                        + (f"({formatted})" if formatted else "(an identifier or free text?), which no classifier "
                           "can learn"),
                        hint="--task regression for its numbers" if kind in ("float", "int") else
                        f"{_AS_NUMBERS} for a regression" if formatted else "choose another target column")
    if task == "regression" and kind not in ("float", "int", "bool"):
        raise DataError(f"target column {target.name!r} holds {kind} values; regression needs numbers"
                        + (f" ({formatted})" if formatted else ""),
                        hint=_AS_NUMBERS if formatted else "use --task classification")
    return task


def prepare(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns as automatic preprocessing wants them: bool columns become nullable (so the model accepts
    missing values when scoring); infinities are refused, naming the column."""
    out = frame.copy()
    for c in frame.columns:
        if _is_nested(frame[c]):
            continue  # left out by plan
        try:
            spec = spec_for(str(c), frame[c])
        except ColumnTypeError:
            continue  # left out by plan, which says why
        if spec.kind == "bool" and spec.onnx_type == "bool":
            out[c] = frame[c].astype("boolean")
        if spec.kind == "float":
            _refuse_beyond_fitting(str(c), frame[c], "a feature")
        elif spec.kind == "string":
            _refuse_marker(str(c), frame[c])
    return out


def _refuse_marker(name: str, values: pd.Series) -> None:
    """:class:`ColumnTypeError` naming ``name`` and the data row of the first text holding U+FFFF, the graph's
    missing-text marker (also its missing label): refused before the fit, by the row of the data (the feed
    of the training split named a row of the shuffled split, after fitting)."""
    texts = values.dropna()
    if isinstance(texts.dtype, pd.CategoricalDtype):
        texts = texts.astype(str)
    hits = texts[texts.map(lambda v: isinstance(v, str) and MISSING_STRING in v).astype(bool)]
    if len(hits):
        raise ColumnTypeError(name, f"value at row {hits.index[0]} holds U+FFFF, the character onegraph reserves to "
                              "mark missing text (and missing labels)",
                              hint="replace it, or make the cell empty (missing)")


def _refuse_beyond_fitting(name: str, values: pd.Series, what: str) -> None:
    """:class:`ColumnTypeError` naming ``name`` and the first row for infinite values, which scikit-learn
    cannot fit on, and for values whose squares summed over the rows overflow float64 (beyond
    ``sqrt(float64 max / rows)``, 1.3e154 / sqrt(rows)): the scaler's variance (a feature) or the model's loss
    (the target) becomes inf and the model is fitted on nothing (a feature of 1e308 gave 18% accuracy, exit 0)."""
    x = values.to_numpy(dtype=float, na_value=np.nan)
    limit = float(np.sqrt(np.finfo(np.float64).max / max(len(x), 1)))
    with np.errstate(invalid="ignore"):
        bad = np.isinf(x) | (np.abs(x) > limit)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    row = values.index[i]
    if np.isinf(x[i]):
        raise ColumnTypeError(name, f"holds infinite values (first at row {row}); scikit-learn cannot fit on them",
                              hint="replace them (e.g. with NaN, a missing value) before building")
    raise ColumnTypeError(name, f"holds {x[i]:.3g} at row {row}, beyond {limit:.3g}: summed over the {len(x)} rows "
                          f"the squares of such values overflow float64, so {what} cannot be fitted on",
                          hint="rescale the column (e.g. log or divide by a power of ten), or make those cells empty")


_INDEX_COLUMN = re.compile(r"^Unnamed: \d+$")


def _leave_out(name: str, values: pd.Series, kind: str) -> str | None:
    """Why a column makes a poor feature, or None."""
    present = values.dropna()
    if present.empty:
        return "every value is missing"
    if present.nunique() == 1 and len(present) == len(values):
        return "a single value"
    if _INDEX_COLUMN.match(name):
        if name == "Unnamed: 0":
            return "a written DataFrame index"
        return f"no header in the file (pandas named it {name!r}); give the column a name to use it"
    distinct = len(present) > 20 and present.nunique() == len(present)
    if distinct and kind == "string":
        formatted = formatted_numbers(values)
        if formatted is not None:
            return f"all values distinct as text: {formatted}; to use them as numbers, {_AS_NUMBERS} and build again"
        numbers = _stray_numbers(values)
        if numbers is not None:  # a numeric column with a few typos: say what makes it text
            return (f"all values distinct as text: {numbers}; to use it as numbers, make those cells empty "
                    "(missing) and build again")
        dates = _mixed_dates(present)
        if dates is not None:
            return f"all values distinct as text: {dates}; write them in one format (ISO 8601: 2020-01-31) to use them"
        return "all values distinct (an identifier or free text)"
    if distinct and kind == "int" and (present.is_monotonic_increasing or present.is_monotonic_decreasing):
        return "all values distinct and ordered (a row number or identifier)"
    return None



_DAY_MONTH = ("%m/%d/%Y", "%d/%m/%Y", "%m-%d-%Y", "%d-%m-%Y", "%d.%m.%Y")
_TIMES = ("", " %H:%M", " %H:%M:%S")
#: English month names (01-Jan-2012, Oracle's 01-JAN-12, Jan 5, 2012, 5 January 2012)
_NAMED = ("%d-%b-%Y", "%d-%b-%y", "%d-%B-%Y", "%d %b %Y", "%d %B %Y", "%b %d, %Y", "%B %d, %Y", "%b. %d, %Y",
          "%b %d %Y", "%B %d %Y")
#: the non-ISO formats a text column is tried against when it holds no ISO 8601 dates, in groups, each with
#: what every value of its formats starts with (most text columns fail every group at once): month or day
#: first with a four-digit year, alone or with a 24- or 12-hour time (when a column's values fit both orders,
#: month first is taken, as ``pandas.to_datetime`` does, and the note says so); English month names; ISO
#: dates and times followed by `` UTC`` (BigQuery's exports), which pandas' ISO reader does not take
_FORMAT_GROUPS = (
    (re.compile(r"[0-9]{1,2}[-/.][0-9]{1,2}[-/.][0-9]{4}"),
     tuple(f + t for f in _DAY_MONTH for t in (*_TIMES, " %I:%M %p", " %I:%M:%S %p"))),
    (re.compile(r"(?i:[0-9]{1,2}[- ][a-z]{3}|[a-z]{3,9}\.? [0-9]{1,2})"),
     tuple(f + t for f in _NAMED for t in _TIMES)),
    (re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}[ T].* UTC"),
     ("%Y-%m-%d %H:%M:%S UTC", "%Y-%m-%d %H:%M:%S.%f UTC", "%Y-%m-%d %H:%M UTC", "%Y-%m-%dT%H:%M:%S UTC")),
)
DATE_FORMATS = tuple(f for _, formats in _FORMAT_GROUPS for f in formats)


def _candidate_formats(sample: np.ndarray, share: float) -> list[str]:
    """The formats of the groups :data:`_FORMAT_GROUPS` whose start ``share`` of ``sample`` has."""
    return [f for start, formats in _FORMAT_GROUPS
            if np.mean([start.match(v) is not None for v in sample]) >= share for f in formats]


@dataclasses.dataclass(frozen=True)
class _Dates:
    """A column read as dates: int64 UTC nanoseconds, the format (None: ISO 8601) and a note when guessed."""

    ns: np.ndarray
    format: str | None = None
    note: str | None = None


def _date_values(frame: pd.DataFrame, column: str) -> _Dates | None:
    """The column as dates when it holds datetimes or date text (:data:`DATE_SHARE` of its present values in
    one format), else None."""
    spec = spec_for(column, frame[column])
    if spec.kind == "datetime":
        return _Dates(to_feed(spec, frame[column]))
    if spec.kind != "string":
        return None
    values = frame[column].dropna()
    if len(values) == 0:
        return None
    sample = np.asarray(values.iloc[:1000].astype(str), dtype=object)  # most columns are told apart here
    fitting: list[str | None] = [None] if _parsed_share(sample, None) >= DATE_SHARE else []
    if not fitting:
        fitting = [f for f in _candidate_formats(sample, DATE_SHARE) if _parsed_share(sample, f) >= DATE_SHARE]
    texts = np.asarray(values.astype(str), dtype=object)
    fitting = [f for f in fitting if _parsed_share(texts, f) >= DATE_SHARE]
    if not fitting:
        return None
    fmt = fitting[0]
    note = None
    if fmt is not None and fmt.split(" ")[0] not in _DAY_MONTH:
        note = f"read as dates in the format {fmt!r}"
    elif fmt is not None:
        others = [f for f in fitting[1:] if f.replace("%d", "%D").replace("%m", "%d").replace("%D", "%m") == fmt]
        order = "month" if fmt.index("%m") < fmt.index("%d") else "day"
        note = (f"read as dates in the format {fmt!r}" + (
            f" (its values fit {others[0]!r} too: month first, as pandas reads them; give a column with a day "
            "above 12, or ISO dates, to decide)" if others else f" ({order} first: the one order its values fit)"))
    present = frame[column].notna().to_numpy()
    ns = parse_pandas(np.asarray(frame[column].astype(object).where(present, None)), date_format(fmt))
    unread = np.flatnonzero(present & (ns == NA_INT64))
    if unread.size:  # the few values build tolerates (DATE_SHARE): say which, as a data error would be
        odd = (f"{unread.size} value(s) not read as dates (e.g. {frame[column].iloc[unread[0]]!r} at row "
               f"{frame.index[unread[0]]}) are missing dates (imputed)")
        note = odd if note is None else f"{note}; {odd}"
    return _Dates(ns, fmt, note)


def _parsed_share(texts: np.ndarray, fmt: str | None) -> float:
    """Share of ``texts`` that ``fmt`` (None: ISO 8601) reads as a date (impossible dates excluded)."""
    compiled = date_format(fmt)
    matched = compiled.matches(texts)
    if matched.mean() < DATE_SHARE:
        return float(matched.mean())
    return float(np.mean(parse_pandas(texts, compiled) != NA_INT64))


#: share of the present values of a text column that, parsed as numbers, make it "numbers with stray text"
NUMBER_SHARE = 0.95


def _mixed_dates(present: pd.Series) -> str | None:
    """For text values of which half or more are dates but no single format reads :data:`DATE_SHARE` of them:
    what each format reads (from the first 1,000) and a value none reads; for values half or more of which look
    like dates (:func:`~onegraph.contract.dates.looks_like_date`) in no format: a few of them; else None."""
    sample = np.asarray(present.iloc[:1000].astype(str), dtype=object)
    matched = {f: date_format(f).matches(sample) for f in (None, *_candidate_formats(sample, 1e-9))}
    shares = {f: float(m.mean()) for f, m in matched.items()}
    any_date = np.logical_or.reduce(list(matched.values()))
    if any_date.mean() < 0.5:
        looks = np.fromiter((looks_like_date(v.strip()) for v in sample), bool, len(sample))
        if looks.mean() < 0.5:
            return None
        return (f"{looks.mean():.0%} of them look like dates, but in no format onegraph reads (e.g. "
                f"{sample[np.flatnonzero(looks & ~any_date)[0]]!r})")
    first = max(shares, key=lambda f: shares[f])
    best = [(shares[first], first)]
    rest = {f: float((m & ~matched[first]).mean()) for f, m in matched.items()}  # what another adds to it
    second = max(rest, key=lambda f: rest[f])
    if rest[second] > 0:
        best.append((rest[second], second))
    listed = ", ".join(f"{v:.0%} {'ISO 8601' if f is None else repr(f)}" for v, f in best)
    unread = np.flatnonzero(~any_date)
    none = f"; none reads {sample[unread[0]]!r}" if unread.size else ""
    if len(best) == 1:
        return f"{any_date.mean():.0%} of them are dates ({listed}), fewer than the {DATE_SHARE:.0%} a date column needs{none}"
    return f"{any_date.mean():.0%} of them are dates, but in several formats ({listed}){none}"


def _dates_as_text(values: pd.Series) -> str | None:
    """For a text column taken as categories whose values look like dates (half or more of the first 1,000)
    in no format onegraph reads: a note saying so; else None."""
    described = _mixed_dates(values.dropna())
    if described is None:
        return None
    return (f"{described}: one-hot encoded as categories; write them in one format (ISO 8601: 2020-01-31) to "
            "use them as dates")


def _stray_numbers(values: pd.Series) -> str | None:
    """For a text column holding numbers but for a few values (:data:`NUMBER_SHARE`): how many are numbers and
    which values (with their rows, the frame's index labels) are not; else None."""
    present = values.dropna()
    if len(present) < 2:
        return None
    parsed = pd.to_numeric(pd.Series(np.asarray(present, dtype=object), index=present.index), errors="coerce")
    stray = parsed.isna()
    n_stray = int(stray.sum())
    if n_stray == 0 or (len(present) - n_stray) < NUMBER_SHARE * len(present):
        return None
    shown = present[stray]
    words = list(dict.fromkeys(shown.astype(str).tolist()))
    listed = ", ".join(f"{w!r} (row {shown.index[shown.astype(str) == w][0]})" for w in words[:3])
    more = f" and {len(words) - 3} other value(s)" if len(words) > 3 else ""
    return (f"{len(present) - n_stray} of its {len(present)} values are numbers, but {n_stray} "
            f"{'is' if n_stray == 1 else 'are'} not: {listed}{more}")


#: a number written for people: a currency sign, thousands separators (``1,175.90``, ``1.175,90``, ``1 175``,
#: ``1'175``), a decimal comma, a percent sign; pandas reads none of them as numbers
_FORMATTED_NUMBER = re.compile(r"\s*[-+]?\s*[$€£¥]?\s*[-+]?(?:\d{1,3}(?:([,. '\u00a0\u202f])\d{3})+(?:(?!\1)[.,]\d+)?"
                               r"|\d+,\d+|\d+(?:\.\d+)?)\s*%?\s*")


def formatted_numbers(values: pd.Series) -> str | None:
    """For text whose values (at least :data:`NUMBER_SHARE` of the present ones, some not plain numbers) are
    numbers written for people (:data:`_FORMATTED_NUMBER`: ``1,175.90``, ``$12``, ``7%``): a few of them with
    their rows (the frame's index labels); else None."""
    present = values.dropna()
    if len(present) < 2:
        return None
    texts = pd.Series(np.asarray(present, dtype=object), index=present.index).astype(str)
    formatted = texts.str.fullmatch(_FORMATTED_NUMBER)
    plain = pd.to_numeric(texts, errors="coerce").notna()
    shown = texts[formatted & ~plain]
    if shown.empty or (formatted | plain).mean() < NUMBER_SHARE:
        return None
    first = shown.drop_duplicates()
    listed = ", ".join(f"{w!r} (row {i})" for i, w in list(first.items())[:3])
    return (f"its values are numbers written as text ({listed}: thousands separators, a currency or percent sign, "
            "or a decimal comma)")


_AS_NUMBERS = "write them as plain numbers (1175.90)"


def stray_text(values: pd.Series) -> str | None:
    """For a text column holding numbers but for a few values: a note naming those values and their rows (the
    frame's index labels, i.e. data rows counted from 0) and what to do; else None.

    The column stays categorical (onegraph never guesses that ``"?"`` means missing: scoring would then have to
    guess too); the note says how to make it numeric."""
    formatted = formatted_numbers(values)
    if formatted is not None:
        return f"used as categories: {formatted}; to use them as numbers, {_AS_NUMBERS} and build again"
    numbers = _stray_numbers(values)
    if numbers is None:
        return None
    return f"used as categories: {numbers}; to use it as numbers, make those cells empty (missing) and build again"


def _date_parts(ns: list[np.ndarray]) -> list[str]:
    parts = ["year", "month", "day", "dayofweek", "dayofyear"]
    seen = np.concatenate([v[v != NA_INT64] for v in ns]) if ns else np.array([], np.int64)
    if seen.size and np.any(seen % 86_400_000_000_000 != 0):
        parts += ["hour", "minute"]
    return parts


def _is_nested(values: pd.Series) -> bool:
    """Lists / structs / maps: an Arrow nested type (Parquet, polars), or an object column of lists or dicts."""
    dtype = values.dtype
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        return pa.types.is_nested(dtype.pyarrow_dtype)
    if dtype == object:
        first = values.dropna().head(1).tolist()
        return bool(first) and isinstance(first[0], (list, tuple, dict, np.ndarray))
    return False


def plan(frame: pd.DataFrame) -> Plan:
    """The preprocessing for the feature columns of ``frame``."""
    numeric, text, dates, skipped, notes, unreadable = [], [], [], {}, {}, []
    read: dict[str, _Dates] = {}
    for c in frame.columns:
        if _is_nested(frame[c]):
            skipped[str(c)] = "nested values (lists, structs, maps) are not used by automatic preprocessing"
            unreadable.append(c)
            continue
        try:
            spec = spec_for(str(c), frame[c])
        except ColumnTypeError as exc:  # values no graph input takes (times of day...): the rest still builds
            skipped[str(c)] = exc.reason + (f" ({exc.hint})" if exc.hint else "")
            unreadable.append(c)
            continue
        found = _date_values(frame, str(c)) if spec.kind in ("datetime", "string") else None
        # dates are often all distinct: only the empty / constant rules apply to them
        why = _leave_out(str(c), frame[c], "datetime" if found is not None else spec.kind)
        if why is None and found is None and spec.kind not in ("float", "int", "bool", "string"):
            why = f"{spec.kind} columns are not used by automatic preprocessing"
        if why is not None:
            skipped[str(c)] = why
        elif found is not None:
            dates.append(str(c))
            read[str(c)] = found
            if found.note is not None:
                notes[str(c)] = found.note
        elif spec.kind == "string":
            text.append(str(c))
            note = stray_text(frame[c]) or _dates_as_text(frame[c])
            if note is not None:
                notes[str(c)] = note
        else:
            numeric.append(str(c))
    if not numeric and not text and not dates:
        why = "; ".join(f"{c!r}: {reason}" for c, reason in list(skipped.items())[:3])
        raise DataError("no usable feature column" + (f" (left out: {why})" if why else ""),
                        hint="give numeric or categorical columns besides the target")
    steps = []
    by_format: dict[str | None, list[str]] = {}
    for c in dates:
        by_format.setdefault(read[c].format, []).append(c)
    for i, (fmt, columns) in enumerate(by_format.items()):
        ns = [read[c].ns for c in columns]
        # wall-clock parts of naive / text columns are taken as UTC; tz-aware columns use their own zone
        steps.append(("date" if i == 0 else f"date_{i}", Pipeline([
            ("parts", DateParts(_date_parts(ns), format=fmt)),
            ("impute", SimpleImputer(strategy="median", add_indicator=any((v == NA_INT64).any() for v in ns))),
            ("scale", StandardScaler()),
        ]), columns))
    if numeric:
        with_gaps = [c for c in numeric if frame[c].isna().any()]
        steps.append(("num", Pipeline([
            ("impute", SimpleImputer(strategy="median", add_indicator=bool(with_gaps))),
            ("scale", StandardScaler()),
        ]), numeric))
    if text:
        steps.append(("cat", Pipeline([
            ("impute", SimpleImputer(strategy="constant", fill_value="(missing)")),
            ("onehot", OneHotEncoder(handle_unknown="infrequent_if_exist", max_categories=20)),
        ]), text))
    return Plan(ColumnTransformer(steps, remainder="drop"), numeric, text, skipped, dates, notes, unreadable)


def make_model(name: str, task: str, seed: int):
    """A fresh scikit-learn estimator for ``name`` and ``task``."""
    table = CLASSIFIERS if task == "classification" else REGRESSORS
    if name not in table:
        raise ExportError(f"model {name!r} is not available for {task}",
                          hint=f"choose one of: {', '.join(sorted(table))}")
    module, cls, params = table[name]
    import importlib

    estimator = getattr(importlib.import_module(module), cls)(**params)
    if "random_state" in estimator.get_params():
        estimator.set_params(random_state=seed)
    return estimator
