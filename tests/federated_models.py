"""A small model with every kind of parameter the federated exchange treats differently, and its numpy
forward pass (to check merged models run in onnxruntime against values computed independently).

``y = reshape(cast_float(cast_float16(x @ dequantize(w_q, w_scale, w_zp) + bias) * gamma), shape)``:
``w_q`` int8, ``w_scale`` float and ``w_zp`` int8 are quantized (read by DequantizeLinear), ``bias`` float and
``gamma`` float16 are floating-point, ``shape`` int64 is an integer.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FEATURES, UNITS = 4, 3


def parameters(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w_q": rng.integers(-100, 100, (FEATURES, UNITS)).astype(np.int8), "w_scale": np.array(0.05, np.float32),
            "w_zp": np.array(3, np.int8), "bias": rng.normal(size=UNITS).astype(np.float32),
            "gamma": rng.normal(1.0, 0.1, size=UNITS).astype(np.float16), "shape": np.array([-1, UNITS], np.int64)}


def model(values: dict[str, np.ndarray] | None = None, *, units: int = UNITS, extra_node: bool = False
          ) -> onnx.ModelProto:
    """The model with ``values`` (default :func:`parameters`); ``units`` / ``extra_node`` change the
    architecture."""
    values = dict(values or parameters())
    if units != UNITS:
        values.update(w_q=np.zeros((FEATURES, units), np.int8), bias=np.zeros(units, np.float32),
                      gamma=np.ones(units, np.float16), shape=np.array([-1, units], np.int64))
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w"]),
             helper.make_node("MatMul", ["x", "w"], ["xw"]),
             helper.make_node("Add", ["xw", "bias"], ["h"]),
             helper.make_node("Cast", ["h"], ["h16"], to=TensorProto.FLOAT16),
             helper.make_node("Mul", ["h16", "gamma"], ["y16"]),
             helper.make_node("Cast", ["y16"], ["y32"], to=TensorProto.FLOAT),
             helper.make_node("Reshape", ["y32", "shape"], ["y" if not extra_node else "r"])]
    if extra_node:
        nodes.append(helper.make_node("Relu", ["r"], ["y"]))
    graph = helper.make_graph(nodes, "quantized", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEATURES])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", units])],
                              [numpy_helper.from_array(v, k) for k, v in values.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def forward(values: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The model's computation in numpy, following the ONNX operator specs."""
    w = (values["w_q"].astype(np.float32) - np.float32(values["w_zp"])) * values["w_scale"]
    h = (x @ w + values["bias"]).astype(np.float16)
    return (h * values["gamma"]).astype(np.float32).reshape(values["shape"])
