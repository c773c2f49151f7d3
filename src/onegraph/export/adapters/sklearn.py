"""scikit-learn preprocessing -> graph: Pipeline, ColumnTransformer, FeatureUnion and any transformer.

:func:`emit_step` emits one fitted object on a list of columns. Containers recurse into their steps, each
under a scope named by its path (``columntransformer.num.standardscaler``), so every node records which
step made it. Transformers use their registered emitter (onegraph's transformers and scikit-learn's
scalers, imputers and encoders, see :mod:`onegraph.frame.transformers`); any other scikit-learn
transformer falls back to skl2onnx with a double input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sklearn.compose
import sklearn.pipeline
import sklearn.preprocessing

from onegraph.emit import (
    DOUBLE,
    Col,
    GraphBuilder,
    find_emitter,
    register_emitter,
)
from onegraph.errors import ExportError
from onegraph.export.adapters.ops import expm1, log1p

# onegraph's transformers register the emitters of scikit-learn's own (SimpleImputer, OneHotEncoder, the
# scalers...) when their module is imported: a pipeline of scikit-learn objects alone needs them too
from onegraph.frame import transformers as _registers_emitters  # noqa: F401
from onegraph.frame.tensors import expm1, log1p

__all__ = ["emit_step", "step_name", "emit_pipeline", "emit_column_transformer", "emit_feature_union",
           "emit_function_transformer"]


def emit_step(obj: Any, g: GraphBuilder, cols: list[Col], path: str) -> list[Col]:
    """Emit fitted ``obj`` (a transformer, container, ``"passthrough"`` or None) on ``cols``."""
    if obj is None or obj == "passthrough":
        return list(cols)
    if obj == "drop":
        return []
    _check_fitted(obj, path)
    emitter = find_emitter(obj) or _skl2onnx_transformer
    with g.scope(path, obj):
        return emitter(obj, g, cols)


def _check_fitted(obj: Any, path: str) -> None:
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(obj)
    except NotFittedError:
        raise ExportError(f"{type(obj).__name__} at {path} is not fitted", hint="fit the pipeline before building") from None
    except TypeError:  # not an estimator at all
        raise ExportError(f"{obj!r} at {path} is not a scikit-learn transformer",
                          hint="give fitted transformers (or 'passthrough' / 'drop')") from None


def step_name(obj: Any) -> str:
    return type(obj).__name__.lower()


@register_emitter(sklearn.pipeline.Pipeline)
def emit_pipeline(pipe: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    for name, step in pipe.steps:
        if step is None or step == "passthrough":
            continue
        if not hasattr(step, "transform"):
            raise ExportError(f"pipeline step {name!r} ({type(step).__name__}) is not a transformer: only a "
                              "pipeline's last step may be a model",
                              hint="put the model last (build(pipeline)), or pass it as build's model argument")
        cols = emit_step(step, g, cols, f"{g.path}.{name}" if g.path else name)
    return cols


@register_emitter(sklearn.compose.ColumnTransformer)
def emit_column_transformer(ct: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    indices = getattr(ct, "_transformer_to_input_indices", None)
    if indices is None:
        raise ExportError("this ColumnTransformer lacks the fitted column layout onegraph reads",
                          hint="use scikit-learn >= 1.2")
    if len(cols) != ct.n_features_in_:
        raise ExportError(f"ColumnTransformer was fitted on {ct.n_features_in_} columns but receives {len(cols)}")
    out: list[Col] = []
    weights = ct.transformer_weights or {}
    for name, trans, _ in ct.transformers_:
        if trans == "drop":
            continue
        selected = [cols[i] for i in indices.get(name, [])]
        if not selected:
            continue
        part = emit_step(trans, g, selected, f"{g.path}.{name}" if g.path else name)
        out.extend(_weighted(g, part, weights.get(name), name))
    names = _names_out(ct, cols, out)
    if len(names) != len(out):
        raise ExportError(f"ColumnTransformer: the graph gives {len(out)} columns where scikit-learn reports "
                          f"{len(names)}", hint="report this pipeline to onegraph")
    return [c.renamed(n) for c, n in zip(out, names)]


@register_emitter(sklearn.pipeline.FeatureUnion)
def emit_feature_union(union: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    out: list[Col] = []
    weights = union.transformer_weights or {}
    for name, trans in union.transformer_list:
        part = emit_step(trans, g, cols, f"{g.path}.{name}" if g.path else name)
        out.extend(_weighted(g, part, weights.get(name), name))
    return [c.renamed(n) for c, n in zip(out, _names_out(union, cols, out))]


def _weighted(g: GraphBuilder, cols: list[Col], weight: Any, name: str) -> list[Col]:
    """``transformer_weights``: the step's output multiplied by its weight (scikit-learn's ``_hstack``)."""
    if weight is None or not cols:
        return cols
    x = g.matrix(cols, DOUBLE)
    y = g.op("Mul", x, g.const(np.float64(weight), "weight"), dtype=DOUBLE)
    return g.block(y, [c.name for c in cols], "float", DOUBLE)


def _names_out(container: Any, cols: list[Col], out: list[Col]) -> list[str]:
    """The container's ``get_feature_names_out``; the emitted names where a step cannot name its outputs
    (a FunctionTransformer without ``feature_names_out``)."""
    try:
        return [str(n) for n in container.get_feature_names_out([c.name for c in cols])]
    except (AttributeError, ValueError, TypeError):
        return [c.name for c in out]


#: numpy functions of one array with an ONNX operator that onnxruntime runs in double, giving numpy's values
#: (``Round`` rounds half to even, as ``np.rint`` / ``np.round``; ``Sign`` keeps NaN, as ``np.sign``)
_UFUNCS = {np.log: "Log", np.exp: "Exp", np.sqrt: "Sqrt", np.abs: "Abs", np.fabs: "Abs", np.negative: "Neg",
           np.tanh: "Tanh", np.sin: "Sin", np.cos: "Cos", np.floor: "Floor", np.ceil: "Ceil", np.rint: "Round",
           np.round: "Round", np.sign: "Sign", np.reciprocal: "Reciprocal"}
#: the same through a constant: log base b as ln(x) / ln(b) (within an ulp of numpy's), 2**x as Pow
_SCALED_LOGS = {np.log2: np.log(2.0), np.log10: np.log(10.0)}


def _function_names() -> str:
    names = {getattr(f, "__name__", str(f)) for f in [*_UFUNCS, *_SCALED_LOGS, np.log1p, np.expm1, np.square,
                                                      np.exp2, np.positive]}
    return ", ".join(f"np.{n}" for n in sorted(names))


@register_emitter(sklearn.preprocessing.FunctionTransformer)
def emit_function_transformer(ft: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """Identity, or one numpy ufunc with an ONNX equivalent (``np.log1p``, ``np.log``, ``np.exp``, ...)."""
    func = ft.func
    if func is None:
        return list(cols)
    shown = getattr(func, "__name__", func)
    if ft.kw_args:
        raise ExportError(f"FunctionTransformer({shown}) with kw_args cannot be exported",
                          hint="use a function of the array alone (one of " + _function_names() + "), or an "
                          "onegraph transformer")
    x = g.matrix(cols, DOUBLE)
    if func is np.log1p:
        y = log1p(g, x)
    elif func is np.expm1:
        y = expm1(g, x)
    elif func in _UFUNCS:
        y = g.op(_UFUNCS[func], x, dtype=DOUBLE)
    elif func in _SCALED_LOGS:
        y = g.op("Div", g.op("Log", x, dtype=DOUBLE), g.const(np.float64(_SCALED_LOGS[func]), "log_base"),
                 dtype=DOUBLE)
    elif func is np.square:
        y = g.op("Mul", x, x, dtype=DOUBLE)
    elif func is np.exp2:
        y = g.op("Pow", g.const(np.float64(2.0), "two"), x, dtype=DOUBLE)
    elif func is np.positive:
        y = x
    else:
        known = isinstance(func, np.ufunc) or getattr(func, "__module__", "").startswith("numpy")
        raise ExportError(f"FunctionTransformer({shown}) " + (f"uses np.{shown}, which onegraph has no graph for"
                                                               if known else "runs arbitrary Python, which has no "
                                                               "graph equivalent"),
                          hint=f"use one of {_function_names()}, or an onegraph transformer (e.g. LogTransformer)")
    names = [c.name for c in cols]
    try:
        names = [str(n) for n in ft.get_feature_names_out(names)]
    except Exception:  # feature_names_out=None makes get_feature_names_out raise
        pass
    return g.block(y, names, "float", DOUBLE)


def _skl2onnx_transformer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """Any other fitted transformer, through skl2onnx on a double matrix of the columns."""
    from onegraph.export.adapters.onnx_graph import splice

    text = [c.name for c in cols if c.kind == "string"]
    if text:
        raise ExportError(f"{type(est).__name__} at {g.path or 'top level'} receives text column(s) "
                          f"{', '.join(map(repr, text[:5]))}, and onegraph has no emitter for it",
                          hint="encode text first (onegraph.frame.OneHotEncoder / OrdinalEncoder / TargetEncoder) "
                               "or use an onegraph transformer")
    from onegraph.export.adapters.models import skl2onnx_graph

    x = g.matrix(cols, DOUBLE)
    proto, x_in = skl2onnx_graph(est, g, x, len(cols), f"{type(est).__name__} at {g.path or 'top level'}")
    outs = splice(g, proto, {"X": x_in}, prefix=g.unique(type(est).__name__) + "/", what=type(est).__name__)
    (y,) = outs.values()
    if y.dtype != DOUBLE:
        y = g.op("Cast", y, to=DOUBLE, dtype=DOUBLE)
    try:
        names = [str(n) for n in est.get_feature_names_out([c.name for c in cols])]
    except Exception:  # not every transformer names its outputs
        width = y.shape[1] if y.shape is not None and len(y.shape) == 2 and isinstance(y.shape[1], int) else None
        if width is None:
            raise ExportError(f"{type(est).__name__} does not report its output columns",
                              hint="use a transformer with get_feature_names_out") from None
        names = [f"{type(est).__name__.lower()}{i}" for i in range(width)]
    return g.block(y, names, "float", DOUBLE)
