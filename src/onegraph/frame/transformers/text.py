"""Text columns: concatenation, splitting, value mapping and regular-expression flags.

Every graph here uses standard ai.onnx string operators (``StringConcat``, ``StringSplit``,
``RegexFullMatch``, opset >= 20) and ``ai.onnx.ml.LabelEncoder``; none depends on the host locale. The
pandas side uses the ``str`` accessor on object columns (Python's ``re`` for patterns). Missing text is
pandas' NaN / None; in the graph it is :data:`~onegraph.contract.columns.MISSING_STRING`.
"""

from __future__ import annotations

import re
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval, StrOptions

from onegraph.contract.columns import MISSING_STRING, ColumnSpec
from onegraph.emit import BOOL, DOUBLE, INT64, STRING, Col, GraphBuilder
from onegraph.errors import ColumnTypeError
from onegraph.frame.strings import concat, full_match, part, split, text
from onegraph.frame.tensors import Val, any_of, maximum, where
from onegraph.frame.transformers.base import (
    ColumnWise,
    FrameTransformer,
    numbers,
    texts,
)
from onegraph.frame.transformers.constraints import Satisfies

__all__ = ["StringConcat", "StringSplit", "ValueMap", "RegexMatch"]


def _text_col(g: GraphBuilder, col: Col) -> Val:
    return Val(g, g.vector(col), STRING)


def _missing(x: Val) -> Val:
    return x == text(x, MISSING_STRING)


def _object(values: np.ndarray) -> pd.Series:
    return pd.Series(values, dtype=object)


# -- concatenation ---------------------------------------------------------------------------------
# not ColumnWise: its one output combines all the columns
class StringConcat(FrameTransformer):
    """Join the columns row by row with a separator, as ``first.str.cat([others...], sep=separator)``.

    Parameters
    ----------
    separator:
        Text put between the values.
    na_rep:
        Text standing for a missing value; None (default): a row with any missing value gives missing.
    name:
        Name of the output column (default: the input names joined by ``_``).

    Takes text and integer columns (integers written in decimal, as ``str(int)``); float columns are
    refused, their text form depends on formatting choices (and, in ONNX ``Cast``, on the host locale).
    """

    accepts = ("string", "int")
    _parameter_constraints = {"separator": [str], "na_rep": [str, None], "name": [str, None]}

    def __init__(self, separator: str = "", *, na_rep: str | None = None, name: str | None = None) -> None:
        self.separator = separator
        self.na_rep = na_rep
        self.name = name

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        self.name_ = self.name or "_".join(self.feature_names_in_)

    def _names_out(self) -> list[str]:
        return [self.name_]

    def _values(self, frame: pd.DataFrame, spec) -> pd.Series:
        if spec.kind == "int":
            nums = numbers(spec, frame[spec.name])
            return _object(np.array([None if np.isnan(v) else str(int(v)) for v in nums], dtype=object))
        return _object(texts(spec, frame[spec.name]))

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        cols = [self._values(frame, s) for s in self.input_specs_]
        out = cols[0].str.cat(cols[1:], sep=self.separator, na_rep=self.na_rep) if len(cols) > 1 else cols[0]
        if len(cols) == 1 and self.na_rep is not None:
            out = out.fillna(self.na_rep)
        return pd.DataFrame({self.name_: out.to_numpy(dtype=object)}, index=frame.index)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        values, missing = [], []
        for col in cols:
            if col.kind == "int":
                raw = Val(g, g.vector(col), INT64)
                absent = raw == np.iinfo(np.int64).min
                x = where(absent, MISSING_STRING, raw.cast(STRING))
            else:
                x = _text_col(g, col)
                absent = _missing(x)
            if self.na_rep is not None:
                x = where(absent, self.na_rep, x)
            values.append(x)
            missing.append(absent)
        out = values[0]
        for x in values[1:]:
            out = concat(concat(out, self.separator), x) if self.separator else concat(out, x)
        if self.na_rep is None and len(values) > 1:
            out = where(any_of(*missing), MISSING_STRING, out)
        return [Col(self.name_, "string", out.value, STRING)]


