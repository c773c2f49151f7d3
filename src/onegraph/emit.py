"""Graph emission: the builder every transformer and adapter writes ONNX nodes with.

A pipeline is emitted column by column. Each column flowing through the graph is a :class:`Col`: a name
(the feature name scikit-learn's ``get_feature_names_out`` gives it), a *kind* (what the values mean:
``float``, ``int``, ``bool``, ``string``, ``datetime``, ``timedelta``), and where its values live: a 1-D
tensor ``[N]``, or one column of a 2-D block ``[N, k]``. Transformers that work on many numeric columns at
once ask the builder for a block (:meth:`GraphBuilder.matrix`); the builder slices, concatenates and casts
only where needed, so a chain of block-wise steps (impute, then scale, then the model) costs one node per
step, not one per column.

Internal representation (the contract every emitter relies on):

* numbers are computed in ``double``; missing numbers are NaN;
* ``int`` columns are ``int64`` with missing = ``INT64_MIN`` (the value pandas uses for NaT);
* ``string`` columns are ``string`` tensors with missing = :data:`onegraph.contract.columns.MISSING_STRING`;
* ``datetime`` / ``timedelta`` columns are ``int64`` nanoseconds (UTC for datetimes), missing = ``INT64_MIN``.

Nodes are written with onnx-ir (:mod:`onnx_ir`); the result is an :class:`onnx_ir.Model`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.contract.outputs import CHECK_PREFIXES
from onegraph.contract.scopes import CLASS_KEY, NAMESPACE_KEY, SCOPES_KEY
from onegraph.errors import ExportError
from onegraph.registry import registrar

__all__ = ["OPSET", "ML_OPSET", "IR_VERSION", "INT64_MIN", "DOUBLE", "FLOAT", "INT64", "BOOL", "STRING",
           "Col", "GraphBuilder", "to_tensor", "register_emitter", "find_emitter"]

#: Default-domain opset of every graph onegraph builds (StringSplit, StringConcat, RegexFullMatch need >= 20).
OPSET = 21
#: ai.onnx.ml opset: 5 brings ``TreeEnsemble`` (double thresholds and leaf weights), LabelEncoder v4.
ML_OPSET = 5
#: IR version matching OPSET 21 (ONNX 1.16).
IR_VERSION = 10

INT64_MIN = int(np.iinfo(np.int64).min)
#: The least double an int column cast with its missing marker (``as_double(col, int_marker=True)``: INT64_MIN
#: becomes -2**63) holds as a value: the next double up, -2**63 + 1024. Ints within 512 of INT64_MIN round to
#: -2**63 in double and so count as missing too, far outside the values of any real column.
INT_PRESENT_FROM = float(np.nextafter(-2.0**63, 0.0))

DOUBLE = ir.DataType.DOUBLE
FLOAT = ir.DataType.FLOAT
INT64 = ir.DataType.INT64
BOOL = ir.DataType.BOOL
STRING = ir.DataType.STRING

#: operators whose numeric inputs share one element type: a float32 / float16 constant beside a double input is
#: read as double (numbers are computed in double; scikit-learn keeps some fitted attributes in the dtype of the
#: data it was fitted on, e.g. MinMaxScaler's ``scale_`` from float32 columns)
_SAME_TYPE = frozenset({"Add", "Sub", "Mul", "Div", "MatMul", "Gemm", "Max", "Min", "Sum", "Mean", "Mod", "Equal",
                        "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Where", "Concat", "Clip"})
_NARROW_FLOATS = frozenset({ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.BFLOAT16})


@dataclasses.dataclass(frozen=True)
class Col:
    """One column flowing through the graph.

    Attributes
    ----------
    name:
        Feature name (as ``get_feature_names_out`` reports it).
    kind:
        ``"float" | "int" | "bool" | "string" | "datetime" | "timedelta"``.
    value:
        The tensor holding the column: 1-D ``[N]`` when ``index`` is None, else a 2-D block ``[N, k]``.
    dtype:
        Element type of ``value``.
    index:
        Column of the block this column is, or None.
    """

    name: str
    kind: str
    value: ir.Value
    dtype: ir.DataType
    index: int | None = None
    #: for a text column filled by an imputer: (the column before filling, the fill value), so a lookup
    #: downstream can read the unfilled column and map the missing marker itself (one node less each)
    filled_from: tuple[Col, str] | None = None

    def renamed(self, name: str) -> Col:
        return dataclasses.replace(self, name=name)


class GraphBuilder:
    """Collects nodes, initializers, inputs and outputs of one graph.

    Use :meth:`op` to add a node, :meth:`const` for an initializer, :meth:`scope` to attribute the nodes
    added inside it to a source object (its path and class are written into each node's
    ``metadata_props``, so a later pass can group them into a named function).
    """

    def __init__(self, name: str = "onegraph") -> None:
        self.graph = ir.Graph(
            inputs=[],
            outputs=[],
            nodes=[],
            opset_imports={"": OPSET, "ai.onnx.ml": ML_OPSET},
            name=name,
        )
        self.functions: dict[tuple[str, str, str], ir.Function] = {}
        #: metadata entries of the check outputs declared with :meth:`flag`
        self.checks: list[dict] = []
        self._scope: list[tuple[str, str]] = []
        self._scope_meta: dict[str, str] | None = None
        self._consts: dict[tuple, ir.Value] = {}
        self._derived: dict[tuple, ir.Value] = {}
        self._counter = 0
        self._body: ir.Graph | None = None
        #: raised by :func:`~onegraph.export.adapters.onnx_graph.splice` to a spliced graph's newer IR version
        self.ir_version = IR_VERSION
        #: the table's columns by name where a meta-estimator's members are pipelines that select and encode
        #: them themselves (a voting ensemble of ``make_pipeline(ColumnTransformer(...), model)``): such a
        #: member's steps start from these, text included, not from the numeric feature matrix
        self.table_columns: dict[str, Col] | None = None
        #: graph input name -> the date format its text is parsed in (``ColumnSpec.date_format``)
        self.date_formats: dict[str, str] = {}

    # -- naming -------------------------------------------------------------------------------
    def unique(self, hint: str) -> str:
        """A value name not used before in this graph, derived from ``hint``."""
        self._counter += 1
        return f"{hint}__{self._counter}"

    @contextlib.contextmanager
    def scope(self, path: str, obj: Any = None) -> Iterator[None]:
        """Attribute the nodes added inside the block to ``path`` (the object's full path in the pipeline,
        ``columntransformer.num.standardscaler``) and ``obj``'s class."""
        cls = "" if obj is None else f"{type(obj).__module__}.{type(obj).__qualname__}"
        outer = self.path
        if outer and not (path == outer or path.startswith(outer + ".")):
            # containers pass full paths already; a name given under another scope (a model of a
            # composition, an ensemble's final estimator) is relative to it
            path = f"{outer}.{path}" if path else outer
        self._scope.append((path, cls))
        self._scope_meta = None
        try:
            yield
        finally:
            self._scope.pop()
            self._scope_meta = None

    @property
    def path(self) -> str:
        """The full path of the innermost scope ('' outside any scope)."""
        return self._scope[-1][0] if self._scope else ""

    def scope_metadata(self) -> dict[str, str] | None:
        """The ``metadata_props`` a node added now gets (None outside any scope): for nodes moved in from
        another graph (:func:`~onegraph.export.adapters.onnx_graph.splice`)."""
        return self._node_metadata()

    def _node_metadata(self) -> dict[str, str] | None:
        if not self._scope:
            return None
        if self._scope_meta is None:
            meta = {NAMESPACE_KEY: self.path}
            if self._scope[-1][1]:
                meta[CLASS_KEY] = self._scope[-1][1]
            meta[SCOPES_KEY] = json.dumps([[p, c] for p, c in self._scope], separators=(",", ":"))
            self._scope_meta = meta
        return dict(self._scope_meta)

    # -- nodes --------------------------------------------------------------------------------
    def op(
        self,
        op_type: str,
        *inputs: ir.Value | None,
        domain: str = "",
        outputs: int = 1,
        dtype: ir.DataType | None = None,
        **attributes: Any,
    ) -> Any:
        """Add a node ``op_type(*inputs, **attributes)``; return its output value (or tuple of values).

        ``dtype``, when given, annotates the (first) output's element type.
        """
        # a node inside a Loop / If body belongs to the scope of the node holding the body, which carries it:
        # the same metadata on every body node was most of a text vectorizer's graph (144 bodies of 19 nodes)
        inside = self._body is not None
        meta = None if inside else self._node_metadata()
        attrs = {k: v for k, v in attributes.items() if v is not None}
        if op_type in _SAME_TYPE and not domain:
            inputs = self._double_constants(inputs)
        node = ir.node(
            op_type,
            list(inputs),
            attributes=attrs,
            domain=domain,
            num_outputs=outputs,
            name=f"{self.path}/{op_type}_{self._counter}" if self._scope and not inside else None,
            metadata_props=meta,
        )
        self._counter += 1
        if inside:
            # values inside Loop / If bodies are named here: ONNX wants names unique across all scopes
            for value in node.outputs:
                value.name = self.unique(f"{self._body.name}/{op_type}")
            self._body.append(node)
        else:
            self.graph.append(node)
        if dtype is not None:
            node.outputs[0].dtype = dtype
        return node.outputs[0] if outputs == 1 else tuple(node.outputs)

    def _double_constants(self, inputs: tuple[ir.Value | None, ...]) -> tuple[ir.Value | None, ...]:
        """``inputs`` with each float32 / float16 constant read as double when another input is double."""
        if not any(v is not None and v.dtype == DOUBLE for v in inputs):
            return inputs
        return tuple(self.const(v.const_value.numpy().astype(np.float64), v.name)
                     if v is not None and v.const_value is not None and v.dtype in _NARROW_FLOATS else v
                     for v in inputs)

    def const(self, array: Any, name: str = "c", dtype: Any = None) -> ir.Value:
        """An initializer holding ``array`` (numpy-convertible; strings become a string tensor).

        Identical small constants are shared.
        """
        arr = np.asarray(array, dtype=dtype)
        if arr.dtype.kind in "OUS":
            arr = np.asarray([str(v) for v in arr.ravel()], dtype=object).reshape(arr.shape)
            key = ("str", arr.shape, tuple(arr.ravel()))
        else:
            key = (arr.dtype.str, arr.shape, arr.tobytes()) if arr.size <= 4096 else None
        if key is not None and key in self._consts:
            return self._consts[key]
        tensor = to_tensor(arr, name=self.unique(name))
        value = ir.Value(name=tensor.name, shape=ir.Shape(arr.shape), type=ir.TensorType(tensor.dtype), const_value=tensor)
        self.graph.register_initializer(value)
        if key is not None:
            self._consts[key] = value
        return value

    @contextlib.contextmanager
    def subgraph(self, name: str, inputs: Sequence[ir.Value]) -> Iterator[ir.Graph]:
        """Nodes added inside the block go into a new graph (the body of a ``Loop`` / ``If`` / ``Scan``)
        whose inputs are ``inputs``; set its ``outputs`` before leaving. Constants stay initializers of the
        main graph, which the body reads from the outer scope."""
        outer, derived = self._body, self._derived
        body = ir.Graph(inputs=list(inputs), outputs=[], nodes=[], name=self.unique(name))
        self._body, self._derived = body, {}
        try:
            yield body
        finally:
            self._body, self._derived = outer, derived

    def branch(self, cond: ir.Value, then: Callable[[], ir.Value], otherwise: Callable[[], ir.Value],
               dtype: ir.DataType) -> ir.Value:
        """``then()`` where the 0-d bool ``cond`` holds, else ``otherwise()``: an ``If`` whose branches hold the
        nodes each callable adds (only the branch taken runs); both give one value of ``dtype``."""
        bodies = []
        for name, make in (("then", then), ("else", otherwise)):
            with self.subgraph(name, []) as body:
                body.outputs.append(self.op("Identity", make(), dtype=dtype))
            bodies.append(body)
        return self.op("If", cond, then_branch=bodies[0], else_branch=bodies[1], dtype=dtype)

    def derived(self, key: tuple, make: Callable[[], ir.Value]) -> ir.Value:
        """Memoise a value computed from others (a cast, a slice) so it is emitted once."""
        if key not in self._derived:
            self._derived[key] = make()
        return self._derived[key]

    # -- graph inputs and outputs -------------------------------------------------------------
    def input(self, name: str, dtype: ir.DataType, rank: int = 1) -> ir.Value:
        """Declare a graph input of shape ``[N]`` (rank 1) or ``[N, ?]``."""
        shape = ir.Shape(["N"] if rank == 1 else ["N"] + [None] * (rank - 1))
        value = ir.Value(name=name, shape=shape, type=ir.TensorType(dtype))
        self.graph.inputs.append(value)
        return value

    def output(self, value: ir.Value, name: str, dtype: ir.DataType | None = None,
               shape: list | None = None) -> ir.Value:
        """Expose ``value`` as the graph output ``name`` (an Identity is added when the value is taken).

        ``shape`` (default ``["N"]``) is declared on the output; every graph output carries one.
        """
        if value.is_graph_input() or value.is_graph_output() or value.is_initializer() or value.name in {
            o.name for o in self.graph.outputs
        }:
            value = self.op("Identity", value, dtype=dtype or value.dtype)
        value.name = name
        if dtype is not None:
            value.dtype = dtype
        value.shape = ir.Shape(shape if shape is not None else ["N"])
        self.graph.outputs.append(value)
        return value

    def flag(self, value: ir.Value, kind: str, column: str, **detail: Any) -> None:
        """Declare the boolean ``[N]`` output ``value`` flagging rows a step refuses.

        ``kind`` is a key of :data:`CHECK_PREFIXES`; :func:`onegraph.score` raises the matching error
        naming ``column`` and the rows (``detail`` is kept in the model's metadata for the message).
        """
        name = CHECK_PREFIXES[kind] + column
        taken = {o.name for o in self.graph.outputs}
        base, n = name, 1
        while name in taken:
            n += 1
            name = f"{base}#{n}"
        self.output(value, name, BOOL)
        self.checks.append({"name": name, "column": column, "role": "check", "check": kind, **detail})

    def reflag(self, value: ir.Value, entry: dict) -> None:
        """Declare ``value`` as a check again from the metadata ``entry`` of the model it was spliced from
        (see :func:`check_entries`): its kind, column and details are kept."""
        detail = {k: v for k, v in entry.items() if k not in ("name", "column", "role", "check", "model")}
        self.flag(value, entry["check"], entry["column"], **detail)

    # -- columns ------------------------------------------------------------------------------
    def vector(self, col: Col) -> ir.Value:
        """The column as a 1-D tensor ``[N]``."""
        if col.index is None:
            return col.value
        return self.derived(
            ("vector", id(col.value), col.index),
            lambda: self.op("Gather", col.value, self.const(np.int64(col.index), "idx"), axis=1, dtype=col.dtype),
        )

    def as_double(self, col: Col, int_marker: bool = False) -> Col:
        """The column as double: ints and datetimes map INT64_MIN to NaN, bools to 0/1.

        ``int_marker``: an int column is only cast, its missing marker INT64_MIN becoming -2**63 (one node
        instead of three), for a step that tests for the marker itself (see :data:`INT_PRESENT_FROM`).
        """
        if col.dtype == DOUBLE:
            return col
        if col.kind == "string":
            raise ExportError(f"column {col.name!r} holds strings; a numeric step cannot take it",
                              hint="encode it first (one-hot, ordinal) or select numeric columns only")

        def cast() -> ir.Value:
            return self.op("Cast", col.value, to=DOUBLE, dtype=DOUBLE)

        if col.dtype != INT64 or (int_marker and col.kind == "int"):
            value = self.derived(("cast", id(col.value)), cast)
        else:
            value = self.derived(("double", id(col.value)), lambda: self.op(
                "Where", self.op("Equal", col.value, self.const(np.int64(INT64_MIN), "na_int"), dtype=BOOL),
                self.const(np.float64(np.nan), "nan"), self.derived(("cast", id(col.value)), cast), dtype=DOUBLE))
        return dataclasses.replace(col, value=value, dtype=DOUBLE)

    def matrix(self, cols: Sequence[Col], dtype: ir.DataType | None = DOUBLE, int_marker: bool = False) -> ir.Value:
        """The columns as one 2-D block ``[N, len(cols)]`` of ``dtype`` (None: keep the columns' dtype).

        Reuses a block when ``cols`` are exactly its columns in order; otherwise slices consecutive runs
        of a block and concatenates. ``int_marker``: int columns keep their missing marker as -2**63
        (:meth:`as_double`).
        """
        if not cols:
            raise ExportError("an empty set of columns cannot form a feature matrix",
                              hint="check the column selection of the pipeline")
        if dtype is not None:
            cols = [self.as_double(c, int_marker) if dtype == DOUBLE else c for c in cols]
            for c in cols:
                if c.dtype != dtype:
                    raise ExportError(f"column {c.name!r} is {c.dtype.name}, expected {dtype.name}")
        first = cols[0]
        if (
            first.index == 0
            and all(c.value is first.value and c.index == i for i, c in enumerate(cols))
            and _width(first.value) == len(cols)
        ):
            return first.value
        if len(cols) >= 3 and all(c.index is None for c in cols):
            return self._stack_vectors([c.value for c in cols], cols[0].dtype)
        pieces: list[ir.Value] = []
        i = 0
        while i < len(cols):
            c = cols[i]
            if c.index is None:
                pieces.append(self.derived(("unsq", id(c.value)), lambda c=c: self.op(
                    "Unsqueeze", c.value, self.const(np.array([1], np.int64), "axes"), dtype=c.dtype)))
                i += 1
                continue
            j = i + 1
            while j < len(cols) and cols[j].value is c.value and cols[j].index == cols[j - 1].index + 1:
                j += 1
            start, stop = c.index, cols[j - 1].index + 1
            if start == 0 and _width(c.value) == stop:
                pieces.append(c.value)
            else:
                pieces.append(self.op(
                    "Slice", c.value, self.const(np.array([start], np.int64), "start"),
                    self.const(np.array([stop], np.int64), "stop"),
                    self.const(np.array([1], np.int64), "axes"), dtype=c.dtype))
            i = j
        if len(pieces) == 1:
            return pieces[0]
        return self.op("Concat", *pieces, axis=1, dtype=pieces[0].dtype)

    def _stack_vectors(self, values: list[ir.Value], dtype: ir.DataType) -> ir.Value:
        """``k`` 1-D values -> ``[N, k]`` in three nodes (concatenate, reshape to ``[k, N]``, transpose)."""
        flat = self.op("Concat", *values, axis=0, dtype=dtype)
        rows = self.op("Reshape", flat, self.const(np.array([len(values), -1], np.int64), "shape"), dtype=dtype)
        return self.op("Transpose", rows, perm=[1, 0], dtype=dtype)

    def block(self, value: ir.Value, names: Sequence[str], kind: str, dtype: ir.DataType) -> list[Col]:
        """Columns for a 2-D block ``value`` ``[N, len(names)]``."""
        value.shape = ir.Shape(["N", len(names)])
        value.dtype = dtype
        return [Col(n, kind, value, dtype, i) for i, n in enumerate(names)]

    # -- result -------------------------------------------------------------------------------
    def to_model(self) -> ir.Model:
        model = ir.Model(self.graph, ir_version=self.ir_version, producer_name="onegraph",
                         functions=list(self.functions.values()))
        return model


