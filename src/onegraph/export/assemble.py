"""Finishing a model: what every model onegraph makes goes through, whoever emitted its nodes.

:func:`onegraph.build`, :func:`onegraph.compose`, :func:`~onegraph.export.merge.compose_models` and the Spark
ML conversion (:func:`onegraph.spark.from_spark`) emit their nodes on a :class:`~onegraph.emit.GraphBuilder`
and then call, in this order:

* :func:`graph_inputs` — one graph input ``[N]`` per column of the input schema;
* :func:`declare_outputs` — the outputs of a model's answer, named and described for the metadata, labels
  missing where the probabilities are NaN (:func:`~onegraph.export.adapters.models.unscored_labels_missing`);
* :func:`finish` — the check outputs every step declared, clean-up passes (unused nodes and inputs out, equal
  initializers kept once, unique names, topological order), the metadata schema's fields, the ONNX checker
  with full shape inference, the parity refusal (a model whose outputs diverge from its sources is never
  written), and the atomic save.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

import onegraph
from onegraph.check import guard
from onegraph.contract import metadata as meta
from onegraph.contract.columns import ColumnSpec
from onegraph.emit import BOOL, DOUBLE, FLOAT, INT64, STRING, Col, GraphBuilder
from onegraph.errors import ExportError, ParityError
from onegraph.export.adapters.models import ModelOutputs, unscored_labels_missing

__all__ = ["INPUT_TYPES", "graph_inputs", "output_name", "declare_outputs", "tidy", "finish", "refuse_divergence"]

#: graph element type of each input schema ``onnx_type``
INPUT_TYPES = {"double": DOUBLE, "float": FLOAT, "int64": INT64, "bool": BOOL, "string": STRING}


def graph_inputs(g: GraphBuilder, specs: list[ColumnSpec]) -> list[Col]:
    """One graph input ``[N]`` per column of ``specs``, named as the column, as the columns emitters take."""
    return [Col(s.name, s.kind, g.input(s.name, INPUT_TYPES[s.onnx_type]), INPUT_TYPES[s.onnx_type]) for s in specs]


def output_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name.out`` when an input column already has that name (values are named once); the
    name is added to ``taken``."""
    out = name
    while out in taken:
        out += ".out"
    taken.add(out)
    return out


def declare_outputs(g: GraphBuilder, result: ModelOutputs, taken: set[str], *, prefix: str = "",
                    model: str | None = None) -> list[dict]:
    """Declare the outputs of one answer (``label`` ``[N]``, ``probabilities`` ``[N, n_classes]``,
    ``prediction`` ``[N]``, ...), named ``prefix + role``; returns their metadata entries (``name``,
    ``column``, ``role``, ``classes`` for probabilities, ``model`` when given)."""
    entries = []
    for role, value in unscored_labels_missing(g, result.values).items():
        entry = {"name": output_name(prefix + role, taken), "column": prefix + role,
                 "role": result.roles.get(role, role)}
        if model is not None:
            entry["model"] = model
        shape: list = ["N"]
        if role == "probabilities" and result.classes is not None:
            entry["classes"] = [c.item() if isinstance(c, np.generic) else c for c in result.classes]
            shape = ["N", len(result.classes)]
        elif value.shape is not None and len(value.shape) == 2:
            width = value.shape[1]
            shape = ["N", width if isinstance(width, int) else None]
        g.output(value, entry["name"], value.dtype, shape)
        entries.append(entry)
    return entries


def tidy(model: ir.Model, *, dedupe: bool = False, merge_common: bool = False) -> None:
    """Clean-up passes (onnx-ir's): nodes and inputs nothing uses dropped, every value named uniquely, nodes
    sorted.

    ``dedupe``: equal initializers kept once (spliced graphs repeat constants). ``merge_common``: also
    compute identical nodes on identical inputs once (models built separately repeat the same preprocessing).
    """
    from onnx_ir.passes.common import (
        CommonSubexpressionEliminationPass,
        DeduplicateInitializersPass,
        NameFixPass,
        RemoveUnusedNodesPass,
        TopologicalSortPass,
    )

    if dedupe or merge_common:
        DeduplicateInitializersPass()(model)
    if merge_common:
        CommonSubexpressionEliminationPass()(model)
    RemoveUnusedNodesPass()(model)
    graph = model.graph
    outputs = {id(o) for o in graph.outputs}
    keep = [v for v in graph.inputs if v.uses() or id(v) in outputs]
    if len(keep) != len(graph.inputs):
        graph.inputs.clear()
        graph.inputs.extend(keep)
    NameFixPass()(model)
    TopologicalSortPass()(model)


