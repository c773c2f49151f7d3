"""Every transformer in ``onegraph.frame.__all__`` keeps the same promises, checked on a real table.

One row per class in :data:`ROWS`: the class, its constructor arguments, the table and columns it fits on,
and one bad parameter value with words its error must contain. Adding a transformer is one class, one
``__all__`` entry and one row here; the test fails for a class without a row.

Each row checks: fit / transform / ``get_feature_names_out`` (as many names as transform's columns) /
``set_output(transform="polars")`` / ``sklearn.base.clone`` (the same parameters, unfitted) / a pickling
round trip (the same transform) / the graph equals ``transform`` on the table / the bad parameter raises
:class:`~onegraph.errors.ConfigError` at fit, naming the class and the parameter, and every parameter of
the class has declared constraints.
"""

from __future__ import annotations

import inspect
import pickle
from functools import cache
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import polars as pl
import pytest
from conftest import DATA, assert_same_values, graph_matches_transform
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import onegraph.frame
from onegraph.datasets import load_penguins
from onegraph.errors import ConfigError
from onegraph.frame import FrameTransformer


class Row(NamedTuple):
    cls: type
    params: dict
    table: str  # penguins, seattle, cars or airports (tests/data)
    columns: list[str]
    bad: dict  # {parameter: a value it refuses}; empty for a class without parameters
    words: tuple[str, ...] = ()  # besides the class and the parameter, the error names these
    target: str | None = None  # the column passed as y (TargetEncoder)
    rows: int = 300  # the first rows of the table: enough for every kind of value, and quick


F = onegraph.frame
ROWS = [
    Row(F.SimpleImputer, dict(strategy="most_frequent"), "penguins", ["bill_length_mm", "sex"],
        dict(strategy="average"), ("'median'",)),
    Row(F.StandardScaler, {}, "penguins", ["bill_depth_mm", "body_mass_g", "year"], dict(with_mean="yes"), ("bool",)),
    Row(F.MinMaxScaler, dict(feature_range=(-1, 1), clip=True), "cars", ["Horsepower", "Weight_in_lbs"],
        dict(feature_range=[0, 1]), ("tuple",)),
    Row(F.RobustScaler, dict(quantile_range=(10.0, 90.0)), "seattle", ["precipitation", "wind"],
        dict(unit_variance=1), ("bool",)),
    Row(F.MaxAbsScaler, {}, "seattle", ["temp_max", "temp_min"], {}),
    Row(F.PowerTransformer, {}, "cars", ["Acceleration", "Displacement"], dict(method="log"), ("'box-cox'",)),
    Row(F.Clip, dict(quantile_range=(5, 95)), "seattle", ["precipitation", "wind"],
        dict(quantile_range=(90, 10)), ("0 <= low <= high <= 100",)),
    Row(F.LogTransformer, {}, "seattle", ["precipitation"], dict(offset="1"), ("float",)),
    Row(F.OneHotEncoder, dict(handle_unknown="ignore"), "penguins", ["island", "sex"],
        dict(handle_unknown="skip"), ("'ignore'",)),
    Row(F.OrdinalEncoder, dict(handle_unknown="use_encoded_value", unknown_value=-1), "cars", ["Origin", "Cylinders"],
        dict(handle_unknown="drop"), ("'use_encoded_value'",)),
    Row(F.ColumnSelector, dict(kinds=["number"]), "cars", ["Name", "Horsepower", "Cylinders"],
        dict(kinds=["numeric"]), ("'number'",)),
    Row(F.DateParts, dict(parts=["year", "month", "dayofweek", "is_month_end"], cyclical=["month"]), "seattle",
        ["date"], dict(parts=["century"]), ("'dayofweek'",)),
    Row(F.DateDiff, dict(reference="2012-01-01", unit="h"), "seattle", ["date"], dict(unit="days"), ("'D'",)),
    Row(F.StringConcat, dict(separator=", "), "airports", ["city", "state"], dict(separator=None), ("str",)),
    Row(F.StringSplit, dict(separator=" ", n_parts=2), "airports", ["name", "city"], dict(separator=""),
        ("non-empty",)),
    Row(F.ValueMap, dict(mapping={"USA": "United States", "Europe": "EU"}), "cars", ["Origin"], dict(mapping={}),
        ("non-empty",)),
    Row(F.RegexMatch, dict(pattern="[A-Z][a-z]+ [A-Z][a-z]+", how="contains"), "airports", ["name", "city"],
        dict(how="search"), ("'fullmatch'",)),
    Row(F.StringCase, dict(case="upper"), "airports", ["city"], dict(case="title"), ("'casefold'",)),
    Row(F.StringStrip, {}, "airports", ["name"], dict(max_vocabulary=-1), ("range",)),
    Row(F.HashEncoder, dict(n_buckets=64), "airports", ["state"], dict(n_buckets=0), ("range",)),
    Row(F.FrequencyEncoder, dict(normalize=True), "penguins", ["island", "sex"], dict(normalize="yes"), ("bool",)),
    Row(F.TargetEncoder, {}, "seattle", ["weather"], dict(smooth="none"), ("'auto'",), target="temp_max"),
    Row(F.RareCategoryGrouper, dict(min_count=5), "airports", ["state"], dict(unseen="drop"), ("'keep'",)),
    Row(F.GroupAggregate, dict(by="island", agg={"body_mass_g": ["mean", "max"]}), "penguins",
        ["island", "body_mass_g"], dict(default="zero"), ("'overall'",)),
    Row(F.Bucketize, dict(n_bins=4), "cars", ["Horsepower", "Weight_in_lbs"], dict(strategy="median"),
        ("'quantile'",)),
    Row(F.RangeMap, dict(ranges=[(None, 0.0, -1.0), (20.0, None, "median")]), "seattle", ["precipitation"],
        dict(ranges=[(0, 1)]), ("(lower, upper, value)",)),
    Row(F.Expression, dict(expressions="temp_max - temp_min", name="range"), "seattle", ["temp_max", "temp_min"],
        dict(expressions=3), ("str",)),
]
ID = [row.cls.__name__ for row in ROWS]


