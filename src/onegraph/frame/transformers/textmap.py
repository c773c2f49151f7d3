"""Text mapped value by value: case folding, stripping, and the hashing trick — without host locale.

ONNX's only case-mapping operator, ``StringNormalizer``, depends on the host's locale (it fails on hosts
without ``en_US.UTF-8``), and no standard operator reads the characters of a string. So these
transformers work in two tiers:

1. **values seen in fit** (up to ``max_vocabulary`` of the most frequent) are mapped exactly as Python
   computes them (``str.lower`` / ``upper`` / ``casefold`` / ``strip``, the stated hash below), stored in
   an ``ai.onnx.ml.LabelEncoder`` table — every Unicode character, Greek final sigma included;
2. **other values** are computed in the graph, on those rows only (``Compress`` / ``ScatterND`` under an
   ``If`` that is skipped when every value was seen): ASCII letters are case-mapped by ``StringSplit``
   and a ``Loop`` that joins the parts with the mapped letter; ASCII whitespace is stripped the same way;
   the hash reads characters with ``RegexFullMatch`` probes. A row holding a character the graph cannot
   map (a non-ASCII letter whose case changes, non-ASCII whitespace at either end) is refused:
   :func:`onegraph.score` raises :class:`~onegraph.errors.OutOfRangeError` naming the column and rows,
   rather than returning a value that differs from pandas.

The hash (:func:`stated_hash`) is defined so the graph can compute it: it reads the first ``prefix``
characters, each as a code that is exact for U+0000-U+00FF (ASCII and Latin-1) and, above, the
character's 256-code-point block modulo 16 (so ``é`` and ``è`` differ, two CJK characters of the same
block do not); supplementary-plane characters share one code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval, StrOptions

from onegraph.contract.columns import MISSING_STRING, ColumnSpec
from onegraph.emit import BOOL, DOUBLE, INT64, STRING, Col, GraphBuilder
from onegraph.frame.strings import full_match, join, part, replace, split
from onegraph.frame.tensors import Val, lookup, maximum, where
from onegraph.frame.transformers.base import ColumnWise, texts
from onegraph.frame.transformers.categorical import lookup_index

__all__ = ["StringCase", "StringStrip", "char_code", "stated_hash", "HashEncoder"]

_ASCII_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "


def _class(predicate: Callable[[str], bool], start: int = 0x80) -> str:
    """An RE2 character class of the code points from ``start`` up for which ``predicate`` holds."""
    spans, first = [], None
    for cp in range(start, 0x110000):
        ok = not (0xD800 <= cp <= 0xDFFF) and predicate(chr(cp))
        if ok and first is None:
            first = cp
        elif not ok and first is not None:
            spans.append((first, cp - 1))
            first = None
    if first is not None:
        spans.append((first, 0x10FFFF))
    return "[" + "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in spans) + "]"


def _any(g: GraphBuilder, flags: Val) -> Val:
    """One bool: does any row hold True (False for no rows)."""
    count = g.op("ReduceMax", flags.cast(INT64).value, keepdims=0, dtype=INT64)
    return Val(g, g.op("Cast", count, to=BOOL, dtype=BOOL), BOOL)


def _if(g: GraphBuilder, cond: Val, then: Callable[[], Val], otherwise: Val) -> Val:
    """``then()`` when ``cond`` holds, else ``otherwise`` (``If``: the branch not taken is not run)."""
    return Val(g, g.branch(cond.value, lambda: then().value, lambda: otherwise.value, otherwise.dtype),
               otherwise.dtype)


def _patch(g: GraphBuilder, base: Val, x: Val, rows: Val, compute: Callable[[Val], Val]) -> Val:
    """``base`` with the rows where ``rows`` holds replaced by ``compute`` of those rows of ``x``."""

    def patched() -> Val:
        subset = Val(g, g.op("Compress", x.value, rows.value, axis=0, dtype=STRING), STRING)
        where_rows = g.op("Transpose", g.op("NonZero", rows.value, dtype=INT64), perm=[1, 0], dtype=INT64)
        values = compute(subset)
        return Val(g, g.op("ScatterND", base.value, where_rows, values.value, dtype=base.dtype), base.dtype)

    return _if(g, _any(g, rows), patched, base)


class _Vocabulary(ColumnWise):
    """Exact values for the fitted vocabulary, a graph computation for the rest (see module docs)."""

    accepts = ("string",)
    kind = "string"
    _parameter_constraints = {"max_vocabulary": [Interval(Integral, 0, None, closed="left")]}

    def _python(self, value: str) -> Any:
        raise NotImplementedError

    def _fallback(self, x: Val) -> Val:
        """The graph computation for values outside the vocabulary (``x``: the unseen rows only)."""
        raise NotImplementedError

    def _unsupported(self) -> str | None:
        """RE2 pattern of values the fallback cannot compute (refused at scoring), or None."""
        return None

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        self.vocabulary_ = {}

    def _fit_column(self, spec: ColumnSpec, values: pd.Series) -> None:
        counts = pd.Series(texts(spec, values), dtype=object).value_counts(dropna=True)
        self.vocabulary_[spec.name] = [str(v) for v in counts.index[: self.max_vocabulary]]

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray:
        missing = None if self.kind == "string" else np.nan
        return np.array([self._python(v) if isinstance(v, str) else missing for v in texts(spec, values)],
                        dtype=object if self.kind == "string" else np.float64)

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> Col:
        dtype = STRING if self.kind == "string" else DOUBLE
        vocab = self.vocabulary_[spec.name]
        keys = np.asarray(vocab + [MISSING_STRING], dtype=object)
        mapped = [self._python(v) for v in vocab]
        table = (np.asarray(mapped + [MISSING_STRING], dtype=object) if self.kind == "string"
                 else np.asarray(mapped + [np.nan], dtype=np.float64))
        x = Val(g, g.vector(col), STRING)
        index = lookup_index(g, col, keys)
        known = lookup(table, maximum(index, 0))
        unseen = index < 0
        value = _patch(g, known, x, unseen, self._fallback)
        refused = self._unsupported()
        if refused is not None:
            g.flag((unseen & full_match(x, refused)).value, "out_of_range", col.name,
                   covers=self._covers(), hint="fit on data holding these values (they are then mapped exactly)")
        return Col(col.name, self.kind, value.value, dtype)

    def _covers(self) -> str:
        return "the values seen in fit, and ASCII for others"


@functools.lru_cache(maxsize=None)
def _changing(case: str) -> str:
    return _class(lambda c: getattr(c, case)() != c)


@functools.lru_cache(maxsize=None)
def _non_ascii_space() -> str:
    return _class(str.isspace)


class StringCase(_Vocabulary):
    """Lower-case, upper-case or case-fold text exactly as Python's ``str.lower`` / ``upper`` /
    ``casefold`` (pandas' ``Series.str.lower``...), independent of the host locale.

    Parameters
    ----------
    case:
        ``"lower"``, ``"upper"`` or ``"casefold"``.
    max_vocabulary:
        At most this many distinct values (the most frequent in fit) are mapped by table, exactly for every
        Unicode character. Other values are mapped in the graph for ASCII letters; a value holding a
        non-ASCII character whose case would change is refused at scoring (see the module notes).

    Missing values stay missing. Output text, same names.
    """

    _parameter_constraints = {"case": [StrOptions({"lower", "upper", "casefold"})],
                              **_Vocabulary._parameter_constraints}

    def __init__(self, case: str = "lower", *, max_vocabulary: int = 100_000) -> None:
        self.case = case
        self.max_vocabulary = max_vocabulary

    def _python(self, value: str) -> str:
        return getattr(value, self.case)()

    def _fallback(self, x: Val) -> Val:
        g = x.g
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if self.case != "upper" else "abcdefghijklmnopqrstuvwxyz"
        for c in letters:
            x = _if(g, _any(g, full_match(x, f"(?s).*{c}.*")), lambda x=x, c=c: replace(x, c, self._python(c)), x)
        return x

    def _unsupported(self) -> str:
        return f"(?s).*{_changing(self.case)}.*"

    def _covers(self) -> str:
        return "the values seen in fit, and the case of ASCII letters in other values"


class StringStrip(_Vocabulary):
    """Remove leading and trailing whitespace as Python's ``str.strip()`` (pandas' ``Series.str.strip``).

    Values seen in fit (at most ``max_vocabulary``) are stripped by table, every Unicode space included;
    other values are stripped in the graph of ASCII whitespace (``\\t \\n \\v \\f \\r \\x1c-\\x1f`` and
    space); one starting or ending with non-ASCII whitespace is refused at scoring. Output text.
    """

    def __init__(self, *, max_vocabulary: int = 100_000) -> None:
        self.max_vocabulary = max_vocabulary

    def _python(self, value: str) -> str:
        return value.strip()

    def _fallback(self, x: Val) -> Val:
        import onnx_ir as ir

        g = x.g
        space = "[" + "".join(f"\\x{{{ord(c):X}}}" for c in _ASCII_SPACE) + "]"
        for side, pattern in (("lead", f"{space}(?s:.*)"), ("trail", f"(?s:.*){space}")):
            cond = ir.Value(name=g.unique("cond"), type=ir.TensorType(BOOL), shape=ir.Shape([]))
            i = ir.Value(name=g.unique("i"), type=ir.TensorType(INT64), shape=ir.Shape([]))
            acc = ir.Value(name=g.unique("acc"), type=ir.TensorType(STRING), shape=ir.Shape(["K"]))
            with g.subgraph(f"strip_{side}", [i, cond, acc]) as body:
                y = Val(g, acc, STRING)
                for c in _ASCII_SPACE:
                    if side == "lead":
                        at_end = full_match(y, f"{_re_char(c)}(?s:.*)")
                        y = where(at_end, part(split(y, c, 1)[0], 1), y)
                    else:
                        at_end = full_match(y, f"(?s:.*){_re_char(c)}")
                        parts, count = split(y, c)
                        y = where(at_end, join(parts, count - 1, c), y)
                again = _any(g, full_match(y, pattern))
                body.outputs.extend([again.value, g.op("Identity", y.value, dtype=STRING)])
            start = _any(g, full_match(x, pattern))
            x = Val(g, g.op("Loop", None, start.value, x.value, body=body, dtype=STRING), STRING)
        return x

    def _unsupported(self) -> str:
        spaces = _non_ascii_space()
        return f"{spaces}(?s:.*)|(?s:.*){spaces}"

    def _covers(self) -> str:
        return "the values seen in fit, and ASCII whitespace around other values"


def _re_char(c: str) -> str:
    return f"\\x{{{ord(c):X}}}"


# -- hashing ---------------------------------------------------------------------------------------
_HASH_PRIME = 2_147_483_647  # 2^31 - 1
_HASH_MULTIPLIER = 1_000_003


def char_code(c: str) -> int:
    """The code of one character in :func:`stated_hash`: 1-256 for U+0000-U+00FF, 257 + the 256-block
    modulo 16 for the rest of the Basic Multilingual Plane, 273 for supplementary planes."""
    cp = ord(c)
    if cp < 0x100:
        return cp + 1
    if cp < 0x10000:
        return 257 + ((cp >> 8) & 0xF)
    return 273


def stated_hash(value: str, n_buckets: int, prefix: int = 16) -> int:
    """onegraph's string hash: ``h = (h * 1000003 + code) mod (2^31 - 1)`` over the codes of the first
    ``prefix`` characters (0 past the end), then over ``min(len, prefix + 1)``; bucket ``h mod n``."""
    h = 0
    for i in range(prefix):
        h = (h * _HASH_MULTIPLIER + (char_code(value[i]) if i < len(value) else 0)) % _HASH_PRIME
    h = (h * _HASH_MULTIPLIER + min(len(value), prefix + 1)) % _HASH_PRIME
    return h % n_buckets


def _probe_classes() -> list[tuple[int, str]]:
    """(weight, RE2 class): a character's code is 1 + the sum of the weights of the classes it is in."""
    out = []
    for k in range(8):  # bits of the code point below U+0100
        chars = [cp for cp in range(0x100) if cp >> k & 1]
        out.append((1 << k, _ranges(chars)))
    out.append((256, "[\\x{100}-\\x{FFFF}]"))  # 257 + block, with the block bits below
    for k in range(4):
        blocks = [b for b in range(1, 0x100) if b >> k & 1]
        out.append((1 << k, "[" + "".join(f"\\x{{{b << 8:X}}}-\\x{{{(b << 8) | 0xFF:X}}}" for b in blocks) + "]"))
    out.append((272, "[\\x{10000}-\\x{10FFFF}]"))
    return out


