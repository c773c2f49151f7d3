"""The command line: quickstart, build, score, show, and one-line errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import cli_run
import onnx
import pytest

import onegraph

DATA = Path(__file__).parent / "data"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The command line, in this process (tests/cli_run.py)."""
    return cli_run.run(*args, cwd=cwd)


def test_quickstart_builds_checks_and_times(tmp_path):
    result = run("quickstart", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "penguins.onnx").exists()
    assert "label" in result.stdout and "ok" in result.stdout and "faster" in result.stdout
    assert "DIVERGES" not in result.stdout


def test_build_score_show_on_a_real_table(tmp_path):
    model = tmp_path / "cars.onnx"
    result = run("build", str(DATA / "cars.csv"), "--target", "Origin", "--model", "random_forest", "-o", str(model))
    assert result.returncode == 0, result.stderr
    assert "parity with scikit-learn ok" in result.stdout
    scores = tmp_path / "scores.parquet"
    result = run("score", str(model), str(DATA / "cars.csv"), "-o", str(scores), "--keep", "Name")
    assert result.returncode == 0, result.stderr
    frame = pd.read_parquet(scores)
    assert len(frame) == len(pd.read_csv(DATA / "cars.csv"))
    assert list(frame.columns)[:2] == ["Name", "label"]
    result = run("show", str(model), "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert {i["name"] for i in info["inputs"]} >= {"Horsepower", "Name"}
    assert info["metadata"]["training_algorithm"] == "sklearn.ensemble.RandomForestClassifier"


def test_regression_build(tmp_path):
    result = run("build", str(DATA / "seattle-weather.csv"), "--target", "temp_max", "-o", str(tmp_path / "w.onnx"),
                 "--model", "hist_gradient_boosting")
    assert result.returncode == 0, result.stderr
    assert "R^2" in result.stdout and "ok" in result.stdout
    # the date column (text in the CSV) is used through its calendar parts, parsed in the graph
    assert "1 date columns" in result.stderr and "left out" not in result.stderr


@pytest.mark.parametrize("args,message", [
    (["score", "missing.onnx", str(DATA / "cars.csv"), "-o", "x.csv"], "does not exist"),
    (["score", "junk.onnx", str(DATA / "cars.csv"), "-o", "x.csv"], "not a valid ONNX model"),
    (["build", "nothere.csv", "--target", "a", "-o", "m.onnx"], "does not exist"),
    (["build", str(DATA / "cars.csv"), "--target", "nope", "-o", "m.onnx"], "target column 'nope'"),
    (["build", str(DATA / "cars.csv"), "--target", "Origin", "--model", "ridge", "-o", "m.onnx"], "not available"),
    (["build", "bad.csv", "--target", "a", "-o", "m.onnx"], "bad.csv"),
    (["show", "junk.onnx"], "not a valid ONNX model"),
    (["build", str(DATA / "cars.csv"), "--target", "Origin", "-o", "."], "is a folder"),
    (["build", str(DATA / "cars.csv"), "--target", "Origin", "-o", ""], "folder"),  # typer reads "" as "."
    (["build", str(DATA / "cars.csv"), "--target", "Origin", "-o", "m.onnx", "--test-size", "0"], "not a fraction"),
    (["build", str(DATA / "cars.csv"), "--target", "Origin", "-o", "m.onnx", "--seed", "-5"], "negative"),
    (["build", str(DATA / "cars.csv"), "--target", "Origin", "-o", "m.onnx", "--task", "regression"], "regression needs"),
    (["build", "one_class.csv", "--target", "y", "-o", "m.onnx"], "single class"),
    (["build", "with_inf.csv", "--target", "y", "-o", "m.onnx"], "'x': holds infinite"),
    (["build", str(DATA / "cars.csv"), "--target", "Name", "-o", "m.onnx"], "nearly one per row"),
])
def test_errors_are_one_line_without_traceback(tmp_path, args, message):
    (tmp_path / "junk.onnx").write_bytes(b"this is not a model")
    (tmp_path / "bad.csv").write_bytes(b"\xff\xfe\x00garbage\n\x00\x00")
    pd.DataFrame({"x": range(30), "z": [1.0, 2.0] * 15, "y": ["a"] * 30}).to_csv(tmp_path / "one_class.csv", index=False)
    pd.DataFrame({"x": [1.0, float("inf")] * 15, "y": ["a", "b"] * 15}).to_csv(tmp_path / "with_inf.csv", index=False)
    result = run(*args, cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert message in lines[0]


def test_score_with_a_missing_column_names_it(tmp_path):
    model = tmp_path / "p.onnx"
    assert run("quickstart", "-o", str(model), cwd=tmp_path).returncode == 0
    pd.read_csv(DATA / "cars.csv").to_csv(tmp_path / "other.csv", index=False)
    result = run("score", str(model), str(tmp_path / "other.csv"), "-o", str(tmp_path / "o.csv"))
    assert result.returncode == 1
    assert "'bill_length_mm'" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o.csv").exists()


def test_build_reads_semicolon_and_compressed_csv_and_keeps_file_modes(tmp_path):
    cars = pd.read_csv(DATA / "cars.csv")
    cars.to_csv(tmp_path / "cars_semicolon.csv", sep=";", index=False)
    cars.to_csv(tmp_path / "cars.csv.gz", index=False)
    for name in ("cars_semicolon.csv", "cars.csv.gz"):
        model = tmp_path / f"{name}.onnx"
        result = run("build", str(tmp_path / name), "--target", "Origin", "-o", str(model))
        assert result.returncode == 0, result.stderr
        assert oct(model.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    scores = tmp_path / "s.csv"
    result = run("score", str(tmp_path / "cars.csv.gz.onnx"), str(tmp_path / "cars.csv.gz"), "-o", str(scores),
                 "--keep", "Name", "--keep", "Name")
    assert result.returncode == 0, result.stderr
    assert list(pd.read_csv(scores).columns).count("Name") == 1


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_show_a_model_built_elsewhere(cli):
    """A model onegraph did not build has no input schema: its graph inputs are listed with their types."""
    from onegraph.inspect import describe

    model = Path(__file__).parent / "data" / "digits-cnn.onnx"
    info = describe(model)
    assert [(i["kind"], i["onnx_type"]) for i in info["inputs"]] == [("?", "float32")]
    done = cli("show", str(model))
    assert done.returncode == 0 and "float32" in done.stdout, done.stderr
    # its input's shape is printed (the table had no shape column for inputs)
    shape = [d.dim_value or d.dim_param or "?" for d in onnx.load(model).graph.input[0].type.tensor_type.shape.dim]
    assert str(shape) in done.stdout.replace("\n", ""), done.stdout


@pytest.mark.parametrize("fmt", ["%m/%d/%Y", "%d.%m.%Y", "%d/%m/%Y %H:%M", "%d-%b-%Y", "%m/%d/%Y %I:%M:%S %p",
                                 "%Y-%m-%d %H:%M:%S UTC"])
def test_build_reads_dates_written_day_or_month_first(tmp_path, cli, fmt):
    """A CSV's date column written month or day first is read as dates in that format (a note names it), not
    as categories: the model scores its rows exactly as the same model built from the ISO-written dates does."""
    weather = pd.read_csv(DATA / "seattle-weather.csv")
    stamps = pd.to_datetime(weather["date"])
    iso, other = weather.copy(), weather.copy()
    other["date"] = stamps.dt.strftime(fmt)
    iso["date"] = stamps.dt.strftime("%Y-%m-%d %H:%M" if "%M" in fmt else "%Y-%m-%d")
    scores = {}
    for name, frame in (("iso", iso), ("other", other)):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        result = cli("build", str(tmp_path / f"{name}.csv"), "--target", "temp_max", "--model", "ridge",
                     "-o", str(tmp_path / f"{name}.onnx"))
        assert result.returncode == 0, result.stderr
        assert "1 date columns" in result.stderr
        assert (f"read as dates in the format {fmt!r}" in result.stderr) == (name == "other"), result.stderr
        scores[name] = onegraph.score(tmp_path / f"{name}.onnx", frame)["prediction"].to_numpy()
    np.testing.assert_array_equal(scores["other"], scores["iso"])
    # a date the format cannot read is a missing date (imputed), never an unknown category or a wrong date
    odd = other.head(3).copy()
    odd.loc[0, "date"] = "31/31/2020"
    got = onegraph.score(tmp_path / "other.onnx", odd)["prediction"]
    assert got.notna().all()


def test_score_never_writes_over_its_own_input(tmp_path, cli, penguins_onnx, penguins):
    """`score M DATA -o DATA` would replace the rows with their scores: refused, the file kept."""
    for name in ("rows.csv", "rows.parquet"):
        data = tmp_path / name
        (penguins.to_csv(data, index=False) if name.endswith(".csv") else penguins.to_parquet(data))
        before = data.read_bytes()
        result = cli("score", str(penguins_onnx), str(data), "-o", str(data))
        assert result.returncode == 1 and "is the input" in result.stderr, result.stderr
        assert data.read_bytes() == before
    result = cli("score", str(penguins_onnx), str(tmp_path / "rows.csv"), "-o", str(penguins_onnx))
    assert result.returncode == 1 and "is the input" in result.stderr


def test_keep_of_a_column_named_as_an_output_is_refused(tmp_path, cli, penguins_onnx, penguins):
    rows = penguins.head(20).assign(label=1.5)
    rows.to_csv(tmp_path / "rows.csv", index=False)
    result = cli("score", str(penguins_onnx), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "s.csv"),
                 "--keep", "label")
    assert result.returncode == 1 and "--keep 'label'" in result.stderr, result.stderr
    assert not (tmp_path / "s.csv").exists()
    result = cli("score", str(penguins_onnx), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "s.csv"),
                 "--keep", "island")
    assert result.returncode == 0, result.stderr
    assert list(pd.read_csv(tmp_path / "s.csv").columns)[:2] == ["island", "label"]


def test_keep_copies_the_columns_exactly_as_written(tmp_path, cli, penguins_onnx, penguins):
    """``--keep`` re-typed the column as pandas guesses: account ids 007 / 0042 / 1e5 came out 7.0 / 42.0 /
    100000.0, the text NA empty. A kept column is read as the text written (only an empty cell is missing);
    the model's own columns are read as before, and score as from the DataFrame."""
    rows = penguins.head(5).copy()
    rows["account"] = ["007", "0042", "1e5", "", "12"]
    rows["code"] = ["NA", "TRUE", "1.10", "null", "x"]
    rows.to_csv(tmp_path / "rows.csv", index=False)
    text = (tmp_path / "rows.csv").read_text().splitlines()  # a model column written as a person would
    bills = ["39.10", "39.5", "40.30", "", "36.70"]
    column = text[0].split(",").index("bill_length_mm")
    for i, bill in enumerate(bills, start=1):
        cells = text[i].split(",")
        cells[column] = bill
        text[i] = ",".join(cells)
    (tmp_path / "rows.csv").write_text("\n".join(text) + "\n")
    result = cli("score", str(penguins_onnx), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "s.csv"),
                 "--keep", "account", "--keep", "code", "--keep", "bill_length_mm")
    assert result.returncode == 0, result.stderr
    written = pd.read_csv(tmp_path / "s.csv", dtype=str, keep_default_na=False)
    assert written["account"].tolist() == ["007", "0042", "1e5", "", "12"]
    assert written["code"].tolist() == ["NA", "TRUE", "1.10", "null", "x"]
    assert written["bill_length_mm"].tolist() == bills  # a column the model reads as numbers, copied as written
    expected = onegraph.score(penguins_onnx, rows)
    np.testing.assert_allclose(pd.read_csv(tmp_path / "s.csv").filter(like="probabilities_").to_numpy(float),
                               expected.filter(like="probabilities_").to_numpy(float), rtol=1e-15)
    assert "read " in result.stdout and "written " in result.stdout  # the time of each part, not scoring alone


