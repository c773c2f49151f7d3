"""The DataFrame <-> graph-input contract: dtypes, missing values, containers, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from conftest import assert_same_values

import onegraph
from onegraph.contract.columns import spec_for
from onegraph.contract.feeds import to_feed
from onegraph.errors import ColumnTypeError, MissingColumnError
from onegraph.frame import MISSING_STRING, NA_INT64, ColumnSelector


def dtype_zoo(n: int = 6) -> pd.DataFrame:
    """One column per dtype pandas really produces, each with a missing value where it can hold one."""
    ts = pd.to_datetime(["2018-01-31", "2018-04-30", None, "2023-06-13T04:53:00.280", "2020-02-29", "1999-12-31"], format="ISO8601")
    return pd.DataFrame({
        "f64": [1.5, np.nan, -2.0, 1e300, 0.0, 3.25],
        "f32": np.array([1.5, np.nan, -2.0, 3.0, 0.0, 0.5], dtype=np.float32),
        "i64": np.array([1, 2, -3, 2**62, 0, 7], dtype=np.int64),
        "i32": np.array([1, 2, -3, 4, 0, 7], dtype=np.int32),
        "nullable_int": pd.array([1, None, 3, 2**62, 0, -5], dtype="Int64"),
        "nullable_float": pd.array([1.5, None, 3.0, 4.0, 0.0, -1.0], dtype="Float64"),
        "nullable_bool": pd.array([True, None, False, True, False, True], dtype="boolean"),
        "np_bool": np.array([True, False, True, True, False, False]),
        "obj": pd.Series(["a", None, "", "é unicode", np.nan, "z"], dtype=object),
        "str_python": pd.array(["a", None, "", "x", "y", "z"], dtype="string[python]"),
        "str_pyarrow": pd.array(["a", None, "", "x", "y", "z"], dtype="string[pyarrow]"),
        "category": pd.Categorical(["lo", "hi", None, "lo", "mid", "hi"]),
        "dt_naive": ts,
        "dt_tz": ts.tz_localize("UTC").tz_convert("Europe/Paris"),
        "dt_seconds": ts.astype("datetime64[s]"),
        "td": pd.to_timedelta([1, None, 3, 4, 5, 6], unit="h"),
        "arrow_int": pd.array([1, None, 3, 4, 5, 6], dtype=pd.ArrowDtype(pa.int64())),
        "arrow_str": pd.array(["a", None, "c", "", "e", "f"], dtype=pd.ArrowDtype(pa.string())),
    })


EXPECTED = {
    "f64": ("float", "double"), "f32": ("float", "float"), "i64": ("int", "int64"), "i32": ("int", "int64"),
    "nullable_int": ("int", "int64"), "nullable_float": ("float", "double"), "nullable_bool": ("bool", "double"),
    "np_bool": ("bool", "bool"), "obj": ("string", "string"), "str_python": ("string", "string"),
    "str_pyarrow": ("string", "string"), "category": ("string", "string"), "dt_naive": ("datetime", "int64"),
    "dt_tz": ("datetime", "int64"), "dt_seconds": ("datetime", "int64"), "td": ("timedelta", "int64"),
    "arrow_int": ("int", "int64"), "arrow_str": ("string", "string"),
}


def test_every_dtype_maps_to_its_documented_input():
    zoo = dtype_zoo()
    for name, (kind, onnx_type) in EXPECTED.items():
        spec = spec_for(name, zoo[name])
        assert (spec.kind, spec.onnx_type) == (kind, onnx_type), name
    assert spec_for("dt_tz", zoo["dt_tz"]).tz == "Europe/Paris"


def test_missing_values_have_one_representation_per_kind():
    zoo = dtype_zoo()
    feeds = {name: to_feed(spec_for(name, zoo[name]), zoo[name]) for name in zoo}
    assert np.isnan(feeds["f64"][1]) and feeds["f64"].dtype == np.float64
    assert feeds["f32"].dtype == np.float32 and np.isnan(feeds["f32"][1])
    assert feeds["nullable_int"][1] == NA_INT64 and feeds["nullable_int"][3] == 2**62
    assert np.isnan(feeds["nullable_bool"][1]) and feeds["nullable_bool"][0] == 1.0
    for name in ("obj", "str_python", "str_pyarrow", "arrow_str"):
        assert feeds[name][1] == MISSING_STRING, name
    # a missing string is not an empty string
    assert feeds["obj"][2] == "" and feeds["str_pyarrow"][2] == "" and feeds["obj"][4] == MISSING_STRING
    assert feeds["category"][2] == MISSING_STRING and feeds["category"][0] == "lo"
    # datetimes: ns since the epoch, UTC; NaT is INT64_MIN whatever the unit
    assert feeds["dt_naive"][0] == pd.Timestamp("2018-01-31").value
    assert feeds["dt_seconds"][0] == pd.Timestamp("2018-01-31").value
    assert feeds["dt_naive"][2] == NA_INT64 and feeds["dt_seconds"][2] == NA_INT64
    assert feeds["dt_tz"][0] == pd.Timestamp("2018-01-31", tz="UTC").value
    assert feeds["td"][0] == 3600 * 10**9 and feeds["td"][1] == NA_INT64


def test_identity_graph_round_trips_every_dtype():
    """A preprocessing-only graph that passes columns through gives back what went in."""
    zoo = dtype_zoo()
    selector = ColumnSelector().fit(zoo)
    model = onegraph.build(selector, None, zoo)
    names = [i.name for i in model.graph.input]
    assert names == list(zoo.columns)
    scored = onegraph.score(model, zoo)
    for name in zoo.columns:
        got = scored[name]
        expected = zoo[name]
        if name == "dt_tz":
            assert str(got.dt.tz) == "Europe/Paris"  # the zone comes back with the instants
            assert_same_values(got.dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ns]").astype("int64"),
                               expected.dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ns]")
                               .astype("int64"), name=name)
        elif EXPECTED[name][0] == "datetime":
            assert_same_values(got.astype("datetime64[ns]").astype("int64"),
                               expected.astype("datetime64[ns]").astype("int64"), name=name)
        elif EXPECTED[name][0] == "bool" and name == "nullable_bool":
            assert_same_values(got.astype(float), expected.astype("Float64").to_numpy(float, na_value=np.nan), name=name)
        elif EXPECTED[name][0] == "timedelta":
            assert (got.isna() == expected.isna()).all() and (got[expected.notna()] == expected[expected.notna()]).all()
        else:
            assert_same_values(pd.Series(got).to_numpy(object), expected.to_numpy(object), name=name)


@pytest.mark.parametrize("container", ["pandas", "polars", "arrow", "batch", "capsule", "dict", "records"])
def test_every_container_scores_the_same(penguins, container):
    frame = penguins.drop(columns="species").head(20)
    selector = ColumnSelector().fit(frame)
    model = onegraph.build(selector, None, frame)
    expected = onegraph.score(model, frame)
    if container == "pandas":
        data = frame
    elif container == "polars":
        data = pl.from_pandas(frame)
    elif container == "arrow":
        data = pa.Table.from_pandas(frame)
    elif container == "batch":
        data = pa.RecordBatch.from_pandas(frame)
    elif container == "capsule":
        table = pa.Table.from_pandas(frame)

        class OnlyCapsule:  # an object exposing nothing but the Arrow PyCapsule stream interface
            def __arrow_c_stream__(self, requested_schema=None):
                return table.__arrow_c_stream__(requested_schema)

        data = OnlyCapsule()
    elif container == "dict":
        data = {c: frame[c].tolist() for c in frame.columns}
    else:
        data = frame.to_dict("records")
    got = onegraph.score(model, data)
    for c in frame.columns:
        assert_same_values(got[c].to_numpy(object), expected[c].to_numpy(object), name=f"{container}:{c}")


def test_schema_is_stored_in_the_model(penguins):
    frame = penguins.drop(columns="species")
    model = onegraph.build(ColumnSelector().fit(frame), None, frame)
    props = {p.key: p.value for p in model.metadata_props}
    assert "org.onegraph.inputs" in props
    session = onegraph.Session(model)
    assert [s.name for s in session.inputs] == list(frame.columns)
    assert {s.name: s.kind for s in session.inputs}["island"] == "string"


def test_text_in_a_numeric_column_names_the_column(penguins):
    frame = penguins.drop(columns="species")
    model = onegraph.build(ColumnSelector().fit(frame), None, frame)
    bad = frame.head(3).copy()
    bad["bill_length_mm"] = bad["bill_length_mm"].astype(object)
    bad.loc[bad.index[1], "bill_length_mm"] = "forty"
    with pytest.raises(ColumnTypeError, match="bill_length_mm"):
        onegraph.score(model, bad)
    with pytest.raises(ColumnTypeError, match="'year'.*whole number"):
        onegraph.score(model, frame.head(2).assign(year=[2007.5, 2008.0]))


def test_missing_column_is_named(penguins):
    frame = penguins.drop(columns="species")
    model = onegraph.build(ColumnSelector().fit(frame), None, frame)
    with pytest.raises(MissingColumnError, match="'island'"):
        onegraph.score(model, frame.drop(columns="island"))
    with pytest.raises(MissingColumnError, match="columns 'bill_length_mm', .*'sex', 'year' are required"):
        onegraph.score(model, {"island": "Dream"})


def test_mixed_object_column_is_refused_at_build():
    frame = pd.DataFrame({"x": pd.Series([1, "a", 2.5], dtype=object)})
    with pytest.raises(ColumnTypeError, match="'x'.*mixes"):
        spec_for("x", frame["x"])


def test_all_missing_column_of_any_dtype_is_accepted(penguins):
    """pandas reads an all-empty CSV column as float64; a text input must still take it."""
    frame = penguins.drop(columns="species")
    model = onegraph.build(ColumnSelector().fit(frame), None, frame)
    rows = frame.head(3).assign(sex=np.nan, island=None)
    scored = onegraph.score(model, rows)
    assert scored["sex"].isna().all() and scored["island"].isna().all()


@pytest.mark.parametrize("dtype", ["str", "string[pyarrow]", "string[python]", "object", "category"])
def test_text_in_a_bool_column_is_read_strictly(dtype):
    """'False' is False, 'no' is refused: text is never turned into True by truthiness."""
    frame = pd.DataFrame({"flag": np.array([True, False] * 5), "x": np.arange(10.0)})
    model = onegraph.build(ColumnSelector().fit(frame), None, frame)
    rows = pd.DataFrame({"flag": pd.Series(["False", "TRUE", "0", "1"], dtype=dtype), "x": [1.0] * 4})
    assert onegraph.score(model, rows)["flag"].tolist() == [False, True, False, True]
    bad = pd.DataFrame({"flag": pd.Series(["False", "no"], dtype=dtype), "x": [1.0, 2.0]})
    with pytest.raises(ColumnTypeError, match="'flag'.*'no' at row 1"):
        onegraph.score(model, bad)
    with pytest.raises(ColumnTypeError, match="'flag'.*missing value at row 0"):
        onegraph.score(model, pd.DataFrame({"flag": [None, True], "x": [1.0, 2.0]}))


def test_a_row_given_as_a_series(penguins):
    frame = penguins.drop(columns="species")
    model = onegraph.build(ColumnSelector().fit(frame), None, frame)
    got = onegraph.score(model, frame.iloc[5])
    assert len(got) == 1 and got["island"].iloc[0] == frame["island"].iloc[5]


def test_text_in_numeric_column_names_the_value_and_row():
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    model = onegraph.build(ColumnSelector().fit(frame), None, frame)
    with pytest.raises(ColumnTypeError, match="'x'.*'\\?' at row 1"):
        onegraph.score(model, pd.DataFrame({"x": pd.Series(["3.5", "?"], dtype="str")}))
