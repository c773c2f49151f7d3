"""DateParts / DateDiff: the graph in onnxruntime equals pandas' dt accessor, on real tables and edge cases."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pandas as pd
import pytest
from conftest import DATA, assert_same_values, graph_matches_transform, reference_agrees
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.errors import ColumnTypeError, OutOfRangeError
from onegraph.export import auto
from onegraph.frame import DateDiff, DateParts, StandardScaler

ALL_PARTS = ["year", "quarter", "month", "day", "dayofweek", "dayofyear", "days_in_month", "isoweek", "isoyear",
             "hour", "minute", "second", "microsecond", "nanosecond", "is_month_start", "is_month_end",
             "is_quarter_start", "is_quarter_end", "is_year_start", "is_year_end", "is_leap_year", "is_weekend"]
INSTANT = ["year", "month", "day", "hour", "minute", "second", "microsecond", "nanosecond"]


def test_seattle_datetime_column_every_part(seattle):
    frame = seattle[["date"]]
    parts = DateParts(ALL_PARTS, cyclical=["month", "dayofweek", "day", "dayofyear"]).fit(frame)
    graph_matches_transform(parts, frame)
    out = parts.transform(frame)
    s = seattle["date"]
    # transform is pandas' own dt accessor (and Python's calendar for the ISO week)
    for p, attr in [("year", "year"), ("quarter", "quarter"), ("month", "month"), ("day", "day"),
                    ("dayofweek", "day_of_week"), ("dayofyear", "day_of_year")]:
        assert_same_values(out[f"date_{p}"], getattr(s.dt, attr).astype(float), name=p)
    iso = [d.isocalendar() for d in s.dt.date]
    assert_same_values(out["date_isoweek"], [w.week for w in iso])
    assert_same_values(out["date_isoyear"], [w.year for w in iso])
    np.testing.assert_allclose(out["date_month_sin"], np.sin(2 * np.pi * (s.dt.month - 1) / 12), atol=1e-15)


def test_seattle_dates_as_text_iso_and_format(seattle):
    text = pd.read_csv(DATA / "seattle-weather.csv")[["date"]]  # "2012/01/01"
    for parts in (DateParts(ALL_PARTS), DateParts(["year", "month", "day"], format="%Y/%m/%d")):
        parts.fit(text)
        graph_matches_transform(parts, text)
        out = parts.transform(text)
        assert_same_values(out["date_day"], seattle["date"].dt.day.astype(float))


def test_la_riots_and_penguin_egg_dates():
    riots = pd.read_csv(DATA / "la-riots.csv")[["death_date"]]
    graph_matches_transform(DateParts(ALL_PARTS).fit(riots), riots)
    since = DateDiff("1992-04-29", unit="D").fit(riots)
    graph_matches_transform(since, riots)
    expected = (pd.to_datetime(riots["death_date"]) - pd.Timestamp("1992-04-29")) / pd.Timedelta(days=1)
    assert_same_values(since.transform(riots)["death_date_since_reference"], expected)
    eggs = pd.read_csv(DATA / "penguins-raw.csv")[["Date Egg"]]
    graph_matches_transform(DateParts(["year", "isoweek", "dayofweek", "is_weekend"]).fit(eggs), eggs)


def test_vectors_from_the_issue():
    frame = pd.DataFrame({"d": ["2018-01-31", "2018-04-30", "2023-06-13T04:53:00.280Z", None, "not a date"]})
    parts = DateParts(["isoweek", "dayofyear", "dayofweek"]).fit(frame)
    got = onegraph.score(onegraph.build(parts, None, frame), frame)
    for i, day in enumerate([dt.date(2018, 1, 31), dt.date(2018, 4, 30)]):
        assert got["d_isoweek"][i] == day.isocalendar().week == (5, 18)[i]
        assert got["d_dayofyear"][i] == day.timetuple().tm_yday == (31, 120)[i]
        assert got["d_dayofweek"][i] == day.weekday() == (2, 0)[i]
    assert got.iloc[3:].isna().all().all()
    epoch = DateDiff("1970-01-01", unit="s", whole=True).fit(frame)
    seconds = onegraph.score(onegraph.build(epoch, None, frame), frame)["d_since_reference"]
    instant = dt.datetime(2023, 6, 13, 4, 53, 0, 280000, tzinfo=dt.timezone.utc)
    assert seconds[2] == int(instant.timestamp()) == 1686631980


def test_iso_week_53_and_year_boundaries():
    days = [dt.date(y, 12, 28) + dt.timedelta(days=k) for y in range(1999, 2032) for k in range(8)]
    frame = pd.DataFrame({"d": pd.to_datetime(days)})
    parts = DateParts(["isoweek", "isoyear", "year", "dayofyear", "is_year_start", "is_year_end"]).fit(frame)
    graph_matches_transform(parts, frame)
    out = parts.transform(frame)
    assert_same_values(out["d_isoweek"], [d.isocalendar().week for d in days])
    assert_same_values(out["d_isoyear"], [d.isocalendar().year for d in days])
    assert (out["d_isoweek"] == 53).sum() >= 5  # 2004, 2009, 2015, 2020, 2026 ...


def test_leap_days_as_datetimes_and_text():
    text = ["2000-02-29", "1900-02-28", "1900-03-01", "2100-02-28", "2024-02-29", "2024-12-31", "2023-02-29",
            "1900-02-29", "2000-2-29"]
    frame = pd.DataFrame({"d": text})
    parts = DateParts(["year", "month", "day", "dayofyear", "is_leap_year", "days_in_month"]).fit(frame)
    graph_matches_transform(parts, frame)
    out = parts.transform(frame)
    assert out["d_year"].isna().tolist() == [False] * 6 + [True, True, False]  # Feb 29 of 2023 and 1900: NaT
    valid = pd.DataFrame({"d": pd.to_datetime([t for t in text if t not in ("2023-02-29", "1900-02-29")],
                                              format="mixed")})
    graph_matches_transform(DateParts(ALL_PARTS).fit(valid), valid)


def _around_transitions(tz: str, years: range) -> pd.Series:
    """Instants 1 s, 30 min and 1 h either side of every offset change of ``tz`` in ``years``."""
    hours = pd.date_range(f"{years.start}-01-01", f"{years.stop}-01-01", freq="h", tz="UTC")
    local = hours.tz_convert(tz)
    offsets = np.array([t.utcoffset().total_seconds() for t in local])
    changes = hours[1:][np.diff(offsets) != 0]
    deltas = [pd.Timedelta(s, "s") for s in (-3600, -1800, -1, 0, 1, 1800, 3600)]
    instants = [c + d for c in changes for d in deltas]
    return pd.Series(pd.DatetimeIndex(instants)).dt.tz_convert(tz)


@pytest.mark.parametrize("tz", ["Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"])
def test_dst_transitions_in_the_columns_own_zone(tz):
    s = _around_transitions(tz, range(2019, 2024)) if tz not in ("Asia/Kolkata", "UTC") else \
        pd.Series(pd.date_range("2019-01-01", periods=500, freq="7h13min", tz=tz))
    frame = pd.DataFrame({"t": s})
    frame.loc[2, "t"] = pd.NaT
    parts = DateParts(["year", "month", "day", "hour", "minute", "second", "dayofweek", "dayofyear"]).fit(frame)
    graph_matches_transform(parts, frame)
    out = parts.transform(frame)
    assert_same_values(out["t_hour"], s.dt.hour.astype(float).where(frame["t"].notna()))


def test_text_converted_to_a_zone_and_naive_columns_refuse_one():
    text = pd.DataFrame({"t": ["2021-03-28T00:59:59Z", "2021-03-28T01:00:00Z", "2021-10-31T00:30:00+00:00",
                               "2021-10-31T01:30:00Z", "2021-06-01 12:00:00-04:00"]})
    parts = DateParts(["day", "hour", "minute"], tz="Europe/Paris").fit(text)
    graph_matches_transform(parts, text)
    expected = pd.to_datetime(text["t"], utc=True, format="ISO8601").dt.tz_convert("Europe/Paris").dt.hour
    assert_same_values(parts.transform(text)["t_hour"], expected.astype(float))
    with pytest.raises(ColumnTypeError, match="'d'.*naive"):
        DateParts(tz="Europe/Paris").fit(pd.DataFrame({"d": pd.to_datetime(["2020-01-01"])}))


def test_instants_outside_the_zone_table_are_refused_by_name():
    frame = pd.DataFrame({"t": pd.to_datetime(["2020-05-01", "2020-11-01"]).tz_localize("Europe/Paris")})
    parts = DateParts(["hour"], tz_margin=1).fit(frame)
    model = onegraph.build(parts, None, frame)
    later = pd.DataFrame({"t": pd.to_datetime(["2021-07-01", "2030-07-01"]).tz_localize("Europe/Paris")})
    with pytest.raises(OutOfRangeError, match="'t'.*2019-2021 of time zone Europe/Paris") as info:
        onegraph.score(model, later)
    assert info.value.rows == [1]


@pytest.mark.parametrize("unit,whole", [("D", False), ("h", True), ("min", False), ("s", True), ("W", False),
                                        ("ms", True)])
def test_date_differences(unit, whole):
    rng = np.random.default_rng(7)
    start = pd.Timestamp("2001-01-01").value
    a = pd.Series(rng.integers(start, start + 10**18, 300).view("M8[ns]"))
    b = pd.Series(rng.integers(start, start + 10**18, 300).view("M8[ns]"))
    a[5] = pd.NaT
    frame = pd.DataFrame({"end": a.dt.tz_localize("UTC").dt.tz_convert("Asia/Tokyo"), "start": b})
    diff = DateDiff(unit=unit, whole=whole).fit(frame)
    graph_matches_transform(diff, frame)
    delta = a - b  # the tz-aware end is compared by its instant; the naive start is UTC
    expected = delta // pd.Timedelta(1, unit) if whole else delta / pd.Timedelta(1, unit)
    assert_same_values(diff.transform(frame)["end_minus_start"], expected.astype(float))


# -- text parsed in the graph ------------------------------------------------------------------------
_year = st.sampled_from(["1677", "1678", "1970", "1999", "2000", "2016", "2020", "2023", "2024", "2100", "2262", "2263"])
_two = st.integers(0, 99).map(lambda v: f"{v:02d}")
_one_or_two = st.one_of(_two, st.integers(0, 9).map(str))
_sep = st.sampled_from(["-", "/", ".", "\\", "", " "])
_tz = st.sampled_from(["", "Z", "+02:00", "-05:30", "+0530", "+14", "-3", "+25:00", " +01:00", "Z "])


@st.composite
def iso_like(draw) -> str:
    """Strings near pandas' ISO-8601 grammar: valid ones, impossible dates, and small corruptions."""
    sep = draw(_sep)
    y, m, d = draw(_year), draw(_one_or_two), draw(_one_or_two)
    text = y + (f"{sep}{m}{sep}{d}" if sep else f"{m.zfill(2)}{d.zfill(2)}")
    if draw(st.booleans()):
        text += draw(st.sampled_from(["T", " "])) + draw(_one_or_two)
        if draw(st.booleans()):
            text += ":" + draw(_one_or_two) + (":" + draw(_one_or_two) if draw(st.booleans()) else "")
            if draw(st.booleans()):
                text += "." + draw(st.text("0123456789", max_size=20))
        text += draw(_tz)
    if draw(st.integers(0, 4)) == 0:
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.sampled_from(list("0123456789-:T Z+./,x\t"))) + text[i + draw(st.integers(0, 1)):]
    return text