def to_tensor(arr: np.ndarray, name: str | None = None) -> ir.TensorProtocol:
    """An onnx-ir tensor for a numpy array; object / str arrays become UTF-8 string tensors."""
    arr = np.asarray(arr)
    if arr.dtype.kind in "OUS":
        data = np.asarray([str(v).encode("utf-8") for v in arr.ravel()], dtype=object).reshape(arr.shape)
        return ir.StringTensor(data, name=name)
    return ir.tensor(arr, name=name)


def _width(value: ir.Value) -> int | None:
    shape = value.shape
    if shape is None or len(shape) != 2 or not isinstance(shape[1], int):
        return None
    return shape[1]


# -- the emitter registry ----------------------------------------------------------------------
Emitter = Callable[[Any, GraphBuilder, list[Col]], list[Col]]
_EMITTERS: dict[type, Emitter] = {}


#: ``@register_emitter(*classes)`` registers ``fn(estimator, builder, cols) -> cols`` as the emitter of fitted
#: ``classes``
register_emitter = registrar(_EMITTERS)


def find_emitter(obj: Any) -> Emitter | None:
    """The emitter for ``obj``: its own ``emit`` method, or one registered for its class or a base."""
    own = getattr(obj, "emit", None)
    if callable(own):
        return lambda est, g, cols: est.emit(g, cols)
    for cls in type(obj).__mro__:
        if cls in _EMITTERS:
            return _EMITTERS[cls]
    return None
