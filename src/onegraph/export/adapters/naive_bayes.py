"""scikit-learn's naive Bayes classifiers -> graph in double precision.

Follows ``sklearn.naive_bayes`` (scikit-learn 1.9): the joint log likelihood ``jll`` of each model,
``predict`` ``argmax(jll)``, ``predict_proba`` ``exp(jll - logsumexp(jll))`` (``_BaseNB``):

* ``GaussianNB``: ``log(class_prior_[k]) + (-0.5 * sum(log(2 pi var_[k])) - 0.5 * sum((X - theta_[k])^2 /
  var_[k]))``;
* ``MultinomialNB``: ``X @ feature_log_prob_.T + class_log_prior_``; ``ComplementNB``: ``X @
  feature_log_prob_.T`` (the prior only with one class);
* ``BernoulliNB``: ``X`` binarized (``X > binarize``), ``X @ (flp - neg).T + (class_log_prior_ +
  neg.sum(1))`` with ``neg = log(1 - exp(flp))``;
* ``CategoricalNB``: ``X`` truncated to int, ``sum_i feature_log_prob_[i][:, X[:, i]].T + class_log_prior_``;
  a category index outside the fitted ones (where scikit-learn raises) gives NaN probabilities and a missing
  label.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.naive_bayes as nb

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.export.adapters.models import ModelOutputs, label_from_index, register_model
from onegraph.export.adapters.ops import add_all, argmax_index, column, f64, i64, logsumexp

__all__ = ["emit_naive_bayes", "joint_log_likelihood"]


def _matmul_t(g: GraphBuilder, x: ir.Value, m: np.ndarray) -> ir.Value:
    return g.op("MatMul", x, g.const(np.ascontiguousarray(np.asarray(m, np.float64).T), "log_prob_t"), dtype=DOUBLE)


def joint_log_likelihood(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    """``model._joint_log_likelihood(X)``: ``[N, n_classes]``."""
    if isinstance(model, nb.GaussianNB):
        diff = g.op("Sub", g.op("Unsqueeze", x, i64(g, [1], "axis1"), dtype=DOUBLE),
                    g.const(np.asarray(model.theta_, np.float64)[None], "theta"), dtype=DOUBLE)
        sq = g.op("Div", g.op("Mul", diff, diff, dtype=DOUBLE), g.const(np.asarray(model.var_)[None], "var"),
                  dtype=DOUBLE)
        total = g.op("ReduceSum", sq, i64(g, [2], "axis2"), keepdims=0, dtype=DOUBLE)
        n_i = np.asarray([-0.5 * np.sum(np.log(2.0 * np.pi * v)) for v in model.var_])
        n_ij = g.op("Sub", g.const(n_i[None], "log_norm"), g.op("Mul", f64(g, 0.5, "half"), total, dtype=DOUBLE),
                    dtype=DOUBLE)
        return g.op("Add", g.const(np.log(model.class_prior_)[None], "log_prior"), n_ij, dtype=DOUBLE)
    if isinstance(model, nb.CategoricalNB):
        index = g.op("Cast", x, to=INT64, dtype=INT64)
        parts, bad = [g.const(np.zeros((1, len(model.classes_))), "zeros")], None
        for i, table in enumerate(model.feature_log_prob_):
            col = g.op("Squeeze", column(g, index, i, INT64), i64(g, [1], "axis1"), dtype=INT64)
            n_cat = table.shape[1]
            out = g.op("Or", g.op("Less", col, i64(g, 0, "zero_i"), dtype=BOOL),
                       g.op("GreaterOrEqual", col, i64(g, n_cat, "n_cat"), dtype=BOOL), dtype=BOOL)
            bad = out if bad is None else g.op("Or", bad, out, dtype=BOOL)
            safe = g.op("Where", out, i64(g, 0, "zero_i"), col, dtype=INT64)
            parts.append(g.op("Gather", g.const(np.ascontiguousarray(table.T), "log_prob"), safe, axis=0,
                              dtype=DOUBLE))
        jll = g.op("Add", add_all(g, parts), g.const(model.class_log_prior_, "log_prior"), dtype=DOUBLE)
        bad = g.op("Unsqueeze", bad, i64(g, [1], "axis1"), dtype=BOOL)
        return g.op("Where", bad, f64(g, np.nan, "nan"), jll, dtype=DOUBLE)
    flp = np.asarray(model.feature_log_prob_, np.float64)
    if isinstance(model, nb.BernoulliNB):
        if model.binarize is not None:
            x = g.op("Cast", g.op("Greater", x, f64(g, model.binarize, "threshold"), dtype=BOOL), to=DOUBLE,
                     dtype=DOUBLE)
        neg = np.log(1 - np.exp(flp))
        return g.op("Add", _matmul_t(g, x, flp - neg), g.const(model.class_log_prior_ + neg.sum(axis=1), "prior"),
                    dtype=DOUBLE)
    jll = _matmul_t(g, x, flp)
    if isinstance(model, nb.ComplementNB) and len(model.classes_) != 1:
        return jll
    return g.op("Add", jll, g.const(np.asarray(model.class_log_prior_, np.float64), "log_prior"), dtype=DOUBLE)


@register_model(nb.GaussianNB, nb.MultinomialNB, nb.ComplementNB, nb.BernoulliNB, nb.CategoricalNB)
def emit_naive_bayes(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    jll = joint_log_likelihood(g, model, x)
    jll.shape = ir.Shape(["N", len(model.classes_)])
    proba = g.op("Exp", g.op("Sub", jll, logsumexp(g, jll), dtype=DOUBLE), dtype=DOUBLE)
    proba.shape = ir.Shape(["N", len(model.classes_)])
    return ModelOutputs.classifier(label_from_index(g, model.classes_, argmax_index(g, jll)), proba, model.classes_)