_BUILT: dict = {}


def _built(key, make):
    """One fitted transformer and its model per key, shared by the examples of a hypothesis test (the
    graph does not depend on the rows, so each example only scores)."""
    if key not in _BUILT:
        transformer, frame = make()
        _BUILT[key] = transformer, onegraph.build(transformer, None, frame)
    return _BUILT[key]


def _scores_equal_transform(transformer, model, frame: pd.DataFrame) -> pd.DataFrame:
    got = onegraph.score(model, frame)
    expected = transformer.transform(frame)
    for name in expected.columns:
        assert_same_values(got[name].to_numpy(), expected[name].to_numpy(), name=name)
    return expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(iso_like(), st.none(), st.text(max_size=12)), min_size=1, max_size=40))
def test_hypothesis_iso_text_parses_as_pandas(values):
    sample = pd.DataFrame({"t": ["2020-01-01", None]})
    parts, model = _built("iso", lambda: (DateParts(INSTANT + ["dayofweek"]).fit(sample), sample))
    frame = pd.DataFrame({"t": pd.Series(values, dtype=object)})
    raw = pd.to_datetime(frame["t"], format="ISO8601", utc=True, errors="coerce")
    try:
        out = _scores_equal_transform(parts, model, frame)
    except ColumnTypeError as refused:
        # the input contract refuses a feed with more than 5% of its values written another way, one of them a
        # date (each would be read as missing): pandas' own ISO parser reads the value named as NaT
        assert "is a date, but the model reads this column's dates as ISO 8601" in str(refused)
        row = int(re.search(r"at row (\d+) is a date", str(refused))[1])
        assert pd.isna(raw[row])
        present = frame["t"].notna()
        assert raw[present].isna().sum() > 0.05 * present.sum()
        return
    # what the graph reads equals pandas' own ISO parser wherever the documented grammar holds
    inside = out["t_year"].notna()
    assert_same_values(out.loc[inside, "t_second"], raw[inside].dt.second.astype(float))
    # and the spec, run literally, reads the text the same way (no runtime-specific Cast behaviour)
    reference_agrees(model, frame)


