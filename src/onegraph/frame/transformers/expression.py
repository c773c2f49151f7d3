"""Column arithmetic written as text: ``Expression("amount / (1 + n_items)")``.

The text is parsed with Python's :mod:`ast` (never evaluated by Python): only the constructs listed in
:class:`Expression` are accepted, anything else (attribute access, subscripts, lambdas, unknown
functions...) is refused with an error naming it. The same syntax tree is computed twice: with numpy on
float64 columns (``transform``, numpy / pandas semantics: NaN propagates, comparisons with NaN are False
except ``!=``) and as ONNX nodes (:class:`~onegraph.frame.tensors.Val`, the same operations in the same
order). This is the equivalent of IBM's ``FunctionTransformer`` (which compiled Python byte code).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from onegraph.contract.columns import MISSING_STRING
from onegraph.emit import BOOL, DOUBLE, INT64, STRING, Col, GraphBuilder
from onegraph.errors import ColumnTypeError, ExportError, MissingColumnError
from onegraph.frame.tensors import Val, scalar, where
from onegraph.frame.transformers.base import FrameTransformer, numbers, texts
from onegraph.frame.transformers.constraints import Satisfies

__all__ = ["ExpressionError", "Expression"]

#: one-argument functions: (numpy function, ONNX operator)
_UNARY = {"log": (np.log, "Log"), "exp": (np.exp, "Exp"), "sqrt": (np.sqrt, "Sqrt"), "abs": (np.abs, "Abs"),
          "floor": (np.floor, "Floor"), "ceil": (np.ceil, "Ceil"), "round": (np.round, "Round"),
          "sin": (np.sin, "Sin"), "cos": (np.cos, "Cos"), "tanh": (np.tanh, "Tanh")}
_OTHER = {"where": 3, "clip": 3, "fillna": 2, "isna": 1, "notna": 1, "minimum": 2, "maximum": 2}
_CONSTANTS = {"nan": np.nan, "inf": np.inf, "pi": np.pi, "e": np.e}
_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class ExpressionError(ExportError, ValueError):
    """An expression uses something the graph cannot compute (or Python cannot parse)."""


@dataclasses.dataclass
class _Operand:
    """A value while computing: numpy array or Val, and its kind: ``float``, ``bool`` (never missing: a
    comparison), ``boolean`` (1.0 / 0.0, NaN where unknown: a bool column, or logic over one) or ``string``.
    ``column`` names the input column the value is, for error messages."""

    value: Any
    kind: str
    column: str | None = None


class _Evaluator:
    """Walks a checked syntax tree; ``ops`` supplies the primitives (numpy or ONNX)."""

    def __init__(self, columns: dict[str, _Operand], ops: _Ops) -> None:
        self.columns = columns
        self.ops = ops

    def run(self, node: ast.AST) -> _Operand:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise ExpressionError(f"{type(node).__name__} is not allowed in an expression")
        return method(node)

    def _Expression(self, node: ast.Expression) -> _Operand:
        return self.run(node.body)

    def _Name(self, node: ast.Name) -> _Operand:
        if node.id in self.columns:
            return self.columns[node.id]
        if node.id in _CONSTANTS:
            return _Operand(self.ops.constant(_CONSTANTS[node.id]), "float")
        raise ExpressionError(f"unknown name {node.id!r}")

    def _Constant(self, node: ast.Constant) -> _Operand:
        v = node.value
        if isinstance(v, bool):
            return _Operand(self.ops.constant(v), "bool")
        if isinstance(v, (int, float)):
            return _Operand(self.ops.constant(float(v)), "float")
        if isinstance(v, str):
            return _Operand(self.ops.text(v), "string")
        raise ExpressionError(f"constant {v!r} is not a number, bool or text")

    def _number(self, o: _Operand, what: str) -> Any:
        if o.kind == "string":
            raise ExpressionError(f"{what} needs numbers, got text" + _of(o))
        return self.ops.as_float(o.value) if o.kind == "bool" else o.value

    def _flag(self, o: _Operand, what: str) -> _Operand:
        if o.kind not in ("bool", "boolean"):
            raise ExpressionError(f"{what} needs true/false values (a comparison or a bool column), got "
                                  f"{'text' if o.kind == 'string' else 'numbers'}" + _of(o),
                                  hint="compare it first, e.g. x > 0")
        return o

    def _logic(self, op: str, a: _Operand, b: _Operand | None = None) -> _Operand:
        """``not`` / ``and`` / ``or``: boolean where no value is missing; pandas' Kleene logic (its nullable
        ``boolean`` dtype) on 1.0 / 0.0 / NaN when an operand is a bool column: ``False & NA`` is False,
        ``True | NA`` is True, anything else with NA is NA (NaN)."""
        if a.kind == "bool" and (b is None or b.kind == "bool"):
            return _Operand(self.ops.logic(op, a.value, None if b is None else b.value), "bool")
        o = self.ops
        x = o.as_float(a.value) if a.kind == "bool" else a.value
        if b is None:
            return _Operand(o.arith("-", o.constant(1.0), x), "boolean")  # NaN stays NaN
        y = o.as_float(b.value) if b.kind == "bool" else b.value
        decided = 0.0 if op == "and" else 1.0  # the value that decides whatever the other is
        decides = o.logic("or", o.compare("==", x, o.constant(decided)), o.compare("==", y, o.constant(decided)))
        unknown = o.logic("or", o.isnan(x), o.isnan(y))
        rest = o.select(unknown, o.constant(np.nan), o.constant(1.0 - decided))
        return _Operand(o.select(decides, o.constant(decided), rest), "boolean")

    def _BinOp(self, node: ast.BinOp) -> _Operand:
        left, right = self.run(node.left), self.run(node.right)
        if isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            a, b = self._flag(left, "& / |"), self._flag(right, "& / |")
            return self._logic("and" if isinstance(node.op, ast.BitAnd) else "or", a, b)
        op = _ARITH.get(type(node.op))
        if op is None:
            raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
        return _Operand(self.ops.arith(op, self._number(left, op), self._number(right, op)), "float")

    def _UnaryOp(self, node: ast.UnaryOp) -> _Operand:
        o = self.run(node.operand)
        if isinstance(node.op, (ast.Not, ast.Invert)):
            return self._logic("not", self._flag(o, "not / ~"))
        x = self._number(o, "unary minus")
        return _Operand(self.ops.arith("neg", x) if isinstance(node.op, ast.USub) else x, "float")

    def _BoolOp(self, node: ast.BoolOp) -> _Operand:
        values = [self._flag(self.run(v), "and / or") for v in node.values]
        out = values[0]
        for v in values[1:]:
            out = self._logic("and" if isinstance(node.op, ast.And) else "or", out, v)
        return out

    def _Compare(self, node: ast.Compare) -> _Operand:
        out = None
        left = self.run(node.left)
        for op_node, right_node in zip(node.ops, node.comparators):
            right = self.run(right_node)
            op = _COMPARE.get(type(op_node))
            if op is None:
                raise ExpressionError(f"comparison {type(op_node).__name__} is not allowed")
            if "string" in (left.kind, right.kind):
                if left.kind != right.kind or op not in ("==", "!="):
                    raise ExpressionError("text can only be compared with == or != to text" + _of(left, right))
                result = self.ops.compare_text(op, left.value, right.value)
            else:
                result = self.ops.compare(op, self._number(left, op), self._number(right, op))
            out = result if out is None else self.ops.logic("and", out, result)
            left = right
        return _Operand(out, "bool")

    def _Call(self, node: ast.Call) -> _Operand:
        if not isinstance(node.func, ast.Name) or node.keywords:
            raise ExpressionError("only calls of the listed functions, with positional arguments, are allowed")
        name = node.func.id
        args = [self.run(a) for a in node.args]
        expected = 1 if name in _UNARY else _OTHER.get(name)
        if expected is None:
            raise ExpressionError(f"unknown function {name!r}; available: {', '.join(sorted([*_UNARY, *_OTHER]))}")
        if len(args) != expected:
            raise ExpressionError(f"{name} takes {expected} argument(s), got {len(args)}")
        if name in _UNARY:
            return _Operand(self.ops.unary(name, self._number(args[0], name)), "float")
        if name in ("isna", "notna"):
            a = args[0]
            missing = self.ops.missing_text(a.value) if a.kind == "string" else (
                self.ops.isnan(a.value) if a.kind in ("float", "boolean") else self.ops.constant(False))
            return _Operand(missing if name == "isna" else self.ops.logic("not", missing), "bool")
        if name == "where":
            cond = args[0]
            flag = cond.value if cond.kind == "bool" else self.ops.truthy(self._number(cond, "where"))
            if args[1].kind == "bool" and args[2].kind == "bool" and cond.kind != "boolean":
                return _Operand(self.ops.select(flag, args[1].value, args[2].value), "bool")
            chosen = self.ops.select(flag, self._number(args[1], "where"), self._number(args[2], "where"))
            if cond.kind == "boolean":  # an unknown condition chooses nothing: NaN, not either branch
                chosen = self.ops.select(self.ops.isnan(cond.value), self.ops.constant(np.nan), chosen)
            return _Operand(chosen, "float")
        x, *rest = [self._number(a, name) for a in args]
        if name == "clip":
            lo, hi = rest
            x = self.ops.select(self.ops.compare("<", x, lo), lo, x)
            return _Operand(self.ops.select(self.ops.compare(">", x, hi), hi, x), "float")
        if name == "fillna":
            return _Operand(self.ops.select(self.ops.isnan(x), rest[0], x), "float")
        y = rest[0]
        # numpy's minimum / maximum propagate NaN from either side
        either = self.ops.logic("or", self.ops.isnan(x), self.ops.isnan(y))
        better = self.ops.compare("<" if name == "minimum" else ">", x, y)
        return _Operand(self.ops.select(either, self.ops.constant(np.nan), self.ops.select(better, x, y)), "float")


def _of(*operands: _Operand) -> str:
    named = [o.column for o in operands if o.column]
    return f" (column {named[0]!r})" if named else ""


class _Ops:
    """Primitive operations of the evaluator (interface)."""


class _NumpyOps(_Ops):
    def __init__(self, n: int) -> None:
        self.n = n

    def constant(self, v: Any) -> Any:
        return np.full(self.n, v, dtype=bool if isinstance(v, bool) else np.float64)

    def text(self, v: str) -> Any:
        return np.full(self.n, v, dtype=object)

    def as_float(self, x: Any) -> Any:
        return x.astype(np.float64)

    def arith(self, op: str, a: Any, b: Any = None) -> Any:
        with np.errstate(all="ignore"):
            return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide,
                    "%": np.remainder, "**": np.power, "neg": lambda x, _: np.negative(x)}[op](a, b)

    def unary(self, name: str, x: Any) -> Any:
        with np.errstate(all="ignore"):
            return _UNARY[name][0](x)

    def compare(self, op: str, a: Any, b: Any) -> Any:
        with np.errstate(invalid="ignore"):
            return {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
                    "!=": np.not_equal}[op](a, b)

    def compare_text(self, op: str, a: Any, b: Any) -> Any:
        same = np.array([x == y if isinstance(x, str) and isinstance(y, str) else False for x, y in zip(a, b)], bool)
        return same if op == "==" else ~same

    def logic(self, op: str, a: Any, b: Any = None) -> Any:
        return {"and": np.logical_and, "or": np.logical_or}[op](a, b) if op != "not" else np.logical_not(a)

    def isnan(self, x: Any) -> Any:
        return np.isnan(x)

    def missing_text(self, x: Any) -> Any:
        return np.asarray(pd.isna(x), dtype=bool)

    def truthy(self, x: Any) -> Any:
        return x != 0  # NaN is true, as numpy's bool(nan)

    def select(self, cond: Any, a: Any, b: Any) -> Any:
        return np.where(cond, a, b)


class _GraphOps(_Ops):
    def __init__(self, g: GraphBuilder) -> None:
        self.g = g

    def constant(self, v: Any) -> Val:
        return scalar(self.g, v, BOOL if isinstance(v, bool) else DOUBLE)

    def text(self, v: str) -> Val:
        return scalar(self.g, v, STRING)

    def as_float(self, x: Val) -> Val:
        return x.cast(DOUBLE)

    def arith(self, op: str, a: Val, b: Val | None = None) -> Val:
        if op == "neg":
            return -a
        fn: dict[str, Callable[[Val, Val], Val]] = {
            "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y, "/": lambda x, y: x / y,
            "//": lambda x, y: x // y, "%": lambda x, y: x % y, "**": lambda x, y: x ** y}
        return fn[op](a, b)

    def unary(self, name: str, x: Val) -> Val:
        return x.unary(_UNARY[name][1])

    def compare(self, op: str, a: Val, b: Val) -> Val:
        return {"<": a.__lt__, "<=": a.__le__, ">": a.__gt__, ">=": a.__ge__, "==": a.__eq__, "!=": a.__ne__}[op](b)

    def compare_text(self, op: str, a: Val, b: Val) -> Val:
        missing = MISSING_STRING
        present = (a != missing) & (b != missing)  # a missing value equals nothing
        same = (a == b) & present
        return same if op == "==" else ~same

    def logic(self, op: str, a: Val, b: Val | None = None) -> Val:
        return ~a if op == "not" else (a & b if op == "and" else a | b)

    def isnan(self, x: Val) -> Val:
        return x.isnan()

    def missing_text(self, x: Val) -> Val:
        return x == MISSING_STRING

    def truthy(self, x: Val) -> Val:
        return x != 0.0

    def select(self, cond: Val, a: Val, b: Val) -> Val:
        return where(cond, a, b)


_BACKTICK = re.compile(r"`([^`]+)`")


def _parse(text: str) -> tuple[ast.Expression, dict[str, str]]:
    """The syntax tree of ``text`` and the names standing for backtick-quoted column names."""
    quoted: dict[str, str] = {}

    def replace(m: re.Match) -> str:
        name = f"__column_{len(quoted)}"
        quoted[name] = m.group(1)
        return name

    source = _BACKTICK.sub(replace, text)
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {text!r}: {exc.msg}") from None
    return tree, quoted


_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.Name, ast.Constant,
            ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


def _check_structure(tree: ast.AST, text: str) -> None:
    """Refuse any construct outside the grammar before looking at names (a comprehension's variable is
    not a missing column)."""
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ExpressionError(f"{text!r}: {type(node).__name__} is not allowed in an expression")
        if isinstance(node, ast.Call):
            fn = node.func.id if isinstance(node.func, ast.Name) else None
            if fn not in _UNARY and fn not in _OTHER:
                raise ExpressionError(f"{text!r}: only the listed functions can be called "
                                      f"({', '.join(sorted([*_UNARY, *_OTHER]))})")


def _names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


# not ColumnWise: an expression reads any of the columns
class Expression(FrameTransformer):
    """New columns computed from an expression over the input columns, parsed safely (no ``eval``).

    Parameters
    ----------
    expressions:
        One expression, or ``{output name: expression}`` for several. Columns are referred to by name
        (``` `Body Mass (g)` ``` in backticks when the name is not an identifier). Allowed: numbers,
        ``True`` / ``False``, text constants (only in ``==`` / ``!=`` with a text column), ``nan``,
        ``inf``, ``pi``, ``e``; ``+ - * / // % **`` and unary minus (numpy semantics, ``//`` and ``%``
        included); comparisons ``< <= > >= == !=`` (chains too); ``& | ~`` and ``and or not`` on
        comparisons; the functions ``where(cond, a, b)``, ``log``, ``exp``, ``sqrt``, ``abs``, ``floor``,
        ``ceil``, ``round`` (half to even), ``sin``, ``cos``, ``tanh``, ``clip(x, lo, hi)``,
        ``fillna(x, value)``, ``isna(x)``, ``notna(x)``, ``minimum(a, b)``, ``maximum(a, b)``.
    name:
        Output name for a single expression (default: the expression text).

    Numeric columns (ints with missing values too) are float64, bools 0/1 in arithmetic; text columns
    take part only in ``==`` / ``!=`` and ``isna`` / ``notna``. Bool columns (numpy ``bool``, nullable
    ``boolean``) are also true/false values for ``& | ~ and or not`` and ``where``, with pandas' Kleene
    logic for missing values (``False & NA`` is False, ``True | NA`` is True, otherwise NA) and a missing
    condition giving NaN in ``where``. Output: bool for a comparison / logical expression over
    comparisons; float64 otherwise, logic over a bool column included (1.0 / 0.0, NaN where unknown).

    Raises
    ------
    ExpressionError
        (a ``ValueError``) in fit for text that does not parse or uses anything not listed.
    MissingColumnError
        for a name that is neither a column nor a constant.
    """

    _parameter_constraints = {
        "expressions": [str, Satisfies("a non-empty dict {output name: expression str}", lambda e: (
            isinstance(e, dict) and len(e) > 0 and all(isinstance(t, str) for t in e.values())))],
        "name": [str, None],
    }

    def __init__(self, expressions: str | dict[str, str], *, name: str | None = None) -> None:
        self.expressions = expressions
        self.name = name

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        items = (self.expressions.items() if isinstance(self.expressions, dict)
                 else [(self.name or self.expressions, self.expressions)])
        self.trees_: dict[str, tuple[ast.Expression, dict[str, str]]] = {}
        self.kinds_: dict[str, str] = {}
        columns = list(self.feature_names_in_)
        for out, text in items:
            tree, quoted = _parse(text)
            _check_structure(tree, text)
            for n in _names(tree):
                real = quoted.get(n, n)
                if real not in columns and n not in _CONSTANTS and n not in _UNARY and n not in _OTHER:
                    raise MissingColumnError(real, columns)
            self.trees_[str(out)] = (tree, quoted)
            sample = frame.iloc[:1] if len(frame) else frame
            kind = self._evaluate(tree, quoted, sample, _NumpyOps(len(sample))).kind
            self.kinds_[str(out)] = "bool" if kind == "bool" else "float"

    def _names_out(self) -> list[str]:
        return list(self.trees_)

    def _operands(self, quoted: dict[str, str], tree: ast.AST, get: Callable[[Any], _Operand]) -> dict[str, _Operand]:
        out = {}
        for n in _names(tree):
            real = quoted.get(n, n)
            if real in self.feature_names_in_:
                out[n] = get(self._spec(real))
        return out

    def _evaluate(self, tree: ast.Expression, quoted: dict[str, str], frame: pd.DataFrame, ops: _Ops) -> _Operand:
        def column(spec) -> _Operand:
            if spec.kind == "string":
                return _Operand(texts(spec, frame[spec.name]), "string", spec.name)
            if spec.kind in ("float", "int", "bool"):
                return _Operand(numbers(spec, frame[spec.name]), "boolean" if spec.kind == "bool" else "float",
                                spec.name)
            raise ColumnTypeError(spec.name, f"{spec.kind} columns cannot be used in an expression",
                                  hint="extract numbers first (DateParts, DateDiff)")

        return _Evaluator(self._operands(quoted, tree, column), ops).run(tree)

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for name, (tree, quoted) in self.trees_.items():
            result = self._evaluate(tree, quoted, frame, _NumpyOps(len(frame)))
            out[name] = np.broadcast_to(result.value, (len(frame),)).copy()
        return pd.DataFrame(out, index=frame.index)

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        by_name = {c.name: c for c in cols}

        def column(spec) -> _Operand:
            col = by_name[spec.name]
            if col.kind == "string":
                return _Operand(Val(g, g.vector(col), STRING), "string", col.name)
            return _Operand(Val(g, g.vector(g.as_double(col)), DOUBLE), "boolean" if col.kind == "bool" else "float",
                            col.name)

        out = []
        for name, (tree, quoted) in self.trees_.items():
            result = _Evaluator(self._operands(quoted, tree, column), _GraphOps(g)).run(tree)
            value = result.value
            if value.value.is_initializer():  # a constant expression still gives one value per row
                rows = g.op("Shape", g.vector(cols[0]), dtype=INT64)
                value = Val(g, g.op("Expand", value.value, rows, dtype=value.dtype), value.dtype)
            kind = "bool" if result.kind == "bool" else "float"  # three-valued logic is 1.0 / 0.0 / NaN
            out.append(Col(name, kind, value.value, BOOL if kind == "bool" else DOUBLE))
        return out