# -- splitting ---------------------------------------------------------------------------------------
class StringSplit(ColumnWise):
    """Split text on a literal separator, as pandas ``Series.str.split(separator, regex=False)``.

    Parameters
    ----------
    separator:
        The literal text to split on (not a pattern; must not be empty).
    n_parts:
        Split into this many columns ``<column>_0`` ... (``str.split(separator, n=n_parts - 1,
        expand=True)``: the last column keeps the unsplit rest; rows with fewer parts have missing
        values). None: the largest number of parts seen in fit.
    index:
        Instead of columns of parts, give one column ``<column>_<index>`` holding part ``index``
        (negative counts from the end; ``str.split(separator).str[index]``; missing when a row has fewer
        parts).

    Missing text gives missing parts; the empty string has one part, the empty string.
    """

    accepts = ("string",)
    _parameter_constraints = {
        # an empty separator would split on runs of spaces in ONNX, on nothing in pandas
        "separator": [Satisfies("a non-empty str", lambda sep: isinstance(sep, str) and sep != "")],
        "n_parts": [Interval(Integral, 1, None, closed="left"), None],
        "index": [Integral, None],
    }

    def __init__(self, separator: str, *, n_parts: int | None = None, index: int | None = None) -> None:
        self.separator = separator
        self.n_parts = n_parts
        self.index = index

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        if self.n_parts is not None and self.index is not None:  # two parameters: not declarable
            raise self._refuse("index", "is given with n_parts",
                               hint="give n_parts for columns of parts, or index for one part, not both")
        self.n_parts_ = {}

    def _fit_column(self, spec: ColumnSpec, values: pd.Series) -> None:
        if self.index is not None:
            return
        if self.n_parts is not None:
            self.n_parts_[spec.name] = int(self.n_parts)
            return
        counts = [v.count(self.separator) + 1 for v in texts(spec, values) if isinstance(v, str)]
        self.n_parts_[spec.name] = max(counts, default=1)

    def _column_names(self, name: str) -> list[str]:
        if self.index is not None:
            return [f"{name}_{self.index}"]
        return [f"{name}_{i}" for i in range(self.n_parts_[name])]

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray | dict[str, np.ndarray]:
        values = _object(texts(spec, values))
        if self.index is not None:
            return values.str.split(self.separator, regex=False).str[self.index].to_numpy(object)
        k = self.n_parts_[spec.name]
        if k == 1:  # pandas reads n=0 as "no limit"; one part is the whole text
            return values.to_numpy(object)
        parts = values.str.split(self.separator, n=k - 1, regex=False, expand=True)
        return {f"{spec.name}_{i}": parts[i].to_numpy(object) if i in parts.columns else np.full(len(values), None)
                for i in range(k)}

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> list[Col]:
        x = _text_col(g, col)
        absent = _missing(x)
        if self.index is not None:
            return [Col(f"{col.name}_{self.index}", "string", self._indexed(x, absent).value, STRING)]
        k = self.n_parts_[spec.name]
        parts, count = split(x, self.separator, k - 1)
        count = maximum(count, 1)
        out = []
        for i in range(k):
            present = (count > i) & ~absent
            out.append(Col(f"{col.name}_{i}", "string", where(present, part(parts, i), MISSING_STRING).value, STRING))
        return out

    def _indexed(self, x: Val, absent: Val) -> Val:
        """Part ``index`` of each row. The separator is appended first, so every row has at least two
        parts (StringSplit gives none for "") and the missing marker comes out as its own first / last
        part: part ``i`` of the text is part ``i`` (or ``count - 1 + i`` from the end) of the result."""
        parts, count = split(concat(x, self.separator), self.separator)
        i = self.index
        if i == 0:
            return part(parts, 0)
        if i == -1:
            return _gather_row(parts, count - 2)
        if i == 1:
            return where(count > 2, part(parts, 1), MISSING_STRING)
        position = count - 1 + i if i < 0 else count.lift(i)
        present = (position >= 0) & (position < count - 1) & ~absent
        return where(present, _gather_row(parts, where(present, position, 0), pad=True), MISSING_STRING)