def test_score_reads_a_parquet_dataset_folder(tmp_path, cli, penguins_onnx, penguins):
    """A hive-partitioned Parquet folder (pyarrow's write_to_dataset, Spark's output, ``score --spark``'s own
    ``x.parquet/``) was refused as "not a folder of images or audio files"; it is read as one table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_to_dataset(pa.Table.from_pandas(penguins), str(tmp_path / "rows.parquet"), partition_cols=["island"])
    result = cli("score", str(penguins_onnx), str(tmp_path / "rows.parquet"), "-o", str(tmp_path / "s.parquet"),
                 "--keep", "bill_length_mm", "--keep", "island")
    assert result.returncode == 0, result.stderr
    got = pd.read_parquet(tmp_path / "s.parquet")
    read = pd.read_parquet(tmp_path / "rows.parquet")  # pyarrow's own reading of the dataset, in its row order
    assert len(got) == len(penguins)
    expected = onegraph.score(penguins_onnx, read.astype({"island": str}))
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float),
                               expected.filter(like="probabilities_").to_numpy(float), rtol=1e-15)
    assert got["island"].astype(str).tolist() == read["island"].astype(str).tolist()


def test_a_zstd_output_without_zstandard_is_refused_before_scoring(tmp_path, cli, penguins_onnx, penguins,
                                                                    monkeypatch):
    """``-o scores.csv.zst`` without the optional zstandard package scored, then failed with "internal error
    (ImportError)"; it is refused first, in one line."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "zstandard" else real(name, *a))
    penguins.head(5).to_csv(tmp_path / "rows.csv", index=False)
    result = cli("score", str(penguins_onnx), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "s.csv.zst"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "needs the zstandard package" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


@pytest.mark.parametrize("extra", ["first", "every"])
def test_a_csv_row_longer_than_its_header_is_refused_not_shifted(tmp_path, cli, penguins_onnx, penguins, extra):
    """One field more than the header on the first data row (or a separator closing every line) made pandas
    read the first column as the row index: every value moved one column left, score exited 0 and --keep
    copied islands as ids. Refused, naming the line and the counts."""
    lines = penguins.head(6).to_csv(index=False).splitlines()
    for i in range(1, len(lines) if extra == "every" else 2):
        lines[i] += ",EXTRA" if extra == "first" else ","
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n")
    for args in (["score", str(penguins_onnx), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "s.csv")],
                 ["build", str(tmp_path / "rows.csv"), "--target", "species", "-o", str(tmp_path / "m.onnx")]):
        result = cli(*args)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert f"line 2 has {len(penguins.columns) + 1} fields but the header names {len(penguins.columns)}" \
            in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