@pytest.mark.parametrize("fmt", ["%d/%m/%Y", "%Y%m%d", "%m/%d/%Y %H:%M", "%d.%m.%y %H:%M:%S.%f",
                                 "%Y-%m-%d %H:%M:%S%z", "%Y-%m-%d", "%d-%b-%Y", "%d-%b-%y %H:%M", "%B %d, %Y",
                                 "%m/%d/%Y %I:%M:%S %p", "%m/%d/%Y %I:%M%p", "%Y-%m-%d %H:%M:%S UTC"])
def test_strftime_formats_parse_as_pandas(fmt):
    rng = np.random.default_rng(3)
    # 600 dates in the format: the 23 odd values stay within the 5% a feed may write otherwise (refused beyond)
    stamps = pd.to_datetime(rng.integers(pd.Timestamp("1950-01-01").value, pd.Timestamp("2060-01-01").value, 600))
    text = [t.strftime(fmt.replace("%z", "+0100")) for t in stamps]
    odd = ["31/02/2023", "1/6/2023", "2023613", "6/13/2023 4:53", "13.06.70 04:53:60.5", "2023-06-13 00:00:00Z",
           "2023-6-1", " 2023-06-13", "x", "", None,
           # words: any case, abbreviations only for %b and full names only for %B, 12 AM is hour 0
           "01-JAN-2012", "1-jan-12 3:07", "01-Sept-2012", "31-Feb-2012", "January 5, 2012", "Jan 5, 2012",
           "12/01/2012 12:00:00 AM", "12/01/2012 12:00:00 pm", "12/01/2012 13:00:00 PM", "12/01/2012 0:00:00 AM",
           "1/5/2012 12:45AM", "2012-01-05 13:45:00 utc"]
    frame = pd.DataFrame({"t": text + odd})
    parts = DateParts(INSTANT, format=fmt).fit(frame)
    model = graph_matches_transform(parts, frame)
    reference_agrees(model, frame)
    # the dates strftime wrote read as pandas' own parser reads them, field by field
    got = onegraph.score(model, frame).iloc[:600]
    raw = pd.to_datetime(pd.Series(text), format=fmt, utc=True)
    for field in ("year", "month", "day", "hour", "minute", "second"):
        np.testing.assert_array_equal(got[f"t_{field}"].to_numpy(), getattr(raw.dt, field).to_numpy(), field)


