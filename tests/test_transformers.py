"""onegraph's first transformers: equal to scikit-learn in Python, and their graphs equal to their transform."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
import sklearn.impute
import sklearn.preprocessing
from conftest import assert_same_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.pandas import column, data_frames
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.errors import ColumnTypeError, UnknownCategoryError
from onegraph.frame import (
    Clip,
    ColumnSelector,
    LogTransformer,
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PowerTransformer,
    RobustScaler,
    SimpleImputer,
    StandardScaler,
)

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TEXT = ["island", "sex"]


def graph_equals_transform(transformer, frame: pd.DataFrame, rows: pd.DataFrame | None = None, rtol=1e-12):
    """Build the transformer alone; the graph's outputs equal ``transform`` column by column."""
    model = onegraph.build(transformer, None, frame)
    rows = frame if rows is None else rows
    expected = transformer.transform(rows)
    got = onegraph.score(model, rows)
    names = list(transformer.get_feature_names_out())
    assert list(got.columns) == names
    for name in names:
        assert_same_values(got[name].to_numpy(), pd.Series(expected[name]).to_numpy(), rtol=rtol, name=name)
    return model


SCALERS = [
    (StandardScaler(), sklearn.preprocessing.StandardScaler()),
    (StandardScaler(with_mean=False), sklearn.preprocessing.StandardScaler(with_mean=False)),
    (MinMaxScaler(), sklearn.preprocessing.MinMaxScaler()),
    (MinMaxScaler(feature_range=(-1, 2), clip=True), sklearn.preprocessing.MinMaxScaler(feature_range=(-1, 2), clip=True)),
    (RobustScaler(), sklearn.preprocessing.RobustScaler()),
    (RobustScaler(quantile_range=(10, 90), unit_variance=True),
     sklearn.preprocessing.RobustScaler(quantile_range=(10, 90), unit_variance=True)),
    (MaxAbsScaler(), sklearn.preprocessing.MaxAbsScaler()),
    (PowerTransformer(), sklearn.preprocessing.PowerTransformer()),
    (PowerTransformer(standardize=False), sklearn.preprocessing.PowerTransformer(standardize=False)),
]


@pytest.mark.parametrize("ours,theirs", SCALERS, ids=lambda t: repr(t))
def test_scalers_equal_scikit_learn_and_their_graph(penguins, ours, theirs):
    frame = penguins[NUMERIC]
    ours.fit(frame)
    theirs.fit(frame.to_numpy(float))
    mine = ours.transform(frame)
    ref = theirs.transform(frame.to_numpy(float))
    # PowerTransformer's lambdas come from an optimizer whose last digits depend on memory layout
    rtol = 1e-6 if isinstance(ours, PowerTransformer) else 1e-12
    np.testing.assert_allclose(mine.to_numpy(float), ref, rtol=rtol, atol=1e-12, equal_nan=True)
    graph_equals_transform(ours, frame)


def test_box_cox_on_positive_columns(cars):
    frame = cars[["Displacement", "Weight_in_lbs", "Acceleration"]]
    pt = PowerTransformer(method="box-cox").fit(frame)
    graph_equals_transform(pt, frame, rtol=1e-10)


@pytest.mark.parametrize("strategy", ["mean", "median", "most_frequent", "constant"])
@pytest.mark.parametrize("add_indicator", [False, True])
def test_numeric_imputer_equals_scikit_learn(cars, strategy, add_indicator):
    frame = cars[["Miles_per_Gallon", "Horsepower", "Cylinders", "Acceleration"]]
    ours = SimpleImputer(strategy=strategy, add_indicator=add_indicator).fit(frame)
    theirs = sklearn.impute.SimpleImputer(strategy=strategy, add_indicator=add_indicator).fit(frame)
    assert list(ours.get_feature_names_out()) == list(theirs.get_feature_names_out())
    np.testing.assert_allclose(ours.transform(frame).to_numpy(float), theirs.transform(frame), rtol=1e-12)
    graph_equals_transform(ours, frame)


@pytest.mark.parametrize("strategy", ["most_frequent", "constant"])
def test_mixed_imputer_fills_text_and_numbers(penguins, strategy):
    frame = penguins[NUMERIC + TEXT]
    imp = SimpleImputer(strategy=strategy, add_indicator=True).fit(frame)
    out = imp.transform(frame)
    assert out["sex"].isna().sum() == 0 and out["bill_length_mm"].isna().sum() == 0
    if strategy == "constant":
        assert (out.loc[penguins["sex"].isna(), "sex"] == "missing_value").all()
    graph_equals_transform(imp, frame)


def test_imputer_refuses_mean_of_text(penguins):
    with pytest.raises(ColumnTypeError, match="'island'"):
        SimpleImputer(strategy="mean").fit(penguins[["island", "year"]])


def test_empty_feature_is_dropped_like_scikit_learn():
    frame = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": [np.nan, np.nan, np.nan]})
    ours = SimpleImputer().fit(frame)
    assert list(ours.get_feature_names_out()) == ["a"]
    graph_equals_transform(ours, frame)


@pytest.mark.parametrize("params", [
    dict(),
    dict(handle_unknown="ignore"),
    dict(drop="first"),
    dict(drop="if_binary", handle_unknown="ignore"),
    dict(min_frequency=30, handle_unknown="infrequent_if_exist"),
    dict(max_categories=3, handle_unknown="infrequent_if_exist"),
])
def test_one_hot_equals_scikit_learn(airports, params):
    frame = airports[["state", "country"]]
    ours = OneHotEncoder(**params).fit(frame)
    theirs = sklearn.preprocessing.OneHotEncoder(sparse_output=False, **params).fit(frame.astype(object))
    assert list(ours.get_feature_names_out()) == list(theirs.get_feature_names_out())
    np.testing.assert_array_equal(ours.transform(frame).to_numpy(float), theirs.transform(frame.astype(object)))
    graph_equals_transform(ours, frame)