def test_a_csv_that_is_not_utf8_names_its_line_and_the_fix(tmp_path, cli, penguins_onnx, penguins):
    """A Latin-1 CSV said "'utf-8' codec can't decode byte 0xeb in position 5" (a position in pandas' buffer) and
    "check that it is a valid CSV": the line, the byte and how to save it as UTF-8."""
    rows = penguins.head(8).copy()
    rows.loc[5, "island"] = "Torgersën"
    rows.to_csv(tmp_path / "rows.csv", index=False, encoding="latin-1")
    for args in (["score", str(penguins_onnx), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "s.csv")],
                 ["build", str(tmp_path / "rows.csv"), "--target", "species", "-o", str(tmp_path / "m.onnx")]):
        result = cli(*args)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert "is not UTF-8 text: line 7 holds the byte 0xeb" in result.stderr and "encoding='utf-8'" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".zip", ".xz"])
def test_score_reads_every_compression_its_hint_lists(tmp_path, cli, penguins_onnx, penguins, suffix):
    """The unknown-format hint lists .csv.gz / .bz2 / .zip / .xz / .zst, but a second table of compressions
    (the writer's, without .zip) replaced the reader's: ``rows.csv.zip`` was refused as an unknown format."""
    rows = penguins.head(20)
    rows.to_csv(tmp_path / f"rows.csv{suffix}", index=False)  # pandas compresses by the suffix
    result = cli("score", str(penguins_onnx), str(tmp_path / f"rows.csv{suffix}"), "-o", str(tmp_path / "s.parquet"),
                 "--keep", "island")
    assert result.returncode == 0, result.stderr
    got = pd.read_parquet(tmp_path / "s.parquet")
    assert got["island"].tolist() == rows["island"].tolist()
    expected = onegraph.score(penguins_onnx, pd.read_csv(tmp_path / f"rows.csv{suffix}"))
    np.testing.assert_array_equal(got.filter(like="probabilities_").to_numpy(),
                                  expected.filter(like="probabilities_").to_numpy())


