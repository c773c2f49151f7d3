"""Decomposed GELU -> ONNX ``Gelu`` (opset 20): the exact erf form and the tanh approximation.

``Gelu(x) = 0.5 * x * (1 + erf(x / sqrt(2)))`` (``approximate="none"``) and
``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`` (``approximate="tanh"``), per the ONNX
operator spec (Hendrycks & Gimpel, 2016). Matched in the orders exporters write them: PyTorch's
TorchScript exporter (``Div``, ``Erf``, ``Add``, ``Mul(x, .)``, ``Mul(., 0.5)``), its dynamo exporter on
hand-written modules (``Mul(x, 0.5)`` first), and the products and sums either way round; ``x / sqrt(2)``
as ``Div`` or as ``Mul`` by ``1 / sqrt(2)``; ``x^3`` as ``Pow(x, 3)`` or two ``Mul``.

Never fires on a variant: every constant must equal the formula's to a relative 1e-6 (a ``0.0447`` or a
``1.702 * x`` sigmoid approximation stays as it is), must hold one element of a rank no greater than
``x``'s, ``x`` must be float (not double: the operator's function body takes its constants as float32 values
cast to the input's type, ~1e-8 from a double decomposition's), and the model's opset must have ``Gelu``
(20 or later).
onnxscript ships GELU fusions only to ORT's ``com.microsoft`` ``Gelu`` / ``FastGelu`` contrib ops
(``ort_fusions.gelu``), not to the standard operator, hence these rules.
"""

from __future__ import annotations

import math

import onnx_ir as ir
from onnxscript.rewriter import pattern

from onegraph.passes.fusion._match import either, is_number, rank, unsupported

__all__ = ["SQRT_2", "SQRT_2_OVER_PI", "TANH_CUBIC", "GELU_OPSET", "GeluErf", "GeluTanh", "rules"]

SQRT_2 = math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
TANH_CUBIC = 0.044715
#: the first opset with Gelu
GELU_OPSET = 20

# How the product 0.5 * x * s is associated: (x * 0.5) * s, (x * s) * 0.5, x * (s * 0.5).
_PRODUCTS = ("half_x", "x_s", "s_half")


def _product(op, form: str, swap: bool, x, half, s):
    if form == "half_x":
        a, b = either(op.Mul, x, half), s
    elif form == "x_s":
        a, b = either(op.Mul, x, s), half
    else:
        a, b = x, either(op.Mul, s, half)
    return op.Mul(b, a) if swap else op.Mul(a, b)


class _GeluBase(pattern.RewriteRuleClassBase):
    approximate = "none"

    def __init__(self, form: str, swap: bool) -> None:
        super().__init__(name=f"{type(self).__name__}[{form}{'/swapped' if swap else ''}]")
        self.form, self.swap = form, swap

    def check(self, context, x, half, one, **constants):
        result = pattern.MatchResult()
        reason = unsupported(context.model, x, GELU_OPSET, "Gelu")
        if reason:
            return result.fail(reason, x)
        if x.dtype == ir.DataType.DOUBLE:
            # the operator's function body takes sqrt(2), sqrt(2 / pi), 0.044715 as float32 constants cast to
            # the input's type: on double it differs from a double decomposition by ~1e-8 (onnxruntime too)
            return result.fail("x is double: Gelu's definition takes its constants in float32", x)
        limit = rank(x) or 1
        if not is_number(half, 0.5, limit) or not is_number(one, 1.0, limit):
            return result.fail("a constant of the 0.5 * x * (1 + ...) product differs")
        return self.check_constants(result, limit, **constants)

    def check_constants(self, result, limit, **constants):
        raise NotImplementedError

    def rewrite(self, op, x, **_):
        return op.Gelu(x, approximate=self.approximate)


class GeluErf(_GeluBase):
    """``0.5 * x * (1 + erf(x / sqrt(2)))`` -> ``Gelu(x)``."""

    approximate = "none"

    def pattern(self, op, x, half, one, k):
        scaled = pattern.OrValue([op.Div(x, k), op.Mul(x, k), op.Mul(k, x)], tag_var="divided",
                                 tag_values=[True, False, False])
        s = either(op.Add, op.Erf(scaled), one)
        return _product(op, self.form, self.swap, x, half, s)

    def check_constants(self, result, limit, k, divided, **_):
        if not is_number(k, SQRT_2 if divided else 1.0 / SQRT_2, limit):
            return result.fail("x is not divided by sqrt(2)")
        return result


class GeluTanh(_GeluBase):
    """``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` -> ``Gelu(x, approximate="tanh")``."""

    approximate = "tanh"

    def pattern(self, op, x, half, one, three, c, k):
        cube = pattern.OrValue([op.Pow(x, three), either(op.Mul, x, either(op.Mul, x, x))],
                               tag_var="power", tag_values=[True, False])
        inner = either(op.Add, x, either(op.Mul, c, cube))
        s = either(op.Add, op.Tanh(either(op.Mul, k, inner)), one)
        return _product(op, self.form, self.swap, x, half, s)

    def check_constants(self, result, limit, c, k, power, three=None, **_):
        if power and not is_number(three, 3.0, limit, rel_tol=0.0):
            return result.fail("x is not cubed")
        if not is_number(c, TANH_CUBIC, limit) or not is_number(k, SQRT_2_OVER_PI, limit):
            return result.fail("the constants of the tanh approximation differ")
        return result


def rules() -> dict[str, list[tuple[pattern.RewriteRule, object]]]:
    """The GELU rules by count key: ``gelu_erf`` and ``gelu_tanh``, one rule per product form and order."""
    from onegraph.passes.fusion import make_rule

    return {key: [make_rule(cls(form, swap)) for form in _PRODUCTS for swap in (False, True)]
            for key, cls in (("gelu_erf", GeluErf), ("gelu_tanh", GeluTanh))}
