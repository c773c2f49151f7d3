"""Verified opset conversion of the default domain (``onegraph convert MODEL --opset N``).

How a model is converted:

1. Its annotations and metadata are recorded (:mod:`onegraph.convert.preserve`).
2. Each graph to convert (the main graph, with its subgraphs, and each model-local function's body, wrapped in
   a model of its own) moves one opset at a time. At each step, the nodes whose operator changed there cross
   the change: with onegraph's step where :mod:`onegraph.convert.opset_adapters` classifies the change
   (every change between opsets 8 and 21: inputs that become attributes, taken from folded constants and
   refused, naming the tensor, when only known at run time; negative axes; new modes and attributes...;
   :mod:`onegraph.convert.steps`), with ``onnx.version_converter`` for the others, over the longest spans
   of opsets it can take at once (nodes onegraph already took across a step sit in a private domain the
   converter leaves alone). A node no step can express at the older opset is refused and named, with its
   operator's two versions and the reason. When onnx's converter has no adapter for an operator the tables
   do not cover and the definitions differ only in types or in attributes added with defaults, the schema
   checks convert it.
3. Function bodies get their attribute references (which the converter drops) back; nodes of other domains
   are listed: ``ai.onnx.ml`` nodes are kept at their own opset (it does not follow the default domain) or,
   with ``ml_opset``, moved to it when their definition is the same there, else refused.
4. The recorded annotations are put back, the IR version raised if the opset needs it, and the result is
   checked with onnx's checker.
5. The original and the converted model run in onnxruntime on the same inputs (:mod:`onegraph.verify.feeds`)
   (in onnx's reference evaluator where onnxruntime has no kernel for an old version, e.g. Clip-6 on doubles)
   and every output is compared; a conversion that changes values is refused unless ``accept_diff``.

Nothing is written unless the conversion passed (or ``accept_diff``); the input model is never modified.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.check import irsafe, native
from onegraph.check.loader import load_model
from onegraph.convert import opset_adapters as adapters
from onegraph.convert import preserve, steps
from onegraph.convert.report import ConversionReport, NodeConversion
from onegraph.convert.steps import TARGET_DOMAIN, Refusal, schema, since
from onegraph.errors import (
    ConfigError,
    ConversionError,
    ModelFileError,
    OnegraphError,
    RuntimeFailure,
    whole_number,
)
from onegraph.io import save_model
from onegraph.verify.feeds import model_feeds
from onegraph.verify.lowprec import reference_run
from onegraph.verify.parity import check_tolerances
from onegraph.verify.runs import agreement, run

__all__ = ["ML_DOMAIN", "default_opset", "convert_opset", "check_opsets", "verify",
           "convert_graph"]

ML_DOMAIN = "ai.onnx.ml"
_DEFAULT = ("", "ai.onnx")

def default_opset(model: onnx.ModelProto | onnx.FunctionProto) -> int | None:
    for o in model.opset_import:
        if o.domain in _DEFAULT:
            return o.version
    return None


def convert_opset(model: Any, opset: int, *, data: Any = None, rows: int = 16, rtol: float = 1e-5,
                  atol: float = 1e-6, accept_diff: bool = False, ml_opset: int | None = None,
                  output: Any = None) -> tuple[onnx.ModelProto, ConversionReport]:
    """Convert ``model``'s default domain to ``opset`` and verify the result in onnxruntime.

    Parameters
    ----------
    model:
        Path, bytes or ``onnx.ModelProto`` (never modified).
    opset:
        Target version of the default (``ai.onnx``) domain, up or down.
    data:
        Inputs to verify on (see :func:`onegraph.verify.feeds.model_feeds`); None generates them.
    rows:
        Rows generated, or taken from ``data``.
    rtol, atol:
        An output agrees when ``|converted - original| <= atol + rtol * |original|`` (float outputs; others
        must be equal).
    accept_diff:
        Keep (and write) a conversion whose outputs differ; the report still shows the differences.
    ml_opset:
        Also move ``ai.onnx.ml`` nodes to this opset (only where their definition does not change).
    output:
        Where to write the converted model (atomically), only when the conversion is accepted.

    Returns
    -------
    (onnx.ModelProto, ConversionReport)

    Raises
    ------
    ConversionError
        when a node cannot be converted (named in the report), the converted model fails onnx's checker,
        or an output changes beyond tolerance (unless ``accept_diff``); ``.report`` holds the details.
    """
    check_opsets(opset, ml_opset)
    check_tolerances(rtol=rtol, atol=atol)
    original = load_model(model)
    src = default_opset(original)
    if src is None:
        raise OnegraphError("the model imports no default-domain (ai.onnx) opset; there is nothing to convert")
    report = ConversionReport("opset", f"opset {src}", f"opset {opset}")
    converted = _convert(original, src, opset, ml_opset, report)
    if report.refused:
        first = report.refused[0]
        raise ConversionError(
            f"cannot convert to opset {opset}{'' if ml_opset is None else f' (ai.onnx.ml {ml_opset})'}: "
            f"{len(report.refused)} node(s) refused, first {first.op_type} "
            f"node {first.name!r} ({first.where}): {first.how}", report,
            hint="the report lists every node; convert to an opset where these operators exist, or change them")
    verify(original, converted, report, data=data, rows=rows, rtol=rtol, atol=atol)
    if not report.agreement.ok and not accept_diff:
        bad = [o.name for o in report.agreement.outputs if not o.ok] + report.agreement.missing
        raise ConversionError(f"the converted model's output(s) {', '.join(map(repr, bad))} differ from the "
                              f"original's beyond tolerance", report,
                              hint="nothing was written; see the report, or pass --accept-diff to keep it")
    if output is not None:
        save_model(converted, output)
    return converted, report


def check_opsets(opset: int, ml_opset: int | None = None) -> None:
    """Refuse target opsets the installed onnx does not define (ai.onnx 1..onnx_opset_version(), ai.onnx.ml
    1..onnx_ml_opset_version()).

    Raises
    ------
    ConfigError
        naming the opset and the supported range.
    """
    for name, value, top in (("opset", opset, onnx.defs.onnx_opset_version()),
                             ("ml opset", ml_opset, onnx.defs.onnx_ml_opset_version())):
        if value is not None or name == "opset":  # the ml opset is optional
            value = whole_number(name.replace(" ", "_"), value, None, hint=f"give a target {name} between 1 and {top}")
        if value is not None and not 1 <= value <= top:
            raise ConfigError(f"{name} {value} does not exist: onnx {onnx.__version__} defines {name}s 1 to {top}",
                              hint=f"give a target {name} between 1 and {top}")


def verify(original: onnx.ModelProto, converted: onnx.ModelProto, report: ConversionReport, *, data: Any,
           rows: int, rtol: float, atol: float) -> None:
    """Run both models in onnxruntime on the same inputs; fill ``report.agreement`` and ``report.inputs``."""
    feeds = model_feeds(original, data, rows=rows)
    n = next((len(v) for v in feeds.values() if np.ndim(v)), 1)
    report.inputs = (f"{n} rows of {data}" if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__")
                     else f"{n} rows of the data given" if data is not None
                     else f"generated inputs ({n} rows, seed 0)")
    expected = _run(original, feeds, "the original model", report)
    got = _run(converted, feeds, "the converted model", report)
    report.agreement = agreement(expected, got, rtol=rtol, atol=atol)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], what: str, report: ConversionReport) -> dict:
    """``model``'s outputs in onnxruntime, or in onnx's reference evaluator where onnxruntime has no kernel
    for an operator's version (old opsets: Upsample-7, Scatter-9...); the report says which."""
    try:
        return run(model, feeds, what=what)
    except RuntimeFailure as exc:
        if "NOT_IMPLEMENTED" not in str(exc) and "Could not find an implementation" not in str(exc):
            raise
        missing = re.search(r"implementation for (\w+\(\d+\))", str(exc))
        report.notes.append(f"{what} ran in onnx's reference evaluator: onnxruntime has no kernel for "
                            f"{missing.group(1) if missing else 'one of its operators'}")
        return reference_run(model, feeds, hint=f"onnxruntime has no kernel for this operator's version and the "
                             f"reference evaluator cannot run it: {what} cannot be verified; nothing was written. "
                             "Convert to an opset onnxruntime runs")


