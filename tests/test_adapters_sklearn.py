"""scikit-learn models, calibrated classifiers and ONNX files as composable adapters; contract checks."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pandas as pd
import pytest
import xgboost
from compose_helpers import penguins
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

import onegraph
from onegraph.errors import ExportError
from onegraph.export import OnnxModel, TorchModule, adapt


@pytest.mark.parametrize("model", [LogisticRegression(max_iter=1000),
                                   RandomForestClassifier(n_estimators=20, random_state=0)],
                         ids=lambda m: type(m).__name__)
def test_sklearn_model_composed_with_preprocessing(model):
    frame, y, pre, x = penguins()
    model.fit(x, y)
    scores = onegraph.score(onegraph.compose(pre, {"m": model}, frame), frame)
    assert (scores["label"].to_numpy() == model.predict(x)).all()
    np.testing.assert_allclose(scores[[f"probabilities_{c}" for c in model.classes_]].to_numpy(),
                               model.predict_proba(x), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
@pytest.mark.parametrize("base", ["logistic", "forest"])
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "multiclass"])
def test_calibrated_probabilities(method, base, binary):
    """CalibratedClassifierCV (cross-validated calibrators, averaged) in double precision."""
    frame, y, pre, x = penguins()
    target = (y == "Gentoo") if binary else y
    est = LogisticRegression(max_iter=1000) if base == "logistic" else RandomForestClassifier(n_estimators=10,
                                                                                              random_state=0)
    model = CalibratedClassifierCV(est, method=method, cv=3).fit(x, target)
    scores = onegraph.score(onegraph.build(pre, model, frame), frame)
    assert (scores["label"].to_numpy() == model.predict(x)).all()
    np.testing.assert_allclose(scores[[f"probabilities_{c}" for c in model.classes_]].to_numpy(),
                               model.predict_proba(x), rtol=1e-9, atol=1e-12)


def test_onnx_file_adapter_takes_a_converted_model(tmp_path):
    """A model converted elsewhere (skl2onnx, float32) composes after onegraph's preprocessing."""
    from skl2onnx import to_onnx

    frame, y, pre, x = penguins()
    lr = LogisticRegression(max_iter=1000).fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = to_onnx(lr, np.asarray(x, np.float32)[:1], options={"zipmap": False}, target_opset=15)
    path = tmp_path / "lr.onnx"
    path.write_bytes(converted.SerializeToString())
    before = path.read_bytes()
    adapter = OnnxModel(path, classes=lr.classes_)
    assert (adapter.consumes.dtype, adapter.consumes.width) == ("float", x.shape[1])
    scores = onegraph.score(onegraph.compose(pre, {"lr": adapter}, frame), frame)
    assert (scores["label"].to_numpy() == lr.predict(x)).all()
    np.testing.assert_allclose(scores[[f"probabilities_{c}" for c in lr.classes_]].to_numpy(),
                               lr.predict_proba(x), atol=1e-5)
    assert path.read_bytes() == before  # the input model is not modified
    # without classes=: skl2onnx's LinearClassifier lists them (classlabels_strings); its probabilities were
    # taken for a regression's prediction
    adapter = OnnxModel(path)
    assert adapter.classes == list(lr.classes_) and set(adapter.roles) == {"label", "probabilities"}
    again = onegraph.score(onegraph.compose(pre, {"lr": adapter}, frame), frame)
    pd.testing.assert_frame_equal(again, scores)


def test_width_mismatch_names_both_sides():
    frame, y, pre, x = penguins()
    narrow = xgboost.XGBClassifier(n_estimators=3).fit(np.asarray(x)[:, :4], (y == "Adelie").astype(int))
    with pytest.raises(ExportError) as info:
        onegraph.compose(pre, {"xgb": narrow}, frame)
    message = str(info.value)
    assert "the preprocessing (ColumnTransformer) gives 10 column(s)" in message
    assert "model 'xgb' (xgboost.sklearn.XGBClassifier) consumes a float32 feature matrix [N, 4]" in message


def test_text_columns_into_a_model_names_both_sides():
    frame, y, _, _ = penguins()
    numbers = frame[["bill_length_mm", "bill_depth_mm"]].fillna(0).to_numpy()  # fitted without column names
    lr = LogisticRegression().fit(numbers, y)
    with pytest.raises(ExportError, match=r"the input columns gives 2 column\(s\), some of them string, but model 'lr'"):
        onegraph.compose(None, {"lr": lr}, frame[["bill_length_mm", "island"]])


def test_bare_torch_module_must_say_what_it_outputs():
    import torch

    with pytest.raises(ExportError, match="TorchModule"):
        adapt(torch.nn.Linear(3, 2))
    with pytest.raises(ExportError, match="output="):
        TorchModule(torch.nn.Linear(3, 2), output="prediction", classes=[0, 1])


def test_onnx_file_with_several_inputs_is_refused(tmp_path):
    frame, y, pre, _ = penguins()
    path = tmp_path / "pre.onnx"
    onegraph.build(pre, None, frame, path=path)
    with pytest.raises(ExportError, match="compose_models"):
        OnnxModel(path)
    assert onnx.load(path).graph.input  # still readable, untouched
