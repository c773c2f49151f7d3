"""Verified float16 / bfloat16 conversion with a block list chosen from measured values.

``onegraph convert MODEL --fp16 [--data DATA] [--keep-io-types] -o OUT`` (``--bf16`` likewise):

1. Model-local functions are inlined (onnxconverter-common does not descend into function bodies) and
   every node gets a name (the block list is a list of node names).
2. The float32 model runs in onnxruntime on the calibration data (``--data``; generated inputs without it)
   with every intermediate tensor exposed (:mod:`onegraph.verify.intermediates`).
3. Each node is measured (:func:`onegraph.verify.lowprec.measure`): the largest magnitude of its float
   values, a bound on the partial sums it forms, and the error it makes when run alone in true low
   precision. A node whose values or sums leave the format's range, or whose error exceeds ``max_error``
   (relative to its output's scale), stays float32; the report says which rule kept it, with the number.
4. ``onnxconverter_common.float16.convert_float_to_float16`` converts the rest (its own default block list
   of operators without float16 definitions — Resize, Range, TopK, the ai.onnx.ml operators... — stays in
   force: that keeps Resize's ``scales`` float32). Initializers are not clamped below the float16
   range (the converter's default clamps at 1e4). Operators whose inputs share one type but were left mixed
   (Concat of a float16 and a float32 tensor) get a Cast. For bfloat16 the float16 model is retyped and its
   constants are re-rounded from the float32 originals.
5. Verification runs the converted model in true low-precision arithmetic (onnx's ReferenceEvaluator: see
   :mod:`onegraph.verify.lowprec` for why onnxruntime's CPU provider cannot be trusted for this) and compares
   every output with float32. When an output strays beyond ``rtol`` / ``atol``, the first node (in
   topological order) whose low-precision output strays from float32 by more than ``max_error`` joins the
   block list and the conversion is redone, up to ``max_rounds`` times. The converted model also runs in
   onnxruntime (CPU), whose differences are reported beside the reference's.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

from onegraph.check import native
from onegraph.check.loader import load_model
from onegraph.convert.report import ConversionReport, NodeConversion
from onegraph.errors import ConversionError, OnegraphError
from onegraph.io import save_model
from onegraph.verify.feeds import model_feeds
from onegraph.verify.intermediates import expose, inlined, with_types
from onegraph.verify.lowprec import (
    FORMATS,
    cast_feeds,
    decide,
    measure,
    reference_run,
    relative_error,
)
from onegraph.verify.parity import check_tolerances
from onegraph.verify.portable import subgraphs
from onegraph.verify.runs import agreement, run

__all__ = ["DEFAULTS", "convert_float16", "to_low_precision"]

#: default tolerances per format: (max_error per node, rtol, atol of the outputs)
DEFAULTS = {"float16": (1e-2, 1e-2, 1e-2), "bfloat16": (5e-2, 5e-2, 5e-2)}


def convert_float16(model: Any, *, data: Any = None, rows: int = 64, fmt: str = "float16",
                    keep_io_types: bool = False, max_error: float | None = None, rtol: float | None = None,
                    atol: float | None = None, accept_diff: bool = False, max_rounds: int = 8,
                    output: Any = None) -> tuple[onnx.ModelProto, ConversionReport]:
    """Convert ``model``'s float32 tensors to ``fmt`` except where measured values say they must stay.

    Parameters
    ----------
    model:
        Path, bytes or ``onnx.ModelProto`` (never modified).
    data:
        Calibration data (a table, ``.csv`` / ``.parquet`` / ``.npz``, or a dict of arrays); None generates
        inputs from the input types, which says little about real ranges.
    rows:
        Rows generated, or taken from ``data``.
    fmt:
        ``float16`` or ``bfloat16``.
    keep_io_types:
        Keep float32 graph inputs and outputs (Casts are inserted inside).
    max_error:
        Largest error a node may make in ``fmt``, relative to its output's scale (default 1e-2 for float16,
        5e-2 for bfloat16).
    rtol, atol:
        Tolerance of each output against float32 (defaults as ``max_error``).
    accept_diff:
        Keep (and write) a conversion whose outputs stray beyond tolerance.
    max_rounds:
        How many times a straying node may be added to the block list and the conversion redone.
    output:
        Where to write the converted model, atomically, when accepted.

    Returns
    -------
    (onnx.ModelProto, ConversionReport)
        The report lists every node kept float32 and why, and the verification table.

    Raises
    ------
    ConversionError
        when outputs stray beyond tolerance (unless ``accept_diff``) or onnxruntime cannot open a float16
        model; nothing is written then.
    OnegraphError
        for an unknown ``fmt``, or a ``max_error`` / ``rtol`` / ``atol`` that is negative or not finite.
    """
    if fmt not in FORMATS:
        raise OnegraphError(f"unknown format {fmt!r}", hint="use float16 or bfloat16")
    d_err, d_rtol, d_atol = DEFAULTS[fmt]
    max_error = d_err if max_error is None else max_error
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    check_tolerances(max_error=max_error, rtol=rtol, atol=atol)
    original = load_model(model)
    fp32 = _named(inlined(copy.deepcopy(original)))
    feeds = model_feeds(original, data, rows=rows)
    exposed, _ = expose(fp32)
    values = dict(feeds)
    values.update(run(exposed, feeds, what="the float32 model"))
    measures = measure(fp32, values, fmt)
    blocked = {m.name: m.reason for m in decide(measures, fmt, max_error)} | _casts_of_other_floats(fp32)
    expected = {o.name: values[o.name] for o in fp32.graph.output}
    wide = [] if keep_io_types else _io_beyond_range(fp32, values, fmt)
    keep_io_types = keep_io_types or bool(wide)
    report = ConversionReport(fmt, "float32", fmt)
    n = next((len(v) for v in feeds.values() if np.ndim(v)), 1)
    report.inputs = (f"{n} rows of calibration data" if data is not None else f"generated inputs ({n} rows, seed 0)")
    report.inputs += f", evaluated in true {fmt} arithmetic (onnx ReferenceEvaluator)"

    rounds = 0
    while True:
        converted = to_low_precision(fp32, sorted(blocked), fmt, keep_io_types)
        low_feeds = cast_feeds(converted, feeds)
        report.agreement = agreement(expected, reference_run(converted, low_feeds, hint=_UNVERIFIABLE),
                                     rtol=rtol, atol=atol)
        if report.agreement.ok or rounds >= max_rounds:
            break
        culprit = _first_straying(fp32, converted, low_feeds, values, blocked, max_error)
        if culprit is None:
            break
        blocked[culprit[0]] = (f"end-to-end check: its {fmt} output strays {culprit[1]:.2g} from float32 "
                               f"(first such node)")
        rounds += 1

    converted_ops = {n.name: n for n in converted.graph.node}
    for node in fp32.graph.node:
        if node.name in blocked:
            how, ok = f"kept float32: {blocked[node.name]}", True
        elif node.name in converted_ops and _runs_low(converted, converted_ops[node.name], fmt):
            how, ok = f"converted to {fmt}", True
        else:
            how, ok = "kept as is (no float tensors, or onnxconverter-common's block list for this operator)", True
        report.nodes.append(NodeConversion(node.name, node.op_type, node.domain, "graph", None, None, how, ok))
    report.warnings += wide + _warnings(report, len(measures), feeds, fmt)
    report.extra["kept_float32"] = [{"node": k, "why": v} for k, v in blocked.items()]
    report.extra["summary"] = [f"kept float32 ({len(blocked)} node(s), chosen from measured values):"]
    report.extra["summary"] += [f"  {name}: {why}" for name, why in blocked.items()]
    _onnxruntime_check(converted, low_feeds, expected, report, fmt, rtol, atol)
    if not report.agreement.ok and not accept_diff:
        bad = [o.name for o in report.agreement.outputs if not o.ok] + report.agreement.missing
        raise ConversionError(f"in true {fmt} arithmetic the output(s) {', '.join(map(repr, bad))} stray from "
                              f"float32 beyond tolerance (rtol {rtol:g}, atol {atol:g})", report,
                              hint="nothing was written; give calibration data with --data, lower --max-error, "
                                   "or pass --accept-diff")
    if output is not None:
        save_model(converted, output)
    return converted, report


#: a converted model the reference evaluator cannot run is not verified in true low precision: nothing is written
_UNVERIFIABLE = ("the low-precision model is verified in onnx's reference evaluator, which cannot run this node; "
                 "nothing was written. `onegraph compare MODEL` shows whether it runs the float32 model")


def _io_beyond_range(fp32: onnx.ModelProto, values: dict[str, np.ndarray], fmt: str) -> list[str]:
    """One line per float32 graph input or output whose finite values leave ``fmt``'s range: it cannot be
    ``fmt`` at the model's boundary (it would be inf whatever nodes stay float32), so the inputs and outputs
    stay float32, as ``--keep-io-types`` keeps them."""
    limit = FORMATS[fmt][2]
    out = []
    for kind, infos in (("input", fp32.graph.input), ("output", fp32.graph.output)):
        for v in infos:
            a = values.get(v.name)
            if v.type.tensor_type.elem_type != onnx.TensorProto.FLOAT or a is None or not np.size(a):
                continue
            a = np.asarray(a)
            finite = a[np.isfinite(a)]
            peak = float(np.abs(finite).max()) if finite.size else 0.0
            if peak > limit:
                out.append(f"{kind} {v.name!r} reaches {peak:.4g}, beyond the {fmt} range ({limit:.3g}): the "
                           "model's inputs and outputs stay float32 (as --keep-io-types), cast inside")
    return out


def _warnings(report: ConversionReport, floats: int, feeds: dict[str, np.ndarray], fmt: str) -> list[str]:
    """Why an accepted conversion may not be what the user wanted: (almost) no node converted, or inputs
    holding inf / NaN (calibration data that says little about the real ranges)."""
    out = []
    converted = sum(n.how == f"converted to {fmt}" for n in report.nodes)
    if floats and converted == 0:
        out.append(f"no node was converted to {fmt}: all {floats} node(s) with float tensors stay float32")
    elif floats and converted * 10 < floats:
        out.append(f"only {converted} of {floats} node(s) with float tensors were converted to {fmt}")
    for name, value in feeds.items():
        a = np.asarray(value)
        if a.dtype.kind == "f":
            inf, nan = int(np.isinf(a).sum()), int(np.isnan(a).sum())
            if inf or nan:
                out.append(f"input {name!r} contains " + " and ".join(
                    f"{k} {what} value(s)" for k, what in ((inf, "inf"), (nan, "NaN")) if k) +
                    f": they stay inf / NaN in {fmt} and are left out of the measured ranges")
    return out


def _named(model: onnx.ModelProto) -> onnx.ModelProto:
    """Give every unnamed node a unique name (block lists name nodes)."""
    seen = {n.name for n in model.graph.node if n.name}
    for i, node in enumerate(model.graph.node):
        if not node.name:
            name = f"{node.op_type}_{i}"
            while name in seen:
                name += "_"
            node.name = name
            seen.add(name)
    return model


#: float types a model may cast to and from that the conversion leaves as written
_OTHER_FLOATS = frozenset(t for name, t in onnx.TensorProto.DataType.items() if name.startswith(("BFLOAT16", "FLOAT8")))


def _casts_of_other_floats(fp32: onnx.ModelProto) -> dict[str, str]:
    """The Cast nodes to or from bfloat16 / float8 (a model's own low-precision steps), kept float32 on their
    float side: onnxconverter-common retypes such a Cast's float output as float16 and leaves its ``to``, which
    onnxruntime then refuses to open."""
    typed = with_types(fp32)
    types = {v.name: v.type.tensor_type.elem_type for v in (*typed.graph.value_info, *typed.graph.input)}
    found = {}
    for node in typed.graph.node:
        if node.op_type != "Cast":
            continue
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        if to in _OTHER_FLOATS or types.get(node.input[0]) in _OTHER_FLOATS:
            found[node.name] = "a Cast to or from bfloat16 / float8, kept as the model has it"
    return found


def to_low_precision(fp32: onnx.ModelProto, block: list[str], fmt: str, keep_io_types: bool) -> onnx.ModelProto:
    """``fp32`` converted by onnxconverter-common with ``block`` (node names) kept float32, mixed inputs
    cast, and, for bfloat16, retyped."""
    from onnxconverter_common import float16

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:  # onnxconverter-common runs onnx's shape inference on the model (it passed the check, which did too)
            m = float16.convert_float_to_float16(copy.deepcopy(fp32), keep_io_types=keep_io_types,
                                                 node_block_list=block, max_finite_val=65504.0,
                                                 min_positive_val=float(np.finfo(np.float16).smallest_subnormal),
                                                 check_fp16_ready=False)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as exc:
            reason = " ".join(str(exc).split())[:300]
            raise ConversionError(f"onnxconverter-common cannot convert the model to {fmt}: {reason}",
                                  hint="check the model with `onegraph check`; nothing was written") from None
    _cast_mixed_inputs(m)
    _cast_outer_scope_reads(m, fp32, set(block))
    if keep_io_types:
        _float32_outputs(m, fp32)
    if fmt == "bfloat16":
        _retype_bfloat16(m, fp32)
    _one_value_info_per_tensor(m)
    _float32_annotation_tensors(m, fp32)
    return m


def _outer_reads(graph: onnx.GraphProto, defined: set[str]) -> set[str]:
    """Names ``graph`` (and the subgraphs inside it) reads from enclosing scopes."""
    defined = defined | {v.name for v in graph.input} | {t.name for t in graph.initializer}
    reads: set[str] = set()
    for node in graph.node:
        reads.update(n for n in node.input if n and n not in defined)
        for body in subgraphs(node):
            reads |= _outer_reads(body, defined)
        defined |= set(node.output)
    return reads


def _rename_reads(graph: onnx.GraphProto, old: str, new: str) -> None:
    for node in graph.node:
        node.input[:] = [new if n == old else n for n in node.input]
        for body in subgraphs(node):
            _rename_reads(body, old, new)


def _cast_outer_scope_reads(model: onnx.ModelProto, fp32: onnx.ModelProto, block: set[str]) -> None:
    """A node kept float32 whose body (Loop, If, Scan) reads a value of the enclosing graph that the conversion
    made float16 gets a Cast back to float32 for it: onnxconverter-common casts a kept node's inputs, not what
    its body reads from outside, so the body's float32 Add met a float16 value and onnxruntime refused the model."""
    f16, f32 = onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT
    before = _elem_types(fp32)
    after = None
    nodes = []
    for node in model.graph.node:
        bodies = list(subgraphs(node)) if node.name in block else []
        reads = set().union(*(_outer_reads(b, set()) for b in bodies)) if bodies else set()
        for name in sorted(reads):
            if before.get(name) != f32:
                continue
            after = _elem_types(model) if after is None else after
            if after.get(name) != f16:
                continue
            cast = f"{name}_as_float32_for_{node.name}"
            nodes.append(onnx.helper.make_node("Cast", [name], [cast], to=f32, name=f"{node.name}_cast_outer_{name}"))
            for body in bodies:
                _rename_reads(body, name, cast)
        nodes.append(node)
    if len(nodes) > len(model.graph.node):
        del model.graph.node[:]
        model.graph.node.extend(nodes)


def _one_value_info_per_tensor(model: onnx.ModelProto) -> None:
    """One value info per tensor: onnxconverter-common appends the value infos shape inference gives beside the
    model's own, so a tensor annotated by ``onegraph stats`` had two, and readers taking the last lost its
    statistics. The first (the model's, with its metadata) is kept, with the type of the last (the converted
    one) and the metadata of every copy."""
    kept: dict[str, onnx.ValueInfoProto] = {}
    values = list(model.graph.value_info)
    for v in values:
        first = kept.setdefault(v.name, v)
        if first is not v:
            first.type.CopyFrom(v.type)
            present = {p.key for p in first.metadata_props}
            for prop in v.metadata_props:
                if prop.key not in present:
                    first.metadata_props.add(key=prop.key, value=prop.value)
    if len(kept) < len(values):
        del model.graph.value_info[:]
        model.graph.value_info.extend(kept.values())


def _float32_annotation_tensors(model: onnx.ModelProto, fp32: onnx.ModelProto) -> None:
    """The scale / zero point initializers a ``quantization_annotation`` names keep their float32 values: they
    describe the float32 ranges the statistics measured (as onnxruntime's ``compute_scale_zp`` gives them) and no
    node reads them; the converter had rounded them to float16 (0.06271786 -> 0.06274)."""
    names = {q.value for a in fp32.graph.quantization_annotation for q in a.quant_parameter_tensor_names}
    originals = {t.name: t for t in fp32.graph.initializer if t.name in names}
    for t in model.graph.initializer:
        if t.name in originals and t.data_type != originals[t.name].data_type:
            t.CopyFrom(originals[t.name])


def _float32_outputs(model: onnx.ModelProto, fp32: onnx.ModelProto) -> None:
    """Keep the float32 graph outputs float32. onnxconverter-common declares an output float16 and casts
    to it when the node producing it is in the block list, even with keep_io_types: a kept-float32 value
    beyond float16's range then becomes inf on its way out."""
    wanted = {o.name for o in fp32.graph.output if o.type.tensor_type.elem_type == onnx.TensorProto.FLOAT}
    producers = {name: n for n in model.graph.node for name in n.output}
    for out in model.graph.output:
        if out.name not in wanted or out.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            continue
        node = producers.get(out.name)
        if node is not None and node.op_type == "Cast":
            for attr in node.attribute:
                if attr.name == "to":
                    attr.i = onnx.TensorProto.FLOAT
        else:
            low = f"{out.name}_{model.graph.name or 'graph'}_low"
            for n in model.graph.node:
                n.output[:] = [low if o == out.name else o for o in n.output]
            model.graph.node.append(onnx.helper.make_node("Cast", [low], [out.name], to=onnx.TensorProto.FLOAT,
                                                          name=f"{out.name}_to_float32"))
        out.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        stale = [v for v in model.graph.value_info if v.name == out.name]
        for v in stale:
            model.graph.value_info.remove(v)


def _elem_types(model: onnx.ModelProto) -> dict[str, int]:
    try:
        inferred = native.infer_shapes(model)
    except Exception:  # without inference only declared types are known
        inferred = model
    g = inferred.graph
    types = {v.name: v.type.tensor_type.elem_type for v in list(g.input) + list(g.output) + list(g.value_info)}
    types.update({t.name: t.data_type for t in g.initializer})
    return types


def _cast_mixed_inputs(model: onnx.ModelProto) -> None:
    """Insert a Cast where inputs bound to one type variable hold float16 and float32 (Concat, Add...)."""
    types = _elem_types(model)
    f16, f32 = onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT
    new_nodes = []
    for node in model.graph.node:
        schema = _schema(node, model)
        if schema is not None and schema.inputs:
            groups: dict[str, list[int]] = {}
            for i, name in enumerate(node.input):
                if name:
                    formal = schema.inputs[min(i, len(schema.inputs) - 1)]
                    groups.setdefault(formal.type_str, []).append(i)
            for indices in groups.values():
                found = {types.get(node.input[i]) for i in indices}
                if {f16, f32} <= found:
                    for i in indices:
                        if types.get(node.input[i]) == f32:
                            cast_out = f"{node.input[i]}_as_float16_{len(new_nodes)}"
                            new_nodes.append(onnx.helper.make_node("Cast", [node.input[i]], [cast_out],
                                                                   to=f16, name=f"{node.name}_cast_in{i}"))
                            node.input[i] = cast_out
        new_nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(new_nodes)


def _schema(node: onnx.NodeProto, model: onnx.ModelProto):
    if node.domain not in ("", "ai.onnx"):
        return None
    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    try:
        return onnx.defs.get_schema(node.op_type, version, "")
    except onnx.defs.SchemaError:
        return None


def _retype_bfloat16(model: onnx.ModelProto, fp32: onnx.ModelProto) -> None:
    """Turn the float16 model into bfloat16, re-rounding constants from their float32 originals."""
    f16, bf16 = onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16
    originals = {t.name: t for t in fp32.graph.initializer}
    constants = {n.name: n for n in fp32.graph.node if n.op_type == "Constant"}

    def rounded(t: onnx.TensorProto, source: onnx.TensorProto | None) -> onnx.TensorProto:
        arr = numpy_helper.to_array(source if source is not None else t).astype(np.float32)
        return numpy_helper.from_array(arr.astype(ml_dtypes.bfloat16), t.name)

    for i, t in enumerate(model.graph.initializer):
        if t.data_type == f16:
            model.graph.initializer[i].CopyFrom(rounded(t, originals.get(t.name)))
    for node in model.graph.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to" and a.i == f16:
                a.i = bf16
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == f16:
                src = constants.get(node.name)
                src_t = next((x.t for x in src.attribute if x.name == a.name), None) if src is not None else None
                a.t.CopyFrom(rounded(a.t, src_t))
    for v in list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info):
        if v.type.tensor_type.elem_type == f16:
            v.type.tensor_type.elem_type = bf16