# -- the conversion ---------------------------------------------------------------------------------
def _convert(original: onnx.ModelProto, src: int, dst: int, ml_opset: int | None,
             report: ConversionReport) -> onnx.ModelProto:
    snap = preserve.snapshot(original)
    main = copy.deepcopy(original)
    del main.functions[:]
    converted, records = convert_graph(main, src, dst, "graph", report.notes)
    report.nodes.extend(records)
    calls = _call_input_types(original) if original.functions else {}
    for f in original.functions:
        body, records = _convert_function(f, src, dst, report.notes, calls.get((f.domain, f.name, f.overload)))
        report.nodes.extend(records)
        converted.functions.append(body)
    local = {(f.domain, f.name) for f in original.functions}
    for rec in report.nodes:
        _describe_other_domains(rec, local, original, ml_opset)
    _set_opsets(converted, original, dst, ml_opset)
    report.lost.extend(preserve.restore(converted, snap))
    if not report.refused:
        _check(original, converted, report)
    return converted


def _set_opsets(converted: onnx.ModelProto, original: onnx.ModelProto, dst: int, ml_opset: int | None) -> None:
    imports = {o.domain: o.version for o in original.opset_import}
    imports.update({o.domain: o.version for o in converted.opset_import})
    imports.pop(TARGET_DOMAIN, None)
    imports.pop("ai.onnx", None)
    imports[""] = dst
    if ml_opset is not None and ML_DOMAIN in imports:
        imports[ML_DOMAIN] = ml_opset
    del converted.opset_import[:]
    converted.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in imports.items())
    needed = onnx.helper.find_min_ir_version_for(list(converted.opset_import), ignore_unknown=True)
    converted.ir_version = max(original.ir_version, needed)


