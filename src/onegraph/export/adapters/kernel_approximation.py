"""scikit-learn's kernel approximations -> graph in double precision (transformers).

Each follows its ``transform`` in scikit-learn 1.9 (``sklearn/kernel_approximation.py``):

* ``RBFSampler``: ``cos(X @ random_weights_ + random_offset_) * (2 / n_components) ** 0.5``;
* ``SkewedChi2Sampler``: ``cos(log(X + skewedness) @ random_weights_ + random_offset_) * sqrt(2) /
  sqrt(n_components)``;
* ``AdditiveChi2Sampler`` (``_transform_dense``): ``sqrt(x L)``, then for ``j = 1 .. steps - 1``
  ``sqrt(2 x L / cosh(pi j L)) * cos(j L log x)`` and ``* sin(...)``, zero where ``x == 0``;
* ``Nystroem``: ``kernel(X, components_) @ normalization_.T``;
* ``PolynomialCountSketch``: the count sketches ``X_gamma @ S_d`` (``S_d[j, indexHash_[d, j]] =
  bitHash_[d, j]``), multiplied as polynomials modulo ``x^n - 1``: scikit-learn takes
  ``real(ifft(prod_d fft(sketch_d)))``, the graph the same circular convolution directly (agrees to
  ~1e-15 of the sketches' magnitude).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sklearn.kernel_approximation as ka

from onegraph.emit import BOOL, DOUBLE, Col, GraphBuilder, register_emitter
from onegraph.export.adapters.discriminant import feature_block
from onegraph.export.adapters.ops import f64, i64, kernel

__all__ = ["emit_random_features", "emit_additive_chi2", "emit_nystroem", "emit_count_sketch"]


@register_emitter(ka.RBFSampler, ka.SkewedChi2Sampler)
def emit_random_features(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.matrix(cols, DOUBLE)
    n = est.n_components
    if isinstance(est, ka.SkewedChi2Sampler):
        x = g.op("Log", g.op("Add", x, f64(g, est.skewedness, "skewedness"), dtype=DOUBLE), dtype=DOUBLE)
        scale = np.sqrt(2.0) / np.sqrt(n)
    else:
        scale = (2.0 / n) ** 0.5
    p = g.op("MatMul", x, g.const(np.asarray(est.random_weights_, np.float64), "random_weights"), dtype=DOUBLE)
    p = g.op("Add", p, g.const(np.asarray(est.random_offset_, np.float64), "random_offset"), dtype=DOUBLE)
    p = g.op("Mul", g.op("Cos", p, dtype=DOUBLE), f64(g, scale, "scale"), dtype=DOUBLE)
    return feature_block(g, est, p, cols)


_INTERVALS = {1: 0.8, 2: 0.5, 3: 0.4}


@register_emitter(ka.AdditiveChi2Sampler)
def emit_additive_chi2(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    from onegraph.errors import ExportError

    steps = est.sample_steps
    interval = est.sample_interval if est.sample_interval is not None else _INTERVALS.get(steps)
    if interval is None:
        raise ExportError("AdditiveChi2Sampler needs sample_interval for sample_steps > 3")
    x = g.matrix(cols, DOUBLE)
    zero = f64(g, 0.0, "zero")
    nz = g.op("Not", g.op("Equal", x, zero, dtype=BOOL), dtype=BOOL)
    one = f64(g, 1.0, "one")
    safe = g.op("Where", nz, x, one, dtype=DOUBLE)  # log / sqrt only where x != 0

    def masked(v):
        return g.op("Where", nz, v, zero, dtype=DOUBLE)

    parts = [masked(g.op("Sqrt", g.op("Mul", safe, f64(g, interval, "interval"), dtype=DOUBLE), dtype=DOUBLE))]
    log_step = g.op("Mul", f64(g, interval, "interval"), g.op("Log", safe, dtype=DOUBLE), dtype=DOUBLE)
    step = g.op("Mul", g.op("Mul", f64(g, 2.0, "two"), safe, dtype=DOUBLE), f64(g, interval, "interval"),
                dtype=DOUBLE)
    for j in range(1, steps):
        factor = g.op("Sqrt", g.op("Div", step, f64(g, np.cosh(np.pi * j * interval), "cosh"), dtype=DOUBLE),
                      dtype=DOUBLE)
        angle = g.op("Mul", f64(g, float(j), "j"), log_step, dtype=DOUBLE)
        parts.append(masked(g.op("Mul", factor, g.op("Cos", angle, dtype=DOUBLE), dtype=DOUBLE)))
        parts.append(masked(g.op("Mul", factor, g.op("Sin", angle, dtype=DOUBLE), dtype=DOUBLE)))
    return feature_block(g, est, g.op("Concat", *parts, axis=1, dtype=DOUBLE), cols)


@register_emitter(ka.Nystroem)
def emit_nystroem(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    params = est._get_kernel_params()
    k = kernel(g, g.matrix(cols, DOUBLE), est.components_, est.kernel, gamma=params.get("gamma"),
               degree=params.get("degree", 3), coef0=params.get("coef0", 1), what="Nystroem")
    y = g.op("MatMul", k, g.const(np.ascontiguousarray(est.normalization_.T), "normalization_t"), dtype=DOUBLE)
    return feature_block(g, est, y, cols)


@register_emitter(ka.PolynomialCountSketch)
def emit_count_sketch(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    x = g.op("Mul", f64(g, np.sqrt(est.gamma), "sqrt_gamma"), g.matrix(cols, DOUBLE), dtype=DOUBLE)
    if est.coef0 != 0:
        ones = g.op("Add", g.op("Mul", g.op("Gather", x, i64(g, [0], "c0"), axis=1, dtype=DOUBLE),
                                f64(g, 0.0, "zero"), dtype=DOUBLE), f64(g, np.sqrt(est.coef0), "sqrt_coef0"),
                    dtype=DOUBLE)
        x = g.op("Concat", x, ones, axis=1, dtype=DOUBLE)
    n = est.n_components
    n_in = est.indexHash_.shape[1]
    sketches = []
    for d in range(est.degree):
        s = np.zeros((n_in, n))
        for j in range(n_in):
            s[j, est.indexHash_[d, j]] += est.bitHash_[d, j]
        sketches.append(g.op("MatMul", x, g.const(s, "sketch"), dtype=DOUBLE))
    k_idx = np.arange(n)
    circulant = (k_idx[:, None] - k_idx[None, :]) % n  # [k, j] -> (k - j) mod n
    out = sketches[0]
    for s in sketches[1:]:
        rolled = g.op("Gather", s, g.const(circulant.astype(np.int64), "circulant"), axis=1, dtype=DOUBLE)  # [N, k, j]
        prod = g.op("Mul", g.op("Unsqueeze", out, i64(g, [1], "axis1"), dtype=DOUBLE), rolled, dtype=DOUBLE)
        out = g.op("ReduceSum", prod, i64(g, [2], "axis2"), keepdims=0, dtype=DOUBLE)
    return feature_block(g, est, out, cols)