def _runs_low(model: onnx.ModelProto, node: onnx.NodeProto, fmt: str) -> bool:
    low = FORMATS[fmt][1]
    types = {v.name: v.type.tensor_type.elem_type for v in list(model.graph.value_info) + list(model.graph.output)}
    types.update({t.name: t.data_type for t in model.graph.initializer})
    return any(types.get(o) == low for o in node.output)


def _first_straying(fp32: onnx.ModelProto, converted: onnx.ModelProto, low_feeds: dict, values: dict,
                    blocked: dict, max_error: float) -> tuple[str, float] | None:
    """The first float32 node (topological order) not yet blocked whose low-precision output strays."""
    inter = reference_run(converted, low_feeds, intermediate=True, hint=_UNVERIFIABLE)
    for node in fp32.graph.node:
        if node.name in blocked:
            continue
        for name in node.output:
            if name in inter and name in values and isinstance(values[name], np.ndarray) \
                    and values[name].dtype == np.float32:
                err = relative_error(inter[name], values[name])
                if err > max_error:
                    return node.name, err
    return None


def _onnxruntime_check(converted: onnx.ModelProto, low_feeds: dict, expected: dict, report: ConversionReport,
                       fmt: str, rtol: float, atol: float) -> None:
    try:
        got = run(converted, low_feeds, what=f"the {fmt} model")
    except OnegraphError as exc:
        if fmt == "float16":
            raise ConversionError(str(exc), report, hint="nothing was written") from None
        report.notes.append(f"onnxruntime (CPU) cannot run the {fmt} model: {exc.message[:200]}; verified with "
                            "the reference evaluator only")
        return
    ort_agreement = agreement(expected, got, rtol=rtol, atol=atol)
    report.extra["onnxruntime_cpu"] = ort_agreement.rows()
    report.extra["summary"].append("onnxruntime CPU (computes float16 nodes it lacks kernels for in float32): "
                                   + ", ".join(f"{o.name} max abs diff {o.max_abs:.3g}" for o in ort_agreement.outputs
                                               if o.max_abs is not None))
