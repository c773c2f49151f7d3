"""Text columns: concatenation, splitting, value mapping and regular-expression flags.

Every graph here uses standard ai.onnx string operators (``StringConcat``, ``StringSplit``,
``RegexFullMatch``, opset >= 20) and ``ai.onnx.ml.LabelEncoder``; none depends on the host locale. The
pandas side uses the ``str`` accessor on object columns (Python's ``re`` for patterns). Missing text is
pandas' NaN / None; in the graph it is :data:`~onegraph.contract.columns.MISSING_STRING`.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from onegraph.contract.columns import MISSING_STRING
from onegraph.emit import BOOL, DOUBLE, INT64, STRING, Col, GraphBuilder
from onegraph.errors import ColumnTypeError, ConfigError
from onegraph.frame.strings import concat, full_match, part, split, text
from onegraph.frame.tensors import Val, any_of, maximum, where
from onegraph.frame.transformers.base import FrameTransformer, numbers, texts

__all__ = ["StringConcat", "StringSplit", "ValueMap", "RegexMatch"]


def _text_col(g: GraphBuilder, col: Col) -> Val:
    return Val(g, g.vector(col), STRING)


def _missing(x: Val) -> Val:
    return x == text(x, MISSING_STRING)


def _object(values: np.ndarray) -> pd.Series:
    return pd.Series(values, dtype=object)


# -- concatenation ---------------------------------------------------------------------------------
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
class StringSplit(FrameTransformer):
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

    def __init__(self, separator: str, *, n_parts: int | None = None, index: int | None = None) -> None:
        self.separator = separator
        self.n_parts = n_parts
        self.index = index

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        if not isinstance(self.separator, str) or not self.separator:
            raise ValueError("StringSplit needs a non-empty literal separator")
        if self.n_parts is not None and self.index is not None:
            raise ValueError("StringSplit: give n_parts or index, not both")
        self.n_parts_ = {}
        for s in self.input_specs_:
            if self.index is not None:
                continue
            if self.n_parts is not None:
                self.n_parts_[s.name] = int(self.n_parts)
                continue
            counts = [v.count(self.separator) + 1 for v in texts(s, frame[s.name]) if isinstance(v, str)]
            self.n_parts_[s.name] = max(counts, default=1)

    def _names_out(self) -> list[str]:
        if self.index is not None:
            return [f"{c}_{self.index}" for c in self.feature_names_in_]
        return [f"{c}_{i}" for c in self.feature_names_in_ for i in range(self.n_parts_[c])]

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for s in self.input_specs_:
            values = _object(texts(s, frame[s.name]))
            if self.index is not None:
                out[f"{s.name}_{self.index}"] = values.str.split(self.separator, regex=False).str[self.index].to_numpy(object)
                continue
            k = self.n_parts_[s.name]
            if k == 1:  # pandas reads n=0 as "no limit"; one part is the whole text
                out[f"{s.name}_0"] = values.to_numpy(object)
                continue
            parts = values.str.split(self.separator, n=k - 1, regex=False, expand=True)
            for i in range(k):
                out[f"{s.name}_{i}"] = parts[i].to_numpy(object) if i in parts.columns else np.full(len(values), None)
        return pd.DataFrame(out, index=frame.index)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        out = []
        for col in cols:
            x = _text_col(g, col)
            absent = _missing(x)
            if self.index is not None:
                out.append(Col(f"{col.name}_{self.index}", "string", self._indexed(x, absent).value, STRING))
                continue
            k = self.n_parts_[col.name]
            parts, count = split(x, self.separator, k - 1)
            count = maximum(count, 1)
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


class ValueMap(FrameTransformer):
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

    def __init__(self, mapping: dict, *, unmatched: Any = "keep") -> None:
        self.mapping = mapping
        self.unmatched = unmatched

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        if not isinstance(self.mapping, dict) or not self.mapping:
            raise ValueError("ValueMap needs a non-empty dict")
        values = list(self.mapping.values())
        numeric = [isinstance(v, (int, float, np.number, bool, np.bool_)) and not isinstance(v, str) for v in values]
        if all(numeric):
            self.kind_ = "float"
        elif not any(numeric) and all(isinstance(v, str) or _is_missing_key(v) for v in values):
            self.kind_ = "string"
        else:
            raise ValueError("ValueMap: the new values must be all text or all numbers")
        keep = isinstance(self.unmatched, str) and self.unmatched == "keep"
        for spec in self.input_specs_:
            own = "string" if spec.kind == "string" else "float" if spec.kind in ("float", "int", "bool") else None
            if own is None:
                raise ColumnTypeError(spec.name, f"ValueMap takes text or numeric columns, this one is {spec.kind}")
            if keep and own != self.kind_:
                raise ColumnTypeError(spec.name, f"unmatched values would be {own} among {self.kind_} results",
                                      hint="give new values of the column's kind, or unmatched=<a default>")
            for k in self.mapping:
                if not _is_missing_key(k) and (isinstance(k, str) != (own == "string")):
                    raise ColumnTypeError(spec.name, f"mapping key {k!r} does not match the column's {own} values")

    def _names_out(self) -> list[str]:
        return list(self.feature_names_in_)

    def _column(self, frame: pd.DataFrame, spec) -> pd.Series:
        return _object(texts(spec, frame[spec.name])) if spec.kind == "string" else pd.Series(numbers(spec, frame[spec.name]))

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        # missing values are NaN on this side: a None / pd.NA key is the NaN key
        mapping = {(np.nan if _is_missing_key(k) else k): v for k, v in self.mapping.items()}
        keys = list(mapping)
        for spec in self.input_specs_:
            s = self._column(frame, spec)
            mapped = s.map(mapping)
            if isinstance(self.unmatched, str) and self.unmatched == "keep":
                result = mapped.where(s.isin(keys), s)
            else:
                result = mapped.where(s.isin(keys), self.unmatched)
            out[spec.name] = (result.to_numpy(object) if self.kind_ == "string"
                              else pd.to_numeric(result).to_numpy(np.float64))
        return pd.DataFrame(out, index=frame.index)

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

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        from onegraph.frame.transformers.categorical import label_lookup

        out = []
        keep = isinstance(self.unmatched, str) and self.unmatched == "keep"
        dtype = STRING if self.kind_ == "string" else DOUBLE
        for col in cols:
            keys, new = self._tables(col.kind if col.kind == "string" else "float")
            if not keep:  # one lookup, the default in place of unmatched values
                default = (MISSING_STRING if _is_missing_key(self.unmatched) else str(self.unmatched)) \
                    if self.kind_ == "string" else (np.nan if _is_missing_key(self.unmatched) else float(self.unmatched))
                out.append(Col(col.name, self.kind_, label_lookup(g, col, keys, new, default), dtype))
                continue
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
                from onegraph.frame.transformers.categorical import lookup_index

                index = lookup_index(g, col, keys)
                value = Val(g, g.op("Gather", g.const(new, "mapped"), where(index >= 0, index, 0).value, axis=0,
                                    dtype=DOUBLE), DOUBLE)
                result = where(index >= 0, value, Val(g, g.vector(g.as_double(col)), DOUBLE))
            out.append(Col(col.name, self.kind_, result.value, dtype))
        return out


# -- regular expressions -----------------------------------------------------------------------------
_HOW = ("fullmatch", "match", "contains")


def _check_pattern(pattern: str, how: str) -> None:
    """Refuse constructs whose meaning differs between Python's ``re`` and RE2 (or that RE2 lacks)."""
    try:
        import re._parser as sre_parse  # Python >= 3.11
    except ImportError:  # pragma: no cover
        import sre_parse  # type: ignore[no-redef]
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as exc:
        raise ValueError(f"pattern {pattern!r} is not a regular expression: {exc}") from None
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
        raise ValueError(f"pattern {pattern!r} uses {', '.join(sorted(bad))}, which the graph's RE2 engine "
                         "reads differently from pandas; write explicit classes ([0-9], [A-Za-z0-9_], "
                         "[ \\t\\n\\r\\f\\v]) and use how='fullmatch' instead of $")


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