def _check(original: onnx.ModelProto, converted: onnx.ModelProto, report: ConversionReport) -> None:
    try:
        native.check_model(original)
    except onnx.checker.ValidationError:
        return  # the original does not pass either: the checker cannot judge the conversion
    try:
        native.check_model(converted)
    except onnx.checker.ValidationError as exc:
        report.nodes.append(NodeConversion("(model)", "checker", "", "graph", None, None,
                                           f"the converted model fails onnx's checker: {str(exc)[:400]}", ok=False))


def _describe_other_domains(rec: NodeConversion, local: set, original: onnx.ModelProto,
                            ml_opset: int | None) -> None:
    if rec.domain in _DEFAULT or rec.how:
        return
    if (rec.domain, rec.op_type) in local:
        rec.how = "call of a model-local function (its body is converted below)"
    elif rec.domain == ML_DOMAIN:
        ml_src = next((o.version for o in original.opset_import if o.domain == ML_DOMAIN), None)
        rec.from_version = since(rec.op_type, ml_src or 1, ML_DOMAIN)
        if ml_opset is None or ml_opset == ml_src:
            rec.to_version = rec.from_version
            rec.how = (f"kept at ai.onnx.ml opset {ml_src}: the ai.onnx.ml domain is versioned on its own, "
                       "not with the default domain")
            return
        rec.to_version = since(rec.op_type, ml_opset, ML_DOMAIN)
        target = adapters.schema(rec.op_type, ml_opset, ML_DOMAIN)
        node = next((n for n in _all_nodes(original) if (n.name or n.op_type) == rec.name
                     and n.op_type == rec.op_type), None)
        missing = [a.name for a in node.attribute if a.name not in target.attributes] if node and target else None
        if target is not None and target.deprecated:
            rec.ok = False
            replaced = {"TreeEnsembleClassifier": "TreeEnsemble", "TreeEnsembleRegressor": "TreeEnsemble"}
            instead = f" (replaced by {replaced[rec.op_type]})" if rec.op_type in replaced else ""
            rec.how = (f"deprecated at ai.onnx.ml opset {rec.to_version}{instead}: onnx defines no {rec.op_type} "
                       f"there; convert with --ml-opset {rec.to_version - 1} or lower")
        elif rec.to_version == rec.from_version:
            rec.how = f"same definition at ai.onnx.ml opset {ml_opset}: kept"
        elif missing == []:
            rec.how = (f"kept: every attribute it uses exists in {rec.op_type}-{rec.to_version} "
                       "(the versions in between only added attributes)")
        else:
            rec.ok = False
            rec.how = (f"its definition changes between ai.onnx.ml opsets {ml_src} and {ml_opset} "
                       f"(v{rec.from_version} -> v{rec.to_version or '-'})"
                       + (f" and attribute(s) {', '.join(missing)} do not exist there" if missing else ""))
    else:
        rec.how = f"kept: domain {rec.domain!r} is not converted (no definitions to convert between)"


