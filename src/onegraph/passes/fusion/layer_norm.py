"""Decomposed layer normalization -> ONNX ``LayerNormalization`` (opset 17).

Matches ``(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* scale] [+ bias]`` over trailing axes
(Ba, Kiros & Hinton, 2016; the ONNX operator's own function body), written as exporters write it:
``ReduceMean`` with axes as an input (opset 18) or an attribute, the square as ``Pow(d, 2)`` or
``Mul(d, d)``, the division as ``Div`` or ``Mul`` by ``Reciprocal``, sums and products either way round.

It declines wherever ``LayerNormalization`` would compute something else, including the wrong fusions
ONNX Runtime has shipped:

* the two means reduce other axes, or not the trailing ones, or drop them (``keepdims=0``);
* ``scale`` or ``bias`` broadcast beyond the normalized shape (a ``[seq, d]`` scale on ``[b, seq, d]``) or
  do not have a known shape (the operator applies them per normalized element only);
* ``eps`` is not a one-element constant, or not exactly a float32 value (the operator's ``epsilon`` is a
  float attribute: a double model's ``1e-5`` would be rounded), the exponent is not exactly 2, ``x`` is not float (the operator
  computes a float16 input in float32 by default, which changes the values);
* the model's opset is below 17.

onnxscript ships ``rules.fusion._layer_norm`` (``LayerNormFusion`` + ``LayerNormBiasFusion``): it matches
only the axes-input form with an explicit ``keepdims`` and does not check the shapes of ``scale`` and
``bias``, so it would fire on a broadcasting scale; these rules are written after it with those checks.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript.rewriter import pattern

from onegraph.passes.fusion._match import (
    attr_int,
    constant,
    either,
    rank,
    scalar,
    static_dims,
    unsupported,
)

__all__ = ["LAYER_NORM_OPSET", "LayerNormNoAffine", "LayerNormScale", "LayerNormScaleBias", "rules"]

#: the first opset with LayerNormalization
LAYER_NORM_OPSET = 17

_DIVISIONS = ("div", "mul", "mul_swapped")


def _normalized(op, x, two, eps, division: str | None):
    mean = op.ReduceMean(x, _allow_other_inputs=True, _allow_other_attributes=True, _outputs=["mean"])
    d = op.Sub(x, mean)
    sq = pattern.OrValue([op.Pow(d, two), op.Mul(d, d)])
    var = op.ReduceMean(sq, _allow_other_inputs=True, _allow_other_attributes=True, _outputs=["var"])
    std = op.Sqrt(either(op.Add, var, eps))
    forms = {"div": lambda: op.Div(d, std), "mul": lambda: op.Mul(d, op.Reciprocal(std)),
             "mul_swapped": lambda: op.Mul(op.Reciprocal(std), d)}
    if division is not None:
        return forms[division]()
    return pattern.OrValue([make() for make in forms.values()])


class _LayerNormBase(pattern.RewriteRuleClassBase):
    """Shared checks; subclasses add the affine part.

    ``declines_before``: the operator (``Mul`` for a scale, ``Add`` for a bias) which, applying a valid
    affine parameter to this rule's result, means a rule with the affine part takes the match instead.
    """

    declines_before: str | None = None

    def check(self, context, x, eps, mean, var, two=None, scale=None, bias=None, **_):
        result = pattern.MatchResult()
        reason = unsupported(context.model, x, LAYER_NORM_OPSET, "LayerNormalization")
        if reason:
            return result.fail(reason, x)
        r = rank(x)
        axis = _trailing_axis(mean.producer(), var.producer(), r)
        if axis is None:
            return result.fail("the means do not both reduce the trailing axes with keepdims=1")
        if two is not None and scalar(two) != 2.0:
            return result.fail("the deviation is not squared")
        epsilon = scalar(eps, r)
        if epsilon is None or epsilon < 0:
            return result.fail("eps is not a one-element non-negative constant", eps)
        if float(np.float32(epsilon)) != float(epsilon):
            # the operator's epsilon is a float attribute: a double eps such as 1e-5 would be rounded
            return result.fail(f"eps {epsilon!r} is not a float32 value (the operator's epsilon is a float)", eps)
        self._axis, self._epsilon = axis, epsilon
        for name, value in (("scale", scale), ("bias", bias)):
            if value is not None and _affine_shape(value, x, axis) is None:
                return result.fail(f"{name} broadcasts beyond the normalized shape or has no known shape", value)
        if self.declines_before and _follows(context.root.outputs[0], self.declines_before,
                                             lambda v: _affine_shape(v, x, axis) is not None):
            return result.fail(f"a {self.declines_before} by an affine parameter follows; a larger rule takes it")
        return result

    def rewrite(self, op, x, scale=None, bias=None, **_):
        inputs = [_affine(op, scale, x, self._axis) if scale is not None else _ones(op, x, self._axis)]
        if bias is not None:
            inputs.append(_affine(op, bias, x, self._axis))
        return op.LayerNormalization(x, *inputs, axis=self._axis, epsilon=self._epsilon, stash_type=int(x.dtype))


class LayerNormNoAffine(_LayerNormBase):
    """The normalization alone -> ``LayerNormalization(x, ones)``; declines when a scale follows."""

    declines_before = "Mul"

    def __init__(self, division: str) -> None:
        super().__init__(name=f"LayerNorm[{division}]")
        self.division = division

    def pattern(self, op, x, two, eps):
        return _normalized(op, x, two, eps, self.division)


class LayerNormScale(_LayerNormBase):
    """``normalized * scale`` -> ``LayerNormalization(x, scale)``; declines when a bias follows."""

    declines_before = "Add"

    def __init__(self, swap: bool) -> None:
        super().__init__(name=f"LayerNormScale[{'swapped' if swap else 'plain'}]")
        self.swap = swap

    def pattern(self, op, x, two, eps, scale):
        n = _normalized(op, x, two, eps, None)
        return op.Mul(scale, n) if self.swap else op.Mul(n, scale)


class LayerNormScaleBias(_LayerNormBase):
    """``normalized * scale + bias`` -> ``LayerNormalization(x, scale, bias)``."""

    def __init__(self, swap: bool) -> None:
        super().__init__(name=f"LayerNormScaleBias[{'swapped' if swap else 'plain'}]")
        self.swap = swap

    def pattern(self, op, x, two, eps, scale, bias):
        scaled = either(op.Mul, _normalized(op, x, two, eps, None), scale)
        return op.Add(bias, scaled) if self.swap else op.Add(scaled, bias)


def _trailing_axis(first: ir.Node, second: ir.Node, r: int | None) -> int | None:
    """The first normalized axis when both means reduce the same trailing axes with keepdims=1, else None."""
    axes = [_axes(n) for n in (first, second)]
    if axes[0] is None or axes[0] != axes[1] or not axes[0]:
        return None
    for n in (first, second):
        if attr_int(n, "keepdims", 1) != 1 or attr_int(n, "noop_with_empty_axes", 0) != 0:
            return None
    values = axes[0]
    if r is not None:
        values = sorted(a + r if a < 0 else a for a in values)
        if values != list(range(r - len(values), r)):
            return None
        return values[0] - r
    if all(a < 0 for a in values) and sorted(values) == list(range(-len(values), 0)):
        return -len(values)
    return None


def _axes(node: ir.Node) -> list[int] | None:
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        arr = constant(node.inputs[1])
        return None if arr is None else [int(a) for a in arr.reshape(-1)]
    attr = node.attributes.get("axes")
    return None if attr is None else [int(a) for a in attr.value]


def _affine_shape(value: ir.Value, x: ir.Value, axis: int) -> list[int] | None:
    """The normalized shape when ``value`` (a scale or bias) applies per normalized element only: its
    shape is the normalized shape, after leading 1s that do not raise the rank above ``x``'s."""
    dims = static_dims(value)
    if dims is None or value.dtype != x.dtype or x.shape is None:
        return None
    normalized = list(x.shape)[axis:]
    if not all(isinstance(d, int) for d in normalized) or len(dims) > x.shape.rank():
        return None
    lead, core = dims[: len(dims) - len(normalized)], dims[len(dims) - len(normalized):]
    if len(dims) < len(normalized) or core != normalized or any(d != 1 for d in lead):
        return None
    return [int(d) for d in normalized]


