"""Datetime text whose UTC offsets differ (a zone across DST, as ``to_csv`` writes it) is read as instants in
the model's stored zone: by ``onegraph score`` on a CSV, by ``read_table``, and by ``score`` on text."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.contract.columns import ColumnSpec
from onegraph.errors import ColumnTypeError
from onegraph.frame import DateParts
from onegraph.io import read_table

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def weather():
    frame = pd.read_csv(DATA / "seattle-weather.csv")
    # 2012-2015 in Paris: every row's offset is +01:00 or +02:00 (DST), so the CSV text mixes them
    ts = pd.to_datetime(frame["date"], format="%Y/%m/%d").dt.tz_localize("Europe/Paris") + pd.Timedelta(hours=13)
    rows = pd.DataFrame({"ts": ts, "wind": frame["wind"]})
    return rows, frame["weather"].to_numpy()


def test_cli_scores_a_csv_whose_offsets_differ(weather, tmp_path):
    rows, y = weather
    pre = DateParts(["month", "dayofweek", "hour"], tz="America/New_York").fit(rows[["ts"]])
    x = np.column_stack([pre.transform(rows[["ts"]]), rows["wind"]])
    from sklearn.compose import ColumnTransformer

    ct = ColumnTransformer([("d", pre, ["ts"]), ("w", "passthrough", ["wind"])]).fit(rows)
    lr = LogisticRegression(max_iter=2000).fit(x, y)
    onegraph.build(make_pipeline(ct, lr), None, rows, path=tmp_path / "m.onnx")
    rows.to_csv(tmp_path / "rows.csv", index=False)
    assert {t[-6:] for t in pd.read_csv(tmp_path / "rows.csv")["ts"]} == {"+01:00", "+02:00"}
    from cli_run import run

    result = run("score", tmp_path / "m.onnx", tmp_path / "rows.csv", "-o", tmp_path / "s.csv")
    assert result.returncode == 0, result.stderr
    got = pd.read_csv(tmp_path / "s.csv")
    assert (got["label"].to_numpy() == lr.predict(x)).all()
    np.testing.assert_allclose(got[[f"probabilities_{c}" for c in lr.classes_]].to_numpy(), lr.predict_proba(x),
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("zone", ["Europe/Paris", "Asia/Tokyo", None])
def test_read_table_reads_mixed_offsets_in_the_stored_zone(weather, tmp_path, zone):
    rows, _ = weather
    rows.to_csv(tmp_path / "rows.csv", index=False)
    got = read_table(tmp_path / "rows.csv", specs=[ColumnSpec("ts", "datetime", "int64", tz=zone)])
    expected = rows["ts"].dt.tz_convert(zone or "UTC")  # the same instants; no zone stored: UTC
    assert str(got["ts"].dt.tz) == str(expected.dt.tz)
    assert (got["ts"].to_numpy() == expected.to_numpy()).all()


def test_score_takes_mixed_offset_text_for_a_naive_and_an_aware_column(weather):
    rows, _ = weather
    text = rows["ts"].astype(str)
    for stored in (rows["ts"], rows["ts"].dt.tz_convert("UTC").dt.tz_localize(None)):
        pre = DateParts(["day", "hour"]).fit(pd.DataFrame({"ts": stored}))
        model = onegraph.build(pre, None, pd.DataFrame({"ts": stored}))
        got = onegraph.score(model, pd.DataFrame({"ts": text}))
        expected = pre.transform(pd.DataFrame({"ts": stored}))
        np.testing.assert_array_equal(got.to_numpy(float), expected.to_numpy(float))
    with pytest.raises(ColumnTypeError, match="'ts'"):
        onegraph.score(model, pd.DataFrame({"ts": ["2024-03-01T10:00:00+01:00", "soon"]}))


def test_a_naive_wall_time_means_the_same_from_every_container(tmp_path, cli):
    """A model built on Europe/Berlin timestamps, given the naive wall time 12:00: naive datetime64 (pandas,
    polars, Parquet) gave hour 12, the same as text (pandas str, a CSV through the CLI) hour 14 (read as UTC), so
    a file's format changed the predictions. Every container now places it in the model's zone; a wall time in a
    DST gap or overlap is refused naming the row, and unparseable text names its row in one line."""
    import polars as pl

    fit = pd.DataFrame({"t": pd.to_datetime(["2021-01-01 08:00", "2021-07-01 08:00"]).tz_localize("Europe/Berlin")})
    onegraph.build(DateParts(["hour", "day"]).fit(fit), None, fit, path=tmp_path / "m.onnx")
    wall = pd.to_datetime(["2021-07-01 12:00", "2021-01-31 23:30", None])
    expected = pd.Series(wall).dt.tz_localize("Europe/Berlin")
    naive = pd.DataFrame({"t": wall})
    containers = {"pandas": naive, "numpy": {"t": wall.to_numpy()}, "polars": pl.from_pandas(naive),
                  "text": pd.DataFrame({"t": ["2021-07-01 12:00", "2021-01-31T23:30:00", None]})}
    for name, data in containers.items():
        got = onegraph.score(tmp_path / "m.onnx", data)
        np.testing.assert_array_equal(got["t_hour"].to_numpy(float), expected.dt.hour.to_numpy(float), err_msg=name)
        np.testing.assert_array_equal(got["t_day"].to_numpy(float), expected.dt.day.to_numpy(float), err_msg=name)
    # text mixing values with and without an offset: each offset-less value is still a wall time in the zone
    mixed = pd.DataFrame({"t": ["2022-07-01 12:00:00", "2022-07-01T12:00:00+00:00", "2022-07-01", None]})
    got = onegraph.score(tmp_path / "m.onnx", mixed)
    np.testing.assert_array_equal(got["t_hour"].to_numpy(float), [12.0, 14.0, 0.0, np.nan])
    naive.to_csv(tmp_path / "rows.csv", index=False)
    naive.to_parquet(tmp_path / "rows.parquet")
    for rows in ("rows.csv", "rows.parquet"):
        result = cli("score", str(tmp_path / "m.onnx"), str(tmp_path / rows), "-o", str(tmp_path / f"{rows}.out.csv"))
        assert result.returncode == 0, result.stderr
        written = pd.read_csv(tmp_path / f"{rows}.out.csv")
        np.testing.assert_array_equal(written["t_hour"].to_numpy(float), expected.dt.hour.to_numpy(float))
    for value, said in [("2021-03-28 02:30", "row 1 does not exist in time zone Europe/Berlin (a DST gap)"),
                        ("2021-10-31 02:30", "row 1 happens twice in time zone Europe/Berlin (a DST overlap)"),
                        ("soon", "'soon' at row 1 is not an ISO-8601 date")]:
        for data in (pd.DataFrame({"t": ["2021-07-01 12:00", value]}),
                     pd.DataFrame({"t": pd.to_datetime(["2021-07-01 12:00", value])}) if value != "soon" else None):
            if data is None:
                continue
            with pytest.raises(ColumnTypeError, match=re.escape(said)) as caught:
                onegraph.score(tmp_path / "m.onnx", data)
            assert "\n" not in str(caught.value)
