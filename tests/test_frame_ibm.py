"""Every transformer of IBM's Data Frame Pipeline has an onegraph equivalent computing its pandas semantics.

For each one the reference is IBM's own pandas ``transform`` (github.com/IBM/dataframe-pipeline,
``dfpipeline/*.py``), rewritten here in a few lines of pandas; onegraph's equivalent must give the same
values, and its graph the same as its ``transform``. Where IBM's exported graph disagreed with its pandas
code (scaler multiplying by the deviation, dates in another order with Sunday = 1, unmatched map values
becoming 0), the pandas code is the reference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from conftest import DATA, assert_same_values, graph_matches_transform

from onegraph.frame import (
    ColumnSelector,
    DateParts,
    Expression,
    FrequencyEncoder,
    GroupAggregate,
    OneHotEncoder,
    OrdinalEncoder,
    RangeMap,
    RareCategoryGrouper,
    SimpleImputer,
    StandardScaler,
    StringConcat,
    StringSplit,
    ValueMap,
)


def test_complement_label_encoder(airports):
    """IBM ComplementLabelEncoder: sorted labels, one extra code shared by missing and unseen values."""
    train, rows = airports[["state"]], pd.concat([airports[["state"]], pd.DataFrame({"state": ["ZZ", None]})])
    labels = sorted(train["state"].dropna().unique())
    extra = len(labels)  # IBM's "extra_category_" label; onegraph puts its code after the real ones
    enc = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=extra, encoded_missing_value=extra).fit(train)
    expected = rows["state"].map({c: i for i, c in enumerate(labels)}).fillna(extra)
    assert_same_values(enc.transform(rows)["state"], expected)
    graph_matches_transform(enc, train, rows)


def test_frequency_encoder(airports):
    """IBM FrequencyEncoder: ``map(value_counts())``, unseen -> 1 (counts) or 0.0 (normalized)."""
    train = airports[["country", "state"]].dropna()
    rows = pd.concat([train.head(50), pd.DataFrame({"country": ["Mars"], "state": ["ZZ"]})])
    for normalize, unseen in ((False, 1), (True, 0.0)):
        enc = FrequencyEncoder(normalize=normalize, unseen=unseen).fit(train)
        for c in train.columns:
            expected = rows[c].map(train[c].value_counts(normalize=normalize).to_dict()).fillna(unseen)
            assert_same_values(enc.transform(rows)[c], expected)
        graph_matches_transform(enc, train, rows)


def test_aggregator(penguins):
    """IBM Aggregator: ``df[groupby].map(df.groupby(groupby)[col].aggregate(func).to_dict())``."""
    train = penguins[["island", "body_mass_g"]]
    rows = pd.concat([train, pd.DataFrame({"island": ["Atlantis"], "body_mass_g": [1.0]})])
    agg = GroupAggregate("island", {"body_mass_g": "mean"}, default=np.nan).fit(train)
    expected = rows["island"].map(train.groupby("island")["body_mass_g"].aggregate("mean").to_dict())
    assert_same_values(agg.transform(rows)["body_mass_g_mean_by_island"], expected)
    graph_matches_transform(agg, train, rows)


def test_map_transformer(airports):
    """IBM MapTransformer: ``replace(dict)``; with a default, values outside the mapped ones get it."""
    frame = airports[["country"]]
    keep = ValueMap({"USA": "US"}).fit(frame)
    assert_same_values(keep.transform(frame)["country"], frame["country"].replace({"USA": "US"}))
    graph_matches_transform(keep, frame)
    mapping = {"USA": 1, "Federated States of Micronesia": 2}
    default = ValueMap(mapping, unmatched=0).fit(frame)
    replaced = frame["country"].replace(mapping)
    expected = replaced.where(replaced.isin(mapping.values()), 0).astype(float)
    assert_same_values(default.transform(frame)["country"], expected)
    graph_matches_transform(default, frame)


def test_minority_transformer(airports):
    """IBM MinorityTransformer: values seen fewer than ``threshold`` times become ``replaced_to``."""
    frame = airports[["state"]].dropna()
    grouper = RareCategoryGrouper(min_count=40, other="Others").fit(frame)
    counts = frame["state"].value_counts()
    expected = frame["state"].where(counts[frame["state"]].to_numpy() >= 40, other="Others")
    assert_same_values(grouper.transform(frame)["state"], expected)
    graph_matches_transform(grouper, frame)


def test_one_hot_encoder(penguins):
    """IBM OneHotEncoder: one 0/1 column per category of ``pd.get_dummies`` (named column_category)."""
    frame = penguins[["island"]]
    enc = OneHotEncoder(handle_unknown="ignore").fit(frame)
    dummies = pd.get_dummies(frame["island"], prefix="island", prefix_sep="_").astype(float)
    np.testing.assert_array_equal(enc.transform(frame).to_numpy(float), dummies.to_numpy())
    assert list(enc.get_feature_names_out()) == list(dummies.columns)
    graph_matches_transform(enc, frame)


def test_scaler(penguins):
    """IBM Scaler(strategy='standard'): scikit-learn's StandardScaler, (x - mean) / std (ddof 0)."""
    frame = penguins[["bill_length_mm", "body_mass_g"]].dropna()
    scaler = StandardScaler().fit(frame)
    np.testing.assert_allclose(scaler.transform(frame).to_numpy(float),
                               ((frame - frame.mean()) / frame.std(ddof=0)).to_numpy(), rtol=1e-12)
    graph_matches_transform(scaler, frame)


