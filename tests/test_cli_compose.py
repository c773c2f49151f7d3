"""Command line: `onegraph build` with several models / an ensemble, and `onegraph compose` of .onnx files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import cli_run
import pytest

DATA = Path(__file__).parent / "data"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The command line, in this process (tests/cli_run.py)."""
    return cli_run.run(*args, cwd=cwd)


def test_build_with_a_weighted_ensemble(tmp_path):
    model = tmp_path / "cars.onnx"
    result = run("build", str(DATA / "cars.csv"), "--target", "Origin", "--model", "logistic", "--model",
                 "random_forest", "--ensemble", "weighted", "--weights", "1,3", "-o", str(model))
    assert result.returncode == 0, result.stderr
    assert "parity with scikit-learn ok" in result.stdout
    scores = tmp_path / "scores.csv"
    assert run("score", str(model), str(DATA / "cars.csv"), "-o", str(scores)).returncode == 0
    frame = pd.read_csv(scores)
    classes = ["Europe", "Japan", "USA"]
    per_model = [frame[[f"{m}.probabilities_{c}" for c in classes]].to_numpy() for m in ("logistic", "random_forest")]
    mean = (per_model[0] + 3 * per_model[1]) / 4
    np.testing.assert_allclose(frame[[f"probabilities_{c}" for c in classes]].to_numpy(), mean, atol=1e-12)
    assert (frame["label"].to_numpy() == np.asarray(classes)[mean.argmax(axis=1)]).all()


def test_build_refuses_weights_that_do_not_fit(tmp_path):
    result = run("build", str(DATA / "cars.csv"), "--target", "Origin", "--model", "logistic", "--model",
                 "random_forest", "--ensemble", "weighted", "--weights", "1", "-o", str(tmp_path / "x.onnx"))
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == ["error: --weights gives 1 weight(s) for 2 models. one weight per --model"]
    assert not (tmp_path / "x.onnx").exists()


@pytest.mark.parametrize("extra, message", [
    (["--ensemble", "mean"], "--ensemble mean needs at least two models (got 1)"),
    (["--ensemble", "weighted", "--weights", "1"], "--ensemble weighted needs at least two models (got 1)"),
    (["--model", "ridge", "--weights", "1,2"], "--weights is given without --ensemble"),
    (["--model", "ridge", "--ensemble", "mean", "--weights", "1,2"], "--weights does not apply to --ensemble mean"),
    (["--model", "ridge", "--ensemble", "median"], "unknown --ensemble 'median'"),
    # weights of a probability average: finite, not negative, not all zero (sum zero raised ZeroDivisionError
    # in scikit-learn's fit; 2,-1 wrote probabilities from -0.48 to 1.28)
    (["--model", "ridge", "--ensemble", "weighted", "--weights", "2,-1"], "--weights: weight 2 is -1.0"),
    (["--model", "ridge", "--ensemble", "weighted", "--weights", "0,0"], "--weights: the weights sum to zero"),
    (["--model", "ridge", "--ensemble", "vote", "--weights", "nan,1"], "--weights: weight 1 is nan"),
    (["--model", "ridge", "--ensemble", "weighted", "--weights", "1,inf"], "--weights: weight 2 is inf"),
])
def test_build_ensemble_options_checked_by_their_names(tmp_path, cli, extra, message):
    """The user's report: one model with --ensemble mean said "an ensemble (weighted) needs..." after
    fitting, and --weights without --ensemble was ignored. Checked before any data is read: the data file
    does not even exist here."""
    result = cli("build", str(tmp_path / "missing.csv"), "--target", "y", "--model", "logistic", *extra,
                 "-o", str(tmp_path / "x.onnx"))
    assert result.returncode == 1 and result.stderr.strip().splitlines()[0].startswith(f"error: {message}")


def test_compose_files_built_separately(tmp_path):
    import onegraph
    from onegraph.export import auto

    frame = pd.read_csv(DATA / "cars.csv")
    y = frame.pop("Origin")
    for name in ("logistic", "random_forest"):
        from sklearn.pipeline import make_pipeline

        pipe = make_pipeline(auto.plan(frame).preprocessing, auto.make_model(name, "classification", 0)).fit(frame, y)
        onegraph.build(pipe, None, frame, path=tmp_path / f"{name}.onnx")
    merged = tmp_path / "both.onnx"
    result = run("compose", str(tmp_path / "logistic.onnx"), str(tmp_path / "random_forest.onnx"), "--ensemble",
                 "mean", "-o", str(merged), "--check", str(DATA / "cars.csv"))
    assert result.returncode == 0, result.stderr
    assert "same outputs as the models one after another" in result.stdout
    scores = onegraph.score(merged, frame)
    alone = {name: onegraph.score(tmp_path / f"{name}.onnx", frame) for name in ("logistic", "random_forest")}
    for name, single in alone.items():
        assert (scores[f"{name}.label"] == single["label"]).all()
    columns = [f"probabilities_{c}" for c in ("Europe", "Japan", "USA")]
    mean = (alone["logistic"][columns].to_numpy() + alone["random_forest"][columns].to_numpy()) / 2
    np.testing.assert_allclose(scores[columns].to_numpy(), mean, atol=1e-12)
    result = run("compose", str(tmp_path / "logistic.onnx"), str(tmp_path / "logistic.onnx"), "-o", str(merged))
    assert result.returncode != 0 and result.stderr.startswith("error: model names repeat")


def test_compose_ensemble_options_name_what_compose_takes(cli, penguins_onnx, tmp_path):
    """compose combines files: no stacking (it needs a fitted final estimator) and no --model to repeat."""
    files = [str(penguins_onnx), str(penguins_onnx), "--name", "a", "--name", "b", "-o", str(tmp_path / "x.onnx")]
    result = cli("compose", *files, "--ensemble", "stacking")
    assert result.returncode == 1 and result.stderr.startswith("error: unknown --ensemble 'stacking'. use mean, "
                                                               "weighted, vote\n")
    result = cli("compose", *files, "--ensemble", "weighted", "--weights", "1")
    assert result.returncode == 1 and "one weight per model file" in result.stderr
    assert not (tmp_path / "x.onnx").exists()
