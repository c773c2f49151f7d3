"""Issue 14, kind 6: values that were scored silently wrong, exit 0.

* integers an int64 input cannot hold (``1e30`` in a CSV, ``2**63`` / ``1e19`` from Python, a uint64 above
  ``2**63 - 1``) and ``-2**63`` itself (onegraph's missing integer) became *missing*: now an error naming the
  column and the row, from every container (pandas of every dtype pandas makes, polars, Arrow, dicts, records,
  CSV files);
* ``±inf`` gave an empty label: now an error naming the column and row where the model gives no answer for
  it (scikit-learn refuses infinite values), the answer where it gives one (HistGradientBoosting, as
  scikit-learn's);
* a CSV header naming a column twice silently scored the first: refused, naming it;
* ``onegraph build`` turned a numeric column with stray text into categories without a word: a note names the
  column, the values and their rows.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from conftest import DATA

import onegraph
from onegraph.contract.columns import NA_INT64, ColumnSpec
from onegraph.contract.feeds import to_feed
from onegraph.errors import ColumnTypeError, DataError, MissingColumnError
from onegraph.io import read_table
from onegraph.runtime import Session

YEAR = ColumnSpec("year", "int", "int64")


@pytest.fixture(scope="module")
def session(penguins_onnx) -> Session:
    return Session(penguins_onnx)


@pytest.fixture(scope="module")
def rows(penguins) -> pd.DataFrame:
    """Five penguins as the model takes them (str text, float64 measures, int64 year)."""
    return penguins.drop(columns="species").iloc[[0, 1, 2, 4, 5]].reset_index(drop=True)


def _with(rows: pd.DataFrame, column: str, values) -> pd.DataFrame:
    out = rows.copy()
    out[column] = values
    return out


def _year_containers(rows: pd.DataFrame, bad) -> dict:
    """The five rows with ``bad`` as row 1's year, in every container scoring reads."""
    years = [2007, bad, 2007, 2008, 2009]
    records = rows.to_dict("records")
    records[1]["year"] = bad
    return {
        "records": records,
        "dict of lists": {**{c: rows[c].tolist() for c in rows.columns}, "year": years},
        "object column": _with(rows, "year", pd.Series(years, dtype=object)),
        "object column with None": _with(rows, "year", pd.Series([None, bad, 2007, 2008, 2009], dtype=object)),
    }


INT64_MIN = -2**63
OUT_OF_RANGE = [2**63, 10**19, 2**64 + 5, -2**63 - 1, 1e30, 1e19, 2.0**63]


@pytest.mark.parametrize("bad", OUT_OF_RANGE + [INT64_MIN], ids=repr)
def test_integers_beyond_int64_name_the_column_and_row_in_python_containers(session, rows, bad):
    """Kind 6: each of these was scored as a missing year (the imputer's median), exit 0."""
    reason = "reserves for a missing integer" if bad == INT64_MIN else "outside the int64 range"
    for name, data in _year_containers(rows, bad).items():
        with pytest.raises(ColumnTypeError, match=rf"'year': value .* at row 1 .*{reason}") as info:
            session.score(data)
        assert info.value.column == "year", name
    with pytest.raises(ColumnTypeError, match=rf"'year': value .* at row 0 .*{reason}"):
        session.score({**rows.iloc[0].to_dict(), "year": bad})  # one record: the single-row path


def test_integers_beyond_int64_in_every_dtype_pandas_polars_and_arrow_make(session, rows):
    """Kind 6: the dtypes that hold such values: nullable Int64 / UInt64, numpy int64 / uint64, float64
    (a CSV column with 1e30), Arrow int64 / uint64 (pandas' pyarrow dtypes, Arrow tables, polars), numbers as
    pyarrow text."""
    big = 2**63
    cases = {
        "Int64 INT64_MIN": pd.array([2007, INT64_MIN, None, 2008, 2009], dtype="Int64"),
        "UInt64 2**63": pd.array([2007, big, None, 2008, 2009], dtype="UInt64"),
        "int64 INT64_MIN": np.array([2007, INT64_MIN, 2007, 2008, 2009], dtype=np.int64),
        "uint64 1e19": np.array([2007, 10**19, 2007, 2008, 2009], dtype=np.uint64),
        "float64 1e30": np.array([2007.0, 1e30, np.nan, 2008.0, 2009.0]),
        "float64 -2**63": np.array([2007.0, -2.0**63, 2007.0, 2008.0, 2009.0]),
        "int64[pyarrow] INT64_MIN": pd.array([2007, INT64_MIN, None, 2008, 2009], dtype="int64[pyarrow]"),
        "uint64[pyarrow] 2**63": pd.array([2007, big, None, 2008, 2009], dtype="uint64[pyarrow]"),
        "string[pyarrow] 2**63": pd.array(["2007", str(big), None, "2008", "2009"], dtype="string[pyarrow]"),
    }
    for name, years in cases.items():
        with pytest.raises(ColumnTypeError, match=r"'year': value .* at row 1 "):
            session.score(_with(rows, "year", years))
    table = pa.Table.from_pandas(rows, preserve_index=False)
    at = table.schema.get_field_index("year")
    for arrow_type, bad in ((pa.int64(), INT64_MIN), (pa.uint64(), big)):
        changed = table.set_column(at, "year", pa.array([2007, bad, None, 2008, 2009], arrow_type))
        for data in (changed, pl.from_arrow(changed)):
            with pytest.raises(ColumnTypeError, match=r"'year': value .* at row 1 "):
                session.score(data)


def test_a_csv_column_of_1e30_is_refused_by_the_command_line(cli, penguins_onnx, rows, tmp_path):
    """Kind 6: ``onegraph score`` of a CSV whose year holds 1e30 (pandas reads the column as float64) or
    9223372036854775808 (uint64) exited 0 with the year taken as missing."""
    for bad in ("1e30", "9223372036854775808"):
        csv = tmp_path / "rows.csv"
        text = rows.to_csv(index=False).splitlines()
        head, second = text[0].split(","), text[2].split(",")
        second[head.index("year")] = bad
        text[2] = ",".join(second)
        csv.write_text("\n".join(text) + "\n")
        done = cli("score", str(penguins_onnx), str(csv), "-o", str(tmp_path / "out.csv"))
        assert done.returncode == 1, done
        assert "'year'" in done.stderr and "row 1" in done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / "out.csv").exists()


def test_whole_numbers_up_to_int64_max_are_fed_exactly():
    """Python ints in object columns went through float64: 2**62 + 1 became 2**62 (kind 6, silently wrong)."""
    exact = [2**62 + 1, None, 2**63 - 1, -(2**63) + 1, 12]
    for values in (np.array(exact, dtype=object), exact, pd.Series(exact, dtype=object),
                   pd.array(exact, dtype="Int64"), pd.array(["4611686018427387905", None, "9223372036854775807",
                                                             "-9223372036854775807", "12"], dtype="str")):
        np.testing.assert_array_equal(to_feed(YEAR, values), [2**62 + 1, NA_INT64, 2**63 - 1, -(2**63) + 1, 12])
    with pytest.raises(ColumnTypeError, match="value 2.5 at row 1 is not a whole number"):
        to_feed(YEAR, [1, 2.5])
    with pytest.raises(ColumnTypeError, match="value 'two' at row 1 is not a number"):
        to_feed(YEAR, ["1", "two"])


def test_numbers_beyond_what_the_input_type_holds_are_refused():
    """A double beyond float32's range fed a float input became inf; a Python int beyond the double range
    raised OverflowError (an internal error of the command line)."""
    with pytest.raises(ColumnTypeError, match=r"'x': value 1e\+39 at row 2 is beyond the float32 range"):
        to_feed(ColumnSpec("x", "float", "float"), np.array([1.0, np.nan, 1e39]))
    np.testing.assert_array_equal(to_feed(ColumnSpec("x", "float", "float"), np.array([1.0, np.inf])), [1, np.inf])
    with pytest.raises(ColumnTypeError, match=r"'x': value 1000.* at row 1 is beyond the double range"):
        to_feed(ColumnSpec("x", "float", "double"), [1, 10**400])


# -- infinite values ----------------------------------------------------------------------------------
INFINITIES = [np.inf, -np.inf]