def _all_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return list(model.graph.node) + [n for f in model.functions for n in f.node]


def _call_input_types(model: onnx.ModelProto) -> dict[tuple[str, str, str], list[onnx.TypeProto | None]]:
    """The input types of the first main-graph call of each local function, by (domain, name, overload)."""
    try:
        model = native.infer_shapes(model)
    except Exception:  # as in convert_graph: a help, never a requirement
        pass
    g = model.graph
    types = {v.name: v.type for v in (*g.input, *g.value_info, *g.output)}
    types.update((t.name, onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))) for t in g.initializer)
    calls: dict[tuple[str, str, str], list[onnx.TypeProto | None]] = {}
    for node in g.node:
        calls.setdefault((node.domain, node.op_type, node.overload), [types.get(i) for i in node.input])
    return calls


def _convert_function(f: onnx.FunctionProto, model_src: int, dst: int, notes: list[str],
                      input_types: list[onnx.TypeProto | None] | None = None
                      ) -> tuple[onnx.FunctionProto, list[NodeConversion]]:
    src = default_opset(f) or model_src
    types = list(input_types or [])
    typed = len(types) == len(f.input) and all(t is not None and t.HasField("tensor_type") for t in types)
    inputs = [onnx.ValueInfoProto(name=i, type=t) if typed else onnx.ValueInfoProto(name=i)
              for i, t in zip(f.input, types if typed else [None] * len(f.input))]
    graph = onnx.helper.make_graph(list(f.node), f.name, inputs, [onnx.ValueInfoProto(name=o) for o in f.output])
    wrapper = onnx.helper.make_model(graph, opset_imports=list(f.opset_import))
    if default_opset(wrapper) is None:
        wrapper.opset_import.append(onnx.helper.make_opsetid("", src))
    # onnx 1.23's shape inference crashes the process (SIGSEGV) on some ai.onnx.ml operators (LabelEncoder)
    # whose input has no type, as a function body's inputs have: infer only with the call's input types
    converted, records = convert_graph(wrapper, src, dst, f"function {f.domain}.{f.name}", notes, infer=typed)
    body = copy.deepcopy(f)
    del body.node[:]
    body.node.extend(converted.graph.node)
    imports = {o.domain: o.version for o in f.opset_import}
    imports.pop("ai.onnx", None)
    imports[""] = dst
    del body.opset_import[:]
    body.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in imports.items())
    return body, records


class _ConverterFailed(Exception):
    """onnx's converter failed on a span of opsets: its message, and the nodes crossing a change in it."""

    def __init__(self, message: str, start: int, end: int, crossing: list[ir.Node]) -> None:
        super().__init__(message)
        self.message, self.start, self.end, self.crossing = message, start, end, crossing


def _boundary(cur: int, nxt: int) -> int:
    """The ``since_version`` a node must have to change between opsets ``cur`` and ``nxt`` (adjacent)."""
    return max(cur, nxt)


def _crosses(node: ir.Node, b: int) -> bool:
    return node.domain in _DEFAULT and since(node.op_type, b) == b


def _step_of(node: ir.Node, b: int, down: bool, planned: set[str]) -> steps.Step | None:
    """onegraph's step for ``node`` across version ``b`` (None: leave it to onnx's converter)."""
    step = adapters.down_step(node.op_type, b) if down else adapters.up_step(node.op_type, b)
    if step is None and node.op_type in planned:
        step = steps.Step("only admits more types or adds attributes with defaults (onnx's converter has "
                          "no adapter)")
    if step is None and down and schema(node.op_type, b - 1) is None and (node.op_type, b) not in adapters.ONNX:
        step = steps.Step("first version")  # the schema checks refuse: the operator does not exist below
    return step


