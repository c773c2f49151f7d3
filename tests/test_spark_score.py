"""onegraph on Spark (local mode): scoring equals onegraph.score row for row, a retried task loses or
duplicates no row, distributed statistics equal single-process ones, the CLI's --spark."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from conftest import DATA
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.errors import ColumnTypeError, DataError, MissingColumnError
from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

pytest.importorskip("pyspark")

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TEXT = ["island", "sex"]


@pytest.fixture(scope="module")
def model(penguins, tmp_path_factory):
    frame = penguins.drop(columns="species")
    pipe = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMERIC),
            ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
             TEXT),
        ]),
        LogisticRegression(max_iter=1000),
    ).fit(frame, penguins["species"])
    path = tmp_path_factory.mktemp("spark") / "penguins.onnx"
    onegraph.build(pipe, None, frame, path=path)
    return path


@pytest.fixture(scope="module")
def rows(penguins):
    """The penguins with a row id, text missing values as None (Spark's null)."""
    frame = penguins.drop(columns="species").astype(object).where(penguins.notna(), None)
    frame = frame.astype({c: float for c in NUMERIC[:-1]} | {"year": np.int64})
    frame.insert(0, "row", np.arange(len(frame), dtype=np.int64))
    return frame


@pytest.fixture(scope="module")
def spark_rows(spark, rows):
    return spark.createDataFrame(rows).repartition(2).cache()


def _sorted(table) -> pd.DataFrame:
    return table.to_pandas().sort_values("row").reset_index(drop=True)


def test_scores_equal_onegraph_score_row_for_row(spark_rows, rows, model):
    from onegraph.spark import score

    scored = score(spark_rows, model, batch_size=50)
    assert scored.schema["label"].dataType.typeName() == "string"
    assert scored.schema["probabilities_Adelie"].dataType.typeName() == "double"
    got = _sorted(scored.toArrow())
    want = onegraph.score(model, rows.drop(columns="row"))
    assert len(got) == len(rows) and (got["row"].to_numpy() == rows["row"].to_numpy()).all()
    assert list(got.columns) == list(rows.columns) + list(want.columns)  # inputs kept, then the outputs
    assert (got["label"].to_numpy() == want["label"].to_numpy()).all()
    np.testing.assert_array_equal(got[want.columns[1:]].to_numpy(float), want.iloc[:, 1:].to_numpy(float))


def test_a_task_failing_once_is_retried_without_lost_or_duplicated_rows(spark_rows, rows, model, tmp_path):
    import pyarrow.parquet as pq
    from pyspark import TaskContext

    from onegraph.spark import score

    def fail_first_attempt(batches):
        ctx = TaskContext.get()
        for i, batch in enumerate(batches):
            yield batch
            if ctx.partitionId() == 1 and ctx.attemptNumber() == 0 and i == 1:
                raise RuntimeError("injected failure after two scored batches")

    scored = score(spark_rows, model, batch_size=20)
    out = tmp_path / "scores.parquet"
    scored.mapInArrow(fail_first_attempt, scored.schema).write.parquet(str(out))
    got = _sorted(pq.read_table(out))
    np.testing.assert_array_equal(got["row"].to_numpy(), rows["row"].to_numpy())  # each row exactly once
    want = onegraph.score(model, rows.drop(columns="row"))
    assert (got["label"].to_numpy() == want["label"].to_numpy()).all()


def test_columns_are_checked_before_the_job(spark_rows, model):
    from pyspark.sql import functions as F

    from onegraph.spark import score

    with pytest.raises(MissingColumnError, match="'island'"):
        score(spark_rows.drop("island"), model)
    with pytest.raises(ColumnTypeError, match="'body_mass_g'.*string"):
        score(spark_rows.withColumn("body_mass_g", F.col("body_mass_g").cast("string")), model)


def test_an_error_on_an_executor_comes_back_as_onegraph_error(spark, penguins, tmp_path):
    from onegraph.spark import score, spark_errors

    frame = penguins[["island"]].astype(str)
    path = tmp_path / "strict.onnx"
    onegraph.build(OneHotEncoder(handle_unknown="error").fit(frame), None, frame, path=path)
    unseen = spark.createDataFrame(pd.DataFrame({"island": ["Dream", "Atlantis"]}))
    with pytest.raises(DataError, match="UnknownCategoryError.*'island'.*Atlantis"):
        with spark_errors():
            score(unseen, path).collect()


def test_distributed_statistics_equal_single_process(spark_rows, rows, model):
    from onegraph.spark import calibrate
    from onegraph.stats import calibrate as calibrate_local

    # one row per onnxruntime run on both sides: a tensor's values may differ in the last bit with the batch
    # size (vectorized sums such as the probabilities' ReduceSum), and what is compared here is the statistics
    merged = calibrate(spark_rows, model, bins=64, batch_size=1)
    one = calibrate_local(model, rows.drop(columns="row"), bins=64, batch_size=1, threads=1, progress=False)
    assert merged.samples == one.samples == len(rows)
    assert list(merged.accumulators) == list(one.accumulators)
    for name, acc in one.accumulators.items():
        a, b = merged.accumulators[name].result(), acc.result()
        for key in ("count", "size", "nan", "posinf", "neginf", "min", "max", "zero_fraction", "histogram"):
            assert getattr(a, key) == getattr(b, key), (name, key)  # exact; histograms bin for bin
        if b.count:
            np.testing.assert_allclose([a.mean, a.std], [b.mean, b.std], rtol=1e-9, atol=1e-12, err_msg=name)
        bound = (a.quantile_rank_error or 0) + (b.quantile_rank_error or 0) + 1 / max(a.count, 1)
        for q, value in a.quantiles.items():  # the merged sketch's quantiles keep the rank bound (ties: a range)
            below, at_most = acc._sketch.get_rank(value, False), acc._sketch.get_rank(value, True)
            assert below - bound <= q <= at_most + bound, (name, q)


def test_cli_scores_on_spark_into_parquet(cli, model, penguins, spark, tmp_path):
    import pyarrow.parquet as pq

    data = tmp_path / "rows.csv"
    penguins.drop(columns="species").to_csv(data, index=False, na_rep="NA")
    out = tmp_path / "scores.parquet"
    result = cli("score", str(model), str(data), "--spark", "local[2]", "-o", str(out), "--keep", "island")
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}: {len(penguins)} rows" in result.stdout
    got = pq.read_table(out).to_pandas()
    want = onegraph.score(model, pd.read_csv(data))
    assert list(got.columns) == ["island", *want.columns]
    assert (got["label"].to_numpy() == want["label"].to_numpy()).all()  # files in partition order: input order
    np.testing.assert_allclose(got[want.columns[1:]].to_numpy(float), want.iloc[:, 1:].to_numpy(float), rtol=1e-12)
    again = cli("score", str(model), str(data), "--spark", "local[2]", "-o", str(out))
    assert again.returncode != 0 and "exists" in again.stderr


