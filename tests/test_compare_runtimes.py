"""onegraph compare: intermediate tensors of two runs compared, first diverging node named."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from convert_models import torch_model
from onnxconverter_common import float16
from typer.testing import CliRunner

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


def test_reference_failure_names_the_node_instead_of_a_traceback(tmp_path, cli):
    """A graph the reference evaluator cannot run (onnxruntime reads a leading number out of
    "1970-01-01"; the spec's Cast reads whole numbers) is reported by node, never as a traceback."""
    from onnx import TensorProto, helper

    from onegraph.errors import RuntimeFailure

    cast = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT64, name="read_year")
    graph = helper.make_graph([cast], "g", [helper.make_tensor_value_info("x", TensorProto.STRING, ["N"])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, ["N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    feeds = {"x": np.array(["1970-01-01", "1971-01-01"])}
    with pytest.raises(RuntimeFailure, match=r"node 'read_year' \(Cast\).*1970-01-01"):
        compare_runtimes(model, feeds)
    path, npz = tmp_path / "m.onnx", tmp_path / "x.npz"
    onnx.save(model, path)
    np.savez(npz, **feeds)
    result = cli("compare", str(path), "--data", str(npz))
    assert result.returncode == 1 and "node 'read_year' (Cast)" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_rows_limit_npz_data_and_nothing_compared_is_an_error(tmp_path, cli):
    """--rows takes the first rows of a .npz too; 0 or negative rows, and data without rows, are errors
    rather than a pass over nothing."""
    model, feeds, _ = torch_model("mlp")
    path, npz = tmp_path / "mlp.onnx", tmp_path / "x.npz"
    path.write_bytes(model)
    big = {k: np.concatenate([v] * 8) for k, v in feeds.items()}
    np.savez(npz, **big)
    report = compare_runtimes(model, str(npz), rows=4)
    assert report.inputs == "4 rows of data" and report.ok
    runner = CliRunner()
    result = runner.invoke(app, ["compare", str(path), "--data", str(npz), "--rows", "4"])
    assert result.exit_code == 0 and "on 4 rows of data" in result.output
    for bad in ("0", "-3"):
        result = runner.invoke(app, ["compare", str(path), "--data", str(npz), "--rows", bad])
        assert result.exit_code == 2 and "no divergence" not in result.output
    empty = tmp_path / "empty.npz"
    np.savez(empty, **{k: v[:0] for k, v in feeds.items()})
    result = cli("compare", str(path), "--data", str(empty))
    assert result.returncode == 1 and "no rows" in result.stderr


def test_a_matrix_model_given_a_table_with_more_numeric_columns_names_them(cli, tmp_path):
    """A skl2onnx model's ``X`` takes the table's numeric columns in order: a CSV that still holds the target
    stacked it as a fifth column and onnxruntime said "Got invalid dimensions for input: X". Now the width is
    compared first, naming the columns; the feature columns alone compare."""
    from convert_models import PENGUIN_NUMERIC, sklearn_model

    from onegraph.datasets import load_penguins

    model, _, _ = sklearn_model("forest")
    path = tmp_path / "forest.onnx"
    path.write_bytes(model)
    table = load_penguins().dropna(subset=PENGUIN_NUMERIC)[[*PENGUIN_NUMERIC, "year"]]
    table.to_csv(tmp_path / "with_year.csv", index=False)
    result = cli("compare", str(path), "--data", str(tmp_path / "with_year.csv"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "matrix input 'X' takes 4 columns; the table has 5 numeric columns" in result.stderr
    assert "year" in result.stderr and "drop the target" in result.stderr
    table[PENGUIN_NUMERIC].to_csv(tmp_path / "features.csv", index=False)
    assert cli("compare", str(path), "--data", str(tmp_path / "features.csv")).returncode == 0


def test_npz_arrays_of_another_shape_and_a_model_of_other_inputs_are_named(tmp_path, cli, penguins_onnx):
    """An .npz array of the wrong width ended in onnxruntime's message cut before the shapes ("Got invalid
    dimensions for input: x for the following indices (..."); --against a model of other inputs printed
    onnxruntime's "Required inputs ([...]) are missing from input feed ([])". Both now name the input."""
    model, feeds, _ = torch_model("mlp")
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model)
    (name, value), = feeds.items()
    np.savez(tmp_path / "wide.npz", **{name: np.zeros((3, value.shape[1] + 3), value.dtype)})
    result = cli("compare", str(path), "--data", str(tmp_path / "wide.npz"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert f"input {name!r}" in result.stderr and f"shape [3, {value.shape[1] + 3}]" in result.stderr
    result = cli("compare", str(penguins_onnx), "--against", str(path))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert f"takes input(s) [{name!r}] that the data does not give" in result.stderr


def test_a_bfloat16_intermediate_is_left_out_not_fatal(cli, tmp_path):
    """A new user's case: a valid model with a bfloat16 tensor inside (Cast to bfloat16 and back, which
    onnxruntime runs) failed `compare` and `convert --fp16` with "onnxruntime failed ... No corresponding Numpy
    type": every intermediate is exposed for the comparison, and onnxruntime's Python binding cannot return a
    bfloat16 one. Such tensors are not exposed; the outputs are compared and the model converts."""
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["c"], to=TensorProto.BFLOAT16),
                               helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)], "bf",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    path = tmp_path / "bf.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    report = compare_runtimes(path, against="reference")
    assert report.ok and report.outputs_agree is True and report.compared == 1  # y; c left out
    done = cli("convert", str(path), "--fp16", "-o", str(tmp_path / "half.onnx"), "--trusted")
    assert done.returncode == 0, done.stderr