class _Walk:
    """One conversion of one graph from ``src`` to ``dst``, an opset at a time: onegraph's steps for the nodes
    its tables cover, onnx's converter for the others (over the longest spans it can take at once)."""

    def __init__(self, model: ir.Model, src: int, dst: int, records: dict[str, NodeConversion],
                 planned: set[str], notes: list[str]) -> None:
        self.model, self.src, self.dst = model, src, dst
        self.records, self.planned, self.notes = records, planned, notes
        self.origin: dict[str, str] = {}  # name of a node emitted by a step -> the original node's record
        self.done: dict[str, list[tuple[str, bool]]] = {}  # record -> what each step did, whether trivially
        self.by_onnx: set[str] = set()
        self.serial = [0]

    def record(self, node: ir.Node) -> str | None:
        name = self.origin.get(node.name, node.name)
        return name if name in self.records else None

    def run(self) -> ir.Model | None:
        """The converted model, or None when a step refused a node (marked in the records)."""
        down = self.dst < self.src
        cur, start = self.src, self.src
        while cur != self.dst:
            nxt = cur - 1 if down else cur + 1
            b = _boundary(cur, nxt)
            crossing = [n for n in ir.traversal.RecursiveGraphIterator(self.model.graph) if _crosses(n, b)]
            ours = [(n, s) for n in crossing if (s := _step_of(n, b, down, self.planned)) is not None]
            if ours:
                if start != cur:
                    self.onnx(start, cur)
                    crossing = [n for n in ir.traversal.RecursiveGraphIterator(self.model.graph) if _crosses(n, b)]
                    ours = [(n, s) for n in crossing if (s := _step_of(n, b, down, self.planned)) is not None]
                hidden = self.cross(ours, cur, nxt)
                if hidden is None:
                    return None
                if len(ours) < len(crossing):
                    if not self.reachable(hidden, crossing, ours, cur, nxt):
                        return None
                    for n in hidden:
                        n.domain = TARGET_DOMAIN
                    self.onnx(cur, nxt)
                start = nxt
            cur = nxt
        if start != self.dst:
            self.onnx(start, self.dst)
        self.model.opset_imports[""] = self.dst
        return self.model

    def reachable(self, hidden: list[ir.Node], crossing: list[ir.Node], ours: list[tuple[ir.Node, steps.Step]],
                  cur: int, nxt: int) -> bool:
        """False (and the nodes refused) when a node left to onnx's converter is inside a subgraph of a node
        onegraph took across this step: the converter does not look inside nodes of another domain."""
        theirs = {id(n) for n in crossing} - {id(n) for n, _ in ours}
        for outer in hidden:
            for attr in outer.attributes.values():
                graphs = attr.as_graphs() if attr.type == ir.AttributeType.GRAPHS else \
                    [attr.as_graph()] if attr.type == ir.AttributeType.GRAPH else []
                for node in (n for g in graphs for n in ir.traversal.RecursiveGraphIterator(g) if id(n) in theirs):
                    key = self.record(node)
                    if key is not None:
                        self.records[key].ok = False
                        self.records[key].how = (f"opset {cur} -> {nxt}: inside {outer.op_type} node {outer.name!r}, "
                                                 "which onegraph converts there, out of reach of onnx's converter")
                    return False
        return True

    def cross(self, ours: list[tuple[ir.Node, steps.Step]], cur: int, nxt: int) -> list[ir.Node] | None:
        """Take ``ours`` across the change between ``cur`` and ``nxt`` (consumers first, so a value is folded
        with the definitions it was built with); the nodes kept and added, or None after a refusal."""
        refused = False
        kept: list[ir.Node] = []
        for node, step in reversed(ours):
            if node.graph is None:  # pruned: it only computed an input that became an attribute
                continue
            key = self.record(node)
            ctx = steps.Context(node.graph, cur, nxt, self.notes, self.serial)
            old = schema(node.op_type, nxt)
            older = f"{node.op_type}-{old.since_version}" if old is not None else f"(no {node.op_type} at opset {nxt})"
            what = f"{node.op_type}-{since(node.op_type, cur)} -> {older}"
            before = [v for v in node.inputs if v is not None]
            try:
                try:
                    rewrite = steps.adapt(node, ctx, step)
                    added = steps.apply(node, rewrite)
                except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:  # a malformed node
                    raise Refusal(f"the node is not a valid {node.op_type} ({type(exc).__name__}: "
                                  f"{str(exc)[:200]})") from None
            except Refusal as exc:
                refused = True
                if key is not None:
                    rec = self.records[key]
                    part = "" if key == node.name else f"its part {node.op_type} {node.name!r}: "
                    rec.ok = False
                    rec.how = f"{part}{what} (opset {cur} -> {nxt}): {exc}"
                continue
            kept.extend(added)
            if rewrite.outputs is None:
                kept.append(node)
            for value in before:
                self.prune(value)
            if key is not None:
                self.origin.update((n.name, key) for n in added)
                trivial = rewrite.how.startswith("kept as is") or key != node.name and node.op_type == "Constant"
                self.done.setdefault(key, []).append((f"{what}: {rewrite.how}", trivial))
        return None if refused else kept

    def prune(self, value: ir.Value) -> None:
        """Remove what only computed ``value``, now read by no node (an input that became an attribute)."""
        if value.uses() or value.is_graph_output() or value.is_graph_input():
            return
        producer = value.producer()
        if producer is None:
            graph = value.graph
            if value.is_initializer() and graph is not None:
                graph.initializers.pop(value.name, None)
            return
        if producer.domain not in _DEFAULT or any(o.uses() or o.is_graph_output() for o in producer.outputs):
            return
        inputs = [v for v in producer.inputs if v is not None]
        producer.graph.remove(producer, safe=True)
        key = self.record(producer)
        if key is not None:
            self.done.setdefault(key, []).append(
                (f"removed: it only computed {value.name!r}, whose value the conversion took", key != producer.name))
        for v in inputs:
            self.prune(v)

    def onnx(self, start: int, end: int) -> None:
        """onnx's converter from ``start`` to ``end`` (nodes in TARGET_DOMAIN are left alone), in place."""
        step = -1 if end < start else 1
        bounds = {_boundary(v, v + step) for v in range(start, end, step)}
        crossing = [n for n in ir.traversal.RecursiveGraphIterator(self.model.graph)
                    if any(_crosses(n, b) for b in bounds)]
        for n in crossing:
            key = self.record(n)
            if key is not None:
                self.by_onnx.add(key)
        self.model.opset_imports.pop("ai.onnx", None)
        self.model.opset_imports[""] = start
        self.model.opset_imports[TARGET_DOMAIN] = 1
        proto = irsafe.to_proto(self.model)
        try:
            out = native.convert_version(proto, end)
        except Exception as exc:  # the converter raises RuntimeError / IndexError with its assertion text
            message = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise _ConverterFailed(message, start, end, crossing) from None
        self.model = irsafe.from_proto(out)
        for n in ir.traversal.RecursiveGraphIterator(self.model.graph):
            if n.domain == TARGET_DOMAIN:
                n.domain = ""

    def how(self, key: str) -> str:
        entries = self.done.get(key, [])
        ours = [text for text, trivial in entries if not trivial] or [text for text, _ in entries]
        parts = ([f"onegraph adapter: {'; '.join(ours)}"] if ours else []) + \
            (["onnx version converter"] if key in self.by_onnx else [])
        return "; ".join(parts)


