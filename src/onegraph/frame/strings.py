"""String tensor building blocks for emitters, all standard ai.onnx operators (opset >= 20).

* :func:`full_match` — ``RegexFullMatch`` (RE2 syntax, UTF-8, no host locale);
* :func:`split` / :func:`part` — ``StringSplit`` on a literal delimiter and the k-th part, padded so a
  batch in which no row has k parts still has the column (onnxruntime sizes the output to the batch);
* :func:`concat` — ``StringConcat`` (broadcasting);
* :func:`leading_int` — the integer a string starts with. The ONNX ``Cast`` spec reads a string as a
  whole number: onnxruntime's ``std::stoll`` happens to stop at the first non-digit, but onnx's reference
  evaluator (and any runtime reading the spec literally) refuses ``"1970-01-01"``. So the digit run is
  first cut out with ``StringSplit`` at each character that may follow it (the caller names them: its
  regular expression has already validated the string; other rows are replaced by ``"0"``), and ``Cast``
  only ever sees digits. Integer parsing does not depend on the host locale; ``Cast`` from string to
  *float* (``std::stod``) does, and is never emitted.
"""

from __future__ import annotations

import numpy as np

from onegraph.emit import BOOL, INT64, STRING
from onegraph.frame.tensors import Val, count_at_most, where

__all__ = ["text", "full_match", "split", "part", "concat", "leading_int", "digit_count", "join", "replace"]


def text(x: Val, value: str) -> Val:
    """A string constant (scalar) broadcasting against ``x``."""
    return x.lift(np.asarray(value, dtype=object))


def full_match(x: Val, pattern: str) -> Val:
    """True where the whole string matches ``pattern`` (RE2)."""
    g = x.g
    key = ("regex", id(x.value), pattern)
    return Val(g, g.derived(key, lambda: g.op("RegexFullMatch", x.value, pattern=pattern, dtype=BOOL)), BOOL)


def split(x: Val, delimiter: str, maxsplit: int | None = None) -> tuple[Val, Val]:
    """``StringSplit``: the parts ``[N, P]`` (padded with ``""``) and their number ``[N]`` (0 for ``""``)."""
    if not delimiter:
        raise ValueError("an empty delimiter splits on runs of spaces in ONNX; give a literal delimiter")
    g = x.g

    def make():
        return g.op("StringSplit", x.value, delimiter=delimiter, maxsplit=maxsplit, outputs=2)

    parts, count = g.derived(("split", id(x.value), delimiter, maxsplit), make)
    parts.dtype = STRING
    count.dtype = INT64
    return Val(g, parts, STRING), Val(g, count, INT64)


def part(parts: Val, k: int) -> Val:
    """Column ``k`` of a ``[N, P]`` string tensor, ``""`` where the batch has fewer than ``k + 1`` columns."""
    g = parts.g

    def make():
        shape = g.op("Shape", parts.value, end=1, dtype=INT64)
        width = g.op("Concat", shape, g.const(np.array([k + 1], np.int64), "width"), axis=0, dtype=INT64)
        pad = g.op("Expand", g.const(np.array([[""]], dtype=object), "pad"), width, dtype=STRING)
        wide = g.op("Concat", parts.value, pad, axis=1, dtype=STRING)
        return g.op("Gather", wide, g.const(np.int64(k), "idx"), axis=1, dtype=STRING)

    return Val(g, g.derived(("part", id(parts.value), k), make), STRING)


def concat(a: Val, b: Val | str) -> Val:
    """Element-wise ``a + b`` for strings."""
    b = a.lift(np.asarray(b, dtype=object)) if isinstance(b, str) else b
    g = a.g
    return Val(g, g.op("StringConcat", a.value, b.value, dtype=STRING), STRING)


def leading_int(x: Val, ok: Val, stops: str = "", *, whitespace: bool = False) -> Val:
    """The integer each string of ``x`` starts with, 0 where ``ok`` is False.

    Wherever ``ok`` holds, ``x`` must start with a digit, its leading digit run must fit in int64 (at most
    18 digits) and be followed by nothing, by one of the characters of ``stops``, or (``whitespace``) by a
    whitespace character. The run is cut at each of them (``StringSplit``, first part) before ``Cast``,
    which the spec defines for a string holding a number and nothing else.
    """
    y = where(ok, x, text(x, "0"))
    for c in dict.fromkeys(stops):
        y = part(split(y, c, 1)[0], 0)
    if whitespace:  # one split for every whitespace character: an empty delimiter splits on runs of them
        y = part(_split_whitespace(y), 0)
    return y.cast(INT64)


def _split_whitespace(x: Val) -> Val:
    g = x.g
    parts, count = g.derived(("split", id(x.value), "", 1),
                             lambda: g.op("StringSplit", x.value, delimiter="", maxsplit=1, outputs=2))
    parts.dtype, count.dtype = STRING, INT64
    return Val(g, parts, STRING)


def digit_count(value: Val, max_digits: int = 19) -> Val:
    """Number of decimal digits of non-negative int64 ``value`` (1 for 0)."""
    return count_at_most(value, np.array([10**k for k in range(1, max_digits)], dtype=np.int64)) + 1


def join(parts: Val, count: Val, separator: str) -> Val:
    """Each row's first ``count`` parts joined with ``separator`` (the inverse of :func:`split`).

    A ``Loop`` over the part columns (as many iterations as the widest row of the batch has parts).
    """
    g = parts.g
    import onnx_ir as ir

    first = part(parts, 0)
    shape = g.op("Shape", parts.value, start=1, end=2, dtype=INT64)
    trips = g.op("Sub", g.op("Squeeze", shape, g.const(np.array([0], np.int64), "axes"), dtype=INT64),
                 g.const(np.int64(1), "one"), dtype=INT64)
    trips = g.op("Max", trips, g.const(np.int64(0), "zero"), dtype=INT64)
    i = ir.Value(name=g.unique("i"), type=ir.TensorType(INT64), shape=ir.Shape([]))
    cond = ir.Value(name=g.unique("cond"), type=ir.TensorType(BOOL), shape=ir.Shape([]))
    acc = ir.Value(name=g.unique("acc"), type=ir.TensorType(STRING), shape=ir.Shape(["N"]))
    with g.subgraph("join", [i, cond, acc]) as body:
        j = g.op("Add", i, g.const(np.int64(1), "one"), dtype=INT64)
        column = g.op("Gather", parts.value, j, axis=1, dtype=STRING)
        joined = g.op("StringConcat", acc, g.const(np.asarray(separator, dtype=object), "sep"), dtype=STRING)
        joined = g.op("StringConcat", joined, column, dtype=STRING)
        taken = g.op("Less", j, count.value, dtype=BOOL)
        out = g.op("Where", taken, joined, acc, dtype=STRING)
        keep = g.op("Identity", cond, dtype=BOOL)
        body.outputs.extend([keep, out])
    result = g.op("Loop", trips, None, first.value, body=body, dtype=STRING)
    return Val(g, result, STRING)


def replace(x: Val, old: str, new: str) -> Val:
    """Every occurrence of the literal ``old`` replaced by ``new`` (split, then join)."""
    parts, count = split(x, old)
    return join(parts, count, new)
