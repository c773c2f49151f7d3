"""scikit-learn's Gaussian processes -> graph in double precision.

Follows ``sklearn.gaussian_process`` (scikit-learn 1.9):

* kernels (``kernels.py``): ``RBF`` ``exp(-0.5 cdist(X / l, Y / l, "sqeuclidean"))``, ``ConstantKernel``
  ``c``, ``WhiteKernel`` 0 between distinct sets, ``DotProduct`` ``sigma_0^2 + X @ Y.T``, ``Sum`` and
  ``Product`` of two;
* ``GaussianProcessRegressor.predict``: ``y_train_std * (k(X, X_train_) @ alpha_) + y_train_mean``;
* ``GaussianProcessClassifier`` (Laplace, ``_BinaryGaussianProcessClassifierLaplace``): latent mean
  ``k(X_train_, X).T @ (y_train_ - pi_)``, variance ``k.diag(X) - sum(v^2)`` with ``v = L_^-1 (W_sr_ k)``
  (the inverse of the Cholesky factor taken here once), ``pi = sum(COEFS * sqrt(pi / a) erf(LAMBDAS f
  sqrt(a / (a + LAMBDAS^2))) / (2 sqrt(2 pi var))) + 0.5 sum(COEFS)`` with ``a = 1 / (2 var)``;
  ``predict`` ``f > 0``; several classes: one-vs-rest, probabilities normalized, label the first maximum.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.gaussian_process as gp
import sklearn.gaussian_process.kernels as gpk
from scipy import linalg

from onegraph.emit import DOUBLE, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.models import ModelOutputs, label_from_index, register_model
from onegraph.export.adapters.ops import argmax_index, erf, f64, flat, i64, normalize_rows, positive_index, sq_direct

__all__ = ["gp_kernel", "gp_kernel_diag", "emit_gpr", "emit_gpc"]


def gp_kernel(g: GraphBuilder, k: Any, x: ir.Value, y: np.ndarray, n_x: ir.Value) -> ir.Value:
    """``k(X, Y)`` ``[N, M]`` for the query ``x`` and the fitted rows ``y``; ``n_x`` is a ``[N, M]`` zero."""
    y = np.asarray(y, np.float64)
    if isinstance(k, gpk.Product):
        return g.op("Mul", gp_kernel(g, k.k1, x, y, n_x), gp_kernel(g, k.k2, x, y, n_x), dtype=DOUBLE)
    if isinstance(k, gpk.Sum):
        return g.op("Add", gp_kernel(g, k.k1, x, y, n_x), gp_kernel(g, k.k2, x, y, n_x), dtype=DOUBLE)
    if isinstance(k, gpk.ConstantKernel):
        return g.op("Add", n_x, f64(g, k.constant_value, "constant"), dtype=DOUBLE)
    if isinstance(k, gpk.WhiteKernel):
        return n_x
    if isinstance(k, gpk.RBF):
        ls = np.asarray(k.length_scale, np.float64)
        xs = g.op("Div", x, g.const(ls, "length_scale"), dtype=DOUBLE)
        d = sq_direct(g, xs, y / ls)
        return g.op("Exp", g.op("Mul", f64(g, -0.5, "minus_half"), d, dtype=DOUBLE), dtype=DOUBLE)
    if isinstance(k, gpk.DotProduct):
        dot = g.op("MatMul", x, g.const(np.ascontiguousarray(y.T), "y_t"), dtype=DOUBLE)
        return g.op("Add", dot, f64(g, k.sigma_0 ** 2, "sigma0_sq"), dtype=DOUBLE)
    raise ExportError(f"Gaussian process kernel {type(k).__name__} cannot be exported yet",
                      hint="use RBF, ConstantKernel, WhiteKernel, DotProduct and their sums / products")


def gp_kernel_diag(g: GraphBuilder, k: Any, x: ir.Value, zero: ir.Value) -> ir.Value:
    """``k.diag(X)`` ``[N, 1]``; ``zero`` is a ``[N, 1]`` zero."""
    if isinstance(k, gpk.Product):
        return g.op("Mul", gp_kernel_diag(g, k.k1, x, zero), gp_kernel_diag(g, k.k2, x, zero), dtype=DOUBLE)
    if isinstance(k, gpk.Sum):
        return g.op("Add", gp_kernel_diag(g, k.k1, x, zero), gp_kernel_diag(g, k.k2, x, zero), dtype=DOUBLE)
    if isinstance(k, gpk.ConstantKernel):
        return g.op("Add", zero, f64(g, k.constant_value, "constant"), dtype=DOUBLE)
    if isinstance(k, gpk.WhiteKernel):
        return g.op("Add", zero, f64(g, k.noise_level, "noise"), dtype=DOUBLE)
    if isinstance(k, gpk.RBF):
        return g.op("Add", zero, f64(g, 1.0, "one"), dtype=DOUBLE)
    if isinstance(k, gpk.DotProduct):
        return g.op("Add", g.op("ReduceSumSquare", x, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE),
                    f64(g, k.sigma_0 ** 2, "sigma0_sq"), dtype=DOUBLE)
    raise ExportError(f"Gaussian process kernel {type(k).__name__} cannot be exported yet")


def _zeros(g: GraphBuilder, x: ir.Value, m: int) -> ir.Value:
    """``[N, m]`` zeros shaped by ``x``."""
    n = g.op("Shape", x, start=0, end=1, dtype=ir.DataType.INT64)
    return g.op("ConstantOfShape", g.op("Concat", n, i64(g, [m], "m"), axis=0, dtype=ir.DataType.INT64),
                value=ir.tensor(np.zeros(1, np.float64)), dtype=DOUBLE)


@register_model(gp.GaussianProcessRegressor)
def emit_gpr(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    xt = np.asarray(model.X_train_, np.float64)
    k = gp_kernel(g, model.kernel_, x, xt, _zeros(g, x, len(xt)))
    alpha = np.asarray(model.alpha_, np.float64)
    mean = g.op("MatMul", k, g.const(alpha.reshape(len(xt), -1), "alpha"), dtype=DOUBLE)
    y = g.op("Add", g.op("Mul", f64(g, model._y_train_std, "y_std"), mean, dtype=DOUBLE),
             f64(g, model._y_train_mean, "y_mean"), dtype=DOUBLE)
    return ModelOutputs.regressor(flat(g, y) if alpha.ndim == 1 or alpha.shape[1] == 1 else y)


def _binary(g: GraphBuilder, est: Any, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(latent mean ``[N, 1]``, ``pi_star`` ``[N, 1]``) of one ``_BinaryGaussianProcessClassifierLaplace``."""
    from sklearn.gaussian_process._gpc import COEFS, LAMBDAS

    xt = np.asarray(est.X_train_, np.float64)
    k = gp_kernel(g, est.kernel_, x, xt, _zeros(g, x, len(xt)))  # k(X_train, X).T
    mean = g.op("MatMul", k, g.const((est.y_train_ - est.pi_).reshape(-1, 1), "y_minus_pi"), dtype=DOUBLE)
    l_inv_t = np.ascontiguousarray(linalg.solve_triangular(est.L_, np.eye(len(xt)), lower=True).T)
    v_t = g.op("MatMul", g.op("Mul", k, g.const(est.W_sr_[None, :], "w_sr"), dtype=DOUBLE),
               g.const(l_inv_t, "l_inv_t"), dtype=DOUBLE)
    var = g.op("Sub", gp_kernel_diag(g, est.kernel_, x, _zeros(g, x, 1)),
               g.op("ReduceSumSquare", v_t, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE), dtype=DOUBLE)
    lam = g.const(LAMBDAS.reshape(1, -1), "lambdas")
    alpha = g.op("Div", f64(g, 1.0, "one"), g.op("Mul", f64(g, 2.0, "two"), var, dtype=DOUBLE), dtype=DOUBLE)
    gamma = g.op("Mul", lam, mean, dtype=DOUBLE)
    ratio = g.op("Sqrt", g.op("Div", alpha, g.op("Add", alpha, g.const(LAMBDAS.reshape(1, -1) ** 2, "lambdas_sq"),
                                                  dtype=DOUBLE), dtype=DOUBLE), dtype=DOUBLE)
    integrals = g.op("Mul", g.op("Sqrt", g.op("Div", f64(g, np.pi, "pi"), alpha, dtype=DOUBLE), dtype=DOUBLE),
                     erf(g, g.op("Mul", gamma, ratio, dtype=DOUBLE)), dtype=DOUBLE)
    denom = g.op("Mul", f64(g, 2.0, "two"), g.op("Sqrt", g.op("Mul", g.op("Mul", var, f64(g, 2.0, "two"), dtype=DOUBLE),
                                                              f64(g, np.pi, "pi"), dtype=DOUBLE), dtype=DOUBLE),
                 dtype=DOUBLE)
    integrals = g.op("Div", integrals, denom, dtype=DOUBLE)
    weighted = g.op("Mul", g.const(COEFS.reshape(1, -1), "coefs"), integrals, dtype=DOUBLE)
    pi_star = g.op("Add", g.op("ReduceSum", weighted, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE),
                   f64(g, 0.5 * COEFS.sum(), "half_coefs"), dtype=DOUBLE)
    return mean, pi_star


@register_model(gp.GaussianProcessClassifier)
def emit_gpc(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    classes = model.classes_
    base = model.base_estimator_
    if len(classes) == 2:
        mean, p = _binary(g, base, x)
        proba = g.op("Concat", g.op("Sub", f64(g, 1.0, "one"), p, dtype=DOUBLE), p, axis=1, dtype=DOUBLE)
        index = positive_index(g, mean)
    else:
        if model.multi_class != "one_vs_rest":
            raise ExportError("GaussianProcessClassifier(multi_class='one_vs_one') cannot be exported yet")
        columns = [_binary(g, est, x)[1] for est in base.estimators_]
        y = g.op("Concat", *columns, axis=1, dtype=DOUBLE)
        index = argmax_index(g, y)
        proba = normalize_rows(g, y)
    proba.shape = ir.Shape(["N", len(classes)])
    return ModelOutputs.classifier(label_from_index(g, classes, index), proba, classes)