def _affine(op, value: ir.Value, x: ir.Value, axis: int) -> ir.Value:
    shape = _affine_shape(value, x, axis)
    assert shape is not None
    if list(value.shape) == shape:
        return value
    arr = constant(value)
    if arr is not None:
        return op.initializer(ir.tensor(np.ascontiguousarray(arr.reshape(shape))), name=f"{value.name}_ln")
    return op.Reshape(value, op.Constant(value_ints=shape))


def _ones(op, x: ir.Value, axis: int) -> ir.Value:
    shape = [int(d) for d in list(x.shape)[axis:]] if x.shape is not None else None
    dtype = x.dtype.numpy()
    if shape is not None and all(isinstance(d, int) for d in shape):
        return op.Constant(value=ir.tensor(np.ones(shape, dtype)))
    # dynamic normalized shape: ones like the normalized slice of x
    return op.Expand(op.Constant(value=ir.tensor(np.ones((), dtype))),
                     op.Slice(op.Shape(x), op.Constant(value_ints=[axis]), op.Constant(value_ints=[2 ** 62])))


def _follows(value: ir.Value, op_type: str, ok) -> bool:
    """True when ``value``'s only use is an ``op_type`` node whose other operand passes ``ok``."""
    uses = value.uses()
    if len(uses) != 1 or value.is_graph_output():
        return False
    node = uses[0].node
    if node.op_type != op_type or node.domain not in ("", "ai.onnx") or len(node.inputs) != 2:
        return False
    other = node.inputs[1 - uses[0].idx]
    return other is not None and ok(other)


def rules() -> dict[str, list[tuple[pattern.RewriteRule, object]]]:
    """The layer-normalization rules (count key ``layer_norm``)."""
    from onegraph.passes.fusion import make_rule

    instances = [LayerNormScaleBias(False), LayerNormScaleBias(True), LayerNormScale(False), LayerNormScale(True),
                 *(LayerNormNoAffine(d) for d in _DIVISIONS)]
    return {"layer_norm": [make_rule(i) for i in instances]}