def test_one_hot_of_integer_and_bool_columns(penguins):
    frame = penguins[["year"]].assign(heavy=penguins["body_mass_g"] > 4000)
    enc = OneHotEncoder().fit(frame)
    assert "year_2007" in enc.get_feature_names_out()
    graph_equals_transform(enc, frame)


def test_unknown_category_is_refused_by_name(penguins):
    enc = OneHotEncoder().fit(penguins[TEXT])
    model = onegraph.build(enc, None, penguins[TEXT])
    rows = pd.DataFrame({"island": ["Dream", "Atlantis"], "sex": ["male", "female"]})
    with pytest.raises(UnknownCategoryError, match="'island'.*'Atlantis'") as info:
        onegraph.score(model, rows)
    assert info.value.rows == [1]


def test_unknown_category_ignored_gives_zeros(penguins):
    enc = OneHotEncoder(handle_unknown="ignore").fit(penguins[TEXT])
    rows = pd.DataFrame({"island": ["Dream", "Atlantis", None], "sex": ["male", None, "female"]})
    graph_equals_transform(enc, penguins[TEXT], rows)


@pytest.mark.parametrize("params", [
    dict(),
    dict(handle_unknown="use_encoded_value", unknown_value=-1),
    dict(encoded_missing_value=-2),
    dict(min_frequency=50, handle_unknown="use_encoded_value", unknown_value=-1),
])
def test_ordinal_equals_scikit_learn(penguins_raw, params):
    frame = penguins_raw[["Species", "Island", "Sex", "Clutch Completion"]]
    ours = OrdinalEncoder(**params).fit(frame)
    theirs = sklearn.preprocessing.OrdinalEncoder(**params).fit(frame.astype(object))
    np.testing.assert_array_equal(ours.transform(frame).to_numpy(float), theirs.transform(frame.astype(object)))
    rows = frame.copy()
    if params.get("handle_unknown") == "use_encoded_value":
        rows.iloc[0, 0] = "unseen species"
    graph_equals_transform(ours, frame, rows)


def test_clip_and_log(cars):
    frame = cars[["Horsepower", "Acceleration"]]
    clip = Clip(quantile_range=(5, 95)).fit(frame)
    expected = frame.clip(frame.quantile(0.05), frame.quantile(0.95), axis=1)
    np.testing.assert_allclose(clip.transform(frame).to_numpy(float), expected.to_numpy(float), equal_nan=True)
    graph_equals_transform(clip, frame)
    graph_equals_transform(Clip(lower=10).fit(frame), frame)
    log = LogTransformer().fit(frame)
    np.testing.assert_allclose(log.transform(frame).to_numpy(float), np.log1p(frame.to_numpy(float)), equal_nan=True)
    graph_equals_transform(log, frame)


def test_column_selector_by_kind(penguins):
    sel = ColumnSelector(kinds=["number"]).fit(penguins)
    assert list(sel.get_feature_names_out()) == NUMERIC
    sel = ColumnSelector(pattern="_mm$").fit(penguins)
    assert list(sel.get_feature_names_out()) == ["bill_length_mm", "bill_depth_mm", "flipper_length_mm"]
    graph_equals_transform(sel, penguins)


def test_inside_column_transformer_with_scikit_learn_steps(penguins):
    """Ours and scikit-learn's transformers mixed; scikit-learn's double imputer exports (skl2onnx's does not load)."""
    ct = ColumnTransformer([
        ("num", make_pipeline(sklearn.impute.SimpleImputer(), StandardScaler()), NUMERIC),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"),
                              sklearn.preprocessing.OneHotEncoder(handle_unknown="ignore")), TEXT),
    ]).fit(penguins)
    model = onegraph.build(ct, None, penguins)
    got = onegraph.score(model, penguins)
    expected = ct.transform(penguins)
    np.testing.assert_allclose(got.to_numpy(float), expected, rtol=1e-12, atol=1e-12)
    assert list(got.columns) == list(ct.get_feature_names_out())


def test_set_output_polars_and_default_pandas(penguins):
    scaler = StandardScaler().fit(penguins[NUMERIC])
    assert isinstance(scaler.transform(penguins[NUMERIC]), pd.DataFrame)
    out = scaler.set_output(transform="polars").transform(penguins[NUMERIC])
    assert isinstance(out, pl.DataFrame) and out.columns == NUMERIC
    fitted_on_polars = StandardScaler().fit(pl.from_pandas(penguins[NUMERIC]))
    np.testing.assert_allclose(fitted_on_polars.mean_, scaler.mean_)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_frames([
    column("x", elements=st.one_of(st.none(), st.floats(-1e6, 1e6)), dtype=object),
    column("y", elements=st.one_of(st.just(float("nan")), st.floats(-1e3, 1e3))),
    column("t", elements=st.one_of(st.none(), st.sampled_from(["", "a", "b", "é", "日本", " a "])), dtype=object),
]).filter(lambda d: len(d) >= 2 and d["x"].notna().any() and d["y"].notna().any()))
def test_hypothesis_impute_scale_encode(frame):
    frame = frame.assign(x=pd.to_numeric(frame["x"]))
    numeric = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
    ct = ColumnTransformer([
        ("num", numeric, ["x", "y"]),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["t"]),
    ]).fit(frame)
    model = onegraph.build(ct, None, frame)
    got = onegraph.score(model, frame)
    np.testing.assert_allclose(got.to_numpy(float), ct.transform(frame), rtol=1e-9, atol=1e-9)