def transformer_classes() -> list[type]:
    """The classes of ``onegraph.frame.__all__`` that fit (the abstract base aside)."""
    objects = [getattr(onegraph.frame, name) for name in onegraph.frame.__all__]
    return [o for o in objects if inspect.isclass(o) and hasattr(o, "fit") and o is not FrameTransformer]


@cache
def table(name: str) -> pd.DataFrame:
    if name == "penguins":
        return load_penguins()
    files = {"seattle": "seattle-weather.csv", "cars": "cars.csv", "airports": "airports.csv"}
    return pd.read_csv(DATA / files[name], parse_dates=["date"] if name == "seattle" else False)


def data(row: Row) -> tuple[pd.DataFrame, Any]:
    frame = table(row.table).head(row.rows)
    return frame[row.columns], None if row.target is None else frame[row.target]


@cache
def fitted(name: str) -> tuple[FrameTransformer, pd.DataFrame]:
    """The row's transformer fitted on its data (once per session; tests must not change it)."""
    row = ROWS[ID.index(name)]
    x, y = data(row)
    return row.cls(**row.params).fit(x, y), x


def same_params(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[k] is b[k] or (isinstance(a[k], float) and np.isnan(a[k]) and np.isnan(b[k])) or a[k] == b[k] for k in a)


