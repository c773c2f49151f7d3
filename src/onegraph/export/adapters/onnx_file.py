"""An existing ONNX model that takes a feature matrix, as a composable adapter.

The model must have one input: a float32 or float64 matrix ``[N, width]`` (or windows ``[N, steps,
width]``). What its outputs mean comes from onegraph's metadata when it has it, else from ``outputs``
(role -> output name) or, failing that, from the outputs' types: a 1-D string / int64 output is the
``label``, a 2-D float output the ``probabilities`` when ``classes`` are given, else the ``prediction``.
Its reference outputs for the parity check are the file run on its own in onnxruntime.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.check.loader import load_model
from onegraph.contract import metadata as meta
from onegraph.contract.outputs import check_entries
from onegraph.emit import DOUBLE, FLOAT, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.contract import Adapter, Consumes
from onegraph.export.adapters.models import ModelOutputs
from onegraph.export.adapters.onnx_graph import classifier_labels

__all__ = ["OnnxModel"]

_FLOATS = {onnx.TensorProto.FLOAT: "float", onnx.TensorProto.DOUBLE: "double"}


class OnnxModel(Adapter):
    """An ONNX model (path, bytes or ``ModelProto``) taking one feature matrix.

    Parameters
    ----------
    model: the model; never modified.
    classes: class labels, one per probability column (read from onegraph's metadata when present).
    outputs: role (``label``, ``probabilities``, ``prediction``) -> output name, when the names say nothing.

    Raises
    ------
    ModelFileError
        for an unreadable file.
    ExportError
        when the model has several inputs, a non-float input, or outputs whose role cannot be told.
    """

    def __init__(self, model: Any, *, classes: Any = None, outputs: dict[str, str] | None = None) -> None:
        self.proto = load_model(model)
        self.model = model
        self.source = f"onnx:{model}" if isinstance(model, str) or hasattr(model, "__fspath__") else "onnx"
        inits = {i.name for i in self.proto.graph.initializer}
        inputs = [i for i in self.proto.graph.input if i.name not in inits]
        if len(inputs) != 1 or inputs[0].type.tensor_type.elem_type not in _FLOATS:
            listed = ", ".join(f"{i.name} ({onnx.helper.tensor_dtype_to_string(i.type.tensor_type.elem_type)})"
                               for i in inputs)
            raise ExportError(f"ONNX model {self.source} takes {listed or 'no input'}; a composable model takes "
                              "one float feature matrix",
                              hint="to merge whole pipelines that take DataFrame columns, use compose_models")
        self.input_name = inputs[0].name
        dims = [d.dim_value if d.HasField("dim_value") else None for d in inputs[0].type.tensor_type.shape.dim]
        if len(dims) not in (2, 3):
            raise ExportError(f"ONNX model {self.source}: input {self.input_name!r} has rank {len(dims)}",
                              hint="a model input is [N, width] or [N, steps, width]")
        if dims[0] is not None:  # onnxruntime refuses any other number of rows, sample and scoring alike
            raise ExportError(f"ONNX model {self.source}: input {self.input_name!r} takes a fixed batch of "
                              f"{dims[0]} row(s) ({dims}); a composed model scores any number of rows",
                              hint="export it with a dynamic batch axis (torch.onnx.export(..., dynamic_axes="
                                   f"{{{self.input_name!r}: {{0: 'batch'}}}}), or dynamic_shapes with dynamo)")
        self.consumes = Consumes(_FLOATS[inputs[0].type.tensor_type.elem_type], dims[-1],
                                 dims[1] if len(dims) == 3 else None)
        self.roles = self._roles(classes, outputs)
        self.task = "classifier" if ("label" in self.roles or "probabilities" in self.roles) else "regressor"
        self.tolerance = (1e-5, 1e-5) if self.consumes.dtype == "float" else (1e-6, 1e-12)

    def _roles(self, classes: Any, outputs: dict[str, str] | None) -> dict[str, str]:
        fields, _ = meta.decode({p.key: p.value for p in self.proto.metadata_props})
        names = [o.name for o in self.proto.graph.output]
        if outputs:
            missing = [v for v in outputs.values() if v not in names]
            if missing:
                raise ExportError(f"ONNX model {self.source} has no output {missing[0]!r}",
                                  hint=f"outputs: {', '.join(names)}")
            roles = dict(outputs)
        elif fields.get("outputs"):
            roles = {o["role"]: o["name"] for o in fields["outputs"] if o.get("role") in
                     ("label", "probabilities", "prediction")}
            classes = classes if classes is not None else next(
                (o.get("classes") for o in fields["outputs"] if o.get("role") == "probabilities"), None)
        else:
            roles = {}
            for o in self.proto.graph.output:
                t = o.type.tensor_type
                rank = len(t.shape.dim)
                if t.elem_type in (onnx.TensorProto.STRING, onnx.TensorProto.INT64) and rank <= 1:
                    roles.setdefault("label", o.name)
                    continue
                if t.elem_type in _FLOATS and classes is None and "probabilities" not in roles:
                    classes = classifier_labels(self.proto, o)  # skl2onnx's classifiers list them
                if t.elem_type in _FLOATS and classes is not None:
                    roles.setdefault("probabilities", o.name)
                elif t.elem_type in _FLOATS:
                    roles.setdefault("prediction", o.name)
            scores = next((o for o in self.proto.graph.output if o.name == roles.get("prediction")), None)
            dims = [d.dim_value for d in scores.type.tensor_type.shape.dim] if scores is not None else []
            if "label" in roles and len(dims) == 2 and dims[1] != 1:  # one score per class, beside a label
                raise ExportError(f"ONNX model {self.source}: its outputs look like a classifier's (label "
                                  f"{roles['label']!r}, scores {scores.name!r} of "
                                  f"{dims[1] or 'several'} columns) but it names no classes",
                                  hint="pass classes=[...] in the scores' column order (command line: --classes "
                                       "A,B,C)")
        if not roles:
            raise ExportError(f"cannot tell what the outputs of ONNX model {self.source} mean",
                              hint="pass outputs={'probabilities': NAME, 'label': NAME} or {'prediction': NAME}")
        if "probabilities" in roles and classes is None:
            raise ExportError(f"ONNX model {self.source}: output {roles['probabilities']!r} holds probabilities "
                              "of unknown classes", hint="pass classes=[...]")
        self.classes = None if classes is None else [c.item() if isinstance(c, np.generic) else c for c in classes]
        return roles

    def emit(self, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
        from onegraph.export.adapters.onnx_graph import splice

        if self.consumes.dtype == "float":
            x = g.derived(("float", id(x)), lambda: g.op("Cast", x, to=FLOAT, dtype=FLOAT))
        outs = splice(g, self.proto, {self.input_name: x}, prefix=g.unique("onnx") + "/", what=self.source)
        fields, _ = meta.decode({p.key: p.value for p in self.proto.metadata_props})
        for entry in check_entries(fields.get("outputs") or [], list(outs)):  # rows it refuses stay refused
            g.reflag(outs[entry["name"]], entry)
        values = {}
        for role, name in self.roles.items():
            v = outs[name]
            if role != "label" and v.dtype != DOUBLE:
                v = g.op("Cast", v, to=DOUBLE, dtype=DOUBLE)
            if role == "prediction" or role == "label":
                v = g.op("Reshape", v, g.const(np.array([-1], np.int64), "flat"), dtype=v.dtype)
            values[role] = v
        return ModelOutputs(values, self.classes)

    def expected(self, x: Any) -> dict[str, np.ndarray]:
        from onegraph.runtime.session import Session

        arr = np.asarray(x, dtype=np.float32 if self.consumes.dtype == "float" else np.float64)
        sess = Session(self.proto)._session
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {self.input_name: arr})))
        out = {}
        for role, name in self.roles.items():
            v = np.asarray(got[name])
            out[role] = v.reshape(-1) if role in ("label", "prediction") else v.astype(np.float64)
        return out
