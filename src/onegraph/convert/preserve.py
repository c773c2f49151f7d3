"""What onnx's version converter drops, put back: annotations and metadata of a model.

``onnx.version_converter`` rebuilds the graph through its own IR and loses, among others: model-local
functions, ``GraphProto.quantization_annotation``, ``metadata_props`` of value infos (graph inputs, outputs,
intermediate values: where onegraph keeps tensor statistics), of nodes and of initializers, and doc strings.
:func:`snapshot` records them from the original model, :func:`restore` writes them into the converted one
(matched by tensor name and node name), and returns what could not be put back because the tensor or node
no longer exists, so the report can say so instead of dropping it silently.
"""

from __future__ import annotations

import dataclasses

import onnx

__all__ = ["Snapshot", "snapshot", "restore"]


def _props(container) -> list[tuple[str, str]]:
    return [(p.key, p.value) for p in container.metadata_props]


@dataclasses.dataclass
class Snapshot:
    """Annotations and metadata of one model, keyed by what they belong to."""

    model_props: list[tuple[str, str]]
    model_fields: dict[str, object]
    graph_doc: str
    quantization: list[onnx.TensorAnnotation]
    value_props: dict[str, list[tuple[str, str]]]
    value_infos: dict[str, onnx.ValueInfoProto]
    node_props: dict[str, list[tuple[str, str]]]
    initializer_props: dict[str, list[tuple[str, str]]]
    graph_props: list[tuple[str, str]]


def snapshot(model: onnx.ModelProto) -> Snapshot:
    """Record the annotations and metadata of ``model`` (its main graph) that conversion may drop."""
    g = model.graph
    values = list(g.input) + list(g.output) + list(g.value_info)
    return Snapshot(
        model_props=_props(model),
        model_fields={f: getattr(model, f) for f in ("producer_name", "producer_version", "domain",
                                                    "model_version", "doc_string")},
        graph_doc=g.doc_string,
        quantization=[_copy(a) for a in g.quantization_annotation],
        value_props={v.name: _props(v) for v in values if v.metadata_props},
        value_infos={v.name: _copy(v) for v in g.value_info if v.metadata_props},
        node_props={n.name: _props(n) for n in g.node if n.name and n.metadata_props},
        initializer_props={t.name: _props(t) for t in g.initializer if t.metadata_props},
        graph_props=_props(g),
    )


def _copy(proto):
    out = type(proto)()
    out.CopyFrom(proto)
    return out


def _merge(container, props: list[tuple[str, str]]) -> None:
    present = {p.key for p in container.metadata_props}
    for key, value in props:
        if key not in present:
            container.metadata_props.add(key=key, value=value)


def restore(model: onnx.ModelProto, snap: Snapshot) -> list[str]:
    """Put the recorded annotations back into ``model`` (in place).

    Returns
    -------
    list of str
        One line per annotation that could not be restored (its tensor or node is gone).
    """
    lost: list[str] = []
    g = model.graph
    _merge(model, snap.model_props)
    for field, value in snap.model_fields.items():
        if value and not getattr(model, field):
            setattr(model, field, value)
    if snap.graph_doc and not g.doc_string:
        g.doc_string = snap.graph_doc
    _merge(g, snap.graph_props)

    tensors = {v.name for v in list(g.input) + list(g.output) + list(g.value_info)}
    tensors |= {t.name for t in g.initializer} | {o for n in g.node for o in n.output}
    present_q = {a.tensor_name for a in g.quantization_annotation}
    for ann in snap.quantization:
        if ann.tensor_name in present_q:
            continue
        if ann.tensor_name in tensors:
            g.quantization_annotation.append(ann)
        else:
            lost.append(f"quantization_annotation of tensor {ann.tensor_name!r}: the tensor is gone")

    by_name = {v.name: v for v in list(g.input) + list(g.output) + list(g.value_info)}
    for name, props in snap.value_props.items():
        target = by_name.get(name)
        if target is None and name in tensors and name in snap.value_infos:
            target = g.value_info.add()
            target.CopyFrom(snap.value_infos[name])
            continue
        if target is None:
            lost.append(f"metadata_props of value {name!r}: the value is gone")
            continue
        _merge(target, props)

    nodes = {n.name: n for n in g.node if n.name}
    for name, props in snap.node_props.items():
        if name in nodes:
            _merge(nodes[name], props)
        elif not any(n.startswith(f"{name}/") for n in nodes):  # an adapter's parts carry it already
            lost.append(f"metadata_props of node {name!r}: the node was replaced")
    inits = {t.name: t for t in g.initializer}
    for name, props in snap.initializer_props.items():
        if name in inits:
            _merge(inits[name], props)
        else:
            lost.append(f"metadata_props of initializer {name!r}: the initializer is gone")
    return lost