@pytest.mark.parametrize("inf", INFINITIES, ids=repr)
def test_infinity_where_the_model_gives_no_answer_names_column_and_row(session, rows, inf):
    """Kind 6: the penguins model (median imputer, which does not impute inf; a logistic regression, whose
    probabilities on inf are NaN) gave row 1 an empty label, exit 0. scikit-learn's predict_proba refuses the
    row ("Input X contains infinity"); onegraph names the column and the row, from every container."""
    measures = [39.1, inf, 40.3, 36.7, 39.3]
    frame = _with(rows, "bill_length_mm", measures)
    records = frame.to_dict("records")
    table = pa.Table.from_pandas(frame, preserve_index=False)
    for data in (frame, records, {c: frame[c].tolist() for c in frame.columns}, table, pl.from_arrow(table),
                 _with(rows, "bill_length_mm", pd.array(measures, dtype="Float64"))):
        with pytest.raises(ColumnTypeError, match=r"'bill_length_mm': value -?inf at row 1 is infinite"):
            session.score(data)
    with pytest.raises(ColumnTypeError, match="at row 0 is infinite"):
        session.score(records[1])  # the single-row path
    # a missing value keeps its documented answer: imputed here, so a label
    assert session.score(_with(rows, "bill_length_mm", [39.1, np.nan, 40.3, 36.7, 39.3]))["label"].notna().all()


def test_infinity_where_the_model_answers_is_scored_as_scikit_learn_does(penguins):
    """HistGradientBoosting takes inf (scikit-learn's predict gives its class): the graph gives the same."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    frame = penguins.dropna(subset=["species"])
    numeric = frame[["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]]
    model = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(numeric, frame["species"])
    built = onegraph.build(None, model, numeric)
    rows = numeric.head(4).copy()
    rows.iloc[1, 0], rows.iloc[2, 2] = np.inf, -np.inf
    got = onegraph.score(built, rows)
    assert got["label"].tolist() == model.predict(rows).tolist()
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(), model.predict_proba(rows), rtol=1e-6)


def test_infinity_into_a_regressor_names_column_and_row(penguins):
    """A linear regression on inf predicts ±inf or NaN: no answer (scikit-learn refuses the row)."""
    from sklearn.linear_model import Ridge

    frame = penguins.dropna()
    x = frame[["bill_length_mm", "bill_depth_mm", "flipper_length_mm"]]
    built = onegraph.build(None, Ridge().fit(x, frame["body_mass_g"]), x)
    rows = x.head(3).copy()
    rows.iloc[2, 1] = np.inf
    with pytest.raises(ColumnTypeError, match="'bill_depth_mm': value inf at row 2 is infinite"):
        onegraph.score(built, rows)


# -- duplicated names ---------------------------------------------------------------------------------
def test_a_csv_header_naming_a_column_twice_is_refused(cli, penguins_onnx, rows, tmp_path):
    """Kind 6: pandas renames the second ``island`` to ``island.1`` and the model scored the first, exit 0."""
    text = rows.to_csv(index=False).splitlines()
    text[0] = text[0].replace("sex", "island")
    csv = tmp_path / "rows.csv"
    csv.write_text("\n".join(text) + "\n")
    with pytest.raises(DataError, match="column name 'island' appears more than once"):
        read_table(csv)
    done = cli("score", str(penguins_onnx), str(csv), "-o", str(tmp_path / "out.csv"))
    assert done.returncode == 1 and "'island' appears more than once" in done.stderr, done
    # an index column written without a name leaves one empty name: not a repeat
    unnamed = tmp_path / "index.csv"
    rows.to_csv(unnamed)
    assert list(read_table(unnamed).columns[:2]) == ["Unnamed: 0", "island"]


def test_an_arrow_table_naming_a_column_twice_is_refused(session, rows):
    """An Arrow table may repeat a name; reading it raised pyarrow's KeyError (an internal error)."""
    table = pa.Table.from_pandas(rows, preserve_index=False)
    twice = table.append_column("year", pa.array([1, 2, 3, 4, 5]))
    with pytest.raises(DataError, match="column 'year' appears more than once"):
        session.score(twice)


# -- onegraph build: numbers with stray text ----------------------------------------------------------
def test_build_says_when_a_numeric_column_with_stray_text_becomes_categories(cli, tmp_path):
    """Kind 6: cars' Horsepower with two stray entries was one-hot encoded without a word. The note names the
    column, the values and their rows, and says how to get numbers; a clean numeric column gets no note."""
    cars = pd.read_csv(DATA / "cars.csv")
    stray = cars.astype({"Horsepower": object})
    stray.loc[32, "Horsepower"] = "?"
    stray.loc[126, "Horsepower"] = "n/a [est.]"
    path = tmp_path / "cars.csv"
    stray.to_csv(path, index=False)
    done = cli("build", str(path), "--target", "Miles_per_Gallon", "-o", str(tmp_path / "cars.onnx"))
    assert done.returncode == 0, done
    assert ("note: column 'Horsepower' used as categories: 390 of its 392 values are numbers, but 2 are not: "
            "'?' (row 32), 'n/a [est.]' (row 126)") in done.stderr
    assert "make those cells empty (missing)" in done.stderr
    clean = cli("build", str(DATA / "cars.csv"), "--target", "Miles_per_Gallon", "-o", str(tmp_path / "c.onnx"))
    assert clean.returncode == 0 and "used as categories" not in clean.stderr


def test_build_refuses_infinite_training_values_naming_the_row(cli, tmp_path):
    """scikit-learn cannot fit on ±inf: build says which column and where (it named the column only)."""
    cars = pd.read_csv(DATA / "cars.csv")
    cars.loc[5, "Acceleration"] = np.inf
    path = tmp_path / "cars.csv"
    cars.to_csv(path, index=False)
    done = cli("build", str(path), "--target", "Miles_per_Gallon", "-o", str(tmp_path / "cars.onnx"))
    assert done.returncode == 1
    assert "'Acceleration': holds infinite values (first at row 5)" in done.stderr, done.stderr


@pytest.mark.parametrize("column, value, said", [
    # the target: an internal error (scikit-learn's "Input contains infinity") after a numpy RuntimeWarning
    ("Miles_per_Gallon", np.inf, "'Miles_per_Gallon': holds infinite values (first at row 7)"),
    # finite, but its square overflows the scaler's variance: a model fitted on nothing, 18% accuracy, exit 0
    ("Horsepower", 1e308, "'Horsepower': holds 1e+308 at row 7, beyond"),
])
def test_build_refuses_values_it_cannot_fit_on_in_one_line(cli, tmp_path, column, value, said):
    cars = pd.read_csv(DATA / "cars.csv")
    cars.loc[7, column] = value
    path = tmp_path / "cars.csv"
    cars.to_csv(path, index=False)
    target = "Miles_per_Gallon" if column == "Miles_per_Gallon" else "Origin"
    done = cli("build", str(path), "--target", target, "-o", str(tmp_path / "cars.onnx"))
    assert done.returncode == 1 and said in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Warning" not in done.stderr
    assert not (tmp_path / "cars.onnx").exists()


MARKER = "\uffff"  # onegraph's missing-text marker (contract.columns.MISSING_STRING)


@pytest.mark.parametrize("inside", [False, True], ids=["is", "inside"])
@pytest.mark.parametrize("container", ["dict", "records", "few rows", "many rows", "object", "category",
                                       "pyarrow", "polars", "polars categorical", "arrow dictionary"])
def test_text_holding_the_missing_marker_is_refused_naming_column_and_row(session, rows, container, inside):
    """A value that *is* U+FFFF would be scored as a missing value (imputed): refused instead, in every
    container and on both the single-row and the general path. A value holding it ("Bis\uffffcoe") was
    scored: a step splitting or slicing text (StringSplit) turns it into the marker; refused too."""
    marker = "Bis" + MARKER + "coe" if inside else MARKER
    islands = ["Torgersen", marker, "Biscoe", None, "Dream"]
    frame = _with(rows, "island", islands)
    data = {
        "dict": {**rows.iloc[1].to_dict(), "island": marker},
        "records": frame.to_dict("records"),
        "few rows": _with(rows, "island", pd.array(islands, dtype="str")),
        "many rows": pd.concat([frame] * 1000, ignore_index=True).astype({"island": "str"}),
        "object": _with(rows, "island", pd.Series(islands, dtype=object)),
        "category": _with(rows, "island", pd.Series(islands, dtype="category")),
        "pyarrow": pa.Table.from_pandas(frame.astype({"island": object})),
        "polars": pl.from_pandas(frame.astype({"island": object})),
        "polars categorical": pl.from_pandas(frame.astype({"island": object})).with_columns(
            pl.col("island").cast(pl.Categorical)),
        "arrow dictionary": pa.Table.from_pandas(frame.astype({"island": "category"}), preserve_index=False),
    }[container]
    with pytest.raises(ColumnTypeError, match=r"'island'.*row [01] holds U\+FFFF"):
        session.score(data)
    ok = _with(rows, "island", ["Torgersen", "Biscoe", "Biscoe", None, "Dream"])
    assert len(session.score(ok)) == 5  # the same rows without the marker score


@pytest.mark.parametrize("container", ["category", "many rows category", "arrow dictionary",
                                       "many rows arrow dictionary", "polars enum"])
