"""HistGradientBoosting with categories from the DataFrame's dtypes (``categorical_features="from_dtype"``, the
default): its own encoder of the categorical columns and its categorical splits in the graph, against
scikit-learn on the penguins table — with unknown categories, missing values and text scoring input."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

import onegraph

from conftest import assert_same_values


def _frames(penguins):
    x = penguins.dropna(subset=["species"]).reset_index(drop=True)
    species = x.pop("species")
    x = x.astype({"island": "category", "sex": "category"})
    odd = x.copy()  # categories never seen in fit, and missing ones, in both columns
    odd["island"] = odd["island"].cat.add_categories(["Atlantis"])
    odd.loc[:39, "island"] = "Atlantis"
    odd.loc[40:79, "island"] = np.nan
    odd.loc[80:119, "sex"] = np.nan
    return x, species, odd


@pytest.mark.parametrize("make", [lambda: HistGradientBoostingClassifier(max_iter=30, random_state=0),
                                  lambda: HistGradientBoostingRegressor(max_iter=30)], ids=["classifier", "regressor"])
def test_categorical_splits_match_scikit_learn(make, penguins, tmp_path):
    x, species, odd = _frames(penguins)
    model = make()
    if is_classifier(model):
        model.fit(x, species)
    else:
        x, odd = x.drop(columns="body_mass_g"), odd.drop(columns="body_mass_g")
        model.fit(x, penguins.dropna(subset=["species"])["body_mass_g"].fillna(4200).to_numpy())
    splits = [n for it in model._predictors for p in it for n in p.nodes if n["is_categorical"] and not n["is_leaf"]]
    assert splits  # the trees split on the categories, both ways for missing values
    assert {bool(n["missing_go_to_left"]) for n in splits} == {False, True}
    path = tmp_path / "m.onnx"
    onegraph.build(None, model, x, path=path)
    for frame in (x, odd, odd.astype({"island": "str", "sex": "str"}).replace("nan", None)):
        got = onegraph.score(path, frame)
        if is_classifier(model):
            expected = model.predict_proba(odd if frame is not x else x)
            assert_same_values(got.filter(like="probabilities_").to_numpy(), expected, rtol=1e-12, atol=1e-15)
        else:
            expected = model.predict(odd if frame is not x else x)
            # sums of ~30 leaf values of ~10^3 in another order: a few ulps of the prediction
            assert_same_values(got["prediction"].to_numpy(), expected, rtol=1e-12, atol=0)


def test_in_a_pipeline_after_a_column_transformer(penguins, tmp_path):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline

    x, species, odd = _frames(penguins)
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    pipe = make_pipeline(
        ColumnTransformer([("n", "passthrough", numeric), ("c", "passthrough", ["island", "sex"])],
                          verbose_feature_names_out=False).set_output(transform="pandas"),
        HistGradientBoostingClassifier(max_iter=20, random_state=0)).fit(x, species)
    onegraph.build(pipe, None, x, path=tmp_path / "m.onnx")
    got = onegraph.score(tmp_path / "m.onnx", odd)
    assert_same_values(got.filter(like="probabilities_").to_numpy(), pipe.predict_proba(odd), rtol=1e-12,
                       atol=1e-15)
