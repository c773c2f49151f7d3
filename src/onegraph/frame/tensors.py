"""Typed tensor arithmetic for emitters: write ``(days + 3) % 7`` and get ONNX nodes.

Calendar arithmetic, date parsing and the expression transformer compute many small element-wise
formulas. :class:`Val` wraps one graph value with its element type and overloads Python's operators so a
formula reads as the algorithm it implements; each operator adds the ONNX node(s) computing numpy's
semantics for that type:

* ``int64``: ``+ - *`` wrap like numpy; ``//`` and ``%`` are *floor* division and modulo (numpy /
  Python), built from ONNX ``Div`` (which truncates) and ``Mod(fmod=0)`` (sign of the divisor);
* ``double``: IEEE arithmetic (NaN propagates); ``//`` and ``%`` are numpy's ``floor_divide`` and
  ``remainder`` (its ``npy_divmod``: from ``Mod(fmod=1)``, corrected to the sign of the divisor);
* comparisons give ``bool``; ``&``, ``|``, ``~`` are logical on ``bool``.

Python scalars on either side become constants of the other operand's type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import BOOL, DOUBLE, FLOAT, INT64, STRING, GraphBuilder

__all__ = ["Val", "scalar", "where", "minimum", "maximum", "any_of", "all_of", "lookup", "count_at_most", "log1p",
           "expm1"]

_NUMPY = {INT64: np.int64, DOUBLE: np.float64, BOOL: np.bool_, FLOAT: np.float32}


class Val:
    """One graph value and its element type, with numpy-semantics operators."""

    __slots__ = ("g", "value", "dtype")

    def __init__(self, g: GraphBuilder, value: ir.Value, dtype: ir.DataType) -> None:
        self.g = g
        self.value = value
        self.dtype = dtype

    # -- construction --------------------------------------------------------------------------
    def lift(self, other: Any) -> Val:
        """``other`` as a Val: Vals pass through, scalars and arrays become constants of our type."""
        if isinstance(other, Val):
            return other
        if self.dtype == STRING:
            return Val(self.g, self.g.const(np.asarray(other, dtype=object), "s"), STRING)
        return Val(self.g, self.g.const(np.asarray(other, dtype=_NUMPY[self.dtype]), "k"), self.dtype)

    def _op(self, op: str, *others: Any, dtype: ir.DataType | None = None, **attrs: Any) -> Val:
        args = [self.value] + [self.lift(o).value for o in others]
        out = dtype or self.dtype
        return Val(self.g, self.g.op(op, *args, dtype=out, **attrs), out)

    def cast(self, dtype: ir.DataType) -> Val:
        if dtype == self.dtype:
            return self
        return Val(self.g, self.g.op("Cast", self.value, to=dtype, dtype=dtype), dtype)

    # -- arithmetic ----------------------------------------------------------------------------
    def __add__(self, o: Any) -> Val:
        return self._op("Add", o)

    def __radd__(self, o: Any) -> Val:
        return self.lift(o)._op("Add", self)

    def __sub__(self, o: Any) -> Val:
        return self._op("Sub", o)

    def __rsub__(self, o: Any) -> Val:
        return self.lift(o)._op("Sub", self)

    def __mul__(self, o: Any) -> Val:
        return self._op("Mul", o)

    def __rmul__(self, o: Any) -> Val:
        return self.lift(o)._op("Mul", self)

    def __truediv__(self, o: Any) -> Val:
        if self.dtype not in (DOUBLE, FLOAT):
            raise TypeError("true division needs doubles or floats; use // on integers")
        return self._op("Div", o)

    def __rtruediv__(self, o: Any) -> Val:
        return self.lift(o) / self

    def __floordiv__(self, o: Any) -> Val:
        o = self.lift(o)
        if self.dtype == DOUBLE:
            return self._float_floordiv(o)
        # (a - a mod b) / b is exact, and Mod(fmod=0) takes the divisor's sign: a floor division
        return (self - self % o)._op("Div", o)

    def _float_floordiv(self, o: Val) -> Val:
        # numpy's npy_divmod: (a - fmod(a, b)) / b, corrected by one where the signs differ, then
        # rounded; this is not floor(a / b) (1 // 0.1 is 9.0, floor(1 / 0.1) is 10.0)
        mod = self._op("Mod", o, fmod=1)
        div = (self - mod) / o
        div = where((mod != 0.0) & ((o < 0.0) ^ (mod < 0.0)), div - 1.0, div)
        floor = div.floor()
        floor = where((div - floor) > 0.5, floor + 1.0, floor)
        return where(o == 0.0, self / o, floor)

    def __rfloordiv__(self, o: Any) -> Val:
        return self.lift(o) // self

    def __mod__(self, o: Any) -> Val:
        o = self.lift(o)
        if self.dtype != DOUBLE:
            return self._op("Mod", o, fmod=0)
        # numpy remainder: fmod, then shifted by the divisor where the signs differ
        r = self._op("Mod", o, fmod=1)
        shift = (r != 0.0) & ((r < 0.0) ^ (o < 0.0))
        return where(shift, r + o, r)

    def __rmod__(self, o: Any) -> Val:
        return self.lift(o) % self

    def __pow__(self, o: Any) -> Val:
        return self._op("Pow", o)

    def __rpow__(self, o: Any) -> Val:
        return self.lift(o)._op("Pow", self)

    def __neg__(self) -> Val:
        return self._op("Neg")

    def __abs__(self) -> Val:
        return self._op("Abs")

    def floor(self) -> Val:
        return self._op("Floor")

    def unary(self, op: str) -> Val:
        """An element-wise ONNX operator with one input and output of the same type (Log, Exp, Sin...)."""
        return self._op(op)

    # -- comparisons and logic -----------------------------------------------------------------
    def __eq__(self, o: Any) -> Val:  # type: ignore[override]
        return self._op("Equal", o, dtype=BOOL)

    def __ne__(self, o: Any) -> Val:  # type: ignore[override]
        return (self == o)._op("Not")

    def __lt__(self, o: Any) -> Val:
        return self._op("Less", o, dtype=BOOL)

    def __le__(self, o: Any) -> Val:
        return self._op("LessOrEqual", o, dtype=BOOL)

    def __gt__(self, o: Any) -> Val:
        return self._op("Greater", o, dtype=BOOL)

    def __ge__(self, o: Any) -> Val:
        return self._op("GreaterOrEqual", o, dtype=BOOL)

    def __and__(self, o: Any) -> Val:
        return self._op("And", o)

    def __or__(self, o: Any) -> Val:
        return self._op("Or", o)

    def __xor__(self, o: Any) -> Val:
        return self._op("Xor", o)

    def __invert__(self) -> Val:
        return self._op("Not")

    def isnan(self) -> Val:
        return self._op("IsNaN", dtype=BOOL)

    __hash__ = None  # type: ignore[assignment]  # == builds a node; Vals are not dict keys


def scalar(g: GraphBuilder, value: Any, dtype: ir.DataType = INT64) -> Val:
    """A scalar constant of ``dtype`` (broadcasts against any tensor)."""
    if dtype == STRING:
        return Val(g, g.const(np.asarray(value, dtype=object), "s"), STRING)
    return Val(g, g.const(np.asarray(value, dtype=_NUMPY[dtype]), "k"), dtype)


def where(cond: Val, a: Any, b: Any) -> Val:
    """``a`` where ``cond`` else ``b`` (scalars take the other branch's type; two Python scalars give
    int64 for ints, double for floats, string for str)."""
    if isinstance(a, Val):
        b = a.lift(b)
    elif isinstance(b, Val):
        a = b.lift(a)
    else:
        kinds = {type(a), type(b)}
        dtype = STRING if str in kinds else DOUBLE if float in kinds else BOOL if kinds == {bool} else INT64
        a, b = scalar(cond.g, a, dtype), scalar(cond.g, b, dtype)
    if a.dtype == BOOL:  # onnxruntime has no Where kernel for bool
        return (cond & a) | (~cond & b)
    return Val(cond.g, cond.g.op("Where", cond.value, a.value, b.value, dtype=a.dtype), a.dtype)


def minimum(a: Val, b: Any) -> Val:
    return a._op("Min", b)


def maximum(a: Val, b: Any) -> Val:
    return a._op("Max", b)


def any_of(*conds: Val) -> Val:
    out = conds[0]
    for c in conds[1:]:
        out = out | c
    return out


def all_of(*conds: Val) -> Val:
    out = conds[0]
    for c in conds[1:]:
        out = out & c
    return out


def lookup(table: np.ndarray, index: Val) -> Val:
    """``table[index]`` for a constant 1-D table (``Gather``); the result has the table's type."""
    g = index.g
    arr = np.asarray(table)
    dtype = {np.dtype(np.int64): INT64, np.dtype(np.float64): DOUBLE, np.dtype(np.bool_): BOOL}.get(arr.dtype, STRING)
    return Val(g, g.op("Gather", g.const(arr, "table"), index.value, axis=0, dtype=dtype), dtype)


