"""compose: several models on one shared preprocessing, ensembles and post-processing, on real tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xgboost
from compose_helpers import penguins, species_codes
from sklearn.ensemble import (
    RandomForestClassifier,
    RandomForestRegressor,
    StackingClassifier,
    VotingClassifier,
    VotingRegressor,
)
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import FixedThresholdClassifier

import onegraph
from onegraph.errors import ExportError
from onegraph.export import Ensemble, LabelMap, Threshold, TopK
from onegraph.inspect import describe


def _fitted():
    frame, y, pre, x = penguins()
    lr = LogisticRegression(max_iter=1000).fit(x, y)
    rf = RandomForestClassifier(n_estimators=20, random_state=0).fit(x, y)
    return frame, y, pre, x, lr, rf


def _proba(scores: pd.DataFrame, prefix: str, classes) -> np.ndarray:
    return scores[[f"{prefix}probabilities_{c}" for c in classes]].to_numpy()


def test_two_models_equal_each_model_computed_separately():
    frame, y, pre, x, lr, rf = _fitted()
    proto = onegraph.compose(pre, {"lr": lr, "rf": rf}, frame)
    scores = onegraph.score(proto, frame)
    for name, model in (("lr", lr), ("rf", rf)):
        assert (scores[f"{name}.label"].to_numpy() == model.predict(x)).all()
        np.testing.assert_allclose(_proba(scores, f"{name}.", model.classes_), model.predict_proba(x), atol=1e-12)
    roles = {o["name"]: (o["role"], o["model"]) for o in describe(proto)["outputs"]}
    assert roles == {"lr.label": ("label", "lr"), "lr.probabilities": ("probabilities", "lr"),
                     "rf.label": ("label", "rf"), "rf.probabilities": ("probabilities", "rf")}
    assert [i.name for i in proto.graph.input] == ["island", "bill_length_mm", "bill_depth_mm", "flipper_length_mm",
                                                  "body_mass_g", "sex", "year"]


def _preprocessing_nodes(proto) -> int:
    return sum(1 for n in proto.graph.node
               if any(p.key == "namespace" and p.value.startswith("columntransformer") for p in n.metadata_props))


def test_preprocessing_is_shared_not_duplicated():
    frame, y, pre, x, lr, rf = _fitted()
    one = onegraph.compose(pre, {"lr": lr}, frame)
    three = onegraph.compose(pre, {"lr": lr, "rf": rf, "lr2": LogisticRegression(C=0.1, max_iter=1000).fit(x, y)},
                             frame)
    assert _preprocessing_nodes(one) == _preprocessing_nodes(three) > 0


@pytest.mark.parametrize("voting", ["soft", "hard"])
def test_voting_classifier_equals_scikit_learn(voting):
    frame, y, pre, x, _, _ = _fitted()
    vc = VotingClassifier([("lr", LogisticRegression(max_iter=1000)),
                           ("rf", RandomForestClassifier(n_estimators=15, random_state=0)),
                           ("lr_weak", LogisticRegression(C=0.01, max_iter=1000))],
                          voting=voting, weights=[2, 1, 1]).fit(x, y)
    scores = onegraph.score(onegraph.compose(pre, vc, frame), frame)
    assert (scores["label"].to_numpy() == vc.predict(x)).all()
    if voting == "soft":
        np.testing.assert_allclose(_proba(scores, "", vc.classes_), vc.predict_proba(x), atol=1e-12)
    for name, est in vc.named_estimators_.items():  # fitted on class indices; the artifact names the classes
        assert (scores[f"{name}.label"].to_numpy() == vc.classes_[est.predict(x)]).all()
        np.testing.assert_allclose(_proba(scores, f"{name}.", vc.classes_), est.predict_proba(x), atol=1e-12)


def test_stacking_classifier_equals_scikit_learn():
    frame, y, pre, x, _, _ = _fitted()
    target = (y == "Chinstrap").map({True: "chinstrap", False: "other"})
    sc = StackingClassifier([("lr", LogisticRegression(max_iter=1000)),
                             ("rf", RandomForestClassifier(n_estimators=15, random_state=0))],
                            final_estimator=LogisticRegression(), cv=3).fit(x, target)
    scores = onegraph.score(onegraph.compose(pre, sc, frame), frame)
    assert (scores["label"].to_numpy() == sc.predict(x)).all()
    np.testing.assert_allclose(_proba(scores, "", sc.classes_), sc.predict_proba(x), atol=1e-12)


def test_voting_regressor_equals_scikit_learn(cars):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline

    from onegraph.frame import SimpleImputer, StandardScaler

    frame = cars[cars["Miles_per_Gallon"].notna()].reset_index(drop=True)
    target = frame.pop("Miles_per_Gallon")
    numeric = ["Cylinders", "Displacement", "Horsepower", "Weight_in_lbs", "Acceleration"]
    pre = ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()), numeric)]).fit(frame)
    x = pre.transform(frame)
    vr = VotingRegressor([("ridge", Ridge()), ("rf", RandomForestRegressor(n_estimators=10, random_state=0))],
                         weights=[1, 3]).fit(x, target)
    scores = onegraph.score(onegraph.compose(pre, vr, frame), frame)
    np.testing.assert_allclose(scores["prediction"].to_numpy(), vr.predict(x), rtol=1e-9)


def test_weighted_mean_of_a_float32_booster_and_a_linear_model():
    frame, y, pre, x, lr, _ = _fitted()
    codes, names = species_codes(y)
    lr_codes = LogisticRegression(max_iter=1000).fit(x, codes)
    xgb = xgboost.XGBClassifier(n_estimators=20, max_depth=3).fit(x, codes)
    proto = onegraph.compose(pre, {"lr": lr_codes, "xgb": xgb}, frame, ensemble=Ensemble("weighted", [1.0, 3.0]),
                             post=[LabelMap(names), TopK(2)])
    scores = onegraph.score(proto, frame)
    mean = (lr_codes.predict_proba(x) + 3 * xgb.predict_proba(x)) / 4
    np.testing.assert_allclose(scores[["probabilities_Adelie", "probabilities_Chinstrap",
                                       "probabilities_Gentoo"]].to_numpy(), mean, atol=1e-5)
    named = np.asarray(list(names.values()), dtype=object)
    assert (scores["label"].to_numpy() == named[mean.argmax(axis=1)]).all()
    order = np.argsort(-mean, axis=1, kind="stable")[:, :2]
    assert (scores[["top_labels_0", "top_labels_1"]].to_numpy() == named[order]).all()
    np.testing.assert_allclose(scores[["top_probabilities_0", "top_probabilities_1"]].to_numpy(),
                               np.take_along_axis(mean, order, axis=1), atol=1e-5)
    assert (scores["xgb.label"].to_numpy() == xgb.predict(x)).all()


def test_decision_threshold_equals_fixed_threshold_classifier():
    frame, y, pre, x, _, _ = _fitted()
    target = (y == "Adelie").map({True: "adelie", False: "other"})
    lr = LogisticRegression(max_iter=1000).fit(x, target)
    reference = FixedThresholdClassifier(FrozenEstimator(lr), threshold=0.8, pos_label="other").fit(x, target)
    scores = onegraph.score(onegraph.compose(pre, lr, frame, post=[Threshold(0.8, pos_label="other")]), frame)
    assert (scores["label"].to_numpy() == reference.predict(x)).all()
    assert (scores["label"].to_numpy() != lr.predict(x)).any()  # the threshold changes some decisions


def test_ensembles_refuse_models_that_do_not_combine():
    frame, y, pre, x, lr, rf = _fitted()
    other = LogisticRegression(max_iter=1000).fit(x, y == "Adelie")
    with pytest.raises(ExportError, match="models 'lr' and 'other' predict different classes"):
        onegraph.compose(pre, {"lr": lr, "other": other}, frame, ensemble="mean")
    with pytest.raises(ExportError, match="2 weight"):
        onegraph.compose(pre, {"lr": lr, "rf": rf, "lr2": lr}, frame, ensemble=Ensemble("weighted", [1, 2]))
    for weights, message in (([2, -1], "weight 2 is -1.0"), ([0, 0], "sum to zero"), ([float("nan"), 1], "weight 1")):
        with pytest.raises(ExportError, match=message):
            Ensemble("weighted", weights)
    with pytest.raises(ExportError, match="applies to the answer"):
        onegraph.compose(pre, {"lr": lr, "rf": rf}, frame, post=[TopK(2)])
    # the user's report: classes given in another order than the models' own relabelled every column, and
    # --check passed; they are for models that do not name theirs, and must agree with those that do
    shuffled = [lr.classes_[2], lr.classes_[0], lr.classes_[1]]
    with pytest.raises(ExportError, match=r"classes given \(Gentoo, Adelie, Chinstrap\) are not model 'lr''s own"):
        onegraph.compose(pre, {"lr": lr, "rf": rf}, frame, ensemble=Ensemble("mean", classes=shuffled))
    same = onegraph.score(onegraph.compose(pre, {"lr": lr, "rf": rf}, frame,
                                           ensemble=Ensemble("mean", classes=list(lr.classes_))), frame)
    assert (same["label"] == same["lr.label"]).mean() > 0.9
    np.testing.assert_allclose(_proba(same, "", lr.classes_),
                               (lr.predict_proba(x) + rf.predict_proba(x)) / 2, rtol=1e-12, atol=1e-12)


def test_a_voting_ensemble_of_whole_pipelines_composes_without_a_shared_preprocessing():
    """Members that are each make_pipeline(ColumnTransformer over the table's text and numbers, model), the
    ensemble given alone: compose refused them (text reaching a feature matrix); each member now starts from
    the table's columns, and the artifact gives every member's answer and the ensemble's as scikit-learn."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

    frame = onegraph.datasets.load_penguins().dropna().reset_index(drop=True)
    y = frame.pop("species")
    onehot = make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["island", "sex"]),
                                     (StandardScaler(), ["bill_length_mm", "flipper_length_mm"]))
    ordinal = make_column_transformer((OrdinalEncoder(), ["island"]), ("passthrough", ["bill_depth_mm"]))
    vc = VotingClassifier([("lr", make_pipeline(onehot, LogisticRegression(max_iter=1000))),
                           ("rf", make_pipeline(ordinal, RandomForestClassifier(n_estimators=15, random_state=0)))],
                          voting="soft").fit(frame, y)
    scores = onegraph.score(onegraph.compose(None, vc, frame), frame)
    assert (scores["label"].to_numpy() == vc.predict(frame)).all()
    np.testing.assert_allclose(_proba(scores, "", vc.classes_), vc.predict_proba(frame), rtol=1e-9, atol=1e-12)
    for name, est in vc.named_estimators_.items():
        np.testing.assert_allclose(_proba(scores, f"{name}.", vc.classes_), est.predict_proba(frame), atol=1e-12)
