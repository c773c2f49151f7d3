"""Outlier detectors: ``label`` (1 / -1, as ``predict``) and ``score`` (``decision_function``) in onnxruntime
against scikit-learn on the penguins table, alone and after a preprocessing that one-hot encodes its text."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import assert_same_values, reference_agrees
from sklearn.compose import ColumnTransformer
from sklearn.covariance import EllipticEnvelope
from sklearn.ensemble import IsolationForest
from sklearn.impute import SimpleImputer
from sklearn.linear_model import SGDOneClassSVM
from sklearn.neighbors import LocalOutlierFactor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import OneClassSVM

import onegraph
from onegraph.errors import ExportError, OutOfRangeError, ParityError

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
TEXT = ["island", "sex"]

DETECTORS = {
    "isolation_forest": lambda: IsolationForest(n_estimators=50, random_state=0),
    "one_class_svm": lambda: OneClassSVM(nu=0.1, gamma="scale"),
    "sgd_one_class_svm": lambda: SGDOneClassSVM(nu=0.1, random_state=0),
    "elliptic_envelope": lambda: EllipticEnvelope(random_state=0),
    "local_outlier_factor": lambda: LocalOutlierFactor(n_neighbors=7, novelty=True, algorithm="brute"),
}


def _rows(penguins: pd.DataFrame) -> pd.DataFrame:
    """The complete penguins rows, then the same rows with their numbers stretched away from the mean (so
    both labels occur)."""
    x = penguins.dropna(subset=NUMERIC + TEXT)[NUMERIC + TEXT].reset_index(drop=True)
    far = x.copy()
    far[NUMERIC] = x[NUMERIC].mean() + 3 * (x[NUMERIC] - x[NUMERIC].mean())
    return pd.concat([x, far], ignore_index=True)


def _check(model, path, frame: pd.DataFrame) -> None:
    got = onegraph.score(path, frame)
    assert list(got.columns) == ["label", "score"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LocalOutlierFactor warns when scoring the rows it was fitted on
        score = model.decision_function(frame)
        label = model.predict(frame)
    # double-precision sums in another order than scikit-learn's: rounding of a few ulps of the terms
    assert_same_values(got["score"].to_numpy(float), score, rtol=1e-9, atol=1e-12, name="score")
    clear = np.abs(score) > 1e-9  # a score within rounding of 0 may fall on either side
    assert clear.mean() > 0.99
    assert (got["label"].to_numpy(np.int64)[clear] == label[clear]).all()
    assert {-1, 1} <= set(label.tolist())


@pytest.mark.parametrize("name", sorted(DETECTORS))
def test_detector_alone(name, penguins, tmp_path):
    frame = _rows(penguins)[NUMERIC]
    model = DETECTORS[name]().fit(frame.iloc[: len(frame) // 2])
    path = tmp_path / "m.onnx"
    onegraph.build(None, model, frame, path=path)
    _check(model, path, frame)


@pytest.mark.parametrize("name", sorted(DETECTORS))
def test_detector_after_preprocessing(name, penguins, tmp_path):
    frame = _rows(penguins)
    pipe = make_pipeline(ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMERIC),
        ("cat", OneHotEncoder(handle_unknown="ignore"), TEXT),
    ]), DETECTORS[name]()).fit(frame.iloc[: len(frame) // 2])
    path = tmp_path / "m.onnx"
    onegraph.build(pipe, None, frame, path=path)  # a pipeline ending in a detector is split like any other
    _check(pipe, path, frame)
    if name in ("isolation_forest", "elliptic_envelope"):
        import onnx

        reference_agrees(onnx.load(path), frame.iloc[:50])


def test_isolation_forest_with_missing_values(penguins, tmp_path):
    """IsolationForest takes NaN (its trees send missing values one way per node): scored the same."""
    frame = penguins[NUMERIC].reset_index(drop=True)
    assert frame.isna().any().any()
    model = IsolationForest(n_estimators=30, random_state=1).fit(frame)
    path = tmp_path / "m.onnx"
    onegraph.build(None, model, frame, path=path)
    _check(model, path, frame)


def test_detector_scored_from_the_command_line(penguins, tmp_path, cli):
    frame = _rows(penguins)[NUMERIC]
    model = IsolationForest(n_estimators=20, random_state=0).fit(frame)
    path = tmp_path / "m.onnx"
    onegraph.build(None, model, frame, path=path)
    frame.to_csv(tmp_path / "rows.csv", index=False)
    result = cli("score", str(path), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "out.csv"))
    assert result.returncode == 0, result.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    assert_same_values(out["score"].to_numpy(float), model.decision_function(frame), rtol=1e-9, atol=1e-12)


def test_local_outlier_factor_without_novelty_is_refused_with_a_reason(penguins, tmp_path):
    frame = _rows(penguins)[NUMERIC]
    model = LocalOutlierFactor(n_neighbors=5).fit(frame)
    with pytest.raises(ExportError, match=r"novelty=False.*no predict for new rows"):
        onegraph.build(None, model, frame, path=tmp_path / "m.onnx")
    assert not (tmp_path / "m.onnx").exists()


def test_equally_distant_neighbours_are_refused_by_parity_not_scored_wrong(tmp_path):
    """Neighbours at one distance are an order scikit-learn's tree search picks and TopK need not: the build
    refuses (ParityError naming ``score``) rather than write a graph that answers otherwise."""
    grid = pd.DataFrame({"a": np.repeat(np.arange(6.0), 6), "b": np.tile(np.arange(6.0), 6)})
    model = LocalOutlierFactor(n_neighbors=3, novelty=True, algorithm="kd_tree").fit(grid)
    query = grid + 0.5
    try:
        onegraph.build(None, model, query, path=tmp_path / "m.onnx")
    except ParityError as exc:
        assert "score" in str(exc)
        assert "neighbours at equal distances" in exc.hint  # the likely cause, not "report this"
        assert not (tmp_path / "m.onnx").exists()
    else:  # TopK happened to pick the same neighbours: then the values must agree
        _check_values_only(model, tmp_path / "m.onnx", query)


def _check_values_only(model, path, frame):
    got = onegraph.score(path, frame)
    assert_same_values(got["score"].to_numpy(float), model.decision_function(frame), rtol=1e-9, atol=1e-12)


def test_a_pipeline_ending_in_a_model_given_with_another_model_is_refused_with_a_reason(penguins, tmp_path):
    from sklearn.linear_model import LinearRegression

    frame = _rows(penguins)[NUMERIC]
    pipe = make_pipeline(StandardScaler(), IsolationForest(n_estimators=5, random_state=0)).fit(frame)
    with pytest.raises(ExportError, match=r"ends in a model \(IsolationForest\) and a model \(LinearRegression\)"):
        onegraph.build(pipe, LinearRegression().fit(frame[NUMERIC[1:]], frame[NUMERIC[0]]), frame,
                       path=tmp_path / "m.onnx")
    from sklearn.pipeline import Pipeline

    middle = Pipeline([("scale", pipe[0]), ("forest", pipe[1]), ("again", StandardScaler().fit(frame))])
    with pytest.raises(ExportError, match="'forest' .*only a pipeline's last step may be a model"):
        onegraph.build(middle, None, frame, path=tmp_path / "m.onnx")


def test_a_discretizer_after_a_rounded_step_names_bin_edges_when_parity_fails(penguins, tmp_path):
    """KBinsDiscretizer's edges are training values; after FunctionTransformer(np.log1p) (the graph's log1p is
    within a few ulps of libm's, not bit-identical) a value on an edge may land in the next bin. Either the
    graph agrees with scikit-learn, or the build is refused with a hint naming the edges."""
    from sklearn.preprocessing import FunctionTransformer, KBinsDiscretizer

    frame = penguins[NUMERIC]
    pipe = make_pipeline(SimpleImputer(), FunctionTransformer(np.log1p),
                         KBinsDiscretizer(n_bins=4, encode="ordinal", quantile_method="averaged_inverted_cdf")
                         ).fit(frame)
    try:
        onegraph.build(pipe, None, frame, path=tmp_path / "m.onnx")
    except ParityError as exc:
        assert "bin edges are values of its training column" in exc.hint
        assert not (tmp_path / "m.onnx").exists()
    else:
        got = onegraph.score(tmp_path / "m.onnx", frame).to_numpy(float)
        np.testing.assert_array_equal(got, pipe.transform(frame))


def test_knn_imputer_donor_ties_are_named_as_the_cause(penguins):
    """A KNNImputer on the penguins with a tenth of the cells missing: rounded measurements make donors at equal
    distances, which scikit-learn's argpartition and the graph's TopK may order differently. The refusal said
    "report this"; it names the ties and what to try. Where no tie decides a value, the graph matches."""
    from sklearn.impute import KNNImputer

    frame = penguins[NUMERIC].mask(np.random.default_rng(1).random(penguins[NUMERIC].shape) < 0.1)
    imputer = KNNImputer(n_neighbors=3).fit(frame)
    try:
        model = onegraph.build(imputer, None, frame)
    except ParityError as exc:
        assert "KNNImputer's donors at equal distances" in exc.hint and "report this" not in str(exc)
    else:  # the values agree, except where a tie at different values decides one: those rows are refused
        kept = np.arange(len(frame))
        while True:  # each refusal names one column's rows
            try:
                got = onegraph.score(model, frame.iloc[kept]).to_numpy(float)
                break
            except OutOfRangeError as exc:
                assert "nearest donors are not tied" in str(exc) and exc.rows
                kept = np.delete(kept, exc.rows)
        assert len(kept) > 0.9 * len(frame)
        assert_same_values(got, imputer.transform(frame.iloc[kept]), rtol=1e-9, atol=1e-12)
