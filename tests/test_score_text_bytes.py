"""Long Arrow text columns reach onnxruntime as fixed-width UTF-8 bytes (``contract.feeds.text_bytes``): the
scores are the object-array path's, value for value, for every container that holds Arrow text."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import onegraph
from onegraph.contract.columns import ColumnSpec
from onegraph.contract.feeds import text_bytes
from onegraph.errors import ColumnTypeError

TEXT = ["city", "state"]


@pytest.fixture(scope="module")
def airports_model(airports):
    """Latitude from the city and state one-hot (2,674 cities, 12 missing of each), on the real airports table
    with one city written as it is spelt (San José), so non-ASCII text must match a fitted category."""
    table = airports.copy()
    table["city"] = table["city"].replace({"San Jose": "San José"})
    assert (table["city"] == "San José").sum() > 1
    pipe = make_pipeline(ColumnTransformer([("text", make_pipeline(
        SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), TEXT)]), Ridge(alpha=1.0))
    pipe.fit(table[TEXT], table["latitude"])
    # three copies of the table (10,128 rows): past the 4,096 rows from which Arrow text goes as bytes
    rows = pd.concat([table[TEXT]] * 3, ignore_index=True)
    return pipe, onegraph.build(pipe, None, table[TEXT]), rows


def _as_objects(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.astype(object).where(rows.notna(), None)


def test_arrow_text_scores_as_the_object_path_and_scikit_learn(airports_model):
    pipe, model, rows = airports_model
    assert isinstance(rows["city"].dtype, pd.StringDtype) and rows["city"].dtype.storage == "pyarrow"
    session = onegraph.Session(model)
    spec = next(s for s in session.inputs if s.name == "city")
    fed = text_bytes(spec, rows["city"].array)
    assert fed is not None and fed.dtype.kind == "S" and fed.dtype.itemsize > max(map(len, fed))
    got = onegraph.score(model, rows)
    reference = onegraph.score(model, _as_objects(rows))  # object arrays: the path onnxruntime encodes itself
    np.testing.assert_array_equal(got["prediction"].to_numpy(), reference["prediction"].to_numpy())
    # one-hot rows have two non-zero features: a double sum of a few terms, rounding only
    np.testing.assert_allclose(got["prediction"].to_numpy(), pipe.predict(rows), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("container", ["arrow_dtype", "arrow_table", "polars"])
def test_every_arrow_container_takes_the_bytes_path(airports_model, container):
    _, model, rows = airports_model
    if container == "arrow_dtype":
        data = rows.astype(pd.ArrowDtype(pa.string()))
    elif container == "arrow_table":
        data = pa.Table.from_pandas(rows, preserve_index=False)
    else:
        pl = pytest.importorskip("polars")
        data = pl.from_pandas(rows)
    session = onegraph.Session(model)
    fed = session._feeds(data, as_bytes=True)[1]
    assert {fed[c].dtype.kind for c in TEXT} == {"S"}
    np.testing.assert_array_equal(session.score(data)["prediction"].to_numpy(),
                                  session.score(_as_objects(rows))["prediction"].to_numpy())


def test_missing_text_is_the_missing_marker(airports_model):
    _, model, rows = airports_model
    rows = rows.copy()
    rows.loc[[5, 7000], "city"] = None
    session = onegraph.Session(model)
    fed = session._feeds(rows, as_bytes=True)[1]["city"]
    assert fed[5] == fed[7000] == "\uffff".encode()
    np.testing.assert_array_equal(session.score(rows)["prediction"].to_numpy(),
                                  session.score(_as_objects(rows))["prediction"].to_numpy())


def test_text_holding_a_nul_goes_as_objects(airports_model):
    """onnxruntime reads a bytes item up to its first NUL: such a column keeps the object path."""
    _, model, rows = airports_model
    rows = rows.copy()
    rows.loc[9, "city"] = "Bay\x00Springs"
    spec = ColumnSpec("city", "string", "string")
    assert text_bytes(spec, rows["city"].array) is None
    np.testing.assert_array_equal(onegraph.score(model, rows)["prediction"].to_numpy(),
                                  onegraph.score(model, _as_objects(rows))["prediction"].to_numpy())


def test_the_missing_marker_in_a_text_is_refused_naming_the_row(airports_model):
    _, model, rows = airports_model
    rows = rows.copy()
    rows.loc[6001, "state"] = "C\uffffA"
    with pytest.raises(ColumnTypeError, match=r"'state'.*row 6001 holds U\+FFFF"):
        onegraph.score(model, rows)


def test_short_or_non_arrow_columns_keep_the_object_path(airports_model):
    _, _, rows = airports_model
    spec = ColumnSpec("city", "string", "string")
    assert text_bytes(spec, rows["city"].array[:4096]) is None  # few rows: the object path is as fast
    assert text_bytes(spec, rows["city"].astype(object).to_numpy()) is None
    assert text_bytes(spec, rows["city"].astype("string[python]").array) is None
    assert text_bytes(ColumnSpec("city", "float", "double"), rows["city"].array) is None


def test_a_long_text_keeps_the_object_path(airports_model):
    """The bytes feed is as wide as the longest text on every row: a column holding one long text (a pasted
    paragraph) goes as objects, as it would take its width on each of 10,128 rows; 63 bytes still go as
    bytes."""
    _, model, rows = airports_model
    rows = rows.copy()
    rows.loc[17, "city"] = "Colorado Springs" * 4  # 64 bytes: with its NUL, one past the widest bytes feed
    spec = ColumnSpec("city", "string", "string")
    assert text_bytes(spec, rows["city"].array) is None
    assert text_bytes(spec, rows["state"].array) is not None
    rows.loc[17, "city"] = "Colorado Springs" * 3 + "Colorado Spring"  # 63 bytes
    assert text_bytes(spec, rows["city"].array).dtype.itemsize == 64
    np.testing.assert_array_equal(onegraph.score(model, rows)["prediction"].to_numpy(),
                                  onegraph.score(model, _as_objects(rows))["prediction"].to_numpy())