def test_a_category_holding_the_marker_that_no_row_holds_is_no_fault(session, rows, container):
    """The marker in a category (or dictionary entry) that no row uses: the rows score as the same rows given as
    text (an IndexError had escaped, looking for the first row holding it)."""
    islands = ["Torgersen", "Biscoe", "Biscoe", None, "Dream"]
    kind = pd.CategoricalDtype(["Biscoe", "Dream", "Torgersen", "old" + MARKER])
    few = _with(rows, "island", pd.Series(islands, dtype=kind))
    many = pd.concat([few] * 1000, ignore_index=True)
    data = {
        "category": few, "many rows category": many,
        "arrow dictionary": pa.Table.from_pandas(few, preserve_index=False),
        "many rows arrow dictionary": pa.Table.from_pandas(many, preserve_index=False),
        "polars enum": pl.from_pandas(few.astype({"island": object})).with_columns(
            pl.col("island").cast(pl.Enum(list(kind.categories)))),
    }[container]
    expected = session.score((many if container.startswith("many") else few).astype({"island": object}))
    got = session.score(data)
    assert got["label"].tolist() == expected["label"].tolist()
    np.testing.assert_array_equal(got.iloc[:, 1:].to_numpy(float), expected.iloc[:, 1:].to_numpy(float))


@pytest.mark.parametrize("container", ["dict", "object", "records", "many rows"])
def test_text_that_is_not_unicode_is_refused_naming_column_and_row(session, rows, container):
    """A lone surrogate ("\\ud800", which Python strings may hold: a file decoded with surrogateescape) cannot
    reach onnxruntime as UTF-8: refused naming the column and the row, not "onnxruntime failed"."""
    bad = "\ud800"
    islands = ["Torgersen", bad, "Biscoe", None, "Dream"]
    frame = _with(rows, "island", pd.Series(islands, dtype=object))
    data, row = {
        "dict": ({**rows.iloc[1].to_dict(), "island": bad}, 0),
        "object": (frame, 1),
        "records": (frame.to_dict("records"), 1),
        # several batches: the row is counted from the first row of the data, not of its batch
        "many rows": (pd.concat([frame.iloc[[0]]] * 70000 + [frame], ignore_index=True), 70001),
    }[container]
    with pytest.raises(ColumnTypeError, match=rf"'island': value at row {row} .*not valid Unicode"):
        session.score(data)


@pytest.mark.parametrize("container", ["pandas", "pyarrow", "polars"])
def test_arrow_string_views_score_and_build_as_strings(penguins_onnx, rows, container):
    """``string_view`` text (polars' newest Arrow export, ``pd.ArrowDtype(pa.string_view())``), which pandas
    cannot operate on and pyarrow's comparisons lack: read as the same strings, in scoring and in build."""
    expected = onegraph.score(penguins_onnx, rows)
    views = pa.Table.from_pandas(rows.astype({"island": object, "sex": object}), preserve_index=False)
    views = views.cast(pa.schema([pa.field(f.name, pa.string_view()) if pa.types.is_string(f.type) else f
                                  for f in views.schema]))
    data = {"pandas": views.to_pandas(types_mapper=pd.ArrowDtype), "pyarrow": views,
            "polars": pl.from_pandas(rows).to_arrow(compat_level=pl.CompatLevel.newest())}[container]
    assert any("view" in str(t) for t in (data.schema.types if hasattr(data, "schema") else data.dtypes))
    pd.testing.assert_frame_equal(onegraph.score(penguins_onnx, data), expected)
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    encoder = make_pipeline(OneHotEncoder(handle_unknown="ignore")).fit(rows[["island"]])
    built = onegraph.build(encoder, None, data)
    np.testing.assert_array_equal(onegraph.score(built, rows).to_numpy(np.float64),
                                  encoder.transform(rows[["island"]]).toarray())


# -- Arrow types numpy has no equivalent for ---------------------------------------------------------------------
BILL = ColumnSpec("bill_length_mm", "float", "double")


@pytest.mark.parametrize("container", ["arrow", "polars", "pandas"])
def test_decimal_and_null_columns_are_read_exactly(container, session, rows):
    """Arrow / polars / ArrowDtype decimals: a null was refused as "int64's minimum", 1.5 was cut to 1 for an
    int input and 2**63 was called int64's minimum. A decimal is read as its exact value (a fraction refused by an
    int input as a float's is; the overflow named as one); a null-type column (polars' Null) is all missing."""
    from decimal import Decimal

    def column(values, arrow_type):
        array = pa.array(values, arrow_type)
        if container == "arrow":
            return pa.table({"c": array}).column("c")
        if container == "polars":
            return pl.from_arrow(pa.table({"c": array}))["c"]
        return pd.Series(array.to_pandas(types_mapper=pd.ArrowDtype))

    def feed(spec, values, arrow_type):
        col = column(values, arrow_type)
        frame = (pl.DataFrame({spec.name: col}) if container == "polars" else
                 pd.DataFrame({spec.name: col if container == "pandas" else col.to_pandas(types_mapper=pd.ArrowDtype)}))
        from onegraph.contract.tables import column_reader

        _, _, get = column_reader(frame)
        return to_feed(spec, get(spec.name))

    years = [Decimal(2007), None, Decimal(2009)]
    np.testing.assert_array_equal(feed(YEAR, years, pa.decimal128(20, 0)), [2007, NA_INT64, 2009])
    np.testing.assert_array_equal(feed(BILL, [Decimal("39.1"), None], pa.decimal128(6, 2)), [39.1, np.nan])
    with pytest.raises(ColumnTypeError, match=r"'year': value Decimal\('2007.5'\) at row 0 is not a whole number"):
        feed(YEAR, [Decimal("2007.5")], pa.decimal128(6, 1))
    with pytest.raises(ColumnTypeError, match="outside the int64 range"):
        feed(YEAR, [Decimal(2**63)], pa.decimal128(20, 0))
    np.testing.assert_array_equal(feed(YEAR, [None, None], pa.null()), [NA_INT64, NA_INT64])
    assert np.isnan(feed(BILL, [None, None], pa.null())).all()


@pytest.mark.parametrize("arrow_type", [pa.duration("s"), pa.duration("ms"), pa.date32(), pa.timestamp("us"),
                                        pa.time64("us")], ids=str)
def test_temporal_arrow_columns_are_refused_by_numeric_inputs(arrow_type, session, rows):
    """A polars Duration / Arrow duration into a float or int input was read as its stored integer (one day:
    86,400 as seconds, 86,400,000 as milliseconds); numpy's timedelta64 and datetime64 were refused."""
    import datetime as dt

    value = {"duration": dt.timedelta(days=1), "date32": dt.date(2020, 1, 1),
             "timestamp": dt.datetime(2020, 1, 1), "time64": dt.time(12)}[str(arrow_type).split("[")[0]]
    frame = rows.head(1).copy()
    for name in ("bill_length_mm", "year"):
        table = pa.Table.from_pandas(frame.drop(columns=[name]), preserve_index=False).append_column(
            name, pa.array([value], arrow_type))
        with pytest.raises(ColumnTypeError, match=f"column '{name}': .* values in a numeric column"):
            session.score(table)


def test_containers_arrow_cannot_take_or_repeating_names_are_refused_in_one_line(tmp_path, cli, penguins_onnx,
                                                                                 penguins):
    """Raw library errors reached the user: polars Int128 (pyarrow's "unsupported format string '_pli128'"), a
    Parquet file naming a column twice (pyarrow's "Multiple matches for FieldRef"), and ``-o rows.csv/o.csv``
    where rows.csv is a file said "folder rows.csv does not exist"."""
    frame = pl.DataFrame({"year": [2007, 2008]}, schema={"year": pl.Int128})
    with pytest.raises(DataError, match=r"column 'year' \(Int128\) has no Arrow type"):
        onegraph.score(penguins_onnx, frame)
    table = pa.Table.from_pandas(penguins.head(3), preserve_index=False)
    table = table.append_column("year", pa.array([1, 2, 3]))  # a second 'year'
    import pyarrow.parquet as pq

    pq.write_table(table, tmp_path / "dup.parquet")
    penguins.head(3).to_csv(tmp_path / "rows.csv", index=False)
    for args, said in [([str(tmp_path / "dup.parquet"), "-o", str(tmp_path / "o.csv")],
                        "column name 'year' appears more than once"),
                       ([str(tmp_path / "rows.csv"), "-o", str(tmp_path / "rows.csv" / "o.csv")],
                        "rows.csv is a file, not a folder")]:
        result = cli("score", str(penguins_onnx), *args)
        assert result.returncode == 1 and said in result.stderr and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize("container", ["polars", "arrow", "pandas"])
