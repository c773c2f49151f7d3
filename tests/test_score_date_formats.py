"""A text column whose dates the graph parses (a CSV's dates) keeps its format in the input schema
(``ColumnSpec.date_format``): scoring a feed whose dates are written in another format refuses it, naming the
column, the value and the format, where the graph read every one as a missing date (a new user's model built on
``01/31/2012`` text scored ISO ``2012-01-31``: every date silently missing, 13 of 150 labels changed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_run import run

import onegraph
from onegraph.contract.columns import ColumnSpec
from onegraph.errors import ColumnTypeError, MetadataError

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def weather() -> pd.DataFrame:
    frame = pd.read_csv(DATA / "seattle-weather.csv").head(400)
    frame["date"] = pd.to_datetime(frame["date"], format="%Y/%m/%d")
    return frame


@pytest.fixture(scope="module")
def us_model(weather, tmp_path_factory) -> tuple[Path, Path]:
    """A model built from a CSV writing its dates month first (read as dates in '%m/%d/%Y')."""

    folder = tmp_path_factory.mktemp("us")
    data = folder / "us.csv"
    frame = weather.assign(date=weather["date"].dt.strftime("%m/%d/%Y"))
    frame.to_csv(data, index=False)
    model = folder / "us.onnx"
    built = run("build", data, "--target", "weather", "-o", model)
    assert built.returncode == 0 and "read as dates in the format '%m/%d/%Y'" in built.stderr, built.stderr
    return data, model


def test_the_schema_records_the_date_format_the_graph_parses(us_model, weather, tmp_path):
    _, model = us_model
    dates = {s.name: s.date_format for s in onegraph.Session(model).inputs}
    assert dates == {"date": "%m/%d/%Y", "precipitation": None, "temp_max": None, "temp_min": None, "wind": None}
    iso = tmp_path / "iso.csv"
    weather.assign(date=weather["date"].dt.strftime("%Y-%m-%d")).to_csv(iso, index=False)
    assert run("build", iso, "--target", "weather", "-o", tmp_path / "iso.onnx").returncode == 0
    assert {s.name: s.date_format for s in onegraph.Session(tmp_path / "iso.onnx").inputs}["date"] == "ISO8601"
    with pytest.raises(ColumnTypeError, match=r"column 'date': value '01/01/2012' at row 0 is a date, but the "
                                              r"model reads this column's dates as ISO 8601"):
        onegraph.Session(tmp_path / "iso.onnx").run(weather.assign(date=weather["date"].dt.strftime("%m/%d/%Y")))


def test_cli_refuses_dates_in_another_format_and_scores_its_own(us_model, weather, cli, tmp_path):
    data, model = us_model
    own = cli("score", str(model), str(data), "-o", str(tmp_path / "own.csv"))
    assert own.returncode == 0, own.stderr
    iso = tmp_path / "iso.csv"
    weather.assign(date=weather["date"].dt.strftime("%Y-%m-%d")).to_csv(iso, index=False)
    refused = cli("score", str(model), str(iso), "-o", str(tmp_path / "iso.out.csv"))
    assert refused.returncode == 1 and not (tmp_path / "iso.out.csv").exists()
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "column 'date': value '2012-01-01' at row 0 is a date, but the model reads this " \
                                "column's dates as '%m/%d/%Y'" in lines[0], refused.stderr


def test_a_word_in_the_date_column_is_still_a_missing_date(us_model, weather):
    """Text that is no date in any format (as a few training values may be) reads as a missing date, as the
    model was built: the same answer as an empty cell, from every container."""
    data, model = us_model
    session = onegraph.Session(model)
    rows = pd.read_csv(data).head(5)
    word, empty = rows.copy(), rows.copy()
    word.loc[2, "date"], empty.loc[2, "date"] = "unknown", None
    got, want = session.run(word), session.run(empty)
    np.testing.assert_array_equal(got["probabilities"], want["probabilities"])
    record = word.iloc[2].to_dict()
    # one row against a batch of five: onnxruntime's kernels may sum in another order (a few ulps)
    np.testing.assert_allclose(session.run(record)["probabilities"], want["probabilities"][2:3], rtol=1e-12)
    wrong = rows.iloc[2].to_dict() | {"date": "2012-01-03"}
    with pytest.raises(ColumnTypeError, match="column 'date': value '2012-01-03' at row 0 is a date"):
        session.run(wrong)
    # the word is passed over: the date after it names the feed's format
    with pytest.raises(ColumnTypeError, match="value '03.01.2012' at row 1 is a date"):
        session.run([record, rows.iloc[3].to_dict() | {"date": "03.01.2012"}])
    # a batch whose dates are in the format but for a few (build's tolerance: 5%) reads an odd one as missing,
    # as pandas' errors="coerce" did at build
    batch = pd.read_csv(data).head(100)
    odd, blank = batch.copy(), batch.copy()
    odd.loc[2, "date"], blank.loc[2, "date"] = "2012-01-03", None
    np.testing.assert_array_equal(session.run(odd)["probabilities"], session.run(blank)["probabilities"])
    # beyond it the feed is refused: 2 of 5 (the helper's case: 200 ISO rows after 100 in the format)
    odd = rows.copy()
    odd.loc[[2, 4], "date"] = ["2012-01-03", "2012-01-05"]
    with pytest.raises(ColumnTypeError, match=r"value '2012-01-03' at row 2 is a date, but the model reads this "
                                              r"column's dates as '%m/%d/%Y': 2 of its 5 values are not in that format"):
        session.run(odd)
    later = batch.copy()
    later.loc[50:, "date"] = pd.to_datetime(later.loc[50:, "date"], format="%m/%d/%Y").dt.strftime("%Y-%m-%d")
    with pytest.raises(ColumnTypeError, match=r"at row 50 is a date.*50 of its 100 values"):
        session.run(later)
    # the same through Arrow's matcher for a long feed (65 rows and more), and a date with spaces around it
    long = pd.concat([batch] * 3, ignore_index=True)
    long.loc[long.index % 10 == 0, "date"] = " " + long["date"]
    with pytest.raises(ColumnTypeError, match=r"value ' 01/01/2012' at row 0 is a date.*30 of its 300 values"):
        session.run(long)


def test_an_unreadable_stored_format_is_a_metadata_error():
    with pytest.raises(MetadataError, match=r"date_format: .*%a \(weekday names\) depends on the host locale"):
        ColumnSpec.from_dict({"name": "d", "kind": "string", "onnx_type": "string", "date_format": "%a %d %Y"})


def test_month_names_and_iso_text_refuse_each_other(weather, tmp_path):
    """A model built on 01-Jan-2012 dates (Oracle's and SAS' way) refuses ISO dates, and an ISO model refuses
    01-Jan-2012 dates, naming the value, where each graph would read every date as missing."""
    models = {}
    for name, fmt in (("named", "%d-%b-%Y"), ("iso", "%Y-%m-%d")):
        data = tmp_path / f"{name}.csv"
        weather.assign(date=weather["date"].dt.strftime(fmt)).to_csv(data, index=False)
        built = run("build", data, "--target", "weather", "-o", tmp_path / f"{name}.onnx")
        assert built.returncode == 0, built.stderr
        models[name] = onegraph.Session(tmp_path / f"{name}.onnx")
    assert {s.name: s.date_format for s in models["named"].inputs}["date"] == "%d-%b-%Y"
    named = weather.assign(date=weather["date"].dt.strftime("%d-%b-%Y"))
    iso = weather.assign(date=weather["date"].dt.strftime("%Y-%m-%d"))
    np.testing.assert_array_equal(models["named"].run(named)["probabilities"],
                                  models["iso"].run(iso)["probabilities"])
    with pytest.raises(ColumnTypeError, match=r"value '01-Jan-2012' at row 0 is a date, but the model reads this "
                                              r"column's dates as ISO 8601"):
        models["iso"].run(named)
    with pytest.raises(ColumnTypeError, match=r"value '2012-01-01' at row 0 is a date, but the model reads this "
                                              r"column's dates as '%d-%b-%Y'"):
        models["named"].run(iso)


def test_the_python_check_of_a_date_format_reads_text_as_the_graph_does():
    """Up to 64 values a feed's dates are checked with Python's ``re``, beyond with Arrow's RE2, and the graph
    parses them with RE2: the three agree on a dotless ı / dotted İ in a month name and on non-ASCII digits
    (Python's Unicode rules alone would take '05 Aprıl 2012' and Arabic-Indic digits as dates)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from onegraph.contract.dates import date_format

    fmt = date_format("%d %B %Y")
    values = np.array(["05 April 2012", "05 APRIL 2012", "05 Aprıl 2012", "05 Aprİl 2012", "٠٥ April 2012"],
                      dtype=object)
    python = fmt.matches(values).tolist()
    arrow = pc.match_substring_regex(pa.array(values.tolist()), pattern=f"^(?:{fmt.pattern})$").to_pylist()
    assert python == arrow == [True, True, False, False, False]
