"""PyTorch modules -> graph, through ``torch.onnx.export`` (the optional extra ``torch``, torch 2.13.0).

torch is imported only when a :class:`TorchModule` is exported, so onegraph works without it. The module is
exported once (the ``dynamo`` exporter of torch 2.13 by default, opset :data:`onegraph.emit.OPSET`, the batch
dimension dynamic) and spliced in; it computes in float32, so the double features are cast first and its
outputs are checked against the module itself within 1e-5.

What the output means is declared, not guessed: ``classes`` given -> the module returns one logit per class
(``output="logits"``; a single column is the positive class's logit of a binary problem) or probabilities
(``output="probabilities"``); no ``classes`` -> a prediction ``[N]`` (or ``[N, k]``).
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.emit import DOUBLE, FLOAT, OPSET, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export.adapters.contract import Adapter, Consumes, qualified_name
from onegraph.export.adapters.models import ModelOutputs, label_from_index
from onegraph.export.adapters.ops import expit

__all__ = ["TorchModule"]


def _infer_width(module: Any) -> int | None:
    """``in_features`` / ``input_size`` of the first layer that says."""
    for layer in module.modules():
        for attr in ("in_features", "input_size"):
            if isinstance(getattr(layer, attr, None), int):
                return int(getattr(layer, attr))
    return None


class TorchModule(Adapter):
    """A PyTorch ``nn.Module`` taking ``[N, width]`` (or ``[N, steps, width]`` windows) float32.

    Parameters
    ----------
    module: the trained module (put in eval mode for export and reference).
    classes: class labels, one per output column (``output="logits"``: softmax, or sigmoid of a single
        column, gives the probabilities; the label is the class of the largest probability).
    output: ``"logits"``, ``"probabilities"`` or ``"prediction"`` (the default without ``classes``).
    width: number of input features (default: the first layer's ``in_features`` / ``input_size``).
    steps: window length of a sequence model (its input is then ``[N, steps, width]``).
    input_shape: the shape of one input without the batch dimension, for modules that take images or
        spectrograms (``(1, 16, 16)`` for ``[N, 1, 16, 16]``); replaces ``width`` / ``steps``.
    dynamo: use torch's ``dynamo`` exporter (torch's default); False uses the TorchScript exporter.

    Raises
    ------
    ExportError
        when the width cannot be inferred, ``output`` is unknown, or torch cannot export the module.
    """

    tolerance = (1e-5, 1e-5)

    def __init__(self, module: Any, *, classes: Any = None, output: str | None = None, width: int | None = None,
                 steps: int | None = None, dynamo: bool = True, input_shape: tuple[int, ...] | None = None) -> None:
        self.model = module
        self.source = qualified_name(module)
        self.classes = None if classes is None else [c.item() if isinstance(c, np.generic) else c for c in classes]
        self.task = "classifier" if classes is not None else "regressor"
        self.output = output or ("logits" if classes is not None else "prediction")
        if self.output not in ("logits", "probabilities", "prediction") or \
                (self.output == "prediction") != (classes is None):
            raise ExportError(f"TorchModule({type(module).__name__}): output={self.output!r} does not fit "
                              f"{'classes' if classes is not None else 'a model without classes'}",
                              hint="use output='logits' or 'probabilities' with classes, 'prediction' without")
        self.input_shape = None if input_shape is None else tuple(int(d) for d in input_shape)
        if self.input_shape is not None:
            width = int(np.prod(self.input_shape))
        width = width if width is not None else _infer_width(module)
        if width is None:
            raise ExportError(f"cannot tell how many features {type(module).__name__} takes",
                              hint="pass width= to TorchModule")
        self.consumes = Consumes("float", int(width), steps)
        self.dynamo = dynamo
        self._proto: onnx.ModelProto | None = None

    def to_onnx(self) -> onnx.ModelProto:
        """The exported module (input ``x``, output ``y``), exported once."""
        if self._proto is not None:
            return self._proto
        import torch

        module = self.model.eval()
        shape = (2,) + (self.input_shape or ((self.consumes.steps,) if self.consumes.steps else ()) + (self.consumes.width,))
        example = (torch.zeros(shape, dtype=torch.float32),)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.dynamo:
                    program = torch.onnx.export(module, example, dynamo=True, input_names=["x"], output_names=["y"],
                                                dynamic_shapes=({0: torch.export.Dim("batch")},),
                                                opset_version=OPSET, verbose=False)
                    self._proto = program.model_proto
                else:
                    buffer = io.BytesIO()
                    torch.onnx.export(module, example, buffer, dynamo=False, input_names=["x"], output_names=["y"],
                                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=17)
                    self._proto = onnx.load_from_string(buffer.getvalue())
        except Exception as exc:  # torch.onnx raises many types (export, dispatch, onnxscript errors)
            raise ExportError(f"torch.onnx.export cannot export {type(module).__name__}: "
                              f"{str(exc).strip().splitlines()[0][:300]}",
                              hint="check that the module runs on a float32 tensor of the declared shape") from None
        return self._proto

    def emit(self, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
        from onegraph.export.adapters.onnx_graph import splice

        xf = g.derived(("float", id(x)), lambda: g.op("Cast", x, to=FLOAT, dtype=FLOAT))
        name = type(self.model).__name__
        (y,) = splice(g, self.to_onnx(), {"x": xf}, prefix=g.unique(name) + "/", what=name).values()
        y = g.op("Cast", y, to=DOUBLE, dtype=DOUBLE)
        if self.task == "regressor":
            if self.n_outputs == 1:
                return ModelOutputs.regressor(g.op("Reshape", y, g.const(np.array([-1], np.int64), "flat"),
                                                   dtype=DOUBLE))
            y.shape = ir.Shape(["N", self.n_outputs])
            return ModelOutputs.regressor(y)
        binary = self.output == "logits" and len(self.classes) == 2 and self.n_outputs == 1
        if not binary and self.n_outputs != len(self.classes):
            raise ExportError(f"{name} gives {self.n_outputs} {self.output} per row but {len(self.classes)} classes "
                              f"were given ({', '.join(map(str, self.classes[:5]))}{', ...' if len(self.classes) > 5 else ''})",
                              hint="give one class per output column, in the module's order")
        if binary:
            p = expit(g, y)
            proba = g.op("Concat", g.op("Sub", g.const(np.float64(1.0), "one"), p, dtype=DOUBLE), p, axis=1,
                         dtype=DOUBLE)
        elif self.output == "logits":
            proba = g.op("Softmax", y, axis=1, dtype=DOUBLE)
        else:
            proba = y
        proba.shape = ir.Shape(["N", len(self.classes)])
        index = g.op("ArgMax", proba, axis=1, keepdims=0, dtype=ir.DataType.INT64)
        return ModelOutputs.classifier(label_from_index(g, self.classes, index), proba, self.classes)

    @property
    def n_outputs(self) -> int:
        out = self.to_onnx().graph.output[0].type.tensor_type.shape.dim
        return int(out[-1].dim_value) if len(out) == 2 and out[-1].dim_value else 1

    def expected(self, x: Any) -> dict[str, np.ndarray]:
        import torch

        arr = np.asarray(x, dtype=np.float32)
        with torch.no_grad():
            y = self.model.eval()(torch.from_numpy(arr)).double()
        if self.task == "regressor":
            out = y.numpy()
            return {"prediction": out.reshape(-1) if out.ndim == 2 and out.shape[1] == 1 else out}
        if self.output == "logits" and y.shape[1] == 1:
            p = torch.sigmoid(y)
            proba = torch.cat([1 - p, p], dim=1)
        elif self.output == "logits":
            proba = torch.softmax(y, dim=1)
        else:
            proba = y
        proba = proba.numpy()
        return {"label": np.asarray(self.classes, dtype=object if isinstance(self.classes[0], str) else None)[
            proba.argmax(axis=1)], "probabilities": proba}