def test_dates_and_decimals_of_arrow_build_as_they_score(container):
    """A polars Date / Arrow date32 column was refused by build ("Arrow type date32[day] has no graph
    representation") though a model built on datetimes scored it; Arrow decimals likewise. Both build now, as
    scikit-learn-style transformers read them (calendar parts of midnight; the decimal's value)."""
    import datetime as dt
    from decimal import Decimal

    from onegraph.frame import DateParts, StandardScaler

    days = [dt.date(2020, 1, 31), dt.date(2021, 6, 15), None, dt.date(2024, 2, 29)]
    amounts = [Decimal("12.50"), Decimal("7.25"), None, Decimal("100.00")]
    table = pa.table({"d": pa.array(days, pa.date32()), "amount": pa.array(amounts, pa.decimal128(8, 2))})
    data = {"polars": pl.from_arrow(table), "arrow": table,
            "pandas": table.to_pandas(types_mapper=pd.ArrowDtype)}[container]

    def pick(name):
        return data.select(name) if container == "polars" else (
            data.select([name]) if container == "arrow" else data[[name]])

    parts = DateParts(["year", "month", "day"]).fit(pick("d"))
    got = onegraph.score(onegraph.build(parts, None, pick("d")), pick("d")).to_numpy(float)
    stamps = pd.to_datetime(pd.Series(days))
    expected = np.column_stack([stamps.dt.year, stamps.dt.month, stamps.dt.day]).astype(float)
    np.testing.assert_array_equal(got, expected)
    scaler = StandardScaler().fit(pick("amount"))
    values = np.array([12.5, 7.25, np.nan, 100.0])
    got = onegraph.score(onegraph.build(scaler, None, pick("amount")), pick("amount"))["amount"].to_numpy(float)
    np.testing.assert_allclose(got, (values - np.nanmean(values)) / np.nanstd(values), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["boolean", pd.ArrowDtype(pa.bool_()), "bool"], ids=str)
def test_bool_columns_feed_integer_inputs_as_zero_and_one(dtype):
    """Python's True fed an int input as 1 and pandas' nullable boolean did too, while an Arrow bool column with
    a null raised pandas' "Could not convert 0 with type int: tried to convert to boolean" as a ColumnTypeError."""
    values = [True, False, None] if dtype != "bool" else [True, False]
    got = to_feed(YEAR, pd.array(values, dtype=dtype))
    np.testing.assert_array_equal(got, [1, 0, NA_INT64][:len(values)])


def test_build_says_when_numbers_written_with_thousands_separators_are_text(cli, tmp_path):
    """Weights written "3,504" (pandas reads no thousands separator) were one-hot encoded without a word; the
    same written as a target sent the user from --task regression ("use --task classification") to
    classification ("--task regression if it holds numbers") and back. Each now says the values are numbers
    written as text, naming some with their rows."""
    cars = pd.read_csv(DATA / "cars.csv")
    formatted = cars.assign(Weight_in_lbs=[f"{v:,}" for v in cars["Weight_in_lbs"]])
    path = tmp_path / "cars.csv"
    formatted.to_csv(path, index=False)
    done = cli("build", str(path), "--target", "Miles_per_Gallon", "-o", str(tmp_path / "cars.onnx"))
    assert done.returncode == 0, done
    first = formatted["Weight_in_lbs"][0]
    assert "column 'Weight_in_lbs'" in done.stderr and f"numbers written as text ('{first}' (row 0)" in done.stderr
    assert "write them as plain numbers" in done.stderr
    money = cars.dropna(subset=["Miles_per_Gallon"]).assign(
        Miles_per_Gallon=lambda d: [f"{v:.1f}".replace(".", ",") for v in d["Miles_per_Gallon"]])  # decimal comma
    money.to_csv(path, index=False)
    for task in ([], ["--task", "regression"]):
        done = cli("build", str(path), "--target", "Miles_per_Gallon", *task, "-o", str(tmp_path / "m.onnx"))
        assert done.returncode == 1, done
        assert "numbers written as text" in done.stderr and "plain numbers" in done.stderr, done.stderr
        assert "use --task classification" not in done.stderr
    # classification of those texts when asked: allowed (the texts are the classes)
    done = cli("build", str(path), "--target", "Miles_per_Gallon", "--task", "classification", "-o",
               str(tmp_path / "m.onnx"))
    assert done.returncode == 0, done.stderr


def test_datetimes_for_a_model_built_from_date_text_score_as_that_text(cli, tmp_path):
    """A model built from a CSV reads its dates as text (its graph parses them): a Parquet file whose column
    holds datetimes, or a frame read with ``engine="pyarrow"`` (dates parsed), was refused ("give text"). The
    dates are written in the model's format (``contract.dates.format_dates``) and score as the CSV does, from
    the CLI and the API, naive or tz-aware (UTC, as text with an offset reads)."""
    cars = pd.read_csv(DATA / "cars.csv")
    assert cli("build", str(DATA / "cars.csv"), "--target", "Origin", "-o", str(tmp_path / "cars.onnx")).returncode == 0
    dated = cars.assign(Year=pd.to_datetime(cars["Year"]))
    dated.to_parquet(tmp_path / "cars.parquet")
    result = cli("score", str(tmp_path / "cars.onnx"), str(tmp_path / "cars.parquet"), "-o", str(tmp_path / "s.csv"))
    assert result.returncode == 0, result.stderr
    want = onegraph.score(tmp_path / "cars.onnx", cars)
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "s.csv")["label"], want["label"])
    for frame in (dated, dated.assign(Year=dated["Year"].dt.tz_localize("UTC")),
                  pd.read_csv(DATA / "cars.csv", engine="pyarrow", dtype_backend="pyarrow"),
                  dated.assign(Year=dated["Year"].dt.date)):
        pd.testing.assert_frame_equal(onegraph.score(tmp_path / "cars.onnx", frame), want)
    # values that are neither text nor dates keep the hint
    odd = cars.astype({"Year": object})
    odd.loc[7, "Year"] = 42
    with pytest.raises(ColumnTypeError, match=r"column 'Year': value 42 \(int\) at row 7 is not text"):
        onegraph.score(tmp_path / "cars.onnx", odd)


