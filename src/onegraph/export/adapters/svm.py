"""scikit-learn's libsvm models -> graph in double precision: SVC, NuSVC, SVR, NuSVR, OneClassSVM.

Follows libsvm as scikit-learn 1.9 builds it (``sklearn/svm/src/libsvm/svm.cpp``, dense representation)
and ``sklearn.svm._base``:

* the kernel between a query and each support vector: ``exp(-gamma * sum_f (x_f - sv_f)^2)`` (rbf),
  ``(gamma <x, sv> + coef0)^degree`` (poly), ``tanh(gamma <x, sv> + coef0)`` (sigmoid), ``<x, sv>`` (linear),
  with the fitted ``_gamma``;
* one-vs-one decision values: for the pair ``(i, j)`` (``i < j``, in libsvm's order) ``sum over the support
  vectors of i of dual_coef_[j - 1] K + sum over those of j of dual_coef_[i] K + _intercept_[p]``;
* ``predict``: one vote for ``i`` where that value is ``> 0``, else for ``j``; the first class with the most
  votes (``svm_predict_values``); ``break_ties`` with ``"ovr"``: argmax of the decision function;
* ``decision_function``: the negated value for two classes; with ``decision_function_shape="ovr"``
  ``_ovr_decision_function(dec < 0, -dec, k)`` = votes + ``c / (3 (|c| + 1))`` of the summed confidences;
* ``predict_proba`` (``probability=True``): Platt's ``sigmoid_predict`` of each pairwise value with
  ``probA_`` / ``probB_``, clipped to ``[1e-7, 1 - 1e-7]``, coupled by ``multiclass_probability`` (Wu, Lin
  and Weng 2004: at most ``max(100, k)`` sweeps, per row until the error is below ``0.005 / k``), an ONNX
  ``Loop`` whose finished rows keep their values;
* regressors and ``OneClassSVM``: ``K @ dual_coef_.T + _intercept_``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.svm as svm

from onegraph.emit import BOOL, DOUBLE, INT64, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.models import (
    ModelOutputs,
    label_from_index,
    register_decision,
    register_model,
)
from onegraph.export.adapters.ops import affine, argmax_index, column, f64, flat, i64, sq_direct

__all__ = ["svm_kernel", "dual_values", "ovo_values", "emit_svc", "emit_svr", "svc_decision", "coupled_probabilities"]


def svm_kernel(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    """libsvm's kernel between each query and each support vector: ``[N, n_SV]``."""
    sv = np.asarray(model.support_vectors_, np.float64)
    kernel = model.kernel
    gamma = f64(g, model._gamma, "gamma")
    if kernel == "rbf":
        return g.op("Exp", g.op("Mul", g.op("Neg", gamma, dtype=DOUBLE), sq_direct(g, x, sv), dtype=DOUBLE),
                    dtype=DOUBLE)
    dot = g.op("MatMul", x, g.const(np.ascontiguousarray(sv.T), "sv_t"), dtype=DOUBLE)
    if kernel == "linear":
        return dot
    k = g.op("Add", g.op("Mul", gamma, dot, dtype=DOUBLE), f64(g, model.coef0, "coef0"), dtype=DOUBLE)
    if kernel == "sigmoid":
        return g.op("Tanh", k, dtype=DOUBLE)
    if kernel == "poly":
        return g.op("Pow", k, f64(g, float(model.degree), "degree"), dtype=DOUBLE)
    raise ExportError(f"{type(model).__name__}(kernel={kernel!r}) cannot be exported",
                      hint="use kernel 'linear', 'poly', 'rbf' or 'sigmoid'")


def _pairs(k: int) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(k), 2))