def test_locale_dependent_formats_are_refused():
    for fmt, why in (("%a %d %Y", "%a .weekday names. depends on the host locale"),
                     ("%x", "%x .locale's format."), ("%d %h %Y", "%h is a synonym of %b")):
        with pytest.raises(ColumnTypeError, match=why):
            DateParts(format=fmt).fit(pd.DataFrame({"t": ["01 Jan 2020"]}))


@pytest.mark.parametrize(("fmt", "why"), [
    ("%d%b%Y", "%d cannot be followed directly by %b"), ("%b%Y", "%b must be followed by literal text"),
    ("%d %Bx%Y", "the text after %B must not start with a letter"), ("%H:%M %I", "both %H and %I"),
])
def test_word_fields_the_graph_cannot_split_are_refused(fmt, why):
    with pytest.raises(ColumnTypeError, match=why):
        DateParts(format=fmt).fit(pd.DataFrame({"t": ["01 Jan 2020"]}))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.none(), st.integers(-2**62, 2**62)), min_size=1, max_size=30),
       st.sampled_from([None, "Europe/Paris", "America/New_York", "Pacific/Chatham"]))
def test_hypothesis_datetime_frames_with_nat(values, tz):
    def localized(s: pd.Series) -> pd.Series:
        return s if tz is None else s.dt.tz_localize("UTC").dt.tz_convert(tz)

    def make():
        # fitted on instants around the examples' range (+-2**62 ns: 1823-2116), so the zone table covers them
        ends = localized(pd.Series(pd.to_datetime(["1823-01-01", "2116-12-31"])))
        frame = pd.DataFrame({"t": ends})
        return DateParts(ALL_PARTS, cyclical=["hour", "dayofyear"], tz_margin=0).fit(frame), frame

    parts, model = _built(("datetime", tz), make)
    s = pd.Series(pd.array([pd.NaT if v is None else pd.Timestamp(v) for v in values], dtype="datetime64[ns]"))
    _scores_equal_transform(parts, model, pd.DataFrame({"t": localized(s)}))