def test_an_array_for_build_or_score_says_how_to_name_its_columns(tmp_path):
    """A pipeline fitted on a numpy array, built from that array: "cannot read a table from ndarray. give a
    pandas or polars DataFrame..." without saying which names; the hint now says how to wrap it, and the
    wrapped array builds and scores as scikit-learn predicts."""
    import warnings

    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_iris(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(x, y)
    with pytest.raises(DataError, match=r"an array has no column names.*pd\.DataFrame\(X, columns="):
        onegraph.build(pipe, None, x)
    frame = pd.DataFrame(x, columns=["sepal_length", "sepal_width", "petal_length", "petal_width"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn: "X has feature names, but ... fitted without"
        model = onegraph.build(pipe, None, frame)
    with pytest.raises(DataError, match="an array has no column names"):
        onegraph.score(model, x)
    scores = onegraph.score(model, frame)
    np.testing.assert_allclose(scores[[f"probabilities_{c}" for c in pipe.classes_]].to_numpy(),
                               pipe.predict_proba(x), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("container", ["naive", "tz", "arrow", "numpy"])
def test_a_date_past_2262_is_refused_naming_the_row_not_wrapped(container):
    """numpy's cast of datetime64[us] to the graph's int64 nanoseconds wraps silently: a "no end" date of
    9999-12-31 scored as the year 1816 (and 1500-06-01 as 2084), in the graph and in the transformer's Python
    transform alike; a tz-aware one was refused naming no row. Refused, naming the row, in every container; a
    date inside the range (2262-04-10) still scores."""
    import pyarrow as pa

    from onegraph.frame import DateParts

    fit = pd.DataFrame({"d": pd.to_datetime(["2020-01-05", "2021-03-01"])})
    parts = DateParts(["year", "month"]).fit(fit)
    model = onegraph.build(parts, None, fit)
    dates = pd.to_datetime(["2020-01-01", None, "9999-12-31"]).as_unit("us")
    rows = {"naive": pd.DataFrame({"d": dates}),
            "tz": pd.DataFrame({"d": dates.tz_localize("UTC")}),
            "arrow": pd.DataFrame({"d": pd.array(dates, dtype=pd.ArrowDtype(pa.timestamp("us")))}),
            "numpy": {"d": dates.to_numpy()}}[container]
    with pytest.raises(ColumnTypeError, match=r"column 'd': value 9999-12-31.* at row 2 is outside"):
        onegraph.score(model, rows)
    if container != "numpy":
        with pytest.raises(ColumnTypeError, match="at row 2 is outside"):
            parts.transform(rows)
    inside = pd.DataFrame({"d": pd.to_datetime(["2020-01-01", "2262-04-10"]).as_unit("us")})
    assert onegraph.score(model, inside)["d_year"].tolist() == [2020.0, 2262.0]


def test_sequence_rows_dated_past_2262_keep_their_order():
    """The order column of a sequence was cast to nanoseconds to sort the rows: 9999-12-31 wrapped to 1816 and
    sorted first."""
    import pyarrow as pa

    from onegraph.runtime.windows import _order_values

    dates = pd.Series(pd.to_datetime(["2021-01-01", "9999-12-31", "2020-01-01"]).as_unit("us"))
    for order in (dates, dates.dt.tz_localize("Europe/Paris"), dates.astype(pd.ArrowDtype(pa.timestamp("us")))):
        assert np.argsort(_order_values(order)).tolist() == [2, 0, 1]


def test_a_dict_of_columns_pairs_rows_as_pandas_would_or_says_why_not(penguins_onnx, penguins):
    """A dict of Series with different indexes was paired by position while pd.DataFrame(d) (and so scikit-learn)
    pairs by label: other rows, scored silently. Refused, naming the columns; Series of one index, pyarrow
    arrays (refused as "cannot convert object values to float") and 0-d arrays ("len() of unsized object") score
    as the DataFrame of the same values."""
    import pyarrow as pa

    rows = penguins.drop(columns="species").head(4).reset_index(drop=True)
    expected = onegraph.score(penguins_onnx, rows)
    shuffled = {c: rows[c] for c in rows.columns}
    shuffled["bill_length_mm"] = rows["bill_length_mm"].iloc[::-1]  # the same labels, in another order
    with pytest.raises(DataError, match="columns 'island' and 'bill_length_mm' are Series with different indexes"):
        onegraph.score(penguins_onnx, shuffled)
    same_index = {c: rows[c] for c in rows.columns}
    pd.testing.assert_frame_equal(onegraph.score(penguins_onnx, same_index), expected)
    arrow = {c: pa.Array.from_pandas(rows[c]) for c in rows.columns}
    chunked = {c: pa.chunked_array([arrow[c][:2], arrow[c][2:]]) for c in rows.columns}
    for table in (arrow, chunked):
        got = onegraph.score(penguins_onnx, table)
        pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    first = rows.iloc[0]
    zero_d = {c: np.array(first[c]) if pd.notna(first[c]) else None for c in rows.columns}
    pd.testing.assert_frame_equal(onegraph.score(penguins_onnx, zero_d), expected.head(1), check_dtype=False)


@pytest.mark.parametrize("rows_times", [1, 20], ids=["few", "many"])  # 20 x 344 rows: the dictionary path
def test_dictionary_encoded_text_scores_as_plain_text(session, penguins, rows_times):
    """A new user's case: polars Categorical / Enum, an Arrow table from a pandas category column and
    pd.ArrowDtype(dictionary) text failed with pyarrow's raw "Function 'match_substring' has no kernel
    matching input types (dictionary...)". They score as the same text in plain columns does."""
    frame = pd.concat([penguins.drop(columns="species")] * rows_times, ignore_index=True)
    expected = session.score(frame)
    levels = sorted(frame["island"].dropna().unique())
    containers = {
        "polars categorical": pl.from_pandas(frame).with_columns(pl.col("island", "sex").cast(pl.Categorical)),
        "polars enum": pl.from_pandas(frame).with_columns(pl.col("island").cast(pl.Enum(levels))),
        "arrow from category": pa.Table.from_pandas(frame.astype({"island": "category", "sex": "category"}),
                                                    preserve_index=False),
        "ArrowDtype dictionary": frame.astype({"island": pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string())),
                                               "sex": pd.ArrowDtype(pa.dictionary(pa.int8(), pa.large_string()))}),
    }
    for name, data in containers.items():
        pd.testing.assert_frame_equal(session.score(data), expected, obj=name)


def test_text_holding_the_marker_is_refused_before_a_split_makes_it_missing():
    """After StringSplit(" ", index=-1), "7 Foo \uffff" became the marker inside the graph and was imputed
    (label 0 at 0.849), while the pipeline in Python refused the row: both refuse it now."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from onegraph.frame import OneHotEncoder, SimpleImputer, StringSplit

    x = pd.DataFrame({"addr": ["1 Main St", "2 Oak Ave", "3 Pine St", "4 Elm Ave", "5 Main St", "6 Oak Rd"] * 5})
    pipe = make_pipeline(StringSplit(" ", index=-1), SimpleImputer(strategy="most_frequent"),
                         OneHotEncoder(handle_unknown="ignore"), LogisticRegression()).fit(x, [0, 1] * 15)
    model = onegraph.build(pipe, None, x)
    rows = pd.DataFrame({"addr": ["8 Foo Zzz", "7 Foo " + MARKER]})
    with pytest.raises(ColumnTypeError, match="'addr': value at row 1 holds U\\+FFFF"):
        onegraph.score(model, rows)
    assert len(onegraph.score(model, rows.head(1))) == 1


def _cylinder_models():
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    def encoded(encoder):
        return make_pipeline(make_column_transformer((encoder, ["cyl"]), remainder="passthrough"), Ridge())

    return {
        "one-hot": lambda: encoded(OneHotEncoder(handle_unknown="ignore")),
        "ordinal": lambda: encoded(OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)),
        "hist-gradient-boosting": lambda: HistGradientBoostingRegressor(max_iter=30, random_state=0),
    }


@pytest.mark.parametrize("trained", ["int", "float"])
@pytest.mark.parametrize("case", list(_cylinder_models()))
def test_numeric_categories_are_one_category_whatever_their_number_type(case, trained, tmp_path):
    """A new user's case: a category column of numbers was fed as the text str() gives each category, so the
    cylinder counts as int categories ("4") and as float categories ("4.0", what pandas makes once the column
    held a NaN) were different categories: every row scored as an unknown category, off by up to 9 mpg, with
    no word; a CSV writing 8 for a model built on 8.0 likewise. scikit-learn compares the numbers. The
    column's numbers are now fed as the text of the type it was built with, from any container."""
    cars = pd.read_csv(DATA / "cars.csv").dropna(subset=["Miles_per_Gallon", "Horsepower"]).reset_index(drop=True)
    counts = cars["Cylinders"].astype(int if trained == "int" else float)
    x = pd.DataFrame({"cyl": counts.astype("category"), "hp": cars["Horsepower"]})
    model = _cylinder_models()[case]().fit(x, cars["Miles_per_Gallon"])
    expected = model.predict(x)
    proto = onegraph.build(model, sample=x)
    ints, floats = cars["Cylinders"].astype(int), cars["Cylinders"].astype(float)
    csv = tmp_path / "rows.csv"
    x.assign(cyl=ints).to_csv(csv, index=False)
    containers = {
        "int categories": x.assign(cyl=ints.astype("category")),
        "float categories": x.assign(cyl=pd.Categorical(floats, categories=[3.0, 4.0, 5.0, 6.0, 8.0, 12.0])),
        "int numbers": x.assign(cyl=ints),
        "float numbers": x.assign(cyl=floats),
        "records": x.assign(cyl=ints).to_dict("records"),
        "polars": pl.from_pandas(x.assign(cyl=floats)),
        "csv text": read_table(csv, specs=Session(proto).inputs),
    }
    for name, data in containers.items():
        got = onegraph.score(proto, data)["prediction"].to_numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9, err_msg=name)
    unseen = x.head(3).assign(cyl=pd.Categorical([7.0, 4.5, None]))  # no such count: unknown / missing, as sklearn
    np.testing.assert_allclose(onegraph.score(proto, unseen)["prediction"].to_numpy(),
                               model.predict(x.head(3).assign(cyl=pd.Categorical([7.0, 4.5, None]))),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("step", ["log", "box-cox"])
def test_an_infinite_answer_from_finite_inputs_is_refused_naming_the_row(step):
    """A new user's case: log(0) or Box-Cox(0) before a Ridge gave the prediction -inf (scikit-learn's Ridge
    refuses the row: "Input X contains infinity"), which reads as a number. It is refused, naming the row
    and its numbers; rows in the domain score as scikit-learn does."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, PowerTransformer

    cars = pd.read_csv(DATA / "cars.csv").dropna(subset=["Miles_per_Gallon", "Horsepower"])
    x = cars[["Horsepower", "Weight_in_lbs"]].astype(float)
    shape = FunctionTransformer(np.log) if step == "log" else PowerTransformer(method="box-cox")
    model = make_pipeline(make_column_transformer((shape, ["Horsepower"]), remainder="passthrough"), Ridge())
    model.fit(x, cars["Miles_per_Gallon"])
    proto = onegraph.build(model, sample=x)
    rows = x.head(4).reset_index(drop=True)
    np.testing.assert_allclose(onegraph.score(proto, rows)["prediction"], model.predict(rows), rtol=1e-9)
    rows.loc[2, "Horsepower"] = 0.0
    with pytest.raises(ValueError, match="infinity|strictly positive"):
        model.predict(rows)  # scikit-learn refuses the row (Ridge, or Box-Cox itself)
    with pytest.raises(DataError, match=r"row 2: the model's 'prediction' is infinite \(Horsepower=0, "):
        onegraph.score(proto, rows)


#: text Python's int() / float() read as a number and pandas' parser (the float inputs') does not, text both
#: read, and text neither reads
NUMBER_TEXTS = ["1_000", "\uff12\uff10\uff10\uff18", "2008\u00a0", "\u00a02008", "\u0662\u0660\u0660\u0668",
                "2008\u2003", "", "nan", " 2008 ", "+2008", "2008.0", "2.008e3", "\t2008\n", "0x7d8", "2,008"]


def _text_containers(rows: pd.DataFrame, column: str, texts: list) -> dict:
    """The five rows with ``column`` as text (``texts``) in every container scoring reads."""
    records = rows.to_dict("records")
    for record, text in zip(records, texts):
        record[column] = text
    table = pa.Table.from_pandas(rows.drop(columns=column), preserve_index=False)
    table = table.append_column(column, pa.array(texts, pa.string()))
    return {
        "records": records,
        "dict of lists": {**{c: rows[c].tolist() for c in rows.columns}, column: texts},
        "object column": _with(rows, column, pd.Series(texts, dtype=object)),
        "str column": _with(rows, column, pd.Series(texts, dtype="str")),
        "string[pyarrow] column": _with(rows, column, pd.array(texts, dtype=pd.ArrowDtype(pa.string()))),
        "category column": _with(rows, column, pd.Categorical(texts)),
        "arrow table": table,
        "polars": pl.from_arrow(table),
    }


@pytest.mark.parametrize("text", NUMBER_TEXTS, ids=repr)
@pytest.mark.parametrize("column", ["year", "bill_length_mm"])
def test_integer_and_float_inputs_read_number_text_by_one_rule(session, rows, column, text):
    """Integer inputs read text by Python's int(): '1_000', fullwidth digits, a trailing non-breaking space were
    numbers there while the float inputs refused them. Both read text as pandas' parser does (pd.to_numeric,
    the oracle here) from every container, and refuse the rest naming the column and the row."""
    parsed = pd.to_numeric(pd.Series([text], dtype=object), errors="coerce").iloc[0]
    texts = [str(v) for v in rows[column]]
    texts[1] = text
    numbers = rows[column].tolist()
    numbers[1] = parsed
    for name, data in _text_containers(rows, column, texts).items():
        if pd.isna(parsed):
            with pytest.raises(ColumnTypeError, match=rf"'{column}': .*{re.escape(repr(text))} at row 1 is not a "
                                                      "number") as info:
                session.score(data)
            assert info.value.column == column and "\n" not in str(info.value), name
        else:
            expected = session.score(_with(rows, column, pd.Series(numbers, dtype=rows[column].dtype)))
            pd.testing.assert_frame_equal(session.score(data).reset_index(drop=True), expected, obj=f"{name} {text!r}")


def test_no_rows_in_any_container_score_as_no_rows(session, rows):
    """onegraph.score(model, []) raised MissingColumnError naming every column, where an empty DataFrame of the
    model's columns gives no rows: a table of no rows names no column it lacks. Every empty container gives the
    empty DataFrame's result (its output columns and dtypes); a table of no rows that names other columns is
    still refused."""
    expected = session.score(rows.iloc[:0])
    assert len(expected) == 0 and len(expected.columns) > 0
    empty_arrow = pa.Table.from_pandas(rows.iloc[:0], preserve_index=False)
    containers = {"no records": [], "empty tuple": (), "empty dict": {}, "DataFrame()": pd.DataFrame(),
                  "empty dict of lists": {c: [] for c in rows.columns}, "pa.table({})": pa.table({}),
                  "empty Arrow table": empty_arrow, "polars": pl.DataFrame(), "empty polars": pl.from_arrow(empty_arrow),
                  "object columns": pd.DataFrame(columns=rows.columns)}
    for name, data in containers.items():
        got = session.score(data)
        pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True), obj=name)
    with pytest.raises(MissingColumnError, match="'island'"):
        session.score(pd.DataFrame(columns=["other"]))


def test_build_says_which_csv_cells_pandas_words_made_missing_and_how_to_keep_them(cli, tmp_path):
    """A class or category spelled NA (pandas' read_csv default na_values) became a missing value and its rows
    were dropped from training without a word. Build now names each column and how many of its cells such words
    made missing, and --keep-na-words keeps them as text: the class 'NA' is then one the model labels."""
    raw = pd.read_csv(DATA / "penguins-raw.csv", keep_default_na=False, na_values=[""], dtype=str)
    words = raw["Sex"].value_counts()
    na_cells = int(raw["Sex"].isin(["NA", "N/A", "null", "nan", "NaN", "None", "NULL", "<NA>"]).sum())
    assert na_cells == words.get("NA", 0) > 0
    frame = pd.read_csv(DATA / "penguins-raw.csv")[["Sex", "Culmen Length (mm)", "Culmen Depth (mm)", "Island"]]
    path = tmp_path / "penguins.csv"
    frame.to_csv(path, index=False, na_rep="NA")
    done = cli("build", str(path), "--target", "Sex", "-o", str(tmp_path / "sex.onnx"))
    assert done.returncode == 0, done
    assert (f"note: column 'Sex': {na_cells} cell(s) written 'NA' ({na_cells}) read as missing: their rows are left "
            "out (no target)") in done.stderr and "--keep-na-words" in done.stderr
    length = int((raw["Culmen Length (mm)"] == "NA").sum())
    assert f"note: column 'Culmen Length (mm)': {length} cell(s) written 'NA' ({length}) read as missing: they are " \
           "missing values" in done.stderr
    assert "'Island'" not in done.stderr  # no such words there: no note
    kept = cli("build", str(path), "--target", "Sex", "--keep-na-words", "-o", str(tmp_path / "kept.onnx"))
    assert kept.returncode == 0, kept
    assert "read as missing" not in kept.stderr
    rows = read_table(path, keep_na_words=True).drop(columns="Sex")  # numbers beside NA words are text now
    probabilities = onegraph.Session(tmp_path / "kept.onnx").run(rows.head(1))["probabilities"]
    assert probabilities.shape[1] == words.size  # FEMALE, MALE, NA and the stray '.' of the raw data


def test_score_keeps_na_words_as_text_as_build_did(cli, tmp_path):
    """A model built with --keep-na-words knows the category 'NA'; `onegraph score` had no such option, so the
    same CSV's 'NA' cells were read as missing values and scored as imputed ones. score --keep-na-words reads
    them as the build did; without it they stay missing (the default of both commands)."""
    frame = pd.read_csv(DATA / "penguins-raw.csv")[["Island", "Sex", "Culmen Length (mm)", "Flipper Length (mm)"]]
    path = tmp_path / "penguins.csv"
    frame.assign(Sex=frame["Sex"].fillna("NA")).to_csv(path, index=False)  # the raw data's NA; numbers blank
    model = tmp_path / "island.onnx"
    assert cli("build", str(path), "--target", "Island", "--keep-na-words", "-o", str(model)).returncode == 0
    session = onegraph.Session(model)
    as_text = read_table(path, specs=session.inputs, keep_na_words=True)
    as_missing = read_table(path, specs=session.inputs)
    assert (as_text["Sex"] == "NA").any() and as_missing["Sex"].isna().any()
    for option, rows in (["--keep-na-words"], as_text), ([], as_missing):
        out = tmp_path / f"scores{len(option)}.csv"
        done = cli("score", str(model), str(path), "-o", str(out), *option)
        assert done.returncode == 0, done
        # without the option the 'NA' cells of the text column are missing values: said, as build says it
        noted = "note: column 'Sex': " in done.stderr and "read as missing" in done.stderr
        assert noted == (not option) and "Culmen" not in done.stderr, done.stderr
        expected = session.run(rows.drop(columns="Island"))["probabilities"]
        got = pd.read_csv(out).filter(like="probabilities_").to_numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0, err_msg=str(option))
    na = (as_text["Sex"] == "NA").to_numpy()
    with_words = pd.read_csv(tmp_path / "scores1.csv").filter(like="probabilities_").to_numpy()
    without = pd.read_csv(tmp_path / "scores0.csv").filter(like="probabilities_").to_numpy()
    assert not np.allclose(with_words[na], without[na])  # the category 'NA' is not the imputed one


def test_a_polars_object_column_is_refused_naming_it(session, rows):
    """A new user's case: a polars Object column (pl.DataFrame({"t": series.dt.date.values}) makes one) reached
    Arrow as its objects' pointers, fixed_size_binary[8], and failed with "cannot convert fixed_size_binary[8]
    values"; it is refused naming the column and how to type it."""
    import datetime

    frame = pl.from_pandas(rows).with_columns(
        pl.Series("island", [datetime.date(2020, 1, i + 1) for i in range(len(rows))], dtype=pl.Object))
    with pytest.raises(DataError, match=r"column 'island' is a polars Object column .* cast it"):
        session.score(frame)


def test_numeric_category_text_reads_by_the_numeric_inputs_rule():
    """Number text given to a numeric category column is read as numeric inputs read text (pandas' parser):
    '8' and ' 4 ' are the counts 8 and 4; fullwidth digits and '1_0', which Python's float() would take, are
    their own text (an unknown category), as they are refused by a number column."""
    spec = ColumnSpec("cyl", "string", "string", numbers="int")
    got = to_feed(spec, np.array(["8", " 4 ", "8.0", "\uff14", "1_0", None, 4.0], dtype=object))
    assert got.tolist() == ["8", "4", "8", "\uff14", "1_0", "\uffff", "4"]


def _nan_step(step: str):
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import FunctionTransformer, OrdinalEncoder

    if step == "unknown category as NaN":
        encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan)
        return make_column_transformer((encoder, ["Origin"]), remainder="passthrough")
    return make_column_transformer((FunctionTransformer(getattr(np, step)), ["Horsepower"]), remainder="passthrough")


@pytest.mark.parametrize("step", ["log", "sqrt", "unknown category as NaN"])
def test_a_nan_answer_for_a_row_without_missing_values_is_refused(step):
    """A log or square root of a negative number (or an unknown category encoded as NaN) before a model that
    takes no NaN: scikit-learn's predict refuses the row ("Input X contains NaN"), onegraph scored it as a
    missing answer, as for a row whose value was missing — the domain error went unseen. It is refused,
    naming the row; a row with a missing value keeps its missing answer; a model that takes NaN (a
    HistGradientBoosting) answers such a row as scikit-learn does."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    cars = pd.read_csv(DATA / "cars.csv").dropna(subset=["Miles_per_Gallon", "Horsepower"]).reset_index(drop=True)
    x = cars[["Horsepower", "Weight_in_lbs", "Origin"]].astype({"Horsepower": float, "Weight_in_lbs": float})
    if step != "unknown category as NaN":
        x = x.drop(columns="Origin")
    ridge = make_pipeline(_nan_step(step), Ridge()).fit(x, cars["Miles_per_Gallon"])
    trees = make_pipeline(_nan_step(step), HistGradientBoostingRegressor(max_iter=20, random_state=0))
    trees.fit(x, cars["Miles_per_Gallon"])
    rows = x.head(4).copy()
    if step == "unknown category as NaN":
        rows.loc[2, "Origin"] = "Mars"
    else:
        rows.loc[2, "Horsepower"] = -5.0
    with pytest.raises(ValueError, match="NaN"):
        ridge.predict(rows)
    with pytest.raises(DataError, match=r"row 2: the model's 'prediction' is NaN though no input of the row is "
                                        r"missing \(Horsepower=.*Weight_in_lbs="):
        onegraph.score(onegraph.build(ridge, sample=x), rows)
    np.testing.assert_allclose(onegraph.score(onegraph.build(trees, sample=x), rows)["prediction"],
                               trees.predict(rows), rtol=1e-9)
    missing = x.head(4).copy()
    missing.loc[1, "Weight_in_lbs"] = np.nan  # missing before the pipeline: answered as missing, not refused
    got = onegraph.score(onegraph.build(ridge, sample=x), missing)["prediction"]
    assert got.isna().tolist() == [False, True, False, False]
    np.testing.assert_allclose(got.drop(index=1), ridge.predict(missing.drop(index=1)), rtol=1e-9)


@pytest.mark.parametrize("container", ["object column", "records", "dict of lists", "one record"])
def test_nat_in_a_numeric_object_column_is_missing_and_a_complex_number_is_refused(container):
    """New users' cases: pd.NaT in an object column feeding a float input was refused with pandas' own
    message ("Invalid object type at position 0"), though NaT is a missing value wherever else it comes (an
    int or text input); a complex number there (5.1+100j) was scored on its real part, where a complex128
    column is refused and scikit-learn refuses both. NaT scores as NaN does; the complex number is refused
    naming the column and row."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    cars = pd.read_csv(DATA / "cars.csv").dropna(subset=["Miles_per_Gallon"]).reset_index(drop=True)
    x = cars[["Horsepower", "Weight_in_lbs"]].astype(float)
    model = HistGradientBoostingRegressor(max_iter=20, random_state=0).fit(x, cars["Miles_per_Gallon"])
    proto = onegraph.build(model, sample=x)
    rows = x.head(3).copy()

    def holding(first):
        column = pd.Series([first, *rows["Horsepower"].iloc[1:]], dtype=object, index=rows.index)
        frame = rows.assign(Horsepower=column)
        if container == "object column":
            return frame
        if container == "records":
            return frame.to_dict("records")
        if container == "dict of lists":
            return {c: frame[c].tolist() for c in frame.columns}
        return frame.iloc[0].to_dict()

    expected = model.predict(rows.assign(Horsepower=[np.nan, *rows["Horsepower"].iloc[1:]]))
    got = onegraph.score(proto, holding(pd.NaT))["prediction"].to_numpy()
    np.testing.assert_allclose(got, expected[:len(got)], rtol=1e-9)
    with pytest.raises(ColumnTypeError, match=r"column 'Horsepower': value \(130\+100j\) at row 0 is not a number"):
        onegraph.score(proto, holding(130 + 100j))


@pytest.mark.parametrize("column", ["body_mass_g", "island"])
def test_a_column_of_lists_is_refused_naming_it(penguins_onnx, penguins, column):
    """A polars List column (or pandas' Arrow list) for a one-value input said numpy's "setting an array
    element with a sequence.."; it names the column, the type and what to give."""
    pl = pytest.importorskip("polars")
    rows = pl.from_pandas(penguins.head(3))
    listed = rows.with_columns(pl.Series(column, [[v] for v in rows[column].to_list()]))
    with pytest.raises(ColumnTypeError, match=rf"column '{column}': holds large_list<item: .*>\[pyarrow\] values \(lists, "
                                              r"structs or maps\); the model takes one (float|string) value per row"):
        onegraph.score(penguins_onnx, listed)
    # the advice works: the list's first element scores as the plain column
    pd.testing.assert_frame_equal(onegraph.score(penguins_onnx, listed.with_columns(pl.col(column).list.first())),
                                  onegraph.score(penguins_onnx, rows))


def test_records_without_a_model_column_are_refused_naming_the_record(penguins_onnx, penguins):
    """A list of records is one row per record: ``[{}]`` was scored as no rows (a client pairing answers with
    its rows got fewer), and a record lacking a key the others have (a misspelt ``islnd``) was scored as a
    missing value. Both are refused, naming the column and the record; None stays the missing value."""
    frame = penguins.drop(columns="species").head(5)
    rows = [{k: (None if pd.isna(v) else v) for k, v in r.items()} for r in frame.to_dict("records")]
    expected = onegraph.score(penguins_onnx, frame)
    pd.testing.assert_frame_equal(onegraph.score(penguins_onnx, rows), expected.reset_index(drop=True))
    for empty in ([{}], [{}, {}]):
        with pytest.raises(MissingColumnError, match="'island', 'bill_length_mm'.*the data has no columns"):
            onegraph.score(penguins_onnx, empty)
    misspelt = [dict(r) for r in rows]
    misspelt[3]["islnd"] = misspelt[3].pop("island")
    with pytest.raises(DataError, match=r"column 'island': record 3 has no value for it .*'islnd'.*None \(JSON null\)"):
        onegraph.score(penguins_onnx, misspelt)
    as_null = [dict(r) for r in rows]
    as_null[3]["island"] = None  # the missing value, as a missing text in the DataFrame
    with_missing = frame.copy()
    with_missing.iloc[3, with_missing.columns.get_loc("island")] = None
    pd.testing.assert_frame_equal(onegraph.score(penguins_onnx, as_null),
                                  onegraph.score(penguins_onnx, with_missing).reset_index(drop=True))


@pytest.mark.parametrize("bins", [[2000, 3500, 4500, 7000], [2000.5, 3500.5, 4500.5, 7000.5]],
                         ids=["int-bins", "float-bins"])
@pytest.mark.parametrize("fit_rows", ["with-missing", "complete"])
def test_interval_categories_of_pd_cut_match_scikit_learn_with_and_without_missing_rows(penguins, bins, fit_rows,
                                                                                      tmp_path):
    """``pd.cut`` columns (category of ``interval[int64]``): ``np.asarray`` of one holding a missing value
    promotes the intervals to float bounds, so scikit-learn's categories read ``(2000.0, 3500.0]`` while the
    feed wrote the dtype's ``(2000, 3500]``: every row scored as an unknown category (parity refused the
    build). Intervals are matched by value, whether the fitted or the scored rows hold a missing value."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    df = penguins.dropna(subset=["species"])
    x = pd.DataFrame({"mass_bin": pd.cut(df["body_mass_g"], bins=bins),
                      "bill_bin": pd.cut(df["bill_length_mm"], bins=[30, 40, 50, 60])})
    assert x.isna().any().all()  # two rows without measurements
    y = df["species"]
    fit = x if fit_rows == "with-missing" else x.dropna()
    pipe = make_pipeline(ColumnTransformer([
        ("onehot", OneHotEncoder(handle_unknown="ignore"), ["mass_bin"]),
        ("ordinal", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1,
                                   encoded_missing_value=-2), ["bill_bin"])]),
        LogisticRegression(max_iter=2000)).fit(fit, y.loc[fit.index])
    path = tmp_path / "bins.onnx"
    onegraph.build(pipe, None, fit, path=path)
    for rows in (x, x.dropna()):
        out = onegraph.score(path, rows)
        # the same double-precision arithmetic as scikit-learn's on the same encoded rows
        np.testing.assert_allclose(out.filter(like="probabilities_").to_numpy(), pipe.predict_proba(rows),
                                   rtol=1e-9, atol=1e-12)
        assert out["label"].tolist() == pipe.predict(rows).tolist()


def test_datetimes_for_a_category_of_timestamps_are_refused_with_advice_that_scores_right(penguins):
    """A model fitted on a category of Timestamps, given the same dates as datetime64: the error advised
    ``.dt.strftime('%Y-%m-%d')``, which is not how the graph holds the categories (``str()`` of a Timestamp),
    and following it scored every row as an unknown category without a word. The advice now names the
    category column, and following it gives scikit-learn's answer."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    df = penguins.dropna()
    y = df.pop("species")
    df["when"] = pd.to_datetime(df["year"].astype(str) + "-06-01").astype("category")
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["when"]),
                                                 (StandardScaler(), ["bill_length_mm", "bill_depth_mm"])),
                         LogisticRegression(max_iter=3000)).fit(df, y)
    model = onegraph.build(pipe, None, sample=df)
    rows = df.sample(40, random_state=0)
    as_dates = rows.assign(when=rows["when"].astype("datetime64[us]"))
    with pytest.raises(ColumnTypeError, match=r"column 'when'.*built from a category column") as info:
        onegraph.score(model, as_dates)
    assert "strftime" not in str(info.value) and ".astype('category')" in str(info.value)
    advised = as_dates.assign(when=as_dates["when"].astype("category"))
    np.testing.assert_allclose(onegraph.score(model, advised).filter(like="probabilities_").to_numpy(),
                               pipe.predict_proba(rows), rtol=1e-9, atol=1e-12)


