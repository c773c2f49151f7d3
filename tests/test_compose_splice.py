"""Splicing graphs built elsewhere: opsets and IR versions aligned, local functions kept once or renamed."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
from compose_helpers import penguins
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.export import OnnxModel
from onegraph.frame import SimpleImputer, StandardScaler

COLUMNS = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm"]


def _model(scale: float, op: str, *, opset: int = 13, ir_version: int = 7) -> onnx.ModelProto:
    """``y = Affine(x)`` with ``Affine`` a model-local function (domain ``custom``): ``x * scale (op) 1``."""
    body = [
        oh.make_node("Constant", [], ["s"], value=oh.make_tensor("s", onnx.TensorProto.FLOAT, [], [scale])),
        oh.make_node("Constant", [], ["one"], value=oh.make_tensor("one", onnx.TensorProto.FLOAT, [], [1.0])),
        oh.make_node("Mul", ["x", "s"], ["t"]),
        oh.make_node(op, ["t", "one"], ["u"]),
        oh.make_node("Identity", ["u"], ["y"]),
    ]
    function = oh.make_function("custom", "Affine", ["x"], ["y"], body, [oh.make_opsetid("", opset)])
    graph = oh.make_graph([oh.make_node("Affine", ["X"], ["y3"], domain="custom"),
                           oh.make_node("ReduceSum", ["y3", "axes"], ["y"], keepdims=1)], "g",
                          [oh.make_tensor_value_info("X", onnx.TensorProto.FLOAT, ["N", 3])],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 1])],
                          initializer=[oh.make_tensor("axes", onnx.TensorProto.INT64, [1], [1])])
    model = oh.make_model(graph, functions=[function],
                          opset_imports=[oh.make_opsetid("", opset), oh.make_opsetid("custom", 1)])
    model.ir_version = ir_version
    onnx.checker.check_model(model)
    return model


def test_functions_kept_once_or_renamed_and_versions_aligned():
    frame, *_ = penguins()
    pre = ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()), COLUMNS)]).fit(frame)
    x = np.asarray(pre.transform(frame), np.float32)
    same_a, same_b, other = (_model(2.0, "Add", opset=21), _model(2.0, "Add", opset=21),
                             _model(2.0, "Sub", opset=21))
    old = _model(3.0, "Add", opset=13)  # needs converting: its function is inlined first
    before = old.SerializeToString()
    models = {name: OnnxModel(m, outputs={"prediction": "y"}) for name, m in
              (("a", same_a), ("b", same_b), ("c", other), ("old", old))}
    proto = onegraph.compose(pre, models, frame)  # checked against each model run alone in onnxruntime
    assert proto.ir_version == 10
    assert {o.domain: o.version for o in proto.opset_import}[""] == 21
    overloads = sorted(f.overload for f in proto.functions)
    assert len(proto.functions) == 2 and overloads[0] == ""  # a and b share one, c's body got its own
    scores = onegraph.score(proto, frame)
    np.testing.assert_allclose(scores["a.prediction"], (x * 2 + 1).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(scores["b.prediction"], (x * 2 + 1).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(scores["c.prediction"], (x * 2 - 1).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(scores["old.prediction"], (x * 3 + 1).sum(axis=1), rtol=1e-6)
    assert old.SerializeToString() == before  # the input model is not modified
