"""Splice an existing ONNX model into the graph being built.

Used for graphs another converter produced (skl2onnx, onnxmltools, torch.onnx, a ``.onnx`` file): the
model's inputs are wired to values of the graph under construction, its nodes, initializers and local
functions move over with their names prefixed (so names never collide), and its outputs are returned.
The default-domain opset is aligned first with onnx's version converter (a graph that needs converting has
its local functions inlined first: the converter cannot convert function bodies); the deprecated
``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor`` (ai.onnx.ml 1-3) are rewritten as ``TreeEnsemble``
(ai.onnx.ml 5, see :mod:`.legacy_trees`); a local function whose identifier is already taken by a
different body is renamed (its overload gets the prefix), an identical one is kept once.
"""

from __future__ import annotations

from collections.abc import Mapping

import onnx
import onnx_ir as ir
from onnx import inliner

from onegraph.check import irsafe
from onegraph.emit import OPSET, GraphBuilder
from onegraph.errors import ExportError

__all__ = ["align_opset", "splice", "classifier_labels"]


def align_opset(proto: onnx.ModelProto, what: str) -> onnx.ModelProto:
    """``proto`` converted to onegraph's default-domain opset (:data:`onegraph.emit.OPSET`) if needed."""
    version = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), OPSET)
    if version == OPSET:
        return proto
    if proto.functions:
        # the version converter drops model-local functions and cannot convert their bodies: inline them first
        proto = inliner.inline_local_functions(proto)
    try:
        return onnx.version_converter.convert_version(proto, OPSET)
    except Exception as exc:  # the converter raises RuntimeError / ConvertError / ValidationError
        raise ExportError(f"{what}: cannot convert its graph from opset {version} to {OPSET} ({exc})",
                          hint="convert it to a newer opset first") from None


def splice(g: GraphBuilder, proto: onnx.ModelProto, feeds: Mapping[str, ir.Value], prefix: str,
           what: str) -> dict[str, ir.Value]:
    """Move ``proto``'s graph into ``g``; return its outputs by their original names.

    Parameters
    ----------
    feeds: graph input name of ``proto`` -> value of ``g`` to wire it to (every input must be fed).
    prefix: prepended to every value, node and initializer name moved over.
    what: the source object, for error messages.

    Raises
    ------
    ExportError
        for an input left unfed, or a domain whose opset differs from the one ``g`` already imports.
    """
    from onegraph.export.adapters.legacy_trees import upgrade_tree_ensembles

    aligned = align_opset(proto, what)
    if aligned is proto:  # onnx-ir writes renamed initializers through to their TensorProto: work on a copy
        aligned = onnx.ModelProto()
        aligned.CopyFrom(proto)
    sub = irsafe.from_proto(aligned)
    upgrade_tree_ensembles(sub)
    for domain, version in sub.opset_imports.items():
        have = g.graph.opset_imports.get(domain)
        if have is None:
            g.graph.opset_imports[domain] = version
        elif have != version and domain not in ("", "ai.onnx.ml"):
            raise ExportError(f"{what}: its graph imports {domain or 'ai.onnx'} opset {version}, "
                              f"the pipeline uses {have}")
    for value in list(sub.graph.inputs):
        if value.name in sub.graph.initializers:
            continue
        if value.name not in feeds:
            raise ExportError(f"{what}: graph input {value.name!r} is not connected",
                              hint=f"inputs available: {', '.join(feeds)}")
        value.replace_all_uses_with(feeds[value.name])
    outputs = {v.name: v for v in sub.graph.outputs}
    sub.graph.outputs.clear()
    nodes = list(sub.graph)
    sub.graph.remove(nodes)
    for name in list(sub.graph.initializers):
        value = sub.graph.initializers.pop(name)
        value.name = prefix + name
        g.graph.register_initializer(value)
    scope = g.scope_metadata()
    for node in nodes:
        node.name = prefix + (node.name or node.op_type)
        if scope and not node.metadata_props:  # attributed to the step splicing it (torch's keep their own)
            node.metadata_props.update(scope)
        for out in node.outputs:
            if out.name:
                out.name = prefix + out.name
    renamed = {}
    for function in sub.functions.values():
        key = function.identifier()
        have = g.functions.get(key)
        if have is not None and _function_bytes(have) != _function_bytes(function):
            function.overload = prefix + function.overload
            renamed[key] = function.identifier()
        g.functions.setdefault(function.identifier(), function)
    for node in _all_nodes(nodes):
        if (node.domain, node.op_type, node.overload) in renamed:
            node.overload = renamed[node.domain, node.op_type, node.overload][2]
    g.graph.extend(nodes)
    g.ir_version = max(g.ir_version, sub.ir_version or 0)
    return outputs


def _function_bytes(function: ir.Function) -> bytes:
    return ir.serde.serialize_function(function).SerializeToString(deterministic=True)


def _all_nodes(nodes):
    """``nodes`` and the nodes of their subgraphs (If / Loop / Scan bodies)."""
    for node in nodes:
        yield node
        for attr in node.attributes.values():
            if attr.type == ir.AttributeType.GRAPH:
                yield from _all_nodes(list(attr.value))
            elif attr.type == ir.AttributeType.GRAPHS:
                for sub in attr.value:
                    yield from _all_nodes(list(sub))


#: the attributes of ONNX-ML's classifier operators (LinearClassifier, SVMClassifier, TreeEnsembleClassifier)
#: listing the class of each probability column, in order
_CLASS_LABELS = ("classlabels_strings", "classlabels_int64s", "classlabels_ints")


def classifier_labels(proto: onnx.ModelProto, probabilities: onnx.ValueInfoProto) -> list | None:
    """The class of each column of the graph output ``probabilities``, read from the ``ai.onnx.ml`` classifier
    nodes of ``proto``'s main graph (``classlabels_*``: the order of their probability columns, as the
    ONNX-ML operator specs define it; skl2onnx writes them for scikit-learn's classifiers) when they all agree
    and the output's declared width is their number (one-vs-rest graphs hold binary classifiers of labels
    ``[0, 1]`` feeding ``K`` columns); else None."""
    dims = probabilities.type.tensor_type.shape.dim
    if len(dims) != 2 or not dims[1].HasField("dim_value"):
        return None
    found = []
    for node in proto.graph.node:
        if node.domain != "ai.onnx.ml" or node.op_type == "ZipMap":
            continue
        for attr in node.attribute:
            if attr.name in _CLASS_LABELS:
                labels = onnx.helper.get_attribute_value(attr)
                found.append([v.decode("utf-8", "replace") if isinstance(v, bytes) else int(v) for v in labels])
    if not found or any(f != found[0] for f in found[1:]) or len(found[0]) != dims[1].dim_value:
        return None
    return found[0]
