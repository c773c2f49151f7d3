"""Kernel map: a backend's replacement for a model-local function, looked up by ``(domain, name[, overload])``.

A model-local function is the fallback body of an operation; a backend with an optimized kernel for the
whole operation replaces the call. A :class:`KernelMap` holds, per target backend, an entry per function
(``"torch.nn:LSTM"`` matches every overload, ``"torch.nn:LSTM:encoder.lstm1"`` one) and applies them on
request (:meth:`KernelMap.apply`); a function with no entry keeps its body.

Replacements:

* :class:`StandardOp` - one standard ONNX operator taking the call's inputs (or a selection of them);
* :class:`FusedBody` - the function's body re-fused by :mod:`onegraph.passes.fusion` into standard fused
  operators (``LayerNormalization``, ``Gelu``, ``LSTM``, ``GRU``), the call kept or inlined;
* :class:`CustomOp` - a node of the backend's custom-operator domain (its kernel library must be loaded
  where the model runs);
* :class:`PythonKernel` - a Python implementation for ``onnx.reference.ReferenceEvaluator``
  (:meth:`KernelMap.reference_evaluator`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Union

import numpy as np
import onnx_ir as ir

from onegraph.errors import PassError
from onegraph.passes.functions import FunctionId, format_id, inline
from onegraph.passes.grouping import parse_function_id

#: Domain of the nodes a :class:`PythonKernel` runs (the reference evaluator's ``new_ops``).
PYTHON_DOMAIN = "onegraph.python"


@dataclasses.dataclass(frozen=True)
class StandardOp:
    """Replace each call by the standard operator ``op_type``.

    Parameters
    ----------
    op_type, domain:
        The operator (default domain: ai.onnx).
    inputs:
        For each operator input, the index of the call input it takes (None: an omitted optional input);
        default: the call's inputs in order.
    attributes:
        The operator's attributes.
    """

    op_type: str
    inputs: tuple[int | None, ...] | None = None
    attributes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    domain: str = ""


@dataclasses.dataclass(frozen=True)
class CustomOp:
    """Replace each call by ``domain::op_type`` (default: the function's name), same inputs and outputs."""

    domain: str
    op_type: str | None = None
    attributes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    version: int = 1


@dataclasses.dataclass(frozen=True)
class FusedBody:
    """Re-fuse the function's body with :func:`onegraph.passes.fusion.fuse` (``rules``: families, None for
    all); ``inline``: then inline its calls. A body no rule changes is left as it is."""

    rules: tuple[str, ...] | None = None
    inline: bool = False


@dataclasses.dataclass(frozen=True)
class PythonKernel:
    """``fn(*inputs, **attributes) -> array or tuple of arrays`` (numpy), run by the reference evaluator."""

    fn: Callable[..., Any]


Kernel = Union[StandardOp, CustomOp, FusedBody, PythonKernel]


class KernelMap:
    """Per backend, function id -> :data:`Kernel`.

    Examples
    --------
    >>> kernels = KernelMap()
    >>> kernels.register("torch.nn:LayerNorm", StandardOp("LayerNormalization", attributes={"epsilon": 1e-5}),
    ...                  backend="onnxruntime")  # doctest: +ELLIPSIS
    <onegraph.passes.kernels.KernelMap object at ...>
    """

    def __init__(self) -> None:
        self._entries: dict[str, dict[tuple[str, str, str | None], Kernel]] = {}

    def register(self, function: str | tuple[str, ...], kernel: Kernel, *, backend: str) -> KernelMap:
        """Map ``function`` (``DOMAIN:NAME`` for every overload, ``DOMAIN:NAME:OVERLOAD`` for one) to
        ``kernel`` for ``backend``; returns the map."""
        if not isinstance(kernel, (StandardOp, CustomOp, FusedBody, PythonKernel)):
            raise PassError(f"{kernel!r} is not a kernel",
                            hint="use StandardOp, CustomOp, FusedBody or PythonKernel")
        parts = tuple(function) if isinstance(function, tuple) else tuple(function.split(":", 2))
        domain, name, overload = parse_function_id(parts)
        self._entries.setdefault(backend, {})[(domain, name, overload if len(parts) == 3 else None)] = kernel
        return self

    def backends(self) -> list[str]:
        return sorted(self._entries)

    def lookup(self, backend: str, function_id: FunctionId) -> Kernel | None:
        """The entry for ``function_id``: one for its overload, else one for every overload, else None."""
        entries = self._entries.get(backend, {})
        domain, name, overload = function_id
        return entries.get((domain, name, overload), entries.get((domain, name, None)))

    # -- applying ---------------------------------------------------------------------------------
    def apply(self, model: ir.Model, backend: str) -> dict[str, int]:
        """Replace the calls of mapped functions by ``backend``'s kernels, in place.

        Returns
        -------
        dict
            Calls replaced per function id (``DOMAIN:NAME[:OVERLOAD]``).

        Raises
        ------
        PassError
            when the map has no entry for ``backend``, or a :class:`StandardOp` names a call input the
            call does not have.
        """
        if backend not in self._entries:
            raise PassError(f"the kernel map has no entries for backend {backend!r}",
                            hint=f"backends: {', '.join(self.backends()) or 'none'}")
        counts: dict[str, int] = {}
        fused: dict[FunctionId, FusedBody] = {}
        for graph in [model.graph, *(f.graph for f in model.functions.values())]:
            for node in list(ir.traversal.RecursiveGraphIterator(graph)):
                ident = node.op_identifier()
                kernel = self.lookup(backend, ident) if ident in model.functions else None
                if kernel is None:
                    continue
                if isinstance(kernel, FusedBody):
                    fused[ident] = kernel
                    continue
                _replace_call(model, node, kernel)
                counts[format_id(ident)] = counts.get(format_id(ident), 0) + 1
        for ident, kernel in fused.items():
            if _fuse_body(model, ident, kernel):
                counts[format_id(ident)] = sum(1 for g in [model.graph, *(f.graph for f in model.functions.values())]
                                               for n in ir.traversal.RecursiveGraphIterator(g)
                                               if n.op_identifier() == ident)
                if kernel.inline:
                    inline(model, [ident])
        _drop_unused_functions(model)
        return counts

    def reference_evaluator(self, model: ir.Model, backend: str = "reference", **options: Any):
        """An ``onnx.reference.ReferenceEvaluator`` running ``model`` with ``backend``'s kernels.

        The map is applied to a copy; calls (or custom-op nodes) with a :class:`PythonKernel` run it; every
        other function is inlined first (the evaluator keys functions by domain and name only, so it
        would confuse two overloads).
        """
        from onnx.reference import ReferenceEvaluator

        work = ir.from_proto(ir.to_proto(model))
        python = {k: v for k, v in self._entries.get(backend, {}).items() if isinstance(v, PythonKernel)}
        others = {k: v for k, v in self._entries.get(backend, {}).items() if not isinstance(v, PythonKernel)}
        if others:
            KernelMap._with(backend, others).apply(work, backend)
        new_ops = _retarget_python(work, python)
        if work.functions:
            inline(work)
        return ReferenceEvaluator(ir.to_proto(work), new_ops=new_ops, **options)

    @classmethod
    def _with(cls, backend: str, entries: dict) -> KernelMap:
        kernels = cls()
        kernels._entries[backend] = dict(entries)
        return kernels


def _replace_call(model: ir.Model, call: ir.Node, kernel: Kernel) -> None:
    graph = call.graph
    assert graph is not None
    function = model.functions[call.op_identifier()]
    if isinstance(kernel, StandardOp):
        picks = kernel.inputs if kernel.inputs is not None else tuple(range(len(call.inputs)))
        inputs = []
        for i in picks:
            if i is not None and i >= len(call.inputs):
                raise PassError(f"kernel {kernel.op_type} takes input {i} of {format_id(call.op_identifier())}, "
                                f"which has {len(call.inputs)}", hint="fix the kernel's inputs")
            inputs.append(None if i is None else call.inputs[i])
        domain, op_type, attributes = kernel.domain, kernel.op_type, dict(kernel.attributes)
    else:  # CustomOp
        inputs = list(call.inputs)
        domain, op_type, attributes = kernel.domain, kernel.op_type or function.name, dict(kernel.attributes)
        model.opset_imports.setdefault(kernel.domain, kernel.version)
        if isinstance(graph, ir.Graph) and graph is not model.graph:
            for f in model.functions.values():
                if f.graph is graph:
                    f.opset_imports.setdefault(kernel.domain, kernel.version)
    node = ir.node(op_type, inputs, attributes=attributes, domain=domain, num_outputs=len(call.outputs),
                   name=call.name, metadata_props=dict(call.metadata_props))
    _swap(graph, call, node)


def _swap(graph: ir.Graph, old: ir.Node, new: ir.Node) -> None:
    """Put ``new`` where ``old`` is, taking over its outputs' uses and names."""
    graph.insert_before(old, new)
    for a, b in zip(old.outputs, new.outputs):
        b.name, b.type, b.shape = a.name, a.type, a.shape
        a.name = None
        a.replace_all_uses_with(b, replace_graph_outputs=True)
    graph.remove(old, safe=True)


def _fuse_body(model: ir.Model, ident: FunctionId, kernel: FusedBody) -> bool:
    """Re-fuse a function body in place, through a standalone model of it; True when a rule fired."""
    import onnx

    from onegraph.passes.fusion import fuse
    from onegraph.passes.fusion._match import constant

    function = model.functions[ident]
    proto = ir.serde.serialize_function(function)
    calls = [n for g in [model.graph, *(f.graph for f in model.functions.values())]
             for n in ir.traversal.RecursiveGraphIterator(g) if n.op_identifier() == ident]
    inputs, initializers = [], []
    for k, name in enumerate(proto.input):
        args = [c.inputs[k] if k < len(c.inputs) else None for c in calls]
        values = [constant(a) for a in args]
        # a constant every call passes alike (eps, axes, a shared weight) is part of what the body computes
        if values and all(v is not None and v.shape == values[0].shape and np.array_equal(v, values[0]) for v in values):
            initializers.append(onnx.numpy_helper.from_array(values[0], name=name))
        first = args[0] if args else None
        inputs.append(ir.serde.serialize_value(first, name=name) if first is not None and first.type is not None
                      else onnx.ValueInfoProto(name=name))
    graph = onnx.helper.make_graph(list(proto.node), "body", inputs, [onnx.ValueInfoProto(name=o) for o in proto.output],
                                   initializer=initializers)
    others = [ir.serde.serialize_function(f) for k, f in model.functions.items() if k != ident]
    standalone = ir.from_proto(onnx.helper.make_model(graph, opset_imports=list(proto.opset_import),
                                                      ir_version=model.ir_version, functions=others))
    if not any(fuse(standalone, kernel.rules).values()):
        return False
    fused = ir.to_proto(standalone).graph
    params = set(proto.input)
    nodes = [onnx.helper.make_node("Constant", [], [t.name], value=t) for t in fused.initializer if t.name not in params]
    nodes.extend(fused.node)
    opsets = {o.domain: o.version for o in proto.opset_import}
    opsets.update({d: v for d, v in standalone.opset_imports.items() if d not in opsets})
    rebuilt = onnx.helper.make_function(proto.domain, proto.name, list(proto.input), list(proto.output), nodes,
                                        [onnx.helper.make_opsetid(d, v) for d, v in opsets.items()],
                                        attributes=list(proto.attribute), overload=proto.overload)
    model.functions[ident] = ir.serde.deserialize_function(rebuilt)
    return True


def _drop_unused_functions(model: ir.Model) -> None:
    from onegraph.passes.functions import call_counts

    used = call_counts(model)
    for ident in list(model.functions):
        if not used.get(ident):
            del model.functions[ident]


def _retarget_python(model: ir.Model, python: Mapping[tuple[str, str, str | None], PythonKernel]) -> list:
    """Point calls (or custom-op nodes) with a Python kernel at generated reference-evaluator operators."""
    if not python:
        return []
    from onnx.reference.op_run import OpRun

    classes: dict[tuple, type] = {}
    graphs: Iterable[ir.Graph] = [model.graph, *(f.graph for f in model.functions.values())]
    for graph in graphs:
        for node in list(ir.traversal.RecursiveGraphIterator(graph)):
            domain, name, overload = node.op_identifier()
            key = (domain, name, overload) if (domain, name, overload) in python else (domain, name, None)
            kernel = python.get(key)
            if kernel is None:
                continue
            if key not in classes:
                fn = kernel.fn

                def _run(self, *args, _fn=fn, **kwargs):
                    out = _fn(*args, **kwargs)
                    return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else (np.asarray(out),)

                classes[key] = type(f"Kernel{len(classes)}", (OpRun,), {"op_domain": PYTHON_DOMAIN, "_run": _run})
            replacement = ir.node(classes[key].__name__, list(node.inputs), attributes=dict(node.attributes),
                                  domain=PYTHON_DOMAIN, num_outputs=len(node.outputs), name=node.name)
            _swap(node.graph, node, replacement)  # type: ignore[arg-type]
    model.opset_imports.setdefault(PYTHON_DOMAIN, 1)
    for f in model.functions.values():
        f.opset_imports.setdefault(PYTHON_DOMAIN, 1)
    return list(classes.values())


__all__ = ["CustomOp", "FusedBody", "Kernel", "KernelMap", "PYTHON_DOMAIN", "PythonKernel", "StandardOp"]