def convert_graph(unit: onnx.ModelProto, src: int, dst: int, where: str, notes: list[str], *, infer: bool = True
                  ) -> tuple[onnx.ModelProto, list[NodeConversion]]:
    """Convert one model's graph (no functions) from ``src`` to ``dst``; one record per original node.

    Refused nodes are marked ``ok=False`` in the records (the returned model is then incomplete).
    ``infer``: run onnx's shape inference first (False where it cannot run safely).

    Raises
    ------
    ModelFileError
        when ``src`` is an opset the installed onnx does not define (nothing to convert from).
    """
    top = onnx.defs.onnx_opset_version()
    if not 1 <= src <= top:
        raise ModelFileError(f"the {where} imports default-domain opset {src}, which onnx {onnx.__version__} does not "
                             f"define (1 to {top}): there is no definition to convert from",
                             hint="set the model's opset_import to the opset its nodes were written for")
    if infer:
        try:
            unit = native.infer_shapes(unit)
        except Exception:  # shape inference is a help for the adapters, never a requirement
            pass
    model = irsafe.from_proto(unit)
    temporary: set[str] = set()
    records: dict[str, NodeConversion] = {}
    refs: dict[str, list[ir.Attr]] = {}
    for i, node in enumerate(ir.traversal.RecursiveGraphIterator(model.graph)):
        if node.domain == "ai.onnx":
            node.domain = ""
        if not node.name or node.name in records:
            node.name = f"_og{i}_{node.op_type}"
            temporary.add(node.name)
        a, b = (since(node.op_type, src), since(node.op_type, dst)) if node.domain in _DEFAULT else (None, None)
        how = "unchanged (same definition at both opsets)" if node.domain in _DEFAULT and a == b else ""
        if node.domain in _DEFAULT and a is None:
            how = "unknown operator: kept as is"
        records[node.name] = NodeConversion(node.name if node.name not in temporary else f"({node.op_type} #{i})",
                                            node.op_type, node.domain, where, a, b, how)
        refs[node.name] = [attr for attr in node.attributes.values() if attr.is_ref()]

    base = irsafe.to_proto(model)
    planned: set[str] = set()
    while True:
        walk = _Walk(irsafe.from_proto(base), src, dst, records, planned, notes)
        try:
            converted = walk.run()
        except _ConverterFailed as failed:
            op = _failed_op(failed.message)
            pending = [n for n in failed.crossing if n.op_type == op]
            eligible = op is not None and all(
                steps.only_types_and_defaults(op, v) for n in pending for v in _bounds(failed.start, failed.end)
                if _crosses(n, v))
            if op and op not in planned and pending and eligible:
                planned.add(op)
                continue
            for node in (pending or failed.crossing):
                key = walk.record(node)
                if key is not None:
                    records[key].ok = False
                    records[key].how = f"onnx's version converter failed: {_short(failed.message)}"
            if not any(not r.ok for r in records.values()):
                raise ConversionError(f"onnx's version converter failed on {where}: {_short(failed.message)}") from None
            return unit, _unreached(records)
        if converted is None:
            return unit, _unreached(records)
        break

    for node in ir.traversal.RecursiveGraphIterator(converted.graph):
        for attr in refs.get(node.name, []):
            node.attributes[attr.name] = attr
        if node.name in temporary:
            node.name = None
    for key, rec in records.items():
        if rec.domain in _DEFAULT and (not rec.how or key in walk.done):
            rec.how = walk.how(key) or "onnx version converter"
    result = ir.serde.serialize_model(converted)
    kept = [o for o in result.opset_import if o.domain != TARGET_DOMAIN]
    del result.opset_import[:]
    result.opset_import.extend(kept)
    return result, list(records.values())


def _bounds(start: int, end: int) -> list[int]:
    step = -1 if end < start else 1
    return [_boundary(v, v + step) for v in range(start, end, step)]


def _unreached(records: dict[str, NodeConversion]) -> list[NodeConversion]:
    for rec in records.values():
        if rec.domain in _DEFAULT and not rec.how:
            rec.how = "not converted: the conversion stopped at the refused nodes"
    return list(records.values())


_OP_PATTERNS = [r"No Adapter (?:From|To) Version \$\d+ for (\w+)", r"No Adapter For (\w+)",
                r"No Previous Version of (\w+)", r"for (\w+)\b"]


def _failed_op(message: str) -> str | None:
    for pattern in _OP_PATTERNS:
        m = re.search(pattern, message)
        if m:
            return m.group(1)
    return None


def _short(message: str) -> str:
    return re.sub(r"^.*?(Assertion|adapter_lookup|adapt:)", r"\1", message)[:300]
