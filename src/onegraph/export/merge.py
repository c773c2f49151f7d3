"""``compose_models``: ONNX models built elsewhere (``.onnx`` files) -> one model.

Each model is spliced into one graph (opsets aligned, old tree operators rewritten, names prefixed with the
model's name, identical initializers kept once, identical nodes on identical inputs — the same preprocessing
built into several files — computed once):

* inputs of the same name are one input of the result (they must have the same type: an error names both
  models otherwise), so models that take the same DataFrame columns share them;
* a model whose only input is a feature matrix (``[N, width]`` float / double, no column schema) is fed by
  the preprocessing-only model before it (a onegraph model whose outputs are all ``feature`` columns): its
  columns are stacked in order and cast; the widths must agree (an error names both models otherwise).
  Such a chained preprocessing is internal: its columns are not outputs of the result.

Outputs keep their names when one model remains; with several, they are ``<model name>.<output>``, and an
ensemble adds ``label`` / ``probabilities`` (or ``prediction``). The reference for the parity check is the
same models run as separate onnxruntime sessions chained in Python (:func:`run_chained`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.check.loader import load_model
from onegraph.contract import metadata as meta
from onegraph.contract.columns import ColumnSpec
from onegraph.contract.outputs import check_entries
from onegraph.emit import DOUBLE, FLOAT, Col, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export import assemble
from onegraph.export.adapters.models import ModelOutputs
from onegraph.export.adapters.onnx_graph import classifier_labels
from onegraph.export.combine import (
    combined_answer,
    declare_answers,
    named_models,
    post_processed,
)
from onegraph.export.ensemble import Ensemble
from onegraph.export.postprocess import PostStep
from onegraph.verify.parity import outputs_parity

__all__ = ["Part", "read_part", "plan", "compose_models", "parts_by_name", "run_chained", "merged_parity"]

_ROLE_BY_NAME = {"label": "label", "probabilities": "probabilities", "prediction": "prediction"}
_ELEM = {onnx.TensorProto.DOUBLE: ("float", "double"), onnx.TensorProto.FLOAT: ("float", "float"),
         onnx.TensorProto.INT64: ("int", "int64"), onnx.TensorProto.BOOL: ("bool", "bool"),
         onnx.TensorProto.STRING: ("string", "string")}


@dataclasses.dataclass
class Part:
    """One model of a merge: its graph, the columns it takes, what its outputs mean."""

    name: str
    proto: onnx.ModelProto
    specs: list[ColumnSpec]
    outputs: list[dict]
    matrix: tuple[str, str, int | None] | None = None  # (input name, "float" / "double", width) of a matrix model
    feeds_from: str | None = None
    internal: bool = False

    @property
    def source(self) -> str:
        return f"model {self.name!r}"

    @property
    def model(self) -> onnx.ModelProto:
        return self.proto

    @property
    def roles(self) -> dict[str, str]:
        return {o["role"]: o["name"] for o in self.outputs if o.get("role") in _ROLE_BY_NAME}

    @property
    def task(self) -> str:
        return "regressor" if "prediction" in self.roles and "label" not in self.roles else "classifier"

    @property
    def classes(self) -> list | None:
        return next((o.get("classes") for o in self.outputs if o.get("role") == "probabilities"), None)

    @property
    def is_preprocessing(self) -> bool:
        return bool(self.outputs) and all(o.get("role") in ("feature", "check") for o in self.outputs)


def read_part(model: Any, name: str) -> Part:
    """A model file (path, bytes, ModelProto) as a :class:`Part` named ``name``."""
    proto = load_model(model)
    fields, _ = meta.decode({p.key: p.value for p in proto.metadata_props})
    inits = {i.name for i in proto.graph.initializer}
    graph_inputs = [i for i in proto.graph.input if i.name not in inits]
    matrix = None
    if "inputs" in fields:
        specs = [ColumnSpec.from_dict(d) for d in fields["inputs"]]
    else:
        specs = []
        for i in graph_inputs:
            t = i.type.tensor_type
            rank = len(t.shape.dim)
            if t.elem_type not in _ELEM or rank not in (1, 2):
                raise ExportError(f"model {name!r}: input {i.name!r} is not a table column or feature matrix")
            batch = t.shape.dim[0]
            if batch.HasField("dim_value") and batch.dim_value != 1:  # onnxruntime refuses every other row count
                raise ExportError(f"model {name!r}: input {i.name!r} takes a fixed batch of {batch.dim_value} rows "
                                  f"(shape {[d.dim_value if d.HasField('dim_value') else d.dim_param for d in t.shape.dim]})",
                                  hint="export it with a dynamic batch dimension (torch.onnx.export's dynamic_shapes "
                                       "or dynamic_axes; skl2onnx's initial_types [None, width])")
            if rank == 2 and len(graph_inputs) == 1 and t.elem_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
                dim = t.shape.dim[1]
                matrix = (i.name, _ELEM[t.elem_type][1], dim.dim_value if dim.HasField("dim_value") else None)
                continue
            kind, onnx_type = _ELEM[t.elem_type]
            specs.append(ColumnSpec(i.name, kind, onnx_type, source_dtype=onnx_type))
    outputs = fields.get("outputs") or _guessed_outputs(proto)
    return Part(name, proto, specs, outputs, matrix)


def _guessed_outputs(proto: onnx.ModelProto) -> list[dict]:
    """The metadata entries of a model built elsewhere, told by the outputs' names and types; its
    probabilities get the classes of its classifier node (:func:`classifier_labels`) when it has one."""
    producers = {name: node.op_type for node in proto.graph.node for name in node.output}
    outputs = [_guess_role(o, producers.get(o.name)) for o in proto.graph.output]
    for entry, value in zip(outputs, proto.graph.output):
        classes = classifier_labels(proto, value) if entry["role"] == "probabilities" else None
        if classes is not None:
            entry["classes"] = classes
    return outputs


def _guess_role(output: onnx.ValueInfoProto, producer: str | None = None) -> dict:
    """An output's role by its name (``label``, ``probabilities``...), else by its type and the operator making
    it: text or int64 ``[N]`` a label, a float ``[N, k]`` ``Softmax`` the probabilities (a PyTorch export names it
    ``output``), else ``output``."""
    t = output.type.tensor_type
    role = _ROLE_BY_NAME.get(output.name)
    if role is None:
        if t.elem_type in (onnx.TensorProto.STRING, onnx.TensorProto.INT64) and len(t.shape.dim) <= 1:
            role = "label"
        elif producer == "Softmax" and len(t.shape.dim) == 2 and t.elem_type in (
                onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16):
            role = "probabilities"
        else:
            role = "output"
    return {"name": output.name, "column": output.name, "role": role}


def _names(models: Sequence[Any], names: Sequence[str] | None) -> list[str]:
    if names is not None:
        if len(names) != len(models):
            raise ExportError(f"{len(names)} name(s) for {len(models)} models", hint="give one name per model")
        out = list(names)
    else:
        out = []
        for i, m in enumerate(models):
            stem = os.path.splitext(os.path.basename(os.fspath(m)))[0] if isinstance(m, (str, os.PathLike)) \
                else f"model{i + 1}"
            out.append(re.sub(r"[^A-Za-z0-9_\-]", "_", stem))
    if len(set(out)) != len(out):
        raise ExportError(f"model names repeat: {out}", hint="give each model its own name (--name)")
    return out


def plan(models: Sequence[Any], names: Sequence[str] | None = None) -> list[Part]:
    """Read the models and decide which preprocessing feeds which matrix model (checked)."""
    parts = [read_part(m, n) for m, n in zip(models, _names(models, names))]
    columns: dict[str, tuple[ColumnSpec, str]] = {}
    for p in parts:
        for s in p.specs:
            have = columns.get(s.name)
            if have is not None and (have[0].onnx_type, have[0].kind) != (s.onnx_type, s.kind):
                raise ExportError(f"input {s.name!r} is {have[0].kind} ({have[0].onnx_type}) in model {have[1]!r} but "
                                  f"{s.kind} ({s.onnx_type}) in model {p.name!r}",
                                  hint="build both from data with the same column types")
            columns.setdefault(s.name, (s, p.name))
    for i, p in enumerate(parts):
        if p.matrix is None:
            continue
        producer = next((q for q in reversed(parts[:i]) if q.is_preprocessing), None)
        if producer is None:
            if i == 0:  # the first model: nothing before it, whatever it is (a skl2onnx scaler takes a matrix too)
                raise ExportError(f"model {p.name!r} takes a feature matrix ({p.matrix[0]!r}), not the table's "
                                  "columns, and comes first: nothing gives it that matrix",
                                  hint="start with a preprocessing that takes the table's columns (one input per "
                                       "column, e.g. one onegraph built), then the models that take its matrix")
            raise ExportError(f"model {p.name!r} takes a feature matrix ({p.matrix[0]!r}) and no preprocessing "
                              "before it gives one", hint="put a preprocessing-only model (one taking the table's "
                              "columns) before it")
        features = [o for o in producer.outputs if o.get("role") == "feature"]
        kinds = {o.get("kind", "float") for o in features}
        if kinds - {"float", "int", "bool"}:
            raise ExportError(f"model {producer.name!r} gives text columns but model {p.name!r} takes a numeric "
                              "feature matrix", hint="encode the text in the preprocessing")
        if p.matrix[2] is not None and len(features) != p.matrix[2]:
            raise ExportError(f"model {producer.name!r} gives {len(features)} columns but model {p.name!r} takes "
                              f"a {p.matrix[1]} feature matrix [N, {p.matrix[2]}]",
                              hint="chain a preprocessing that gives the columns the model was fitted on")
        p.feeds_from = producer.name
        producer.internal = True
    return parts


def compose_models(models: Sequence[Any], *, names: Sequence[str] | None = None,
                   ensemble: Ensemble | str | None = None, post: Sequence[PostStep] = (), sample: Any = None,
                   path: str | os.PathLike | None = None, rtol: float = 1e-5, atol: float = 1e-6,
                   name: str = "onegraph") -> onnx.ModelProto:
    """Merge ONNX models (paths, bytes or ``ModelProto``) into one; none of them is modified.

    Parameters
    ----------
    models: the models, in order (a preprocessing-only model before the matrix models it feeds).
    names: one name per model (default: the file names without extension).
    ensemble: combines the models' answers (``"mean"``, ``"weighted"``, ``"vote"`` or an
        :class:`~onegraph.export.Ensemble`); the models must be classifiers of the same classes or regressors.
    post: post-processing of the answer (one model's or the ensemble's).
    sample: rows to check the merged model on, against the same models run as separate sessions chained
        in Python (labels identical, numbers within ``atol + rtol * |expected|``); None skips the check.
    path: where to write the result (atomically).

    Returns
    -------
    onnx.ModelProto
        One input per column the models take; outputs as the module docstring says.

    Raises
    ------
    ExportError
        for inputs of one name but different types, a matrix model without a preprocessing that fits it
        (naming both models), or models an ensemble cannot combine.
    ParityError
        when the merged model's outputs differ from the chained sessions' on ``sample``.
    """
    if path is not None:  # before the merge's work; none of the models' files is replaced
        from onegraph.export.sources import model_files
        from onegraph.io import check_output_path

        check_output_path(path, model=True, inputs=model_files(models))
    from onegraph.export.adapters.onnx_graph import splice

    if not models:
        raise ExportError("no model to compose", hint="give at least one .onnx file")
    parts = plan(models, names)
    if isinstance(ensemble, str):
        ensemble = Ensemble(ensemble)
    g = GraphBuilder(name)
    specs: dict[str, ColumnSpec] = {}
    for p in parts:
        for s in p.specs:
            specs.setdefault(s.name, s)
    values = {c.name: c.value for c in assemble.graph_inputs(g, list(specs.values()))}
    raw: dict[str, dict[str, ir.Value]] = {}
    for p in parts:
        if p.matrix is not None:
            features = [o for o in parts_by_name(parts)[p.feeds_from].outputs if o.get("role") == "feature"]
            cols = [Col(o["column"], o.get("kind", "float"), raw[p.feeds_from][o["name"]],
                        raw[p.feeds_from][o["name"]].dtype or DOUBLE) for o in features]
            x = g.matrix(cols, DOUBLE)
            if p.matrix[1] == "float":
                x = g.op("Cast", x, to=FLOAT, dtype=FLOAT)
            feeds = {p.matrix[0]: x}
        else:
            feeds = {s.name: values[s.name] for s in p.specs}
        with g.scope(p.name):
            raw[p.name] = splice(g, p.proto, feeds, prefix=f"{p.name}/", what=f"model {p.name!r}")
        for entry in check_entries(p.outputs, list(raw[p.name])):  # internal parts' checks refuse rows too
            g.reflag(raw[p.name][entry["name"]], entry)
    exposed = [p for p in parts if not p.internal]
    outs = {p.name: _model_outputs(g, p, raw[p.name]) for p in exposed}
    if ensemble is not None:
        named_models({p.name: p for p in exposed}, ensemble)  # checks the count
    answer, classes, _ = combined_answer(g, outs, {p.name: p for p in exposed}, ensemble)
    answer, classes = post_processed(g, answer, classes, post)
    entries = declare_answers(g, outs, answer, set(specs))
    for entry in entries:
        part = next((p for p in exposed if p.name == entry.get("model")), None)
        # the part's output entry: by role for the roles of an answer, else by the output's own name
        key = entry["column"].removeprefix(f"{part.name}.") if part else None
        original = next((o for o in part.outputs if (o["role"] == entry["role"] and o["role"] in _ROLE_BY_NAME)
                         or o["name"] == key), None) if part else None
        if original and "kind" in original:
            entry["kind"] = original["kind"]
    fields = {"models": [{"name": p.name, "source": p.proto.producer_name or "onnx"} for p in parts]}
    if ensemble is not None:
        fields["ensemble"] = ensemble.to_dict()

    def verify(proto: onnx.ModelProto) -> Any:
        return merged_parity(proto, parts, sample, ensemble, post, rtol, atol)

    return assemble.finish(g, list(specs.values()), entries, {}, given=fields, merge_common=True,
                           verify=verify if sample is not None else None,
                           what="the merged graph diverges from the chained models", path=path)


def parts_by_name(parts: list[Part]) -> dict[str, Part]:
    return {p.name: p for p in parts}


def _model_outputs(g: GraphBuilder, part: Part, raw: dict[str, ir.Value]) -> ModelOutputs:
    """A part's outputs by role (roles it does not name are kept under their own output name)."""
    values, roles = {}, {}
    checks = {e["name"] for e in check_entries(part.outputs, list(raw))}
    for o in part.outputs:
        if o["name"] in checks:  # declared as checks of the result when spliced
            continue
        role = o["role"] if o.get("role") in _ROLE_BY_NAME else o["name"]
        if role != o.get("role"):
            roles[role] = o.get("role") or "output"
        v = raw[o["name"]]
        if role in ("probabilities", "prediction") and v.dtype != DOUBLE:
            shape = v.shape
            v = g.op("Cast", v, to=DOUBLE, dtype=DOUBLE)
            v.shape = shape
        values[role] = v
    return ModelOutputs(values, part.classes, roles)