def finish(g: GraphBuilder, specs: list[ColumnSpec], outputs: list[dict],
           fields: Mapping[str, Any] | Callable[[list[str]], Mapping[str, Any]], *,
           given: Mapping[str, Any] | None = None, dedupe: bool = False, merge_common: bool = False,
           functions: bool = False,
           verify: Callable[[onnx.ModelProto], Any] | None = None, what: str = "the graph diverges from its sources",
           path: str | os.PathLike | None = None,
           parity_hint: Callable[[], str | None] | None = None) -> onnx.ModelProto:
    """The finished model of what ``g`` holds.

    Parameters
    ----------
    g:
        The builder, every node, input and output declared (check outputs included: they are added here).
    specs:
        The input schema; columns no node reads are dropped with their inputs.
    outputs:
        The metadata entries of the declared outputs (:func:`declare_outputs`).
    fields:
        Metadata fields the caller knows (``training_algorithm``, ``training_data``...), between those filled
        here (``meta_version``, ``created_at``, ``producer`` before; ``inputs``, ``outputs``, ``precision``
        after); or a function of the input columns the finished graph reads, giving them.
    given:
        The user's metadata fields, applied last; dict fields are merged key by key.
    dedupe, merge_common:
        See :func:`tidy`.
    functions:
        Group each emitted step into a call of a model-local function (:func:`onegraph.passes.group_steps`).
    verify:
        Called with the model; returns a :class:`~onegraph.verify.parity.ParityReport` (refused with
        :class:`ParityError` naming ``what`` unless it is ok) or raises itself. None: not verified.
    parity_hint:
        Called when the outputs diverge: what the ParityError says is the likely cause (None: the generic
        hint); only then, since finding it may scan the sample.
    path:
        Where to write the model, atomically, once verified.

    Raises
    ------
    ExportError
        when the graph does not pass the ONNX checker (a bug: the message says to report it);
        MetadataError for a malformed field; ParityError from ``verify``.
    """
    entries = list(outputs) + list(g.checks)
    ir_model = g.to_model()
    tidy(ir_model, dedupe=dedupe, merge_common=merge_common)
    from onegraph.meta.model import dtypes_in_use
    from onegraph.shapes import drop_weights, row_width

    width = row_width(drop_weights(ir.to_proto(ir_model)))  # before the steps are grouped: every value counts
    if functions:
        from onegraph.passes import group_steps

        group_steps(ir_model)
    used = [v.name for v in ir_model.graph.inputs]
    if callable(fields):
        fields = fields(used)
    ir_model.producer_name = "onegraph"
    ir_model.producer_version = onegraph.__version__
    merged: dict[str, Any] = {
        "meta_version": meta.SCHEMA_VERSION,
        "created_at": meta.now_rfc3339(),
        "producer": f"onegraph {onegraph.__version__}",
        **fields,
        "inputs": [s.to_dict() for s in specs if s.name in used],
        "outputs": entries,
        "precision": {"dtypes": dtypes_in_use(ir.to_proto(ir_model))},
        "row_width": width,
    }
    for key, value in (given or {}).items():
        both = isinstance(merged.get(key), dict) and isinstance(value, Mapping)
        merged[key] = {**merged[key], **value} if both else value
    ir_model.metadata_props.update(meta.encode(merged))
    proto = ir.to_proto(ir_model)
    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as exc:  # checker raises ValidationError / InferenceError
        raise ExportError(f"the built graph does not pass the ONNX checker: {exc}",
                          hint="report this pipeline to onegraph") from None
    guard.trust(proto.SerializeToString())  # made and checked here: opening its file needs no check
    if verify is not None:
        report = verify(proto)
        if report is not None and not report.ok:
            refuse_divergence(report, what, parity_hint() if parity_hint is not None else None)
    if path is not None:
        from onegraph.io import save_model

        save_model(proto, path)
    return proto


def refuse_divergence(report: Any, what: str, hint: str | None = None) -> None:
    """Raise ParityError (``what`` on output(s) ..., then the report; ``hint``: the likely cause, else the
    generic one) unless ``report.ok``."""
    if not report.ok:
        raise ParityError(f"{what} beyond rtol {report.rtol:g}, atol {report.atol:g} on output(s) "
                          f"{', '.join(report.failed)}:\n{report}", report, hint)
