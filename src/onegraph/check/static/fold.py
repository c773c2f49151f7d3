"""Constant folding for the static checks: the values and shapes a model's constants determine (C203 / C204,
C313-C315).

onnxruntime folds the nodes whose inputs are all constants when it opens a model, and allocates every output
when it runs it: a ``ConstantOfShape`` whose shape is ``Mul(Constant, Constant)`` asks for hundreds of
gigabytes although no stored tensor is large. This module walks each body in node order and keeps, for each
value, what the model fixes of it (:class:`Known`): its element type, its dims (an ``int`` where every valid
run gives that dim, ``None`` where it depends on the feeds) and, for small constants, the value itself.
Sources are initializers, ``Constant`` nodes, the main graph's declared input shapes (what every feed must
be) and the nodes' outputs, computed by one shape function per operator (:mod:`onegraph.check.static.shapes`,
from the ONNX operator specs).

Before a node is evaluated its output size is computed from its inputs (an exact shape, or an upper bound for
data-dependent operators), so a bomb is reported, never allocated: a node is evaluated only when every input
holds a value, every output is bounded by :data:`FOLD_ELEMENTS` elements and the model's folding budget
(:data:`FOLD_BUDGET`) is not spent. Evaluation is onnx's reference implementation of the one node
(``onnx.reference.ReferenceEvaluator``, Python and numpy: no native code runs on the model here, so a finding
of this stage survives any later crash). onnxscript's constant folder and onnx-ir's were not used: they check
an output's size after computing it, and call onnx's native shape inference per node.

A node output whose dims (unknown dims counted as 1) need more bytes than the memory limit is C204 (C203 when
their product overflows int64), unless one of its inputs already did (reported there: one finding per bomb).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from onegraph.check.findings import Finding
from onegraph.check.static import shapes
from onegraph.check.static.shapes import Known, Site
from onegraph.check.static.tensors import INT64_MAX, byte_size, type_name
from onegraph.check.static.walk import Body, domain_of, node_label

__all__ = ["FOLD_ELEMENTS", "FOLD_BUDGET", "Folder"]

#: largest tensor (elements) the folding holds as a value or computes
FOLD_ELEMENTS = 1 << 16
#: elements the folding of one model may compute in all (it stops folding, not checking, beyond)
FOLD_BUDGET = 1 << 22


class Folder:
    """The values of a model's bodies, folded in node order (one per model: the budget is the model's)."""

    def __init__(self, memory: int) -> None:
        self.memory = memory
        self.budget = FOLD_BUDGET
        self._known: dict[str, dict[str, Known]] = {}

    def body(self, body: Body, main: Any = None) -> Iterator[Finding]:
        """Findings for one body; ``main``: the model's main graph (its declared inputs seed the values)."""
        known: dict[str, Known] = {}
        parent = body.path.rsplit(".node[", 1)[0] if ".node[" in body.path else None
        if parent is not None:
            outer = self._known.get(parent, {})
            known.update({name: outer[name] for name in body.outer if name in outer})
        if body.graph is not None:
            if body.graph is main:
                for vi in body.graph.input:
                    known[vi.name] = _declared(vi)
            yield from self._stored(body, known)
        opset = body.opsets.get("", 0)
        for i, node in enumerate(body.nodes):
            if node.op_type == "Constant" and domain_of(node.domain) == "":
                value = _constant(node, i, body, self.memory)
                if isinstance(value, Finding):
                    yield value
                    value = None
                if value is not None and node.output:
                    known[node.output[0]] = value
                continue
            if domain_of(node.domain) != "" or node.op_type not in shapes.SHAPES:
                continue
            ins = [known.get(name) if name else None for name in node.input]
            site = Site(node, i, body, ins, opset)
            try:
                outs = shapes.SHAPES[node.op_type](site)
            except (ValueError, TypeError, IndexError, OverflowError, ZeroDivisionError, KeyError):
                outs = None  # a shape function met values it cannot read: the native checks will
            yield from site.findings
            if not outs or site.findings:
                continue
            bomb = self._allocations(site, outs)
            if bomb is not None:
                yield bomb
                continue
            if self._foldable(site, outs):
                outs = self._evaluate(site, outs)
            for name, value in zip(node.output, outs):
                if name and value is not None:
                    known[name] = value
        self._known[body.path] = known

    def _stored(self, body: Body, known: dict[str, Known]) -> Iterator[Finding]:
        for t in body.graph.initializer:
            known[t.name] = _stored_tensor(t, self.memory)
        for i, s in enumerate(body.graph.sparse_initializer):
            dense = Known(s.values.data_type or None, tuple(int(d) for d in s.dims))
            known[s.values.name] = dense
            yield from _dense_size(dense, f"{body.path}.sparse_initializer[{i}].dims", self.memory,
                                   tensor=s.values.name or None, what="the sparse initializer, made dense,")

    def _allocations(self, site: Site, outs: Sequence[Known | None]) -> Finding | None:
        """C203 / C204 for the first output too large, unless an input already is (reported upstream)."""
        for k, value in enumerate(outs):
            if value is None or (value.shape is None and not value.least):
                continue
            if any(v is not None and v.shape is not None and v.least_bytes() > self.memory for v in site.ins):
                return None
            size_at = shapes.SIZE_INPUT.get(site.node.op_type)
            field = f"input[{size_at}]" if size_at is not None and site.present(size_at) else f"output[{k}]"
            name = site.node.output[k] if k < len(site.node.output) else None
            found = list(_dense_size(value, f"{site.path}.{field}", self.memory, node=site.label, tensor=name or None,
                                     what=f"{site.node.op_type} output {k}"))
            if found:
                return found[0]
        return None

    def _foldable(self, site: Site, outs: Sequence[Known | None]) -> bool:
        if site.node.op_type in shapes.NOT_FOLDED or self.budget <= 0:
            return False
        if any(site.present(k) and site.array(k) is None for k in range(len(site.node.input))):
            return False
        if any(a.ref_attr_name for a in site.node.attribute):
            return False
        bounds = [v.most_elements if v is not None else None for v in outs]
        if len(bounds) < len(site.node.output) or any(b is None or b > FOLD_ELEMENTS for b in bounds):
            return False
        work = shapes.WORK.get(site.node.op_type, lambda s: 0)(site)
        return work <= FOLD_BUDGET and sum(bounds) + work <= self.budget

    def _evaluate(self, site: Site, outs: list[Known | None]) -> list[Known | None]:
        from onnx.reference import ReferenceEvaluator

        feeds = {name: site.array(k) for k, name in enumerate(site.node.input) if name}
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                evaluator = ReferenceEvaluator(site.node, opsets={"": site.opset})
                results = evaluator.run(None, feeds)
        except Exception:  # noqa: BLE001 - a node the reference refuses: its shapes stay as computed
            return outs
        folded: list[Known | None] = []
        for value, result in zip(outs, results):
            if isinstance(result, np.ndarray) and result.size <= FOLD_ELEMENTS:
                self.budget -= result.size
                folded.append(Known.of_array(result, value.dtype if value is not None else None))
            else:
                folded.append(value)
        return folded