def test_a_record_array_is_read_by_its_field_names(session, rows):
    """``df.to_records()`` was refused as "an array has no column names", which a record array has: its fields
    are the columns (the index field, extra, is ignored); one of two dimensions is refused naming why."""
    expected = session.score(rows)
    for rec in (rows.to_records(index=False), rows.to_records()):
        pd.testing.assert_frame_equal(session.score(rec), expected)
        pd.testing.assert_frame_equal(session.score(np.asarray(rec)), expected)  # a plain structured array
    with pytest.raises(DataError, match="2-D structured array"):
        session.score(rows.to_records(index=False).reshape(1, -1))


@pytest.mark.parametrize("column, rows, row", [("Name", [0], 0), ("Origin", "Europe", None)])
def test_build_refuses_the_missing_text_marker_by_data_row_before_fitting(cli, tmp_path, column, rows, row):
    """build named a row of the shuffled training split (data row 0 as "row 115"), after fitting; a target class
    holding U+FFFF — the graph's missing label — was accepted. Both are refused before the fit, by data row."""
    cars = pd.read_csv(DATA / "cars.csv")
    if rows == "Europe":
        hit = cars.index[cars[column] == "Europe"]
        cars.loc[hit, column] = MARKER
        row = int(hit[0])
    else:
        cars.loc[rows, column] = f"abc{MARKER}def"
    path = tmp_path / "cars.csv"
    cars.to_csv(path, index=False)
    done = cli("build", str(path), "--target", "Origin", "-o", str(tmp_path / "cars.onnx"))
    assert done.returncode == 1 and f"column {column!r}: value at row {row} holds U+FFFF" in done.stderr, done.stderr
    assert "fitting" not in done.stderr and not (tmp_path / "cars.onnx").exists()


