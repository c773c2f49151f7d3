"""What ``onegraph build`` says about a text column of dates it does not read as dates, and about the few
values of a date column that are no dates: a new user's tables wrote ``5 Sept 2012`` among ``5 Sep 2012``,
``15-Mär-2012``, ``Jan. 5, 2012``, padded `` 01-Jan-2012`` and ``TBD``; the notes named no value, or called
the dates "an identifier or free text"."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import onegraph
from onegraph.export import auto

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def weather() -> pd.DataFrame:
    return pd.read_csv(DATA / "seattle-weather.csv").head(300).drop(columns="weather")


def _dates(weather: pd.DataFrame) -> pd.Series:
    return pd.to_datetime(weather["date"])


def test_formats_people_write_are_read_as_dates(weather):
    stamps = _dates(weather)
    for fmt in ("%b. %d, %Y", "%B %d %Y", "%d-%B-%Y", "%d-%b-%y", "%m/%d/%Y %I:%M %p"):
        plan = auto.plan(weather.assign(date=stamps.dt.strftime(fmt)))
        assert plan.dates == ["date"] and plan.notes["date"].startswith(f"read as dates in the format {fmt!r}")


@pytest.mark.parametrize(("written", "said"), [
    (lambda s: s.dt.strftime("%d %b %Y").str.replace("Sep ", "Sept "),
     r"90% of them are dates \(90% '%d %b %Y'\), fewer than the 95% a date column needs; none reads '01 Sept 2012'"),
    (lambda s: s.dt.strftime("%d-%b-%Y").str.replace("Mar", "Mär"), r"none reads '01-Mär-2012'"),
    (lambda s: " " + s.dt.strftime("%d-%b-%Y"),
     r"100% of them look like dates, but in no format onegraph reads \(e.g. ' 01-Jan-2012'\)"),
])
def test_dates_it_cannot_read_are_named(weather, written, said):
    plan = auto.plan(weather.assign(date=written(_dates(weather))))
    assert plan.dates == [] and "date" in plan.skipped
    assert pd.Series([plan.skipped["date"]]).str.contains(said).all(), plan.skipped["date"]
    # the share is computed independently: pandas' strict parser in the format the note names
    if "Sept" in said:
        text = written(_dates(weather))
        read = pd.to_datetime(text, format="%d %b %Y", errors="coerce").notna().mean()
        assert f"{read:.0%}" == "90%"


def test_repeated_dates_taken_as_categories_say_so(weather):
    text = pd.Series(np.repeat(_dates(weather).dt.strftime("%b. %d %Y").iloc[:30].to_numpy(), 10))
    plan = auto.plan(weather.assign(date=text))
    assert plan.text == ["date"]
    assert "look like dates, but in no format onegraph reads (e.g. 'Jan. 01 2012'): one-hot encoded as " \
           "categories" in plan.notes["date"]


def test_values_of_a_date_column_that_are_no_dates_are_named(weather):
    text = _dates(weather).dt.strftime("%d-%b-%Y")
    text[[3, 7, 11]] = ["TBD", "31-Feb-2012", "unknown"]
    plan = auto.plan(weather.assign(date=text))
    assert plan.dates == ["date"]
    unread = pd.to_datetime(text, format="%d-%b-%Y", errors="coerce").isna().sum()
    assert f"{unread} value(s) not read as dates (e.g. 'TBD' at row 3) are missing dates (imputed)" in plan.notes["date"]


def test_dates_for_a_text_date_model_are_written_in_its_format(weather, cli, tmp_path):
    """Dates (datetime64, tz-aware, ``date`` objects, Arrow ``date32``, polars, records) for a model built from
    ``01-Jan-2012`` text are written in that format and score as the text does."""
    import polars as pl
    import pyarrow as pa

    stamps = _dates(weather)
    frame = weather.assign(date=stamps.dt.strftime("%d-%b-%Y"), warm=(weather["temp_max"] > 15).astype(int))
    frame.to_csv(tmp_path / "w.csv", index=False)
    built = cli("build", str(tmp_path / "w.csv"), "--target", "warm", "-o", str(tmp_path / "w.onnx"))
    assert built.returncode == 0, built.stderr
    want = onegraph.score(tmp_path / "w.onnx", frame.drop(columns="warm")).drop(columns="label").to_numpy()
    assert np.ptp(want) > 0
    for feed in (weather.assign(date=stamps), weather.assign(date=stamps.dt.tz_localize("UTC")),
                 weather.assign(date=stamps.dt.date),
                 weather.assign(date=pd.Series(pa.array(stamps.dt.date), dtype=pd.ArrowDtype(pa.date32()))),
                 pl.from_pandas(weather.assign(date=stamps)), weather.assign(date=stamps).to_dict("records")):
        got = onegraph.score(tmp_path / "w.onnx", feed).drop(columns="label").to_numpy()
        np.testing.assert_array_equal(got, want)
    # a missing date stays missing
    gap = weather.assign(date=stamps.where(weather.index != 4))
    got = onegraph.score(tmp_path / "w.onnx", gap)
    blank = onegraph.score(tmp_path / "w.onnx", frame.drop(columns="warm").assign(
        date=frame["date"].where(weather.index != 4)))
    pd.testing.assert_frame_equal(got, blank)
    # a date outside the nanosecond range (a Parquet date32 of 1500) scores as its text does: a missing date
    old = [dt.date(1500, 1, 1) if i == 4 else d for i, d in enumerate(stamps.dt.date)]
    got = onegraph.score(tmp_path / "w.onnx", weather.assign(date=pd.Series(pa.array(old, pa.date32()),
                                                                             dtype=pd.ArrowDtype(pa.date32()))))
    pd.testing.assert_frame_equal(got, blank)


def test_a_file_name_for_score_says_to_read_it(weather, cli, tmp_path):
    """``onegraph.score(model, "rows.csv")`` said "cannot read a table from str"; the CLI takes files, the API
    takes rows: the error says so and how to read the file."""
    from onegraph.errors import DataError

    frame = weather.assign(warm=(weather["temp_max"] > 15).astype(int))
    frame.to_csv(tmp_path / "w.csv", index=False)
    assert cli("build", str(tmp_path / "w.csv"), "--target", "warm", "-o", str(tmp_path / "w.onnx")).returncode == 0
    for name in (str(tmp_path / "w.csv"), tmp_path / "w.csv"):
        with pytest.raises(DataError, match="scoring takes the rows, not a file name") as error:
            onegraph.score(tmp_path / "w.onnx", name)
        assert "onegraph.io.read_table(path)" in error.value.hint
