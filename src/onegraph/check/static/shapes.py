"""Output shapes of the standard operators, from what is known of their inputs (the ONNX operator specs,
``docs/Operators.md``), for :mod:`onegraph.check.static.fold`.

Each function takes a :class:`~onegraph.check.static.fold.Site` and returns one
:class:`~onegraph.check.static.fold.Known` (or None) per output. A dim is an ``int`` only where every valid
run gives it; where the known dims make the node invalid the function reports it on the site (C313 axis out
of range, C314 ranks that disagree, C315 dims that disagree) and returns None. Operators whose output size
depends on the data (``NonZero``, ``Unique``, reductions...) give an upper bound (``upper``), which is what
the folding needs before it evaluates them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto

from onegraph.check.findings import Finding
from onegraph.check.static.tensors import byte_size
from onegraph.check.static.walk import Body, node_label

__all__ = ["Known", "Site", "onnx_dtype", "SHAPES", "SIZE_INPUT", "NOT_FOLDED", "WORK", "broadcast"]


@dataclasses.dataclass
class Known:
    """What the model fixes of one value.

    ``dtype``: ONNX element type (None unknown). ``shape``: None when the rank is unknown, else one entry per
    axis, an ``int`` every valid run gives or None. ``array``: the value, for small constants. ``upper``: most
    elements the value can hold (None unknown), for operators whose output size depends on the data.
    """

    dtype: int | None = None
    shape: tuple[int | None, ...] | None = None
    array: np.ndarray | None = None
    upper: int | None = None
    #: fewest elements, where the dims do not tell (``Expand`` of a value of unknown rank, ``Tile`` of unknown dims)
    least: int | None = None

    @property
    def least_elements(self) -> int:
        """Fewest elements any valid run gives it (an unknown dim counted as 1)."""
        if self.shape is None:
            return self.least or 0
        return max(math.prod(d if d is not None else 1 for d in self.shape), self.least or 0)

    @property
    def most_elements(self) -> int | None:
        if self.shape is not None and all(d is not None for d in self.shape):
            return math.prod(self.shape)
        return self.upper

    def least_bytes(self) -> int:
        n = self.least_elements
        return (byte_size(n, self.dtype) if self.dtype is not None else None) or n

    @classmethod
    def of_array(cls, array: np.ndarray, dtype: int | None = None) -> Known:
        return cls(dtype if dtype is not None else onnx_dtype(array.dtype), tuple(int(d) for d in array.shape),
                   array)


class Site:
    """One node as a shape function sees it: its inputs, attributes, opset, and where to report."""

    def __init__(self, node: onnx.NodeProto, index: int, body: Body, ins: list[Known | None], opset: int) -> None:
        self.node, self.ins, self.opset = node, ins, opset
        self.path, self.label = f"{body.path}.node[{index}]", node_label(node, index)
        self.attrs = {a.name: a for a in node.attribute}
        self.findings: list[Finding] = []

    # -- inputs -----------------------------------------------------------------------------------
    def known(self, k: int) -> Known | None:
        return self.ins[k] if k < len(self.ins) else None

    def shape(self, k: int) -> tuple[int | None, ...] | None:
        v = self.known(k)
        return v.shape if v is not None else None

    def rank(self, k: int) -> int | None:
        s = self.shape(k)
        return len(s) if s is not None else None

    def dtype(self, k: int) -> int | None:
        v = self.known(k)
        return v.dtype if v is not None else None

    def array(self, k: int) -> np.ndarray | None:
        v = self.known(k)
        return v.array if v is not None else None

    def ints(self, k: int) -> list[int] | None:
        """The values of input ``k`` when it is a constant integer scalar or vector."""
        a = self.array(k)
        if a is None or a.ndim > 1 or a.dtype.kind not in "iu":
            return None
        return [int(x) for x in a.reshape(-1)]

    def numbers(self, k: int) -> list[float] | None:
        a = self.array(k)
        if a is None or a.ndim > 1 or a.dtype.kind not in "iuf":
            return None
        return [float(x) for x in a.reshape(-1)]

    def present(self, k: int) -> bool:
        return k < len(self.node.input) and bool(self.node.input[k])

    # -- attributes -------------------------------------------------------------------------------
    def attr_int(self, name: str, default: int | None = None) -> int | None:
        a = self.attrs.get(name)
        return int(a.i) if a is not None and a.type == onnx.AttributeProto.INT else default

    def attr_ints(self, name: str) -> list[int] | None:
        a = self.attrs.get(name)
        return [int(x) for x in a.ints] if a is not None and a.type == onnx.AttributeProto.INTS else None

    def attr_floats(self, name: str) -> list[float] | None:
        a = self.attrs.get(name)
        return [float(x) for x in a.floats] if a is not None and a.type == onnx.AttributeProto.FLOATS else None

    def attr_str(self, name: str, default: str = "") -> str:
        a = self.attrs.get(name)
        if a is None or a.type != onnx.AttributeProto.STRING:
            return default
        return a.s.decode("utf-8", "replace") if isinstance(a.s, bytes) else str(a.s)

    # -- reporting --------------------------------------------------------------------------------
    def problem(self, code: str, message: str, field: str) -> None:
        self.findings.append(Finding(code, f"{self.node.op_type}: {message}", f"{self.path}.{field}",
                                     node=self.label))

    def axis(self, value: int | None, rank: int | None, field: str, what: str = "axis") -> int | None:
        """``value`` normalized into ``[0, rank)``; C313 when it is outside ``[-rank, rank)``."""
        if value is None or rank is None:
            return None
        if not -rank <= value < rank:
            self.problem("C313", f"{what} {value} is outside the input's rank {rank} (valid: {-rank} to {rank - 1})",
                         field)
            return None
        return value % rank


def onnx_dtype(dtype: np.dtype) -> int | None:
    if dtype == object or dtype.kind in "US":
        return TensorProto.STRING
    try:
        return onnx.helper.np_dtype_to_tensor_dtype(dtype)
    except (KeyError, ValueError, TypeError):
        return None


Dims = tuple[int | None, ...]
_Shape = Callable[[Site], "list[Known | None] | None"]
SHAPES: dict[str, _Shape] = {}
#: operator -> the input that decides its output size (named by C204)
SIZE_INPUT = {"ConstantOfShape": 0, "Expand": 1, "Tile": 1, "Range": 1, "Pad": 1, "OneHot": 1, "Resize": 3,
              "Upsample": 1, "Reshape": 1}
#: operators computed, never folded: random values differ from run to run
NOT_FOLDED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                        "Bernoulli"})
#: operator -> multiply-adds of a node beyond its output size (bounded before it is folded)
WORK: dict[str, Callable[[Site], int]] = {}

_BOOL, _INT64 = TensorProto.BOOL, TensorProto.INT64


def shape(*ops: str) -> Callable[[_Shape], _Shape]:
    def register(fn: _Shape) -> _Shape:
        for op in ops:
            SHAPES[op] = fn
        return fn
    return register


def _known(dtype: int | None, dims: Sequence[int | None] | None, upper: int | None = None) -> Known:
    return Known(dtype, tuple(dims) if dims is not None else None, upper=upper)


def _most(site: Site, k: int = 0) -> int | None:
    v = site.known(k)
    return v.most_elements if v is not None else None


# -- same shape as the first input ----------------------------------------------------------------
_SAME = ("Identity", "Neg", "Abs", "Ceil", "Floor", "Round", "Sign", "Sqrt", "Reciprocal", "Exp", "Log", "Relu",
         "Sigmoid", "Tanh", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
         "Atanh", "Softplus", "Softsign", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Mish",
         "Gelu", "ThresholdedRelu", "Softmax", "LogSoftmax", "Hardmax", "Clip", "CumSum", "Trilu", "Not",
         "BitwiseNot", "ScatterND", "ScatterElements", "Scatter", "ReverseSequence", "Shrink", "Dropout")


@shape(*_SAME)
def _same(site: Site) -> list[Known | None]:
    first = site.known(0) or Known()
    out = _known(first.dtype, first.shape, first.upper)
    extra = [_known(_BOOL, first.shape)] if site.node.op_type == "Dropout" and len(site.node.output) > 1 else []
    return [out] + extra


@shape("IsNaN", "IsInf")
def _predicate(site: Site) -> list[Known | None]:
    first = site.known(0) or Known()
    return [_known(_BOOL, first.shape, first.upper)]


@shape("Cast", "CastLike", "EyeLike", "RandomNormalLike", "RandomUniformLike", "Bernoulli")
def _cast(site: Site) -> list[Known | None]:
    first = site.known(0) or Known()
    op = site.node.op_type
    dtype = site.dtype(1) if op == "CastLike" else site.attr_int("to" if op == "Cast" else "dtype", first.dtype)
    return [_known(dtype, first.shape, first.upper)]


# -- broadcasting ---------------------------------------------------------------------------------
def broadcast(site: Site, shapes: Sequence[Dims | None], field: str) -> Dims | None:
    """The multidirectional broadcast of ``shapes`` (numpy's rules); C315 where known dims disagree."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out: list[int | None] = []
    for axis in range(rank):
        dims = [s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0]
        fixed = {d for d in dims if d is not None and d != 1}
        if len(fixed) > 1:
            site.problem("C315", f"dims {sorted(fixed)} of axis {axis - rank} do not broadcast (shapes "
                         f"{[list(s) for s in shapes]})", field)
            return None
        if fixed:
            out.append(fixed.pop())
        elif all(d == 1 for d in dims):
            out.append(1)
        else:
            out.append(None)
    return tuple(out)


_COMPARE = ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor")


@shape("Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "BitShift", "BitwiseAnd",
       "BitwiseOr", "BitwiseXor", "PRelu", "Where", *_COMPARE)
def _elementwise(site: Site) -> list[Known | None]:
    op = site.node.op_type
    dims = broadcast(site, [site.shape(k) for k in range(len(site.node.input)) if site.present(k)], "input")
    dtype = _BOOL if op in _COMPARE else site.dtype(1 if op == "Where" else 0)
    return [_known(dtype, dims)]


@shape("MatMul", "MatMulInteger")
def _matmul(site: Site) -> list[Known | None]:
    a, b = site.shape(0), site.shape(1)
    dtype = TensorProto.INT32 if site.node.op_type == "MatMulInteger" else site.dtype(0)
    if a is None or b is None or not a or not b:
        return [_known(dtype, None)]
    a2, b2 = (list(a) if len(a) > 1 else [1, a[0]]), (list(b) if len(b) > 1 else [b[0], 1])
    if a2[-1] is not None and b2[-2] is not None and a2[-1] != b2[-2]:
        site.problem("C315", f"A {list(a)} and B {list(b)}: inner dims {a2[-1]} and {b2[-2]} differ", "input[1]")
        return None
    batch = broadcast(site, [tuple(a2[:-2]), tuple(b2[:-2])], "input[1]")
    if batch is None:
        return None
    dims = list(batch) + ([a2[-2]] if len(a) > 1 else []) + ([b2[-1]] if len(b) > 1 else [])
    return [_known(dtype, dims)]


def _matmul_work(site: Site) -> int:
    """Multiply-adds: A's elements times B's columns."""
    a, b = site.known(0), site.shape(1)
    return ((a.most_elements if a is not None else None) or 0) * max((b[-1] if b else None) or 1, 1)


WORK["MatMul"] = WORK["MatMulInteger"] = _matmul_work


# -- shapes as values -----------------------------------------------------------------------------
@shape("Shape")
def _shape(site: Site) -> list[Known | None]:
    dims = site.shape(0)
    if dims is None:
        return [_known(_INT64, [None])]
    start, end = site.attr_int("start", 0), site.attr_int("end", None)
    picked = list(dims)[slice(start, end)]
    value = Known(_INT64, (len(picked),))
    if all(d is not None for d in picked):
        value = Known.of_array(np.array(picked, np.int64), _INT64)
    return [value]


@shape("Size")
def _size(site: Site) -> list[Known | None]:
    dims = site.shape(0)
    if dims is not None and all(d is not None for d in dims):
        return [Known.of_array(np.array(math.prod(dims), np.int64), _INT64)]
    return [_known(_INT64, ())]


# -- layout ---------------------------------------------------------------------------------------
@shape("Reshape")
def _reshape(site: Site) -> list[Known | None]:
    data, target = site.shape(0), site.ints(1)
    dtype = site.dtype(0)
    if target is None:
        n = site.shape(1)
        return [_known(dtype, [None] * n[0] if n and n[0] is not None else None, _most(site))]
    allowzero = site.attr_int("allowzero", 0)
    if target.count(-1) > 1:
        site.problem("C315", f"shape {target[:8]} holds -1 more than once", "input[1]")
        return None
    if any(d < -1 for d in target) or (allowzero and 0 in target and -1 in target):
        site.problem("C315", f"shape {target[:8]} holds an invalid dim", "input[1]")
        return None
    dims: list[int | None] = []
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if data is None:
                dims.append(None)
            elif i >= len(data):
                site.problem("C315", f"shape {target[:8]} copies dim {i} (0) of an input of rank {len(data)}",
                             "input[1]")
                return None
            else:
                dims.append(data[i])
        else:
            dims.append(d)
    total = math.prod(data) if data is not None and all(d is not None for d in data) else None
    if -1 in dims:
        rest = [d for d in dims if d != -1]
        if total is not None and all(d is not None for d in rest):
            part = math.prod(rest)
            if part == 0 or total % part:
                site.problem("C315", f"{total} elements cannot take shape {target[:8]}", "input[1]")
                return None
            dims[dims.index(-1)] = total // part
        else:
            dims[dims.index(-1)] = None
    elif total is not None and all(d is not None for d in dims) and math.prod(dims) != total:
        site.problem("C315", f"the input's {total} elements ({list(data)[:8]}) cannot take shape {target[:8]} "
                     f"({math.prod(dims)} elements)", "input[1]")
        return None
    return [_known(dtype, dims)]


@shape("Flatten")
def _flatten(site: Site) -> list[Known | None]:
    dims, rank = site.shape(0), site.rank(0)
    if dims is None:
        return [_known(site.dtype(0), [None, None])]
    raw = site.attr_int("axis", 1)
    if raw is None or not -rank <= raw <= rank:
        site.problem("C313", f"axis {raw} is outside the input's rank {rank} (valid: {-rank} to {rank})",
                     "attribute[axis]")
        return None
    axis = raw % (rank + 1) if raw < 0 else raw

    def prod(part: Dims) -> int | None:
        return math.prod(part) if all(d is not None for d in part) else None
    return [_known(site.dtype(0), [prod(dims[:axis]), prod(dims[axis:])])]


def _axes(site: Site, k: int) -> tuple[list[int] | None, str]:
    """Axes given as attribute (older opsets) or as input ``k``."""
    if site.present(k):
        return site.ints(k), f"input[{k}]"
    return site.attr_ints("axes"), "attribute[axes]"


@shape("Squeeze")
def _squeeze(site: Site) -> list[Known | None]:
    dims = site.shape(0)
    axes, field = _axes(site, 1)
    if dims is None:
        return [_known(site.dtype(0), None, _most(site))]
    if axes is None:
        if site.present(1) or "axes" in site.attrs:
            return [_known(site.dtype(0), None, _most(site))]
        if any(d is None for d in dims):
            return [_known(site.dtype(0), None, _most(site))]
        return [_known(site.dtype(0), [d for d in dims if d != 1])]
    picked = [site.axis(a, len(dims), field) for a in axes]
    if None in picked:
        return None
    for a in picked:
        if dims[a] is not None and dims[a] != 1:
            site.problem("C315", f"axis {a} has dim {dims[a]}; only dims of 1 can be squeezed", field)
            return None
    return [_known(site.dtype(0), [d for i, d in enumerate(dims) if i not in picked])]


@shape("Unsqueeze")
def _unsqueeze(site: Site) -> list[Known | None]:
    dims = site.shape(0)
    axes, field = _axes(site, 1)
    if dims is None or axes is None:
        return [_known(site.dtype(0), None, _most(site))]
    rank = len(dims) + len(axes)
    picked = [site.axis(a, rank, field) for a in axes]
    if None in picked:
        return None
    if len(set(picked)) != len(picked):
        site.problem("C313", f"axes {axes[:8]} repeat an axis", field)
        return None
    rest = iter(dims)
    return [_known(site.dtype(0), [1 if i in picked else next(rest) for i in range(rank)])]


@shape("Transpose")
def _transpose(site: Site) -> list[Known | None]:
    dims, perm = site.shape(0), site.attr_ints("perm")
    if dims is None:
        return [_known(site.dtype(0), None, _most(site))]
    if perm is None:
        return [_known(site.dtype(0), dims[::-1])]
    if sorted(perm) != list(range(len(dims))):
        site.problem("C314", f"perm {perm[:8]} is not a permutation of the input's {len(dims)} axes",
                     "attribute[perm]")
        return None
    return [_known(site.dtype(0), [dims[p] for p in perm])]


@shape("Concat")
def _concat(site: Site) -> list[Known | None]:
    shapes = [site.shape(k) for k in range(len(site.node.input)) if site.present(k)]
    ranks = {len(s) for s in shapes if s is not None}
    if len(ranks) > 1:
        site.problem("C314", f"inputs of ranks {sorted(ranks)}; Concat takes inputs of one rank", "input")
        return None
    if not ranks:
        return [_known(site.dtype(0), None)]
    rank = ranks.pop()
    axis = site.axis(site.attr_int("axis"), rank, "attribute[axis]")
    if axis is None:
        return None if site.findings else [_known(site.dtype(0), None)]
    known = [s for s in shapes if s is not None]
    out: list[int | None] = []
    for i in range(rank):
        dims = [s[i] for s in known]
        if i == axis:
            out.append(sum(dims) if len(known) == len(shapes) and None not in dims else None)
            continue
        fixed = {d for d in dims if d is not None}
        if len(fixed) > 1:
            site.problem("C315", f"inputs differ in dim {i} ({sorted(fixed)}), which is not the axis {axis}",
                         "input")
            return None
        out.append(fixed.pop() if fixed else None)
    return [_known(site.dtype(0), out)]


@shape("Split")
def _split(site: Site) -> list[Known | None]:
    upper = _most(site)
    return [_known(site.dtype(0), None, upper) for _ in site.node.output]


@shape("Slice")
def _slice(site: Site) -> list[Known | None]:
    dims, dtype = site.shape(0), site.dtype(0)
    unknown = [_known(dtype, [None] * len(dims) if dims is not None else None, _most(site))]
    if dims is None:
        return unknown
    if site.opset < 10:
        starts, ends, axes, steps = (site.attr_ints("starts"), site.attr_ints("ends"), site.attr_ints("axes"),
                                     None)
    else:
        starts, ends = site.ints(1), site.ints(2)
        axes = site.ints(3) if site.present(3) else None
        steps = site.ints(4) if site.present(4) else None
        if (site.present(3) and axes is None) or (site.present(4) and steps is None):
            return unknown
    if starts is None or ends is None:
        return unknown
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        site.problem("C315", f"starts, ends, axes and steps have {len(starts)}, {len(ends)}, {len(axes)} and "
                     f"{len(steps)} values", "input")
        return None
    out = list(dims)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        a = site.axis(axis, len(dims), "input[3]" if site.opset >= 10 else "attribute[axes]")
        if a is None:
            return None
        if step == 0:
            site.problem("C315", "a step is 0", "input[4]")
            return None
        out[a] = len(range(dims[a])[slice(start, end, step)]) if dims[a] is not None else None
    return [_known(dtype, out)]


# -- gathering ------------------------------------------------------------------------------------
@shape("Gather")
def _gather(site: Site) -> list[Known | None]:
    data, indices = site.shape(0), site.shape(1)
    if data is None:
        return [_known(site.dtype(0), None)]
    axis = site.axis(site.attr_int("axis", 0), len(data), "attribute[axis]")
    if axis is None:
        return None
    values = site.ints(1)
    if values is not None and data[axis] is not None:
        bad = [v for v in values if not -data[axis] <= v < data[axis]]
        if bad:
            site.problem("C313", f"constant index {bad[0]} is outside axis {axis} of dim {data[axis]}", "input[1]")
            return None
    if indices is None:
        return [_known(site.dtype(0), None)]
    return [_known(site.dtype(0), list(data[:axis]) + list(indices) + list(data[axis + 1:]))]


@shape("GatherElements")
def _gather_elements(site: Site) -> list[Known | None]:
    r, q = site.rank(0), site.rank(1)
    if r is not None and q is not None and r != q:
        site.problem("C314", f"data has rank {r} and indices rank {q}; GatherElements takes equal ranks", "input[1]")
        return None
    if r is not None:
        site.axis(site.attr_int("axis", 0), r, "attribute[axis]")
    return [_known(site.dtype(0), site.shape(1))] if not site.findings else None


@shape("GatherND")
def _gather_nd(site: Site) -> list[Known | None]:
    data, indices = site.shape(0), site.shape(1)
    b = site.attr_int("batch_dims", 0)
    if data is None or indices is None:
        return [_known(site.dtype(0), None)]
    r, q = len(data), len(indices)
    if r < 1 or q < 1:
        site.problem("C314", f"data has rank {r} and indices rank {q}; GatherND takes ranks of at least 1",
                     "input[0]" if r < 1 else "input[1]")
        return None
    if not 0 <= b < min(q, r):
        site.problem("C314", f"batch_dims = {b}, but data has rank {r} and indices rank {q}: batch_dims must be "
                     f"less than both", "attribute[batch_dims]")
        return None
    for i in range(b):
        if data[i] is not None and indices[i] is not None and data[i] != indices[i]:
            site.problem("C315", f"batch dim {i} is {data[i]} in data and {indices[i]} in indices (batch_dims = "
                         f"{b}): they must be equal", "input[1]")
            return None
    last = indices[-1]
    if last is not None and not 1 <= last <= r - b:
        site.problem("C315", f"the indices' last dim is {last}; with data of rank {r} and batch_dims = {b} it must "
                     f"be 1 to {r - b}", "input[1]")
        return None
    if last is None:
        return [_known(site.dtype(0), None)]
    return [_known(site.dtype(0), list(indices[:-1]) + list(data[b + last:]))]


# -- allocations whose size constants decide ------------------------------------------------------
@shape("ConstantOfShape")
def _constant_of_shape(site: Site) -> list[Known | None]:
    value = site.attrs.get("value")
    dtype = value.t.data_type if value is not None and value.HasField("t") else TensorProto.FLOAT
    dims = site.ints(0)
    if dims is None:
        n = site.shape(0)
        return [_known(dtype, [None] * n[0] if n and n[0] is not None else None)]
    if any(d < 0 for d in dims):
        site.problem("C315", f"shape {dims[:8]} holds a negative dim", "input[0]")
        return None
    return [_known(dtype, dims)]


@shape("Expand")
def _expand(site: Site) -> list[Known | None]:
    target = site.ints(1)
    if target is None:
        return [_known(site.dtype(0), None)]
    if any(d < 0 for d in target):
        site.problem("C315", f"shape {target[:8]} holds a negative dim", "input[1]")
        return None
    data = site.shape(0)
    if data is None:  # the input's rank is unknown: the output holds at least the target's elements
        return [Known(site.dtype(0), None, least=math.prod(target))]
    return [_known(site.dtype(0), broadcast(site, [data, tuple(target)], "input[1]"))]


@shape("Tile")
def _tile(site: Site) -> list[Known | None]:
    data, repeats = site.shape(0), site.ints(1)
    if data is None or repeats is None:
        return [_known(site.dtype(0), [None] * len(data) if data is not None else None)]
    if len(repeats) != len(data):
        site.problem("C314", f"{len(repeats)} repeats for an input of rank {len(data)}", "input[1]")
        return None
    if any(r < 0 for r in repeats):
        site.problem("C315", f"repeats {repeats[:8]} hold a negative value", "input[1]")
        return None
    out = Known(site.dtype(0), tuple(d * r if d is not None else (0 if r == 0 else None) for d, r in zip(data, repeats)))
    out.least = math.prod((d if d is not None else 1) * r for d, r in zip(data, repeats))  # a dim of 1 at least
    return [out]


@shape("Range")
def _range(site: Site) -> list[Known | None]:
    values = [site.numbers(k) for k in range(3)]
    dtype = site.dtype(0)
    if any(v is None or len(v) != 1 for v in values):
        return [_known(dtype, [None])]
    start, limit, delta = (v[0] for v in values)
    if delta == 0 or not all(map(math.isfinite, (start, limit, delta))):
        site.problem("C315", f"start {start:g}, limit {limit:g}, delta {delta:g} make no finite range", "input[2]")
        return None
    return [_known(dtype, [max(math.ceil((limit - start) / delta), 0)])]


@shape("Pad")
def _pad(site: Site) -> list[Known | None]:
    data = site.shape(0)
    pads = site.attr_ints("pads") if site.opset < 11 else site.ints(1)
    if data is None or pads is None:
        return [_known(site.dtype(0), [None] * len(data) if data is not None else None)]
    axes = site.ints(3) if site.present(3) else list(range(len(data)))
    if axes is None:
        return [_known(site.dtype(0), [None] * len(data))]
    if len(pads) != 2 * len(axes):
        site.problem("C315", f"{len(pads)} pads for {len(axes)} axes (2 per axis)", "input[1]")
        return None
    out = list(data)
    for j, axis in enumerate(axes):
        a = site.axis(axis, len(data), "input[3]")
        if a is None:
            return None
        if out[a] is not None:
            out[a] = out[a] + pads[j] + pads[j + len(axes)]
            if out[a] < 0:
                site.problem("C315", f"pads {pads[:8]} remove more than axis {a}'s {data[a]} elements", "input[1]")
                return None
    return [_known(site.dtype(0), out)]


@shape("OneHot")
def _one_hot(site: Site) -> list[Known | None]:
    indices, depth = site.shape(0), site.numbers(1)
    dtype = site.dtype(2)
    if indices is None:
        return [_known(dtype, None)]
    rank = len(indices) + 1
    axis = site.axis(site.attr_int("axis", -1), rank, "attribute[axis]")
    if axis is None:
        return None
    d = int(depth[0]) if depth is not None and len(depth) == 1 and math.isfinite(depth[0]) else None
    if d is not None and d < 1:
        site.problem("C315", f"depth {depth[0]:g} is less than 1", "input[1]")
        return None
    out = list(indices)
    out.insert(axis, d)
    return [_known(dtype, out)]


@shape("Resize", "Upsample")
def _resize(site: Site) -> list[Known | None]:
    data = site.shape(0)
    dtype = site.dtype(0)
    if data is None:
        return [_known(dtype, None)]
    unknown = [_known(dtype, [None] * len(data))]
    if site.node.op_type == "Upsample" or site.opset < 11:
        scales = site.attr_floats("scales") if site.opset < 9 else site.numbers(1)
        sizes, axes = None, None
    else:
        scales = site.numbers(2) if site.present(2) else None
        sizes = site.ints(3) if site.present(3) else None
        axes = site.attr_ints("axes")
        if site.attr_str("keep_aspect_ratio_policy", "stretch") != "stretch":
            return unknown
    axes = list(range(len(data))) if axes is None else axes
    normalized = [site.axis(a, len(data), "attribute[axes]") for a in axes]
    if None in normalized:
        return None
    out = list(data)
    given = sizes if sizes else scales
    if not given:
        return unknown
    if len(given) != len(normalized):
        site.problem("C315", f"{len(given)} {'sizes' if sizes else 'scales'} for {len(normalized)} axes",
                     "input[3]" if sizes else "input[2]")
        return None
    for a, g in zip(normalized, given):
        if g < 0 or not math.isfinite(g):
            site.problem("C315", f"{'size' if sizes else 'scale'} {g:g} is negative or not finite",
                         "input[3]" if sizes else "input[2]")
            return None
        out[a] = int(g) if sizes else (math.floor(out[a] * g) if out[a] is not None else None)
    return [_known(dtype, out)]


@shape("RandomNormal", "RandomUniform")
def _random(site: Site) -> list[Known | None]:
    dims = site.attr_ints("shape")
    if dims is None or any(d < 0 for d in dims):
        return None
    return [_known(site.attr_int("dtype", TensorProto.FLOAT), dims)]


# -- data-dependent sizes: bounded by the input ---------------------------------------------------
@shape("NonZero")
def _non_zero(site: Site) -> list[Known | None]:
    rank, most = site.rank(0), _most(site)
    return [_known(_INT64, [rank, None], rank * most if rank is not None and most is not None else None)]


@shape("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
       "ReduceLogSumExp", "ReduceSumSquare", "Compress", "TopK", "Unique")
def _bounded(site: Site) -> list[Known | None]:
    most = _most(site)
    return [_known(site.dtype(0) if k == 0 else _INT64, None, most) for k in range(len(site.node.output))]


@shape("ArgMax", "ArgMin")
def _arg(site: Site) -> list[Known | None]:
    return [_known(_INT64, None, _most(site))]