def count_at_most(x: Val, thresholds: np.ndarray) -> Val:
    """int64 ``[N]``: how many of the sorted constant ``thresholds`` are ``<= x`` (``np.searchsorted(thresholds,
    x, side="right")``): one broadcast comparison ``[N, K]`` and a sum. NaN counts none."""
    g = x.g
    column = Val(g, g.op("Unsqueeze", x.value, g.const(np.array([1], np.int64), "axes"), dtype=x.dtype), x.dtype)
    passed = (column >= x.lift(np.asarray(thresholds))).cast(INT64)
    count = g.op("ReduceSum", passed.value, g.const(np.array([1], np.int64), "axes"), keepdims=0, dtype=INT64)
    return Val(g, count, INT64)


# -- log1p / expm1 (ONNX has neither) ------------------------------------------------------------------
# numpy's and the C library's log1p / expm1 are within 1 ulp; these compositions of ONNX Log / Exp (W. Kahan's
# corrections, the formulas of Eigen's generic_plog1p / generic_expm1) stay within a few ulps of them, where the
# naive ``log(1 + x)`` / ``exp(x) - 1`` lose every digit of ``x`` that ``1 + x`` rounds away.
def log1p(g: GraphBuilder, x: ir.Value) -> ir.Value:
    """double ``log(1 + x)`` of a double tensor: ``u = 1 + x``; ``x`` where ``u == 1`` or ``u`` is +inf, else
    ``x * (log(u) / (u - 1))`` (Goldberg, "What every computer scientist should know about floating-point
    arithmetic", 1991, theorem 4). ``-1`` gives -inf, below it NaN, NaN stays NaN (numpy's ``np.log1p``)."""
    one = g.const(np.float64(1.0), "one")
    u = g.op("Add", x, one, dtype=DOUBLE)
    log_u = g.op("Log", u, dtype=DOUBLE)
    corrected = g.op("Mul", x, g.op("Div", log_u, g.op("Sub", u, one, dtype=DOUBLE), dtype=DOUBLE), dtype=DOUBLE)
    keep = g.op("Or", g.op("Equal", u, one, dtype=BOOL), g.op("Equal", u, log_u, dtype=BOOL), dtype=BOOL)
    return g.op("Where", keep, x, corrected, dtype=DOUBLE)


def expm1(g: GraphBuilder, x: ir.Value) -> ir.Value:
    """double ``exp(x) - 1`` of a double tensor: ``u = exp(x)``; ``x`` where ``u == 1``; ``-1`` where
    ``u - 1 == -1``; ``u`` where ``u`` is +inf; else ``(u - 1) * (x / log(u))`` (Kahan; the product last, so
    it overflows only where the result does). NaN stays NaN (numpy's ``np.expm1``)."""
    one = g.const(np.float64(1.0), "one")
    u = g.op("Exp", x, dtype=DOUBLE)
    um1 = g.op("Sub", u, one, dtype=DOUBLE)
    log_u = g.op("Log", u, dtype=DOUBLE)
    out = g.op("Mul", um1, g.op("Div", x, log_u, dtype=DOUBLE), dtype=DOUBLE)
    out = g.op("Where", g.op("Equal", log_u, u, dtype=BOOL), u, out, dtype=DOUBLE)  # exp(x) = +inf
    out = g.op("Where", g.op("Equal", um1, g.const(np.float64(-1.0), "minus_one"), dtype=BOOL), um1, out, dtype=DOUBLE)
    return g.op("Where", g.op("Equal", u, one, dtype=BOOL), x, out, dtype=DOUBLE)
