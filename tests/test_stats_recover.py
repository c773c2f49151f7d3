"""Ranges read back from models quantized by onnxruntime match the ranges they were quantized with."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_static,
)
from onnxruntime.quantization.calibrate import CalibrationMethod, create_calibrator
from stats_models import cnn, mlp

from onegraph.stats import read_qparams, read_stats, recover, recover_ranges
from onegraph.stats.recover import representable_range


class Reader(CalibrationDataReader):
    def __init__(self, x: np.ndarray, batch: int = 64) -> None:
        self.batches = iter([{"x": x[i:i + batch]} for i in range(0, len(x), batch)])

    def get_next(self):
        return next(self.batches, None)


def calibrated_ranges(path, x) -> dict[str, tuple[float, float]]:
    """The ranges onnxruntime's own MinMax calibration gives (what quantize_static quantizes with)."""
    calibrator = create_calibrator(str(path), calibrate_method=CalibrationMethod.MinMax,
                                   augmented_model_path=str(path.with_suffix(".aug.onnx")))
    calibrator.collect_data(Reader(x))
    data = calibrator.compute_data()
    return {name: tuple(float(np.asarray(v).reshape(-1)[0]) for v in data[name].range_value) for name in data.keys()}


def quantized(tmp_path, model: bytes, x: np.ndarray, fmt, per_channel: bool = False):
    source = tmp_path / "float.onnx"
    source.write_bytes(model)
    target = tmp_path / "quant.onnx"
    quantize_static(str(source), str(target), Reader(x), quant_format=fmt, per_channel=per_channel,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)
    return source, target


@pytest.mark.parametrize("build", [mlp, cnn], ids=["mlp", "cnn"])
def test_qdq_ranges_match_the_calibrated_ranges(tmp_path, build):
    model, x = build()
    x = x[:400]
    source, target = quantized(tmp_path, model, x, QuantFormat.QDQ)
    expected = calibrated_ranges(source, x)
    ranges = recover_ranges(target)
    checked = 0
    for name, (lo, hi) in expected.items():
        if name not in ranges:
            continue  # tensors quantize_static left in float
        r = ranges[name]
        assert r.quant_type == "uint8" and r.axis is None
        scale = (max(hi, 0.0) - min(lo, 0.0)) / 255
        # the zero point is rounded to an integer: the range moves by at most half a step, its width is kept
        assert abs(float(r.rmin) - min(lo, 0.0)) <= scale / 2 + 1e-6 * abs(lo), name
        assert abs(float(r.rmax) - max(hi, 0.0)) <= scale / 2 + 1e-6 * abs(hi), name
        np.testing.assert_allclose(float(r.rmax - r.rmin), max(hi, 0.0) - min(lo, 0.0), rtol=1e-6)
        checked += 1
    assert checked >= 3


def test_recovered_annotations_reference_the_models_own_parameters(tmp_path):
    model, x = cnn()
    _, target = quantized(tmp_path, model, x[:300], QuantFormat.QDQ, per_channel=True)
    annotated = recover(target)
    stats = read_stats(annotated)
    qparams = read_qparams(annotated)
    assert stats and all(s.source == "recovered" for s in stats.values())
    proto = onnx.load(target)
    initializers = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    per_axis = 0
    for node in proto.graph.node:
        if node.op_type != "DequantizeLinear":
            continue
        name = node.output[0]
        scale, zero = initializers[node.input[1]], initializers[node.input[2]]
        np.testing.assert_array_equal(qparams[name].scale, scale)
        lo, hi = representable_range(scale, zero, zero.dtype.name)  # int8 weights, uint8 activations, int32 biases
        assert stats[name].min == lo.min() and stats[name].max == hi.max()
        if scale.ndim == 1 and scale.size > 1 and zero.dtype == np.int8:  # per-channel weights, along the DQ axis
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            assert stats[name].channels.axis == axis
            assert list(stats[name].channels.max) == (scale.astype(np.float64) * (127 - zero)).tolist()
            weight = initializers.get(node.input[0])
            per_axis += 1
            assert weight is not None
    assert per_axis >= 2


def test_qlinear_operators(tmp_path):
    model, x = cnn()
    x = x[:300]
    source, target = quantized(tmp_path, model, x, QuantFormat.QOperator)
    ops = {n.op_type for n in onnx.load(target).graph.node}
    assert "QLinearConv" in ops
    expected = calibrated_ranges(source, x)
    ranges = recover_ranges(target)
    graph = onnx.load(target).graph
    quantized_tensors = [t for n in graph.node if n.op_type == "QLinearConv" for t in (n.input[0], n.output[0])]
    assert quantized_tensors and all(t in ranges for t in quantized_tensors)

    def matches(r, lo: float, hi: float) -> bool:
        scale = (max(hi, 0.0) - min(lo, 0.0)) / 255
        return abs(float(r.rmin) - min(lo, 0.0)) <= scale / 2 + 1e-6 and abs(float(r.rmax) - max(hi, 0.0)) <= (
            scale / 2 + 1e-6)

    # each QLinearConv input / output represents a range onnxruntime calibrated: its own tensor's, or, where
    # Conv and Relu were fused, the Relu output's
    for t in quantized_tensors:
        assert any(matches(ranges[t], lo, hi) for lo, hi in expected.values()), t