@pytest.mark.parametrize("tolerance", [["--rtol", "-1"], ["--atol", "-1"], ["--rtol", "nan"], ["--atol", "inf"]])
def test_convert_and_compare_refuse_a_tolerance_that_is_not_one(tmp_path, cli, penguins_onnx, tolerance):
    """A negative or NaN tolerance made identical outputs "max abs diff 0.00e+00 ... DIVERGES" (exit 1 after the
    whole run); it is refused first, in one line, by the commands and by onegraph.build."""
    for args in (["convert", str(penguins_onnx), "--opset", "20", "-o", str(tmp_path / "c.onnx")],
                 ["convert", str(penguins_onnx), "--fp16", "-o", str(tmp_path / "c.onnx")],
                 ["compare", str(penguins_onnx)]):
        result = cli(*args, *tolerance)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, (args, result.stderr)
        assert f"{tolerance[0][2:]} {float(tolerance[1])!r} is not a tolerance" in result.stderr, result.stderr
    assert not (tmp_path / "c.onnx").exists()


def test_build_refuses_a_tolerance_that_is_not_one(penguins):
    from sklearn.linear_model import LogisticRegression

    from onegraph.errors import ConfigError

    x = penguins[["bill_length_mm", "flipper_length_mm"]].dropna()
    model = LogisticRegression().fit(x, penguins.loc[x.index, "species"])
    with pytest.raises(ConfigError, match="rtol -1e-06 is not a tolerance"):
        onegraph.build(None, model, x, rtol=-1e-6)