def run_chained(parts: list[Part], data: Any) -> dict[str, dict[str, np.ndarray]]:
    """Every part run as its own onnxruntime session, in order, the preprocessing's columns passed to the
    matrix models in Python: outputs by part name, then by role (or output name)."""
    from onegraph.runtime.session import Session

    results: dict[str, dict[str, np.ndarray]] = {}
    by_name = parts_by_name(parts)
    for p in parts:
        sess = Session(p.proto)
        if p.matrix is not None:
            producer = by_name[p.feeds_from]
            cols = [results[p.feeds_from][o["name"]] for o in producer.outputs if o.get("role") == "feature"]
            x = np.column_stack([np.asarray(c, np.float64) for c in cols])
            x = x.astype(np.float32 if p.matrix[1] == "float" else np.float64)
            names = [o.name for o in sess._session.get_outputs()]
            got = dict(zip(names, sess.run_feeds({p.matrix[0]: x}, names)))  # onnxruntime's errors as onegraph's
        else:
            got = sess.run(data)
        results[p.name] = {o["role"] if o.get("role") in _ROLE_BY_NAME else o["name"]: got[o["name"]]
                           for o in p.outputs}
    return results


def merged_parity(proto: onnx.ModelProto, parts: list[Part], data: Any, ensemble: Ensemble | None,
                  post: Sequence[PostStep], rtol: float, atol: float):
    """:class:`~onegraph.verify.parity.ParityReport` of the merged model against :func:`run_chained`."""
    chained = run_chained(parts, data)
    exposed = [p for p in parts if not p.internal]
    expected: dict[str, np.ndarray] = {}
    answer, classes = None, None
    if len(exposed) == 1 and ensemble is None:
        answer, classes = dict(chained[exposed[0].name]), exposed[0].classes
    else:
        for p in exposed:
            expected.update({f"{p.name}.{role}": v for role, v in chained[p.name].items()})
        if ensemble is not None:
            task, classes = ensemble.resolve({p.name: p for p in exposed})
            answer = ensemble.apply({p.name: chained[p.name] for p in exposed}, task, classes)
    if answer is not None:
        for step in post:
            answer, classes = step.apply(answer, classes)
        expected.update(answer)
    return outputs_parity(proto, data, expected, rtol=rtol, atol=atol)