def test_cli_on_spark_keeps_na_words_as_the_local_score_does(cli, spark, tmp_path):
    """score --spark --keep-na-words reads a CSV's 'NA' cells as text (the category a model built with
    --keep-na-words knows), as the local score does; without it both read them as missing."""
    import pyarrow.parquet as pq

    frame = pd.read_csv(DATA / "penguins-raw.csv")[["Island", "Sex", "Culmen Length (mm)", "Flipper Length (mm)"]]
    data = tmp_path / "penguins.csv"
    frame.assign(Sex=frame["Sex"].fillna("NA")).to_csv(data, index=False)
    model = tmp_path / "island.onnx"
    assert cli("build", str(data), "--target", "Island", "--keep-na-words", "-o", str(model)).returncode == 0
    for option in (["--keep-na-words"], []):
        local, remote = tmp_path / f"local{len(option)}.csv", tmp_path / f"spark{len(option)}.parquet"
        assert cli("score", str(model), str(data), "-o", str(local), *option).returncode == 0
        done = cli("score", str(model), str(data), "--spark", "local[2]", "-o", str(remote), *option)
        assert done.returncode == 0, done.stderr
        want = pd.read_csv(local).filter(like="probabilities_").to_numpy()
        got = pq.read_table(remote).to_pandas().filter(like="probabilities_").to_numpy(float)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, err_msg=str(option))
    assert not np.allclose(pd.read_csv(tmp_path / "local1.csv").filter(like="probabilities_").to_numpy(),
                           pd.read_csv(tmp_path / "local0.csv").filter(like="probabilities_").to_numpy())


def test_cli_on_spark_reads_a_semicolon_csv_with_decimal_commas_as_the_local_score(cli, spark, tmp_path):
    """Spark's CSV reader assumes commas: a ';'-separated file was one column named after the whole header.
    It reads with the separator and the decimal mark the local score sniffs (onegraph.io.csv_dialect)."""
    import pyarrow.parquet as pq

    weather = pd.read_csv(DATA / "seattle-weather.csv")
    data = tmp_path / "weather.csv"
    weather.to_csv(data, index=False, sep=";", decimal=",")
    model = tmp_path / "weather.onnx"
    assert cli("build", str(data), "--target", "weather", "-o", str(model)).returncode == 0
    local, remote = tmp_path / "local.csv", tmp_path / "spark.parquet"
    assert cli("score", str(model), str(data), "-o", str(local)).returncode == 0
    done = cli("score", str(model), str(data), "--spark", "local[2]", "-o", str(remote))
    assert done.returncode == 0, done.stderr
    want = pd.read_csv(local)
    got = pq.read_table(remote).to_pandas()
    assert got["label"].tolist() == want["label"].tolist()
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float),
                               want.filter(like="probabilities_").to_numpy(), rtol=1e-12, atol=0)
    # a value no column type reads is named in its own column, not in an earlier one holding decimal commas
    broken = tmp_path / "broken.csv"
    header, first, *rest = data.read_text().splitlines()
    fields = first.split(";")
    fields[header.split(";").index("wind")] = "strong"
    broken.write_text("\n".join([header, ";".join(fields), *rest]) + "\n")
    refused = cli("score", str(model), str(broken), "--spark", "local[2]", "-o", str(tmp_path / "b.parquet"))
    assert refused.returncode == 1 and "column 'wind': value 'strong'" in refused.stderr, refused.stderr


