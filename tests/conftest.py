"""Shared fixtures: the real tables in tests/data and the bundled penguins."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from onegraph.datasets import load_penguins

DATA = Path(__file__).parent / "data"

# checks passed are remembered on disk across processes (onegraph.check.guard): the suite keeps its own,
# empty at the start, so no test sees what an earlier run (or the user's own commands) checked
os.environ["ONEGRAPH_CACHE_DIR"] = tempfile.mkdtemp(prefix="onegraph-test-cache-")


@pytest.fixture(scope="session")
def penguins() -> pd.DataFrame:
    """Palmer penguins as pandas reads the CSV (str text columns with NaN, float64, int64)."""
    return load_penguins()


@pytest.fixture(scope="session")
def penguins_raw() -> pd.DataFrame:
    return pd.read_csv(DATA / "penguins-raw.csv")


@pytest.fixture(scope="session")
def european_penguins(penguins_raw, tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """Raw penguins as a European spreadsheet exports them: ';'-separated, decimal commas (39,1), point
    thousands (3.750 g) and dd.mm.yyyy dates; returns the file and the columns it holds as numbers and text."""
    raw = penguins_raw[["Culmen Length (mm)", "Flipper Length (mm)", "Body Mass (g)", "Date Egg", "Sex"]].copy()
    raw["Date Egg"] = pd.to_datetime(raw["Date Egg"]).dt.strftime("%d.%m.%Y")
    written = raw.copy()
    written["Body Mass (g)"] = [f"{v:,.0f}".replace(",", ".") if v == v else "" for v in raw["Body Mass (g)"]]
    data = tmp_path_factory.mktemp("europe") / "europe.csv"
    written.to_csv(data, index=False, sep=";", decimal=",")
    return data, raw


@pytest.fixture(scope="session")
def seattle() -> pd.DataFrame:
    return pd.read_csv(DATA / "seattle-weather.csv", parse_dates=["date"])


@pytest.fixture(scope="session")
def cars() -> pd.DataFrame:
    return pd.read_csv(DATA / "cars.csv")


@pytest.fixture(scope="session")
def airports() -> pd.DataFrame:
    return pd.read_csv(DATA / "airports.csv")


def assert_same_values(got, expected, *, rtol: float = 1e-12, atol: float = 1e-12, name: str = "") -> None:
    """Numbers within tolerance (NaN where NaN); anything else equal, missing values equal."""
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"{name}: shape {got.shape} != {expected.shape}"
    if got.dtype.kind in "fiub" and expected.dtype.kind in "fiub":
        np.testing.assert_allclose(got.astype(float), expected.astype(float), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=name)
        return
    g_missing = pd.isna(got)
    e_missing = pd.isna(expected)
    assert (g_missing == e_missing).all(), f"{name}: missing values differ"
    assert (got[~g_missing].astype(str) == expected[~e_missing].astype(str)).all(), f"{name}: values differ"


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run ``onegraph ARGS`` in this process through the command line's own ``main()``; returns a
    ``CompletedProcess`` (exit code, stdout, stderr). Faster than a subprocess: the imports are paid once."""
    import subprocess
    import sys

    from onegraph.cli import main

    def invoke(*args: str) -> subprocess.CompletedProcess:
        monkeypatch.setattr(sys, "argv", ["onegraph", *args])
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code or 0
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, captured.out, captured.err)

    return invoke


# -- every graph the suite builds is portable ------------------------------------------------------
#: how many graphs the hook below has checked in this session
CHECKED_GRAPHS: list[str] = []


@pytest.fixture(scope="session", autouse=True)
def every_built_graph_is_portable():
    """Every graph onegraph.build makes in this test session (main graph, Loop / If bodies and function
    bodies) uses only ai.onnx / ai.onnx.ml operators or model-local functions, and none that depends on
    the host locale (onegraph.verify.portable); a test building any other graph fails there. The one
    exception is onnxruntime's contrib MurmurHash3 of a HashingVectorizer (ONNXRUNTIME_OPS), its domain
    imported: such a graph runs on onnxruntime only, as the README says."""
    import importlib

    from onegraph.verify.portable import portability_problems

    # every model onegraph makes (build, compose, merge, Spark conversion) is finished by this one function
    assemble = importlib.import_module("onegraph.export.assemble")

    finish = assemble.finish

    def checked(*args, verify=None, **kwargs):
        def portable_then_verified(proto):
            problems = portability_problems(proto, runtime="onnxruntime")
            assert not problems, "a built graph is not portable:\n  " + "\n  ".join(problems)
            CHECKED_GRAPHS.append(proto.graph.name)
            return verify(proto) if verify is not None else None

        return finish(*args, verify=portable_then_verified, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(assemble, "finish", checked)
        yield


def graph_matches_transform(transformer, frame: pd.DataFrame, rows: pd.DataFrame | None = None, *,
                            rtol: float = 1e-12):
    """Build a fitted transformer alone; the graph (onnxruntime) gives ``transform(rows)`` column by column
    (numbers within ``rtol`` / 1e-12, text, flags and missing values exactly). Returns the model."""
    import onegraph

    model = onegraph.build(transformer, None, frame)
    rows = frame if rows is None else rows
    expected = transformer.transform(rows)
    got = onegraph.score(model, rows)
    names = [str(n) for n in transformer.get_feature_names_out()]
    assert list(got.columns) == names
    for name in names:
        assert_same_values(got[name].to_numpy(), pd.Series(expected[name]).to_numpy(), rtol=rtol, name=name)
    return model


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run (starting one costs tens of seconds).

    ``local[2,2]``: two cores, and a failed task is retried once (plain ``local[2]`` never retries), so the
    retry tests see Spark recover. Small shuffles, no UI; Python workers run this interpreter (the one
    with onegraph and its dependencies). Skips the test when pyspark is not installed.
    """
    pytest.importorskip("pyspark")
    import os
    import sys

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # pyspark reads it when the context starts
    session = (SparkSession.builder.master("local[2,2]").appName("onegraph-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def reference_agrees(model, frame: pd.DataFrame) -> None:
    """onnx's ReferenceEvaluator (the operators' spec, run literally) computes the same outputs as
    onnxruntime for ``model`` on ``frame``: the graph relies on no runtime-specific behaviour."""
    from onegraph.verify.feeds import model_feeds
    from onegraph.verify.lowprec import reference_run
    from onegraph.verify.runs import run

    feeds = model_feeds(model, frame, rows=len(frame))
    expected = run(model, feeds)
    got = reference_run(model, feeds)
    for name, value in expected.items():
        assert_same_values(np.asarray(got[name]), np.asarray(value), name=name)


@pytest.fixture(scope="session")
def penguins_onnx(tmp_path_factory, penguins) -> Path:
    """The quickstart's model (impute + one-hot + scale + logistic regression on the penguins), as a file."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

    df = penguins.dropna(subset=["species"])
    x, y = df.drop(columns="species"), df["species"]
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
    pipeline = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
            ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
             ["island", "sex"]),
        ]),
        LogisticRegression(max_iter=1000),
    ).fit(x, y)
    path = tmp_path_factory.mktemp("penguins") / "penguins.onnx"
    onegraph.build(pipeline, None, x, path=path)
    return path