def same_output(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(got.columns) == list(expected.columns)
    for name in expected.columns:
        assert_same_values(got[name].to_numpy(), expected[name].to_numpy(), name=str(name))


def test_every_transformer_has_one_row():
    classes = transformer_classes()
    assert [c for c in classes if not issubclass(c, FrameTransformer)] == [], "transformers subclass FrameTransformer"
    assert sorted(c.__name__ for c in classes) == sorted(ID), "one row per class in onegraph.frame.__all__"


@pytest.mark.parametrize("row", ROWS, ids=ID)
def test_every_parameter_has_declared_constraints(row):
    assert set(row.cls._parameter_constraints) == set(row.cls._get_param_names())
    assert set(row.bad) <= set(row.cls._get_param_names())
    assert bool(row.bad) == bool(row.cls._get_param_names()), "give a bad value for one parameter"


@pytest.mark.parametrize("name", ID)
def test_fit_transform_and_names_out(name):
    est, x = fitted(name)
    out = est.transform(x)
    names = est.get_feature_names_out()
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(x.index)
    assert list(out.columns) == list(names) and len(names) > 0
    assert list(est.feature_names_in_) == list(x.columns)


@pytest.mark.parametrize("name", ID)
def test_set_output_polars(name):
    est, x = fitted(name)
    copy = pickle.loads(pickle.dumps(est))  # set_output changes the object: leave the cached one as it is
    out = copy.set_output(transform="polars").transform(x)
    assert isinstance(out, pl.DataFrame)
    same_output(out.to_pandas(), est.transform(x).reset_index(drop=True))


@pytest.mark.parametrize("name", ID)
def test_clone_has_the_same_parameters_unfitted(name):
    est, _ = fitted(name)
    copy = clone(est)
    assert type(copy) is type(est)
    assert same_params(copy.get_params(deep=False), est.get_params(deep=False))
    with pytest.raises(NotFittedError):
        check_is_fitted(copy, "n_features_in_")


@pytest.mark.parametrize("name", ID)
def test_pickling_keeps_the_transform(name):
    est, x = fitted(name)
    copy = pickle.loads(pickle.dumps(est))
    same_output(copy.transform(x), est.transform(x))


@pytest.mark.parametrize("name", ID)
def test_graph_equals_transform(name):
    est, x = fitted(name)
    graph_matches_transform(est, x)


@pytest.mark.parametrize("row", [r for r in ROWS if r.bad], ids=[r.cls.__name__ for r in ROWS if r.bad])
def test_a_bad_parameter_is_named_at_fit(row):
    x, y = data(row)
    (param, value), = row.bad.items()
    est = row.cls(**{**row.params, param: value})  # constructing checks nothing (scikit-learn's convention)
    with pytest.raises(ConfigError) as info:
        est.fit(x, y)
    message = str(info.value)
    for words in (row.cls.__name__, f"parameter {param!r}", *row.words):
        assert words in message
    assert isinstance(info.value, ValueError)


#: checks a declaration cannot state (two parameters together, a parameter with the data, what onnxruntime's RE2
#: reads) stay in code, and still name the class and the parameter: (transformer, table, columns, parameter)
IN_CODE = [
    (F.RareCategoryGrouper(), "airports", ["state"], "min_count"),
    (F.RareCategoryGrouper(min_count=3, min_frequency=0.1), "airports", ["state"], "min_count"),
    (F.StringSplit(" ", n_parts=2, index=0), "airports", ["name"], "index"),
    (F.DateDiff(unit="D"), "seattle", ["date"], "reference"),
    (F.RegexMatch(r"\d+"), "airports", ["name"], "pattern"),
    (F.RegexMatch("(unclosed"), "airports", ["name"], "pattern"),
    (F.GroupAggregate("island", {"body_mass_g": "average"}), "penguins", ["island", "body_mass_g"], "agg"),
]


@pytest.mark.parametrize("est, name, columns, param", IN_CODE,
                         ids=[f"{type(e).__name__}-{p}" for e, _, _, p in IN_CODE])
def test_checks_in_code_name_the_class_and_parameter(est, name, columns, param):
    with pytest.raises(ConfigError) as info:
        clone(est).fit(table(name).head(50)[columns])
    assert f"{type(est).__name__}: parameter {param!r}" in str(info.value)
    assert info.value.hint  # and what to give instead