def test_cli_names_the_column_and_value_spark_cannot_read(cli, model, penguins, spark, tmp_path):
    """A CSV cell the model's column type cannot read ('long' in a number column) failed the job with Spark's
    CAST_INVALID_INPUT, naming neither column nor row, after some 300 lines of executor stack traces. The error
    names the column and the value, in one line, and Spark's own logging is off while the command runs."""
    frame = penguins.drop(columns="species")
    frame["bill_length_mm"] = frame["bill_length_mm"].astype(object)
    frame.loc[7, "bill_length_mm"] = "long"
    data = tmp_path / "rows.csv"
    frame.to_csv(data, index=False, na_rep="NA")
    result = cli("score", str(model), str(data), "--spark", "local[2]", "-o", str(tmp_path / "s.parquet"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert f"column 'bill_length_mm': value 'long' in {data} is not a number" in result.stderr
    assert not (tmp_path / "s.parquet").exists()
    root = spark._jvm.org.apache.logging.log4j.LogManager.getRootLogger()
    assert root.getLevel().toString() == "OFF"  # the executors' stack traces are not printed


def test_cli_on_spark_starts_without_sparks_log_lines(model, penguins, tmp_path):
    """A new user's case: `score --spark` printed Spark's start-up lines (its default log4j profile, "Setting
    default log level", the host name and native-library warnings, the stage progress bar) before its own one
    line. Spark's JVM starts once per process, so this runs the command in a fresh one; only the JVM's own
    module notice (`--add-modules jdk.incubator.vector`, printed by Java itself) may remain."""
    import subprocess
    import sys

    data = tmp_path / "rows.csv"
    penguins.drop(columns="species").head(20).to_csv(data, index=False, na_rep="NA")
    out = tmp_path / "scores.parquet"
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "SPARK_HOME")}
    result = subprocess.run([sys.executable, "-W", "ignore", "-m", "onegraph.cli", "score", str(model), str(data),
                             "--spark", "local[1]", "-o", str(out)], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    noise = [line for line in result.stderr.splitlines() if line.strip() and "jdk.incubator" not in line]
    assert noise == [], result.stderr
    assert f"wrote {out}: 20 rows" in result.stdout


def test_cli_on_spark_reads_point_thousands_as_the_local_score(cli, spark, european_penguins, tmp_path):
    """A decimal-comma CSV writing 3.750 for 3750 g: Spark read the grouped number as text no number type
    casts, so the job refused the model's column. It drops the point groups as the local reader does."""
    import pyarrow.parquet as pq

    data, _ = european_penguins
    model = tmp_path / "sex.onnx"
    assert cli("build", str(data), "--target", "Sex", "-o", str(model)).returncode == 0
    local, remote = tmp_path / "local.csv", tmp_path / "spark.parquet"
    assert cli("score", str(model), str(data), "-o", str(local)).returncode == 0
    done = cli("score", str(model), str(data), "--spark", "local[2]", "-o", str(remote))
    assert done.returncode == 0, done.stderr
    want, got = pd.read_csv(local), pq.read_table(remote).to_pandas()
    assert got["label"].tolist() == want["label"].tolist()
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float),
                               want.filter(like="probabilities_").to_numpy(), rtol=1e-12, atol=0)


def test_cli_on_spark_reads_doubled_quotes_as_the_local_score(cli, spark, tmp_path):
    """A quoted field holding doubled quotes (RFC 4180: the airports table's "W. H. ""Bud"" Barron", as pandas
    writes it) is one quote each, as the local score reads it; Spark's default escape (a backslash) kept both
    and scored the row as an unknown category, silently."""
    import pyarrow.parquet as pq

    airports = pd.read_csv(DATA / "airports.csv").dropna(subset=["city"])
    data = tmp_path / "airports.csv"
    airports[["name", "state", "latitude"]].assign(west=airports["longitude"] < -95).to_csv(data, index=False)
    assert '"W. H. ""Bud"" Barron"' in data.read_text()
    model = tmp_path / "west.onnx"
    assert cli("build", str(data), "--target", "west", "-o", str(model)).returncode == 0
    local, remote = tmp_path / "local.csv", tmp_path / "spark.parquet"
    assert cli("score", str(model), str(data), "-o", str(local), "--keep", "name").returncode == 0
    done = cli("score", str(model), str(data), "--spark", "local[2]", "-o", str(remote), "--keep", "name")
    assert done.returncode == 0, done.stderr
    want, got = pd.read_csv(local), pq.read_table(remote).to_pandas()
    assert got["name"].tolist() == want["name"].tolist()
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float),
                               want.filter(like="probabilities_").to_numpy(), rtol=1e-12, atol=0)