def test_convert_and_compare_refuse_data_without_rows(tmp_path, cli, penguins_onnx, penguins):
    penguins.head(0).to_csv(tmp_path / "header.csv", index=False)
    for args in (["convert", str(penguins_onnx), "--opset", "20", "--data", str(tmp_path / "header.csv"),
                  "-o", str(tmp_path / "c.onnx")],
                 ["compare", str(penguins_onnx), "--data", str(tmp_path / "header.csv")]):
        result = cli(*args)
        assert result.returncode == 1 and "has no rows" in result.stderr, (args, result.stderr)
    assert not (tmp_path / "c.onnx").exists()


def test_build_names_why_a_distinct_text_column_is_left_out(tmp_path, cli):
    """A numeric column with one typo and a date column in two formats are all-distinct text: the note says
    what makes them text (and how to fix it), not "an identifier"; a header-less column says so."""
    weather = pd.read_csv(DATA / "seattle-weather.csv").head(300)
    stamps = pd.to_datetime(weather["date"])
    frame = pd.DataFrame({
        "temp": (weather["temp_max"] + np.arange(300) * 1e-6).astype(object),
        "when": np.where(np.arange(300) % 2 == 0, stamps.dt.strftime("%Y-%m-%d"), stamps.dt.strftime("%m/%d/%Y")),
        "": weather["wind"], "rain": weather["precipitation"], "weather": weather["weather"]})
    frame.loc[7, "temp"] = "?"
    frame.to_csv(tmp_path / "w.csv", index=False)
    result = cli("build", str(tmp_path / "w.csv"), "--target", "weather", "-o", str(tmp_path / "w.onnx"))
    assert result.returncode == 0, result.stderr
    notes = {line.split("'")[1]: line for line in result.stderr.splitlines() if line.startswith("note: column")}
    assert "299 of its 300 values are numbers, but 1 is not: '?' (row 7)" in notes["temp"]
    assert "dates, but in several formats (50% ISO 8601, 50% '%m/%d/%Y')" in notes["when"]
    assert "no header in the file" in notes["Unnamed: 2"]


@pytest.mark.parametrize("name,ok", [("s.csv.gz", True), ("s.csv.bz2", True), ("s.parquet", True),
                                     ("s.txt", False), ("s", False), ("s.parquet.gz", False)])
def test_score_writes_compressed_csv_and_refuses_other_names_before_scoring(tmp_path, cli, penguins_onnx, penguins,
                                                                            name, ok):
    penguins.head(30).to_csv(tmp_path / "rows.csv", index=False)
    result = cli("score", str(penguins_onnx), str(tmp_path / "rows.csv"), "-o", str(tmp_path / name))
    if not ok:
        assert result.returncode == 1 and "unknown format" in result.stderr, result.stderr
        assert not (tmp_path / name).exists()
        return
    assert result.returncode == 0, result.stderr
    back = pd.read_parquet(tmp_path / name) if name.endswith(".parquet") else pd.read_csv(tmp_path / name)
    # CSV writes 17 significant digits; pandas' default float parser reads them back within an ulp or two
    expected = onegraph.score(penguins_onnx, penguins.head(30))
    np.testing.assert_allclose(back.filter(like="probabilities_").to_numpy(),
                               expected.filter(like="probabilities_").to_numpy(), rtol=1e-15)


def test_build_leaves_out_nested_columns_with_a_note(tmp_path, cli, penguins):
    """A Parquet file with a list column beside the features: build failed with "object column mixes value
    types ... .astype(str)". A nested column is left out with a note, as an empty or constant one is, and the
    model scores the same file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(penguins, preserve_index=False)
    table = table.append_column("tags", pa.array([["a", "b"] if i % 2 else [] for i in range(len(penguins))]))
    pq.write_table(table, tmp_path / "rows.parquet")
    result = cli("build", str(tmp_path / "rows.parquet"), "--target", "species", "-o", str(tmp_path / "m.onnx"))
    assert result.returncode == 0, result.stderr
    assert "column 'tags' left out: nested values" in result.stderr
    assert cli("score", str(tmp_path / "m.onnx"), str(tmp_path / "rows.parquet"), "-o",
               str(tmp_path / "s.csv")).returncode == 0
    assert "tags" not in {i.name for i in onnx.load(tmp_path / "m.onnx").graph.input}


def test_python_dash_m_onegraph_is_the_command_line(monkeypatch, capsys):
    """A new user's case: `python -m onegraph` failed ("No module named onegraph.__main__"); only the script
    and `python -m onegraph.cli` ran the command line."""
    import runpy
    import sys

    monkeypatch.setattr(sys, "argv", ["onegraph", "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module("onegraph", run_name="__main__")
    assert done.value.code in (0, None) and "Usage:" in capsys.readouterr().out
