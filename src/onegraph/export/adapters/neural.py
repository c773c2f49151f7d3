"""scikit-learn's multi-layer perceptrons -> graph in double precision.

Follows ``MLP._forward_pass_fast`` (scikit-learn 1.9, ``neural_network/_multilayer_perceptron.py``): per
layer ``a @ coefs_[i] + intercepts_[i]``, the hidden ``activation`` (``relu`` ``max(a, 0)``, ``tanh``,
``logistic`` ``expit``, ``identity``) between layers and ``out_activation_`` last (``softmax``:
``exp(a - max) / sum``; ``logistic``; ``identity``). ``MLPClassifier.predict``: ``argmax`` (several
classes) or ``p > 0.5`` (two, ``LabelBinarizer.inverse_transform``); ``predict_proba`` ``[1 - p, p]`` for two.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.neural_network as nn

from onegraph.emit import BOOL, DOUBLE, INT64, Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError
from onegraph.export.adapters.models import (
    ModelOutputs,
    label_from_index,
    register_model,
)
from onegraph.export.adapters.ops import (
    affine,
    argmax_index,
    binary_pair,
    expit,
    f64,
    flat,
    softmax,
)

__all__ = ["forward", "emit_mlp_classifier", "emit_mlp_regressor", "emit_bernoulli_rbm"]


def _activation(g: GraphBuilder, name: str, a: ir.Value) -> ir.Value:
    if name == "relu":
        return g.op("Max", a, f64(g, 0.0, "zero"), dtype=DOUBLE)
    if name == "tanh":
        return g.op("Tanh", a, dtype=DOUBLE)
    if name == "logistic":
        return expit(g, a)
    if name == "identity":
        return a
    if name == "softmax":
        return softmax(g, a)
    raise ExportError(f"MLP activation {name!r} cannot be exported")


def forward(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    """``_forward_pass_fast``: the output layer ``[N, n_outputs_]``."""
    a = x
    last = len(model.coefs_) - 1
    for i, (w, b) in enumerate(zip(model.coefs_, model.intercepts_)):
        a = affine(g, a, w, b)
        a = _activation(g, model.activation if i != last else model.out_activation_, a)
    a.shape = ir.Shape(["N", model.n_outputs_])
    return a


@register_model(nn.MLPClassifier)
def emit_mlp_classifier(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    classes = model.classes_
    if model._label_binarizer.y_type_ == "multilabel-indicator":
        raise ExportError("a multilabel MLPClassifier cannot be exported", hint="fit one target")
    y = forward(g, model, x)
    if len(classes) == 2:
        proba = binary_pair(g, y)
        positive = g.op("Greater", y, f64(g, 0.5, "half"), dtype=BOOL)
        index = flat(g, g.op("Cast", positive, to=INT64, dtype=INT64), INT64)
    else:
        proba, index = y, argmax_index(g, y)
    return ModelOutputs.classifier(label_from_index(g, classes, index), proba, classes)


@register_model(nn.MLPRegressor)
def emit_mlp_regressor(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    y = forward(g, model, x)
    return ModelOutputs.regressor(flat(g, y) if model.n_outputs_ == 1 else y)


@register_emitter(nn.BernoulliRBM)
def emit_bernoulli_rbm(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """``BernoulliRBM.transform`` (``_mean_hiddens``): ``expit(X @ components_.T + intercept_hidden_)``."""
    from onegraph.export.adapters.discriminant import feature_block

    p = g.op("MatMul", g.matrix(cols, DOUBLE), g.const(np.ascontiguousarray(est.components_.T), "components_t"),
             dtype=DOUBLE)
    p = g.op("Add", p, g.const(np.asarray(est.intercept_hidden_, np.float64), "intercept_hidden"), dtype=DOUBLE)
    return feature_block(g, est, expit(g, p), cols)