def _dense_size(value: Known, field: str, memory: int, *, node: str | None = None, tensor: str | None = None,
                what: str) -> Iterator[Finding]:
    if value.shape is None:
        dims, shown = [value.least or 0], f"(at least {value.least:,} elements)"
    else:
        dims = [d for d in value.shape if d is not None]
        shown = str([d if d is not None else "?" for d in value.shape][:8])
    if any(d < 0 for d in dims):
        return
    elements = math.prod(dims)
    if elements > INT64_MAX:
        yield Finding("C203", f"{what} has dims {shown}: more elements than int64 can count", field, node=node,
                      tensor=tensor)
        return
    size = value.least_bytes()
    if size > memory:
        dtype = type_name(value.dtype) if value.dtype is not None else "1-byte"
        yield Finding("C204", f"{what} is {dtype} {shown}, {size:,} bytes, more than the memory limit {memory:,} "
                      "(dims from constants and the declared inputs; onnxruntime allocates it when it folds "
                      "constants at load or runs the model)", field, node=node, tensor=tensor)


def _declared(vi: onnx.ValueInfoProto) -> Known:
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        return Known()
    dtype = t.elem_type or None
    if not t.HasField("shape"):
        return Known(dtype)
    return Known(dtype, tuple(int(d.dim_value) if d.HasField("dim_value") and d.dim_value >= 0 else None
                              for d in t.shape.dim))


def _stored_tensor(t: onnx.TensorProto, memory: int) -> Known:
    """A stored tensor: its dims, and its value when small and consistent. A tensor the C20x rules report
    (negative or overflowing dims, over the memory limit, unknown type) is taken as unknown: one finding."""
    dims = tuple(int(d) for d in t.dims)
    if any(d < 0 for d in dims) or math.prod(dims) > INT64_MAX:
        return Known()
    if t.data_type == TensorProto.STRING:
        return Known(t.data_type, dims)
    size = byte_size(math.prod(dims), t.data_type)
    if size is None or size > memory:
        return Known()
    value = Known(t.data_type, dims)
    if value.shape is None or t.data_location == TensorProto.EXTERNAL or math.prod(dims) > FOLD_ELEMENTS:
        return value
    if t.data_type in (TensorProto.STRING, TensorProto.UNDEFINED) or byte_size(1, t.data_type) is None:
        return value
    if t.HasField("raw_data") and len(t.raw_data) != byte_size(math.prod(dims), t.data_type):
        return value
    try:
        from onnx import numpy_helper

        array = numpy_helper.to_array(t)
    except Exception:  # noqa: BLE001 - malformed data: reported by the C20x rules
        return value
    if tuple(array.shape) != dims:
        return value
    return Known(t.data_type, dims, array)


def _constant(node: onnx.NodeProto, index: int, body: Body, memory: int) -> Known | Finding | None:
    """The value of a ``Constant`` node (``value``, ``value_float(s)``, ``value_int(s)``; a ``sparse_value`` as
    its dense shape, checked against the memory limit)."""
    for a in node.attribute:
        if a.name == "value" and a.HasField("t"):
            return _stored_tensor(a.t, memory)
        if a.name == "sparse_value" and a.HasField("sparse_tensor"):
            dense = Known(a.sparse_tensor.values.data_type or None, tuple(int(d) for d in a.sparse_tensor.dims))
            found = list(_dense_size(dense, f"{body.path}.node[{index}].attribute[sparse_value].dims", memory,
                                     node=node_label(node, index), tensor=node.output[0] if node.output else None,
                                     what="the Constant's sparse_value, made dense,"))
            return found[0] if found else dense
        if a.name == "value_float":
            return Known.of_array(np.array(a.f, np.float32))
        if a.name == "value_floats" and len(a.floats) <= FOLD_ELEMENTS:
            return Known.of_array(np.array(a.floats, np.float32))
        if a.name == "value_int":
            return Known.of_array(np.array(a.i, np.int64))
        if a.name == "value_ints" and len(a.ints) <= FOLD_ELEMENTS:
            return Known.of_array(np.array(a.ints, np.int64))
    return None