def _gather_row(parts: Val, position: Val, *, pad: bool = False) -> Val:
    """``parts[row, position[row]]`` (``GatherElements``); ``pad``: first widen parts by one empty column,
    for positions that may lie past the widest row."""
    g = parts.g
    wide = parts.value
    if pad:
        shape = g.op("Shape", parts.value, end=1, dtype=INT64)
        one = g.op("Concat", shape, g.const(np.array([1], np.int64), "width"), axis=0, dtype=INT64)
        filler = g.op("Expand", g.const(np.array([[""]], dtype=object), "pad"), one, dtype=STRING)
        wide = g.op("Concat", parts.value, filler, axis=1, dtype=STRING)
    index = g.op("Unsqueeze", position.value, g.const(np.array([1], np.int64), "axes"), dtype=INT64)
    picked = g.op("GatherElements", wide, index, axis=1, dtype=STRING)
    return Val(g, g.op("Squeeze", picked, g.const(np.array([1], np.int64), "axes"), dtype=STRING), STRING)


# -- value mapping -----------------------------------------------------------------------------------
def _is_missing_key(k: Any) -> bool:
    return k is None or k is pd.NA or (isinstance(k, float) and np.isnan(k))


def _result_kind(mapping: dict) -> str | None:
    """``"float"`` when the new values are all numbers, ``"string"`` when all text (or missing), else None."""
    values = list(mapping.values())
    numeric = [isinstance(v, (int, float, np.number, bool, np.bool_)) and not isinstance(v, str) for v in values]
    if all(numeric):
        return "float"
    if not any(numeric) and all(isinstance(v, str) or _is_missing_key(v) for v in values):
        return "string"
    return None