class RegexMatch(FrameTransformer):
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
    ValueError
        for a refused construct, or a pattern RE2 (onnxruntime) rejects.
    """

    accepts = ("string",)

    def __init__(self, pattern: str, *, how: str = "fullmatch", case: bool = True, na: bool | None = None) -> None:
        self.pattern = pattern
        self.how = how
        self.case = case
        self.na = na

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        if self.how not in _HOW:
            raise ConfigError(f"RegexMatch: how={self.how!r}; choose from {', '.join(_HOW)}")
        if self.na is not None and not isinstance(self.na, (bool, np.bool_)):
            raise ConfigError(f"RegexMatch: na={self.na!r}; give None (missing stays missing), True or False")
        _check_pattern(self.pattern, self.how)
        core = f"(?i:{self.pattern})" if not self.case else f"(?:{self.pattern})"
        self.graph_pattern_ = {"fullmatch": core, "match": f"{core}(?s:.*)",
                               "contains": f"(?s:.*){core}(?s:.*)"}[self.how]
        problem = _runtime_accepts(self.graph_pattern_)
        if problem is not None:
            raise ValueError(f"RegexMatch: onnxruntime's RE2 rejects pattern {self.pattern!r}: {problem}")

    def _names_out(self) -> list[str]:
        return [f"{c}_{self.how}" for c in self.feature_names_in_]

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        flags = 0 if self.case else re.IGNORECASE
        for s in self.input_specs_:
            values = _object(texts(s, frame[s.name]))
            method = getattr(values.str, self.how)
            if self.na is None:
                result = method(self.pattern, flags=flags, na=np.nan)
                out[f"{s.name}_{self.how}"] = result.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                out[f"{s.name}_{self.how}"] = method(self.pattern, flags=flags, na=bool(self.na)).to_numpy(dtype=bool)
        return pd.DataFrame(out, index=frame.index)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        out = []
        for col in cols:
            x = _text_col(g, col)
            hit = full_match(x, self.graph_pattern_)
            if self.na is None:
                result = where(_missing(x), np.nan, hit.cast(DOUBLE))
                out.append(Col(f"{col.name}_{self.how}", "float", result.value, DOUBLE))
            else:
                result = where(_missing(x), bool(self.na), hit)
                out.append(Col(f"{col.name}_{self.how}", "bool", result.value, BOOL))
        return out
