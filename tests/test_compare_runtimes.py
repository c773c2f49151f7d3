"""onegraph compare: intermediate tensors of two runs compared, first diverging node named."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnxconverter_common import float16
from typer.testing import CliRunner

from convert_models import torch_model
from onegraph.cli import app
from onegraph.verify import compare_runtimes


def test_planted_divergence_is_named(tmp_path):
    model, feeds, _ = torch_model("mlp")
    proto = onnx.load_from_string(model)
    altered = onnx.load_from_string(model)
    relu = next(n for n in altered.graph.node if n.op_type == "Relu")
    relu.op_type = "LeakyRelu"  # the planted change: negative values now leak through
    relu.attribute.append(onnx.helper.make_attribute("alpha", 0.3))
    path = tmp_path / "altered.onnx"
    onnx.save(altered, path)
    report = compare_runtimes(proto, feeds, against=str(path))
    assert not report.ok
    first = report.first
    assert first.node == relu.name and first.op_type == "Relu"
    # the difference is the leaked negative part of the Relu's input, computed independently
    (x_in,) = [s for s in first.inputs]
    assert x_in.min < 0 and first.max_abs == pytest.approx(0.3 * -x_in.min, rel=1e-5)
    runner = CliRunner()
    mlp = tmp_path / "mlp.onnx"
    mlp.write_bytes(model)
    npz = tmp_path / "x.npz"
    np.savez(npz, **feeds)
    result = runner.invoke(app, ["compare", str(mlp), "--data", str(npz), "--against", str(path)])
    assert result.exit_code == 1 and f"first divergence: node '{relu.name}' (Relu)" in result.output


@pytest.mark.parametrize("against", ["reference", "ort-basic", "ort-all"])
def test_transformer_with_local_functions_agrees(against):
    model, feeds, _ = torch_model("transformer")
    assert onnx.load_from_string(model).functions  # model-local functions: inlined for the comparison
    report = compare_runtimes(model, feeds, against=against)
    assert report.ok and report.compared > 10


def test_onnxruntime_cpu_hides_float16_overflow_found_by_reference():
    rng = np.random.default_rng(0)
    n = onnx.helper.make_node
    nodes = [n("ReduceMean", ["x"], ["mu"], axes=[-1], name="mean"), n("Sub", ["x", "mu"], ["d"], name="center"),
             n("Mul", ["d", "d"], ["sq"], name="square"), n("ReduceMean", ["sq"], ["var"], axes=[-1], name="variance"),
             n("Sqrt", ["var"], ["sd"], name="std"), n("Div", ["d", "sd"], ["y"], name="normalize")]
    graph = onnx.helper.make_graph(nodes, "ln", [onnx.helper.make_tensor_value_info("x", 1, ["N", 16])],
                                   [onnx.helper.make_tensor_value_info("y", 1, ["N", 16])])
    model = float16.convert_float_to_float16(onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", 17)]))
    x = (rng.standard_normal((8, 16)) * 400).astype(np.float16)
    report = compare_runtimes(model, {"x": x})
    assert not report.ok
    # the spec's float16 result is inf from the squares on; onnxruntime's CPU float32 fallback is finite
    assert report.first.op_type in ("ReduceMean", "Sqrt", "Div")
    assert report.first.second_side.inf > 0 or report.first.first_side.inf > 0


def test_cnn_with_resize_against_reference():
    model, feeds, _ = torch_model("cnn")
    assert compare_runtimes(model, feeds).ok