class ValueMap(ColumnWise):
    """Replace values through a mapping, with pandas ``map`` / ``replace`` semantics.

    Parameters
    ----------
    mapping:
        ``{value: new value}``. Keys are text for text columns, numbers for numeric columns; a ``None`` /
        NaN key maps missing values. New values are all text or all numbers.
    unmatched:
        ``"keep"`` (default): values not in the mapping stay as they are (``Series.replace(mapping)``;
        needs new values of the column's own kind). Any other value: unmatched values, missing ones
        included unless the mapping has a missing key, become it (``Series.map(mapping)`` then that
        default; ``np.nan`` is exactly ``Series.map``).

    Output: text, or float64 for numbers (NaN for missing). In the graph one ``ai.onnx.ml.LabelEncoder``
    per column finds the key.
    """

    _parameter_constraints = {
        "mapping": [Satisfies("a non-empty dict whose new values are all text or all numbers",
                              lambda m: isinstance(m, dict) and len(m) > 0 and _result_kind(m) is not None)],
        "unmatched": "no_validation",  # any default; whether it suits the column is checked in fit
    }

    def __init__(self, mapping: dict, *, unmatched: Any = "keep") -> None:
        self.mapping = mapping
        self.unmatched = unmatched

    def _keeps(self) -> bool:
        return isinstance(self.unmatched, str) and self.unmatched == "keep"

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        self.kind_ = _result_kind(self.mapping)

    def _fit_column(self, spec: ColumnSpec, values: pd.Series) -> None:
        own = "string" if spec.kind == "string" else "float" if spec.kind in ("float", "int", "bool") else None
        if own is None:
            raise ColumnTypeError(spec.name, f"ValueMap takes text or numeric columns, this one is {spec.kind}")
        if self._keeps() and own != self.kind_:
            raise ColumnTypeError(spec.name, f"unmatched values would be {own} among {self.kind_} results",
                                  hint="give new values of the column's kind, or unmatched=<a default>")
        for k in self.mapping:
            if not _is_missing_key(k) and (isinstance(k, str) != (own == "string")):
                raise ColumnTypeError(spec.name, f"mapping key {k!r} does not match the column's {own} values")

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray:
        s = _object(texts(spec, values)) if spec.kind == "string" else pd.Series(numbers(spec, values))
        # missing values are NaN on this side: a None / pd.NA key is the NaN key
        mapping = {(np.nan if _is_missing_key(k) else k): v for k, v in self.mapping.items()}
        mapped = s.map(mapping)
        result = mapped.where(s.isin(list(mapping)), s if self._keeps() else self.unmatched)
        return result.to_numpy(object) if self.kind_ == "string" else pd.to_numeric(result).to_numpy(np.float64)

    def _tables(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        keys = list(self.mapping)
        if kind == "string":
            k = np.array([MISSING_STRING if _is_missing_key(x) else str(x) for x in keys], dtype=object)
        else:
            k = np.array([np.nan if _is_missing_key(x) else float(x) for x in keys], dtype=np.float64)
        vals = list(self.mapping.values())
        if self.kind_ == "string":
            v = np.array([MISSING_STRING if _is_missing_key(x) else str(x) for x in vals], dtype=object)
        else:
            v = np.array([float(x) for x in vals], dtype=np.float64)
        return k, v

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> Col:
        from onegraph.frame.transformers.categorical import label_lookup, lookup_index

        dtype = STRING if self.kind_ == "string" else DOUBLE
        keys, new = self._tables(col.kind if col.kind == "string" else "float")
        if not self._keeps():  # one lookup, the default in place of unmatched values
            default = (MISSING_STRING if _is_missing_key(self.unmatched) else str(self.unmatched)) \
                if self.kind_ == "string" else (np.nan if _is_missing_key(self.unmatched) else float(self.unmatched))
            return Col(col.name, self.kind_, label_lookup(g, col, keys, new, default), dtype)
        # unmatched values kept: look up with a default no mapped value takes, then put them back
        if self.kind_ == "string":
            sentinel = "\uffff\uffffunmatched"
            found = Val(g, label_lookup(g, col, keys, new, sentinel), STRING)
            original = _text_col(g, col)
            result = where(found == sentinel, original, found)
        elif not np.isnan(new).any():
            found = Val(g, label_lookup(g, col, keys, new, np.nan), DOUBLE)
            original = Val(g, g.vector(g.as_double(col)), DOUBLE)
            result = where(found.isnan(), original, found)
        else:  # NaN among the new values: tell matches apart by position
            index = lookup_index(g, col, keys)
            value = Val(g, g.op("Gather", g.const(new, "mapped"), where(index >= 0, index, 0).value, axis=0,
                                dtype=DOUBLE), DOUBLE)
            result = where(index >= 0, value, Val(g, g.vector(g.as_double(col)), DOUBLE))
        return Col(col.name, self.kind_, result.value, dtype)


# -- regular expressions -----------------------------------------------------------------------------
_HOW = ("fullmatch", "match", "contains")


def _pattern_problem(pattern: str) -> tuple[str, str] | None:
    """(what is wrong, what to do) for a pattern whose meaning differs between Python's ``re`` and RE2 (or
    that RE2 lacks), else None."""
    try:
        import re._parser as sre_parse  # Python >= 3.11
    except ImportError:  # pragma: no cover
        import sre_parse  # type: ignore[no-redef]
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as exc:
        return f"({pattern!r}) is not a regular expression: {exc}", "give a regular expression Python's re reads"
    bad: set[str] = set()

    def walk(items: Any) -> None:
        for op, arg in items:
            name = str(op)
            if name == "IN":
                for sub_op, sub_arg in arg:
                    if str(sub_op) == "CATEGORY":
                        bad.add("\\d \\w \\s (Unicode classes in Python, ASCII in RE2)")
            elif name == "CATEGORY":
                bad.add("\\d \\w \\s (Unicode classes in Python, ASCII in RE2)")
            elif name == "AT" and str(arg) in ("AT_BOUNDARY", "AT_NON_BOUNDARY"):
                bad.add("\\b \\B")
            elif name == "AT" and str(arg) in ("AT_END", "AT_END_STRING"):
                bad.add("$ / \\Z (Python's $ also matches before a final newline)")
            elif name in ("ASSERT", "ASSERT_NOT"):
                bad.add("lookaround (?=...) (?!...) (?<=...)")
            elif name in ("GROUPREF", "GROUPREF_EXISTS"):
                bad.add("back-references")
            for sub in (arg if isinstance(arg, (list, tuple)) else [arg]):
                if hasattr(sub, "data"):
                    walk(sub.data)
                elif isinstance(sub, (list, tuple)):
                    for s in sub:
                        if hasattr(s, "data"):
                            walk(s.data)

    walk(parsed.data)
    if bad:
        return (f"({pattern!r}) uses {', '.join(sorted(bad))}, which the graph's RE2 engine reads differently from "
                "pandas", "write explicit classes ([0-9], [A-Za-z0-9_], [ \\t\\n\\r\\f\\v]) and use "
                "how='fullmatch' instead of $")
    return None


def _runtime_accepts(pattern: str) -> str | None:
    """onnxruntime's error for a pattern RE2 rejects, else None."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("RegexFullMatch", ["x"], ["y"], pattern=pattern)
    graph = helper.make_graph([node], "probe", [helper.make_tensor_value_info("x", TensorProto.STRING, [None])],
                              [helper.make_tensor_value_info("y", TensorProto.BOOL, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own failure types
        return str(exc).strip()[:300]
    return None


class RegexMatch(ColumnWise):
    """True where text matches a regular expression: ``Series.str.fullmatch`` / ``match`` / ``contains``.

    Parameters
    ----------
    pattern:
        A regular expression in the syntax Python's ``re`` and RE2 share. Refused because the two
        engines read them differently: ``\\d \\w \\s \\b`` (Unicode in Python, ASCII in RE2), ``$`` and
        ``\\Z``, lookarounds and back-references (RE2 has none).
    how:
        ``"fullmatch"`` (the whole text), ``"match"`` (a prefix) or ``"contains"`` (anywhere).
    case:
        False: ignore case (``re.IGNORECASE``; RE2's ``(?i)``, both Unicode simple case folding).
    na:
        Result for missing text (pandas' ``na=``). None (default, as pandas' ``string`` and ``object``
        dtypes; pandas 3's NaN-backed ``str`` dtype gives False instead: pass ``na=False`` for that): missing
        text gives a missing result, so the output is a float64 column, 1.0 / 0.0 and NaN for missing (onegraph's representation of
        a nullable boolean, as for ``boolean`` inputs). True / False: missing text gives that value and the
        output is a bool column.

    Output: one column ``<column>_<how>`` per input column.

    Raises
    ------
    ConfigError
        (a ``ValueError``) for a refused construct, or a pattern RE2 (onnxruntime) rejects.
    """

    accepts = ("string",)
    _parameter_constraints = {"pattern": [str], "how": [StrOptions(set(_HOW))], "case": ["boolean"],
                              "na": ["boolean", None]}

    def __init__(self, pattern: str, *, how: str = "fullmatch", case: bool = True, na: bool | None = None) -> None:
        self.pattern = pattern
        self.how = how
        self.case = case
        self.na = na

    def _fit_shared(self, frame: pd.DataFrame, y: Any) -> None:
        # what the pattern means, in both engines: a check of its text, beyond what a declaration says
        problem = _pattern_problem(self.pattern)
        if problem is not None:
            raise self._refuse("pattern", problem[0], hint=problem[1])
        core = f"(?i:{self.pattern})" if not self.case else f"(?:{self.pattern})"
        self.graph_pattern_ = {"fullmatch": core, "match": f"{core}(?s:.*)",
                               "contains": f"(?s:.*){core}(?s:.*)"}[self.how]
        rejected = _runtime_accepts(self.graph_pattern_)
        if rejected is not None:
            raise self._refuse("pattern", f"({self.pattern!r}) is rejected by onnxruntime's RE2: {rejected}",
                               hint="write it in the syntax Python's re and RE2 share")

    def _column_names(self, name: str) -> list[str]:
        return [f"{name}_{self.how}"]

    def _transform_column(self, spec: ColumnSpec, values: pd.Series) -> np.ndarray:
        method = getattr(_object(texts(spec, values)).str, self.how)
        flags = 0 if self.case else re.IGNORECASE
        if self.na is None:
            return method(self.pattern, flags=flags, na=np.nan).to_numpy(dtype=np.float64, na_value=np.nan)
        return method(self.pattern, flags=flags, na=bool(self.na)).to_numpy(dtype=bool)

    def _emit_column(self, g: GraphBuilder, spec: ColumnSpec, col: Col) -> Col:
        x = _text_col(g, col)
        hit = full_match(x, self.graph_pattern_)
        if self.na is None:
            result = where(_missing(x), np.nan, hit.cast(DOUBLE))
            return Col(f"{col.name}_{self.how}", "float", result.value, DOUBLE)
        result = where(_missing(x), bool(self.na), hit)
        return Col(f"{col.name}_{self.how}", "bool", result.value, BOOL)
