"""Datetime text whose UTC offsets differ (a zone across DST, as ``to_csv`` writes it) is read as instants in
the model's stored zone: by ``onegraph score`` on a CSV, by ``read_table``, and by ``score`` on text."""

from __future__ import annotations

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