def ovo_values(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    """libsvm's decision values of the one-vs-one pairs: ``[N, k (k - 1) / 2]``."""
    kx = svm_kernel(g, model, x)
    n_support = np.asarray(model._n_support, np.int64)
    starts = np.concatenate([[0], np.cumsum(n_support)])
    dual = np.asarray(model._dual_coef_, np.float64)
    k = len(n_support)
    coef = np.zeros((dual.shape[1], len(_pairs(k))))
    for p, (i, j) in enumerate(_pairs(k)):
        coef[starts[i]:starts[i + 1], p] = dual[j - 1, starts[i]:starts[i + 1]]
        coef[starts[j]:starts[j + 1], p] = dual[i, starts[j]:starts[j + 1]]
    dec = affine(g, kx, coef, model._intercept_, "pair_coef")
    dec.shape = ir.Shape(["N", coef.shape[1]])
    return dec


def _votes(g: GraphBuilder, dec: ir.Value, k: int) -> ir.Value:
    """Per class the number of pairs voting for it: ``[N, k]``."""
    positive = g.op("Cast", g.op("Greater", dec, f64(g, 0.0, "zero"), dtype=BOOL), to=DOUBLE, dtype=DOUBLE)
    pairs = _pairs(k)
    to_i = np.zeros((len(pairs), k))
    to_j = np.zeros((len(pairs), k))
    for p, (i, j) in enumerate(pairs):
        to_i[p, i] = 1.0
        to_j[p, j] = 1.0
    for_i = g.op("MatMul", positive, g.const(to_i, "vote_i"), dtype=DOUBLE)
    negative = g.op("Sub", f64(g, 1.0, "one"), positive, dtype=DOUBLE)
    return g.op("Add", for_i, g.op("MatMul", negative, g.const(to_j, "vote_j"), dtype=DOUBLE), dtype=DOUBLE)


def _ovr(g: GraphBuilder, dec: ir.Value, k: int) -> ir.Value:
    """``_ovr_decision_function(dec < 0, -dec, k)``."""
    pairs = _pairs(k)
    sign = np.zeros((len(pairs), k))
    for p, (i, j) in enumerate(pairs):
        sign[p, i] -= 1.0
        sign[p, j] += 1.0
    conf = g.op("MatMul", g.op("Neg", dec, dtype=DOUBLE), g.const(sign, "confidence_sign"), dtype=DOUBLE)
    votes = _votes(g, dec, k)
    three = f64(g, 3.0, "three")
    scaled = g.op("Div", conf, g.op("Mul", three, g.op("Add", g.op("Abs", conf, dtype=DOUBLE), f64(g, 1.0, "one"),
                                                       dtype=DOUBLE), dtype=DOUBLE), dtype=DOUBLE)
    return g.op("Add", votes, scaled, dtype=DOUBLE)


@register_decision(svm.SVC, svm.NuSVC)
def svc_decision(model: Any, g: GraphBuilder, x: ir.Value) -> ir.Value:
    """``decision_function``: ``[N, 1]`` for two classes, ``[N, k]`` (ovr) or ``[N, pairs]`` (ovo)."""
    dec = ovo_values(g, model, x)
    k = len(model.classes_)
    if k == 2:
        return g.op("Neg", dec, dtype=DOUBLE)
    return _ovr(g, dec, k) if model.decision_function_shape == "ovr" else dec


def _sigmoid_predict(g: GraphBuilder, dec: ir.Value, a: np.ndarray, b: np.ndarray) -> ir.Value:
    """libsvm's ``sigmoid_predict``: ``exp(-t) / (1 + exp(-t))`` where ``t = dec A + B >= 0``, else
    ``1 / (1 + exp(t))``."""
    t = g.op("Add", g.op("Mul", dec, g.const(a, "prob_a"), dtype=DOUBLE), g.const(b, "prob_b"), dtype=DOUBLE)
    one = f64(g, 1.0, "one")
    e_neg = g.op("Exp", g.op("Neg", t, dtype=DOUBLE), dtype=DOUBLE)
    upper = g.op("Div", e_neg, g.op("Add", one, e_neg, dtype=DOUBLE), dtype=DOUBLE)
    lower = g.op("Div", one, g.op("Add", one, g.op("Exp", t, dtype=DOUBLE), dtype=DOUBLE), dtype=DOUBLE)
    return g.op("Where", g.op("GreaterOrEqual", t, f64(g, 0.0, "zero"), dtype=BOOL), upper, lower, dtype=DOUBLE)


def coupled_probabilities(g: GraphBuilder, r: dict[tuple[int, int], ir.Value], k: int) -> ir.Value:
    """libsvm's ``multiclass_probability`` for each row: ``r[(i, j)]`` ``[N, 1]`` is the pairwise probability
    of ``i`` against ``j`` (``r[(j, i)] = 1 - r[(i, j)]``). Returns ``[N, k]``."""
    def rr(i: int, j: int) -> ir.Value:
        return r[(i, j)] if (i, j) in r else g.op("Sub", f64(g, 1.0, "one"), r[(j, i)], dtype=DOUBLE)

    # Q[t][t] = sum_{j != t} r[j][t]^2 (j ascending); Q[t][j] = -r[j][t] r[t][j]
    q: dict[tuple[int, int], ir.Value] = {}
    for t in range(k):
        diag = None
        for j in range(k):
            if j == t:
                continue
            sq = g.op("Mul", rr(j, t), rr(j, t), dtype=DOUBLE)
            diag = sq if diag is None else g.op("Add", diag, sq, dtype=DOUBLE)
        q[(t, t)] = diag
    for t in range(k):
        for j in range(t + 1, k):
            q[(t, j)] = q[(j, t)] = g.op("Neg", g.op("Mul", rr(j, t), rr(t, j), dtype=DOUBLE), dtype=DOUBLE)
    max_iter, eps = max(100, k), 0.005 / k
    it = ir.Value(name=g.unique("iter"), type=ir.TensorType(INT64), shape=ir.Shape([]))
    cond = ir.Value(name=g.unique("cond"), type=ir.TensorType(BOOL), shape=ir.Shape([]))
    p_in = ir.Value(name=g.unique("p"), type=ir.TensorType(DOUBLE), shape=ir.Shape(["N", k]))
    done_in = ir.Value(name=g.unique("done"), type=ir.TensorType(BOOL), shape=ir.Shape(["N", 1]))
    with g.subgraph("multiclass_probability", [it, cond, p_in, done_in]) as body:
        p = [column(g, p_in, t) for t in range(k)]

        def qp_of(p):
            out = []
            for t in range(k):
                acc = f64(g, 0.0, "zero")
                for j in range(k):
                    acc = g.op("Add", acc, g.op("Mul", q[(t, j)], p[j], dtype=DOUBLE), dtype=DOUBLE)
                out.append(acc)
            return out

        qp = qp_of(p)
        pqp = f64(g, 0.0, "zero")
        for t in range(k):
            pqp = g.op("Add", pqp, g.op("Mul", p[t], qp[t], dtype=DOUBLE), dtype=DOUBLE)
        err = None
        for t in range(k):
            e = g.op("Abs", g.op("Sub", qp[t], pqp, dtype=DOUBLE), dtype=DOUBLE)
            err = e if err is None else g.op("Max", err, e, dtype=DOUBLE)
        done = g.op("Or", done_in, g.op("Less", err, f64(g, eps, "eps"), dtype=BOOL), dtype=BOOL)
        one = f64(g, 1.0, "one")
        two = f64(g, 2.0, "two")
        for t in range(k):
            diff = g.op("Div", g.op("Add", g.op("Neg", qp[t], dtype=DOUBLE), pqp, dtype=DOUBLE), q[(t, t)],
                        dtype=DOUBLE)
            p[t] = g.op("Add", p[t], diff, dtype=DOUBLE)
            onediff = g.op("Add", one, diff, dtype=DOUBLE)
            inner = g.op("Add", g.op("Mul", diff, q[(t, t)], dtype=DOUBLE), g.op("Mul", two, qp[t], dtype=DOUBLE),
                         dtype=DOUBLE)
            pqp = g.op("Div", g.op("Div", g.op("Add", pqp, g.op("Mul", diff, inner, dtype=DOUBLE), dtype=DOUBLE),
                                   onediff, dtype=DOUBLE), onediff, dtype=DOUBLE)
            for j in range(k):
                qp[j] = g.op("Div", g.op("Add", qp[j], g.op("Mul", diff, q[(t, j)], dtype=DOUBLE), dtype=DOUBLE),
                             onediff, dtype=DOUBLE)
                p[j] = g.op("Div", p[j], onediff, dtype=DOUBLE)
        stepped = g.op("Concat", *p, axis=1, dtype=DOUBLE)
        p_out = g.op("Where", done, p_in, stepped, dtype=DOUBLE)
        all_done = g.op("Cast", g.op("ReduceMin", g.op("Cast", done, to=INT64, dtype=INT64), keepdims=0,
                                     dtype=INT64), to=BOOL, dtype=BOOL)
        body.outputs.extend([g.op("Not", all_done, dtype=BOOL), p_out, g.op("Identity", done, dtype=BOOL)])
    first = next(iter(r.values()))
    start = g.op("Add", g.op("Mul", first, f64(g, 0.0, "zero"), dtype=DOUBLE), f64(g, np.full((1, k), 1.0 / k), "p0"),
                 dtype=DOUBLE)
    not_done = g.op("Equal", first, f64(g, np.nan, "nan"), dtype=BOOL)  # all False, [N, 1]
    p_final, _ = g.op("Loop", i64(g, max_iter, "max_iter"), None, start, not_done, body=body, outputs=2)
    p_final.dtype = DOUBLE
    p_final.shape = ir.Shape(["N", k])
    return p_final


def _svc_proba(g: GraphBuilder, model: Any, dec: ir.Value, k: int) -> ir.Value:
    a = np.asarray(model._probA, np.float64)
    b = np.asarray(model._probB, np.float64)
    pair = _sigmoid_predict(g, dec, a, b)
    pair = g.op("Clip", pair, f64(g, 1e-7, "min_prob"), f64(g, 1 - 1e-7, "max_prob"), dtype=DOUBLE)
    # scikit-learn's libsvm couples two classes too (libsvm 3.25 returns the pairwise value; the fork iterates
    # multiclass_probability to its 0.005 / k tolerance, which moves binary probabilities by up to ~1e-2)
    r = {(i, j): column(g, pair, n) for n, (i, j) in enumerate(_pairs(k))}
    return coupled_probabilities(g, r, k)


@register_model(svm.SVC, svm.NuSVC)
def emit_svc(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    classes = model.classes_
    k = len(classes)
    dec = ovo_values(g, model, x)
    if model.break_ties and model.decision_function_shape == "ovr" and k > 2:
        index = argmax_index(g, _ovr(g, dec, k))
    else:
        index = argmax_index(g, _votes(g, dec, k))
    label = label_from_index(g, classes, index)
    if not hasattr(model, "predict_proba"):
        return ModelOutputs.label_only(label, classes)
    proba = _svc_proba(g, model, dec, k)
    proba.shape = ir.Shape(["N", k])
    return ModelOutputs.classifier(label, proba, classes)


def dual_values(g: GraphBuilder, model: Any, x: ir.Value) -> ir.Value:
    """``K @ dual_coef_.T + intercept_`` ``[N]``: the decision value of a regressor or a ``OneClassSVM``."""
    kx = svm_kernel(g, model, x)
    y = affine(g, kx, np.asarray(model._dual_coef_, np.float64).T, model._intercept_, "dual")
    return flat(g, y)


@register_model(svm.SVR, svm.NuSVR)
def emit_svr(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    return ModelOutputs.regressor(dual_values(g, model, x))
