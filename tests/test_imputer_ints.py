"""SimpleImputer over int columns (nullable ``Int64`` with missing values, as pandas reads counts and years) mixed
with float columns: the graph casts the ints keeping their missing marker and tests for it together with the
floats' NaN in one comparison. Values against scikit-learn's own ``transform`` on the Palmer penguins
(tests/data), where scikit-learn reads ``pd.NA`` as NaN."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.impute import SimpleImputer

import onegraph
from onegraph.emit import INT64_MIN, INT_PRESENT_FROM


def _frame(penguins: pd.DataFrame) -> pd.DataFrame:
    frame = penguins[["year", "body_mass_g", "bill_length_mm", "flipper_length_mm"]].copy()
    rng = np.random.default_rng(7)
    frame["year"] = frame["year"].astype("Int64")
    frame.loc[rng.random(len(frame)) < 0.1, "year"] = pd.NA
    frame["body_mass_g"] = frame["body_mass_g"].round().astype("Int64")  # its NaN become pd.NA
    return frame.reset_index(drop=True)


@pytest.mark.parametrize("strategy", ["mean", "median", "most_frequent", "constant"])
@pytest.mark.parametrize("add_indicator", [False, True])
def test_int_and_float_columns_impute_as_scikit_learn(penguins, strategy, add_indicator):
    frame = _frame(penguins)
    assert frame["year"].isna().any() and frame["body_mass_g"].isna().any() and frame["bill_length_mm"].isna().any()
    imputer = SimpleImputer(strategy=strategy, fill_value=-1, add_indicator=add_indicator).fit(frame)
    model = onegraph.build(imputer, None, frame)
    got = onegraph.score(model, frame).to_numpy(np.float64)
    np.testing.assert_array_equal(got, imputer.transform(frame))


def test_an_int_column_needs_one_comparison_not_three_nodes(penguins):
    """The int column is cast once; no Equal against INT64_MIN nor a Where putting NaN in its place."""
    frame = _frame(penguins)
    proto = onegraph.build(SimpleImputer().fit(frame), None, frame)
    ops = [n.op_type for f in proto.functions for n in f.node] + [n.op_type for n in proto.graph.node]
    assert ops.count("Cast") == 2 and "Equal" not in ops and ops.count("Where") == 1, ops


def test_ints_next_to_the_marker(penguins):
    """An int within 512 of INT64_MIN rounds to -2**63 in double and counts as missing (documented at
    ``INT_PRESENT_FROM``); from -2**63 + 513 on, ints are values, as scikit-learn reads them."""
    frame = _frame(penguins).head(8).copy()
    frame["year"] = pd.array([INT64_MIN + 1, INT64_MIN + 512, INT64_MIN + 513, INT64_MIN + 1024, 2007, pd.NA,
                              2**62, 2009], dtype="Int64")
    imputer = SimpleImputer(strategy="constant", fill_value=5).fit(_frame(penguins))
    got = onegraph.score(onegraph.build(imputer, None, _frame(penguins)), frame)["year"].to_numpy(np.float64)
    expected = imputer.transform(frame)[:, 0]
    assert float(np.float64(INT64_MIN + 513)) == INT_PRESENT_FROM
    np.testing.assert_array_equal(got[2:], expected[2:])
    assert got[:2].tolist() == [5.0, 5.0]  # scikit-learn: -2**63 as a value


@pytest.mark.parametrize("bad", [
    {"year": [np.nan, 2007.0, 2008.0], "body_mass_g": [3000.0, 3100.0, 3200.0]},
    {"year": pd.array([2007, pd.NA, 2008], dtype="Int64"), "body_mass_g": [3000.0, 3100.0, 3200.0]},
    {"year": [2007, 2008, 2009], "body_mass_g": [3000.0, 3100.0, np.nan]},
], ids=["float NaN", "Int64 NA", "second column"])
def test_a_missing_value_is_refused_where_missing_values_is_another_number(bad):
    """SimpleImputer(missing_values=-1) imputes -1 and refuses NaN ("Input X contains NaN"): scoring a NaN or a
    pd.NA raises naming the column and the row, as the text case does, instead of answering NaN."""
    fit = pd.DataFrame({"year": pd.array([2007, -1, 2008, 2009], dtype="Int64"),
                        "body_mass_g": [3000.0, -1.0, 3500.0, 4000.0]})
    imputer = SimpleImputer(strategy="median", missing_values=-1).fit(fit)
    model = onegraph.build(imputer, None, fit)
    np.testing.assert_array_equal(onegraph.score(model, fit).to_numpy(np.float64), imputer.transform(fit))
    frame = pd.DataFrame(bad)
    with pytest.raises(ValueError, match="contains NaN"):
        imputer.transform(frame)
    column = "body_mass_g" if frame["body_mass_g"].isna().any() else "year"
    row = int(np.flatnonzero(frame[column].isna())[0])
    with pytest.raises(onegraph.errors.OutOfRangeError, match=rf"column {column!r}.*first row {row}\b"):
        onegraph.score(model, frame)
