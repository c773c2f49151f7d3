"""``onegraph build DATA --target COL`` leaves out, with a note saying why and what to do, a feature column no
graph input can hold, and builds the rest: one column of Parquet ``time64`` (pandas: ``datetime.time``
objects) refused the whole build."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import onegraph
from onegraph.contract.columns import spec_for
from onegraph.errors import ColumnTypeError

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arrow_type", [pa.time64("us"), pa.time32("s")])
def test_a_time_of_day_column_is_left_out_and_the_rest_builds(cli, arrow_type, tmp_path):
    weather = pd.read_csv(DATA / "seattle-weather.csv").head(300)
    table = pa.Table.from_pandas(weather, preserve_index=False)
    # an observation time per day, as a station log writes it (one missing)
    times = [None if i == 7 else dt.time((6 + i) % 24, (13 * i) % 60) for i in range(len(weather))]
    with_times, without = tmp_path / "times.parquet", tmp_path / "plain.parquet"
    pq.write_table(table.append_column("observed_at", pa.array(times, arrow_type)), with_times)
    pq.write_table(table, without)
    outs = {}
    for data in (with_times, without):
        model = tmp_path / f"{data.stem}.onnx"
        out = cli("build", str(data), "--target", "weather", "-o", str(model))
        assert out.returncode == 0, out.stderr
        outs[data.stem] = out, model
    out, model = outs["times"]
    assert "note: column 'observed_at' left out: holds times of day (datetime.time), which no graph input " \
           "takes (convert them to numbers, e.g. seconds since midnight" in out.stderr
    assert [s.name for s in onegraph.Session(model).inputs] == ["date", "precipitation", "temp_max", "temp_min",
                                                                "wind"]
    # the same model as the data without the column: the scores from the full table equal its scores
    full = pd.read_parquet(with_times)
    got, want = onegraph.score(model, full), onegraph.score(outs["plain"][1], full.drop(columns=["observed_at"]))
    pd.testing.assert_frame_equal(got, want)
    scored = cli("score", str(model), str(with_times), "-o", str(tmp_path / "scores.csv"))
    assert scored.returncode == 0, scored.stderr
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "scores.csv")["label"], want["label"])


def test_the_python_api_names_a_time_column_and_how_to_convert_it(tmp_path):
    frame = pd.DataFrame({"t": [dt.time(8, 30), None, dt.time(17, 0)]})
    with pytest.raises(ColumnTypeError, match=r"column 't': holds times of day .* seconds since midnight"):
        spec_for("t", frame["t"])
    # the hint, run as written, gives the numbers (the missing time stays missing)
    seconds = pd.to_timedelta(frame["t"].astype(str)).dt.total_seconds()
    np.testing.assert_array_equal(seconds.to_numpy(), [30600.0, np.nan, 61200.0])