@pytest.fixture(scope="module")
def ridge_on_numbers():
    """A float and an int column into an imputer and a ridge regression (the penguins' body mass)."""
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    from onegraph.datasets import load_penguins

    frame = load_penguins()[["bill_length_mm", "year", "body_mass_g"]].dropna()
    x = frame[["bill_length_mm", "year"]]
    return onegraph.build(make_pipeline(SimpleImputer(), Ridge()).fit(x, frame["body_mass_g"]), None, x), \
        {"bill_length_mm": float(x.iloc[0, 0]), "year": int(x.iloc[0, 1])}


@pytest.mark.parametrize("column", ["bill_length_mm", "year"])
@pytest.mark.parametrize("value", [
    __import__("datetime").datetime(2020, 1, 1), pd.Timestamp("2020-01-01", tz="UTC"), pd.Timedelta("1D"),
    __import__("datetime").timedelta(days=1), __import__("datetime").date(2020, 1, 1), np.datetime64("2020-01-01"),
    np.timedelta64(3, "s")], ids=["datetime", "Timestamp", "Timedelta", "timedelta", "date", "datetime64",
                                  "timedelta64"])
@pytest.mark.parametrize("form", ["dict", "records"])
def test_a_date_or_duration_in_a_number_column_is_refused_naming_it(ridge_on_numbers, column, value, form):
    """pandas' to_numeric reads a date as its nanoseconds (a datetime64[D] as days): once scored as a body mass
    of 1e16 g; scikit-learn refuses it, and so does onegraph, naming the column and the row."""
    model, base = ridge_on_numbers
    row = {**base, column: value}
    with pytest.raises(onegraph.errors.ColumnTypeError, match=re.escape(column)):
        onegraph.score(model, row if form == "dict" else [base, row])