# -- in pipelines and in `onegraph build` ------------------------------------------------------------
def test_date_parts_in_a_pipeline_with_a_model(seattle):
    frame = seattle.drop(columns="weather")
    pipe = make_pipeline(
        ColumnTransformer([
            ("date", make_pipeline(DateParts(["month", "dayofyear", "dayofweek"], cyclical=["month"]),
                                   StandardScaler()), ["date"]),
            ("num", StandardScaler(), ["precipitation", "temp_max", "temp_min", "wind"]),
        ]),
        LogisticRegression(max_iter=2000),
    ).fit(frame, seattle["weather"])
    model = onegraph.build(pipe, None, frame)  # refuses a graph that differs from scikit-learn
    got = onegraph.score(model, frame.head(50))
    assert (got["label"].to_numpy() == pipe.predict(frame.head(50))).all()


def test_onegraph_build_plan_reads_date_columns(seattle):
    text = pd.read_csv(DATA / "seattle-weather.csv").drop(columns="weather")
    for frame in (text, seattle.drop(columns="weather")):
        plan = auto.plan(frame)
        assert plan.dates == ["date"] and "date" not in plan.skipped
        pipe = make_pipeline(plan.preprocessing, LogisticRegression(max_iter=500)).fit(frame, seattle["weather"])
        onegraph.build(pipe, None, frame)
    assert isinstance(auto.plan(text).preprocessing.transformers[0][1][0], DateParts)


def test_compare_runs_a_date_text_model_in_both_runtimes(tmp_path, cars, cli):
    """The user's report: the reference evaluator refused the graph's Cast of "1970-01-01" to int64
    (only onnxruntime reads a leading number); the digits are now cut out before the Cast."""
    from onegraph.verify import compare_runtimes

    frame = cars[["Year", "Horsepower"]].head(40)
    parts = DateParts(["year", "month", "dayofyear"]).fit(frame[["Year"]])
    model = graph_matches_transform(parts, frame[["Year"]])
    report = compare_runtimes(model, frame[["Year"]])
    assert report.outputs_agree
    path = tmp_path / "dates.onnx"
    path.write_bytes(model.SerializeToString())
    result = cli("compare", str(path), "--data", str(DATA / "cars.csv"))
    assert "Traceback" not in result.stderr and "the model's outputs agree" in result.stdout
