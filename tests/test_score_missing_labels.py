"""A row a classifier cannot score (a missing feature it does not take: NaN probabilities) gets a missing label,
never a class computed from NaN; models that take missing values (trees, histogram boosting) label it as
scikit-learn does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.tree import DecisionTreeClassifier

import onegraph
from onegraph.datasets import load_penguins
from onegraph.export import Threshold, TopK
from onegraph.frame import StandardScaler

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
MODELS = {"logistic": lambda: LogisticRegression(max_iter=1000), "naive_bayes": GaussianNB,
          "mlp": lambda: MLPClassifier((8,), max_iter=300, random_state=0),
          "tree": lambda: DecisionTreeClassifier(max_depth=4, random_state=0),
          "hgb": lambda: HistGradientBoostingClassifier(max_iter=20)}


def _rows():
    frame = load_penguins()
    return frame[NUMERIC], frame["species"]


def _check(scores: pd.DataFrame, est, x: pd.DataFrame, prefix: str = "") -> None:
    """Rows scikit-learn predicts: the same label; rows it refuses (NaN it cannot take): missing label, NaN
    probabilities."""
    complete = x.notna().all(axis=1).to_numpy()
    assert not complete.all()
    label = scores[f"{prefix}label"]
    probabilities = scores[[f"{prefix}probabilities_{c}" for c in est.classes_]].to_numpy()
    try:
        expected = est.predict(x)  # models that take missing values
        takes_nan = True
    except ValueError:
        expected = np.full(len(x), None, dtype=object)
        expected[complete] = est.predict(x[complete])
        takes_nan = False
    assert label[complete].tolist() == expected[complete].tolist()
    if takes_nan:
        assert label.tolist() == expected.tolist()
        assert not np.isnan(probabilities).any()
    else:
        assert label[~complete].isna().all()
        assert np.isnan(probabilities[~complete]).all()


@pytest.mark.parametrize("kind", list(MODELS))
def test_built_classifier_labels_unscored_rows_missing(kind):
    x, y = _rows()
    fit = x.notna().all(axis=1)
    pipe = make_pipeline(StandardScaler(), MODELS[kind]()).fit(x[fit], y[fit])
    scores = onegraph.score(onegraph.build(pipe, None, x[fit]), x)
    _check(scores, pipe, x)


def test_integer_labels_are_missing_as_pd_na():
    x, y = _rows()
    codes = y.map({c: i for i, c in enumerate(sorted(y.unique()))})
    fit = x.notna().all(axis=1)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(x[fit], codes[fit])
    scores = onegraph.score(onegraph.build(pipe, None, x[fit]), x)
    assert scores["label"].dtype == "Int64"
    _check(scores, pipe, x)


def test_composed_models_ensemble_and_post_processing():
    x, y = _rows()
    fit = x.notna().all(axis=1)
    pre = StandardScaler().fit(x[fit])
    xs = pre.transform(x[fit])
    models = {"lr": LogisticRegression(max_iter=1000).fit(xs, y[fit]), "nb": GaussianNB().fit(xs, y[fit])}
    scores = onegraph.score(onegraph.compose(pre, models, x[fit], ensemble="mean", post=[TopK(2)]), x)
    for name, est in models.items():
        _check(scores, make_pipeline(pre, est), x, f"{name}.")
    unscored = ~x.notna().all(axis=1).to_numpy()
    assert scores.loc[unscored, ["label", "top_labels_0", "top_labels_1"]].isna().all().all()
    two = y.isin(["Adelie", "Gentoo"])
    lr = LogisticRegression(max_iter=1000).fit(pre.transform(x[fit & two]), y[fit & two])
    thresholded = onegraph.score(onegraph.compose(pre, {"lr": lr}, x[fit & two], post=[Threshold(0.3)]), x[two])
    unscored = ~x[two].notna().all(axis=1)
    assert unscored.any() and thresholded["label"][unscored].isna().all()
    assert thresholded["label"][~unscored].notna().all()