def test_a_list_among_scalars_is_the_column_named(ridge_on_numbers):
    """A dict of one row where one column holds two values: the message names that column, not one of the
    scalars (it once blamed the first column)."""
    model, base = ridge_on_numbers
    with pytest.raises(onegraph.errors.DataError, match=r"column 'year' has 2 value\(s\) where the other columns have 1"):
        onegraph.score(model, {**base, "year": [2007, 2008]})


def test_an_all_missing_arrow_column_of_another_type_is_a_missing_text(penguins_onnx, penguins):
    """``convert_dtypes(dtype_backend="pyarrow")`` turns an all-missing column into ``int64[pyarrow]``: given to a
    text input it scores as missing text at any length (it raised pyarrow's ArrowNotImplementedError from the
    search for the missing-value marker)."""
    import onegraph

    frame = penguins.drop(columns="species")
    for n in (1, 20, 5000):
        rows = frame.iloc[[0] * n].copy()
        expected = onegraph.score(penguins_onnx, rows.assign(sex=None))
        for dtype in ("int64[pyarrow]", "double[pyarrow]", "bool[pyarrow]"):
            got = onegraph.score(penguins_onnx, rows.assign(sex=pd.array([None] * n, dtype=dtype)))
            pd.testing.assert_frame_equal(got, expected)


def test_a_bool_input_reads_numbers_zero_and_one_alike_in_every_container():
    """1.0 and 0.0 are booleans in a float column; in an object column (a list of records, a frame of mixed
    values) they were refused: now the same numbers read the same wherever they come from, and 2.0 or 0.5 is
    refused in both."""
    from onegraph.errors import ColumnTypeError

    spec = ColumnSpec("heavy", "bool", "bool")
    floats = to_feed(spec, np.array([1.0, 0.0, 1.0]))
    np.testing.assert_array_equal(to_feed(spec, np.array([1.0, 0.0, True], dtype=object)), floats)
    np.testing.assert_array_equal(to_feed(spec, np.array([np.float32(1), np.int64(0), 1], dtype=object)), floats)
    for bad in (2.0, 0.5):
        for values in (np.array([bad]), np.array([bad], dtype=object)):
            with pytest.raises(ColumnTypeError, match="'heavy'.*not a boolean"):
                to_feed(spec, values)
    # the value named as the column holds it, not as converted (np.float64(2.0) for the int 2)
    for values in (np.array([1, 2]), pd.array([1, 2], dtype="Int64"), np.array([1, np.int64(2)], dtype=object)):
        with pytest.raises(ColumnTypeError, match=r"value 2 at row 1 is not a boolean"):
            to_feed(spec, values)
