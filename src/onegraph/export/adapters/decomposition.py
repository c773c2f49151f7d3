"""scikit-learn's linear projections -> graph in double precision (transformers).

Each follows its ``transform`` in scikit-learn 1.9:

* ``PCA`` / ``IncrementalPCA`` (``_BasePCA._transform``): ``X @ components_.T - mean_ @ components_.T``,
  divided by ``sqrt(explained_variance_)`` (clipped below at machine epsilon) when whitening;
* ``TruncatedSVD``: ``X @ components_.T``; ``NeighborhoodComponentsAnalysis``: ``X @ components_.T``;
* ``FastICA``: ``(X - mean_) @ components_.T`` (``X @ components_.T`` without whitening);
* ``FactorAnalysis``: ``((X - mean_) @ Wpsi.T) @ cov_z`` with ``Wpsi = components_ / noise_variance_``,
  ``cov_z = inv(I + Wpsi @ components_.T)`` (computed once here, as scikit-learn does per call);
* ``SparsePCA`` / ``MiniBatchSparsePCA``: ``ridge_regression(components_.T, (X - mean_).T, ridge_alpha,
  solver="cholesky")``, i.e. ``(X - mean_) @ components_.T @ inv(components_ @ components_.T + alpha I)``
  (the inverse computed here once, where scikit-learn solves per call: agrees to ~1e-13 relative);
* ``KernelPCA``: ``K = kernel(X, X_fit_)`` centred as ``KernelCenterer.transform`` (``K - K_fit_rows_ -
  mean(K, 1) + K_fit_all_``), times ``eigenvectors_ / sqrt(eigenvalues_)`` (zero where an eigenvalue is
  0).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sklearn.decomposition as skd
import sklearn.neighbors as skn
from scipy import linalg

from onegraph.emit import DOUBLE, Col, GraphBuilder, register_emitter
from onegraph.export.adapters.discriminant import feature_block
from onegraph.export.adapters.ops import f64, i64, kernel

__all__ = ["emit_pca", "emit_projection", "emit_fastica", "emit_factor_analysis", "emit_sparse_pca",
           "emit_kernel_pca", "emit_sparse_code"]


def _const(g: GraphBuilder, a: Any, hint: str):
    return g.const(np.ascontiguousarray(np.asarray(a, np.float64)), hint)


@register_emitter(skd.PCA, skd.IncrementalPCA)
def emit_pca(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.matrix(cols, DOUBLE)
    comp_t = np.asarray(est.components_, np.float64).T
    y = g.op("MatMul", x, _const(g, comp_t, "components_t"), dtype=DOUBLE)
    y = g.op("Sub", y, _const(g, np.reshape(est.mean_, (1, -1)) @ comp_t, "mean_projected"), dtype=DOUBLE)
    if est.whiten:
        scale = np.sqrt(np.asarray(est.explained_variance_, np.float64))  # in double, as every number
        scale[scale < np.finfo(scale.dtype).eps] = np.finfo(scale.dtype).eps
        y = g.op("Div", y, _const(g, scale, "scale"), dtype=DOUBLE)
    return feature_block(g, est, y, cols)


@register_emitter(skd.TruncatedSVD, skn.NeighborhoodComponentsAnalysis)
def emit_projection(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.matrix(cols, DOUBLE)
    y = g.op("MatMul", x, _const(g, np.asarray(est.components_).T, "components_t"), dtype=DOUBLE)
    return feature_block(g, est, y, cols)


@register_emitter(skd.FastICA)
def emit_fastica(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.matrix(cols, DOUBLE)
    if est.whiten:
        x = g.op("Sub", x, _const(g, est.mean_, "mean"), dtype=DOUBLE)
    y = g.op("MatMul", x, _const(g, np.asarray(est.components_).T, "components_t"), dtype=DOUBLE)
    return feature_block(g, est, y, cols)


@register_emitter(skd.FactorAnalysis)
def emit_factor_analysis(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.op("Sub", g.matrix(cols, DOUBLE), _const(g, est.mean_, "mean"), dtype=DOUBLE)
    wpsi = est.components_ / est.noise_variance_
    cov_z = linalg.inv(np.eye(len(est.components_)) + np.dot(wpsi, est.components_.T))
    tmp = g.op("MatMul", x, _const(g, wpsi.T, "wpsi_t"), dtype=DOUBLE)
    return feature_block(g, est, g.op("MatMul", tmp, _const(g, cov_z, "cov_z"), dtype=DOUBLE), cols)


@register_emitter(skd.SparsePCA, skd.MiniBatchSparsePCA)
def emit_sparse_pca(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.op("Sub", g.matrix(cols, DOUBLE), _const(g, est.mean_, "mean"), dtype=DOUBLE)
    c = np.asarray(est.components_, np.float64)
    a = c @ c.T
    a.flat[:: len(c) + 1] += est.ridge_alpha
    projection = linalg.solve(a, c, assume_a="pos").T  # [F, k]: X @ C.T @ inv(A)
    return feature_block(g, est, g.op("MatMul", x, _const(g, projection, "ridge_projection"), dtype=DOUBLE), cols)


@register_emitter(skd.KernelPCA)
def emit_kernel_pca(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.matrix(cols, DOUBLE)
    k = kernel(g, x, est.X_fit_, est.kernel, gamma=est.gamma_, degree=est.degree, coef0=est.coef0,
               what="KernelPCA")
    centerer = est._centerer
    n_fit = centerer.K_fit_rows_.shape[0]
    pred_cols = g.op("Div", g.op("ReduceSum", k, i64(g, [1], "axes"), keepdims=1, dtype=DOUBLE),
                     f64(g, float(n_fit), "n_fit"), dtype=DOUBLE)
    k = g.op("Sub", k, _const(g, centerer.K_fit_rows_, "k_fit_rows"), dtype=DOUBLE)
    k = g.op("Sub", k, pred_cols, dtype=DOUBLE)
    k = g.op("Add", k, f64(g, centerer.K_fit_all_, "k_fit_all"), dtype=DOUBLE)
    non_zeros = np.flatnonzero(est.eigenvalues_)
    alphas = np.zeros_like(est.eigenvectors_)
    alphas[:, non_zeros] = est.eigenvectors_[:, non_zeros] / np.sqrt(est.eigenvalues_[non_zeros])
    return feature_block(g, est, g.op("MatMul", k, _const(g, alphas, "scaled_alphas"), dtype=DOUBLE), cols)


@register_emitter(skd.DictionaryLearning, skd.MiniBatchDictionaryLearning, skd.SparseCoder)
def emit_sparse_code(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """``_BaseSparseCoding._transform`` with ``transform_algorithm="omp"`` and one non-zero coefficient (the
    default on up to 19 features, ``min(max(n_features / 10, 1), n_components)``): ``orthogonal_mp_gram``'s
    first step, ``lam = argmax |D x|``, ``code[lam] = ((D x)[lam] / L) / L`` with ``L = sqrt(G[lam, lam])``
    (LAPACK ``potrs`` on the 1 x 1 Cholesky factor), none where ``(D x)[lam]^2 < eps``; ``split_sign``
    puts ``max(code, 0)`` and ``-min(code, 0)`` side by side."""
    from onegraph.emit import BOOL, INT64
    from onegraph.errors import ExportError

    d = np.asarray(est.components_, np.float64)
    n_features = d.shape[1]
    k = est.transform_n_nonzero_coefs
    k = min(max(n_features / 10, 1), d.shape[0]) if k is None else k
    if est.transform_algorithm != "omp" or int(k) != 1:
        raise ExportError(f"{type(est).__name__}(transform_algorithm={est.transform_algorithm!r}) with "
                          f"{int(k)} non-zero coefficients cannot be exported yet",
                          hint="use transform_algorithm='omp' with transform_n_nonzero_coefs=1")
    x = g.matrix(cols, DOUBLE)
    cov = g.op("MatMul", x, _const(g, d.T, "dictionary_t"), dtype=DOUBLE)  # (D @ X.T).T
    lam = g.op("ArgMax", g.op("Abs", cov, dtype=DOUBLE), axis=1, keepdims=1, dtype=INT64)
    a = g.op("GatherElements", cov, lam, axis=1, dtype=DOUBLE)
    diag = np.sqrt(np.diag(np.dot(d, d.T)))
    ll = g.op("Gather", _const(g, diag, "chol_diag"), lam, axis=0, dtype=DOUBLE)
    gamma = g.op("Div", g.op("Div", a, ll, dtype=DOUBLE), ll, dtype=DOUBLE)
    tiny = g.op("Less", g.op("Mul", a, a, dtype=DOUBLE), f64(g, np.finfo(np.float64).eps, "eps"), dtype=BOOL)
    gamma = g.op("Where", tiny, f64(g, 0.0, "zero"), gamma, dtype=DOUBLE)
    zeros = g.op("Mul", cov, f64(g, 0.0, "zero"), dtype=DOUBLE)
    code = g.op("ScatterElements", zeros, lam, gamma, axis=1, dtype=DOUBLE)
    if est.split_sign:
        code = g.op("Concat", g.op("Max", code, f64(g, 0.0, "zero"), dtype=DOUBLE),
                    g.op("Neg", g.op("Min", code, f64(g, 0.0, "zero"), dtype=DOUBLE), dtype=DOUBLE), axis=1,
                    dtype=DOUBLE)
    return feature_block(g, est, code, cols)