def _ranges(cps: list[int]) -> str:
    spans, first, last = [], None, None
    for cp in cps:
        if first is None:
            first = last = cp
        elif cp == last + 1:
            last = cp
        else:
            spans.append((first, last))
            first = last = cp
    if first is not None:
        spans.append((first, last))
    return "[" + "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in spans) + "]"


class HashEncoder(_Vocabulary):
    """The hashing trick: each text value becomes a bucket ``0 .. n_buckets - 1`` of :func:`stated_hash`.

    Parameters
    ----------
    n_buckets:
        Number of buckets.
    prefix:
        Characters read (later characters do not change the bucket; the length, capped at ``prefix + 1``,
        does).
    max_vocabulary:
        Values seen in fit (the most frequent) whose buckets are stored in a table; other values are
        hashed in the graph with ``RegexFullMatch`` probes (about 15 per character read).

    The hash is the same for every value wherever it is computed (see :func:`stated_hash` for what it
    distinguishes). Missing values give NaN. Output float64, same names.
    """

    kind = "float"
    _parameter_constraints = {"n_buckets": [Interval(Integral, 1, None, closed="left")],
                              "prefix": [Interval(Integral, 1, None, closed="left")],
                              **_Vocabulary._parameter_constraints}

    def __init__(self, n_buckets: int = 1024, *, prefix: int = 16, max_vocabulary: int = 100_000) -> None:
        self.n_buckets = n_buckets
        self.prefix = prefix
        self.max_vocabulary = max_vocabulary

    def _python(self, value: str) -> float:
        return float(stated_hash(value, int(self.n_buckets), int(self.prefix)))

    def _fallback(self, x: Val) -> Val:
        g = x.g
        classes = _probe_classes()
        h = None
        length = None
        for i in range(int(self.prefix)):
            present = full_match(x, f"(?s).{{{i + 1}}}.*").cast(INT64)
            code = present
            for weight, cls in classes:
                code = code + full_match(x, f"(?s).{{{i}}}{cls}.*").cast(INT64) * weight
            h = code if h is None else (h * _HASH_MULTIPLIER + code) % _HASH_PRIME
            length = present if length is None else length + present
        longer = full_match(x, f"(?s).{{{int(self.prefix) + 1}}}.*").cast(INT64)
        h = (h * _HASH_MULTIPLIER + length + longer) % _HASH_PRIME
        return (h % int(self.n_buckets)).cast(DOUBLE)

    def _covers(self) -> str:  # pragma: no cover - every value is hashed
        return "every value"