def test_imputer(penguins):
    """IBM Imputer: ``fillna`` with the median / mean, or a constant."""
    frame = penguins[["bill_length_mm", "body_mass_g"]]
    for strategy, stat in (("median", frame.median()), ("mean", frame.mean())):
        imp = SimpleImputer(strategy=strategy).fit(frame)
        np.testing.assert_allclose(imp.transform(frame).to_numpy(float), frame.fillna(stat).to_numpy(), rtol=1e-12)
        graph_matches_transform(imp, frame)


def test_string_concatenator(airports):
    """IBM StringConcatenator: values joined with a separator (on text without missing values)."""
    frame = airports[["city", "state"]].dropna()
    concat = StringConcat("_").fit(frame)
    assert_same_values(concat.transform(frame)["city_state"], frame["city"].astype(str) + "_" + frame["state"].astype(str))
    graph_matches_transform(concat, frame)


def test_string_splitter(airports):
    """IBM StringSplitter(separator, keep=0 / -1): ``str(x).split(separator)[keep]``."""
    frame = airports[["name"]]
    for keep in (0, -1):
        split = StringSplit(" ", index=keep).fit(frame)
        assert_same_values(split.transform(frame)[f"name_{keep}"], frame["name"].map(lambda x: str(x).split(" ")[keep]))
        graph_matches_transform(split, frame)


def test_date_transformer():
    """IBM DateTransformer: month, ISO week, day of year, day of month, day of week (Monday 0), hour."""
    frame = pd.read_csv(DATA / "seattle-weather.csv")[["date"]]
    parts = DateParts(["month", "isoweek", "dayofyear", "day", "dayofweek", "hour"]).fit(frame)
    when = pd.to_datetime(frame["date"])
    expected = pd.DataFrame({"date_month": when.dt.month, "date_isoweek": when.dt.isocalendar().week.astype(np.int64),
                             "date_dayofyear": when.dt.day_of_year, "date_day": when.dt.day,
                             "date_dayofweek": when.dt.day_of_week, "date_hour": when.dt.hour})
    np.testing.assert_array_equal(parts.transform(frame).to_numpy(float), expected.to_numpy(float))
    graph_matches_transform(parts, frame)


def test_range_transformer(cars):
    """IBM RangeTransformer({(upper, lower): value}): values in [lower, upper] become value, last match wins."""
    frame = cars[["Horsepower"]]
    ibm = {(None, 150): 150, (70, None): 70}  # IBM's keys are (upper, lower)
    rm = RangeMap([(lower, upper, value) for (upper, lower), value in ibm.items()]).fit(frame)
    hp = frame["Horsepower"]
    expected = hp.copy()
    for (upper, lower), value in ibm.items():
        inside = (hp >= (lower if lower is not None else -np.inf)) & (hp <= (upper if upper is not None else np.inf))
        expected[inside] = value
    assert_same_values(rm.transform(frame)["Horsepower"], expected)
    graph_matches_transform(rm, frame)


def test_function_transformer(penguins):
    """IBM FunctionTransformer(func=lambda x: np.log(x + 0.001)): an Expression."""
    frame = penguins[["body_mass_g"]]
    expr = Expression("log(body_mass_g + 0.001)", name="body_mass_g").fit(frame)
    assert_same_values(expr.transform(frame)["body_mass_g"], frame["body_mass_g"].map(lambda x: np.log(x + 0.001)))
    graph_matches_transform(expr, frame)


def test_column_selector(penguins):
    """IBM ColumnSelector(columns, drop=True / False)."""
    keep = ColumnSelector(["island", "year"]).fit(penguins)
    assert list(keep.transform(penguins).columns) == ["island", "year"]
    graph_matches_transform(keep, penguins)
    dropped = ColumnSelector(["island", "year"], drop=True).fit(penguins)
    assert list(dropped.transform(penguins).columns) == list(penguins.drop(columns=["island", "year"]).columns)
    graph_matches_transform(dropped, penguins)
