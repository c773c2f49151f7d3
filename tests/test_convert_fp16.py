"""onegraph convert --fp16 / --bf16: block list from measured values, verified in true low precision."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from convert_models import torch_model
from onnx import TensorProto as T
from onnx import helper, numpy_helper
from onnxconverter_common import float16

from onegraph.convert import convert_float16
from onegraph.errors import ConversionError
from onegraph.verify.lowprec import cast_feeds, reference_run

D = 32


@pytest.fixture(scope="module")
def layernorm_model():
    """A projection into values of a few hundred, a decomposed LayerNorm, a head: the squares overflow."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((D, D)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((D, 4)) * 0.3).astype(np.float32)
    consts = [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(np.full(D, 300, np.float32), "b1"),
              numpy_helper.from_array(w2, "W2"), numpy_helper.from_array(np.array(2, np.float32), "two"),
              numpy_helper.from_array(np.array(1e-5, np.float32), "eps")]
    n = helper.make_node
    nodes = [n("MatMul", ["x", "W1"], ["h0"], name="proj"), n("Add", ["h0", "b1"], ["h"], name="shift"),
             n("ReduceMean", ["h"], ["mu"], axes=[-1], name="mean"), n("Sub", ["h", "mu"], ["d"], name="center"),
             n("Pow", ["d", "two"], ["sq"], name="square"), n("ReduceMean", ["sq"], ["var"], axes=[-1], name="variance"),
             n("Add", ["var", "eps"], ["ve"], name="add_eps"), n("Sqrt", ["ve"], ["sd"], name="std"),
             n("Div", ["d", "sd"], ["z"], name="normalize"), n("MatMul", ["z", "W2"], ["y"], name="head")]
    graph = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info("x", T.FLOAT, ["N", D])],
                              [helper.make_tensor_value_info("y", T.FLOAT, ["N", 4])], initializer=consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = (rng.standard_normal((64, D)) * 400).astype(np.float32)
    # expected, computed independently in float64 numpy
    h = x.astype(np.float64) @ w1 + 300
    d = h - h.mean(-1, keepdims=True)
    y = d / np.sqrt((d ** 2).mean(-1, keepdims=True) + 1e-5) @ w2
    return model, x, y


def test_large_range_layernorm_stays_float32_and_within_error(layernorm_model):
    model, x, expected = layernorm_model
    # plain conversion: in true float16 the squares overflow, the variance is inf and the output collapses
    plain = float16.convert_float_to_float16(model)
    got = reference_run(plain, cast_feeds(plain, {"x": x}))["y"].astype(np.float64)
    assert np.abs(got - expected).max() > 1.0
    # ... while onnxruntime's CPU provider hides it (float32 fallback for float16 nodes)
    cpu = ort.InferenceSession(plain.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(cpu.run(None, {"x": x.astype(np.float16)})[0], expected, atol=0.05)
    converted, report = convert_float16(model, data={"x": x})
    kept = {k["node"] for k in report.extra["kept_float32"]}
    assert {"square", "variance"} <= kept and "proj" not in kept and "head" not in kept
    assert "beyond the float16 range" in str(report)
    got = reference_run(converted, cast_feeds(converted, {"x": x}))["y"].astype(np.float64)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, atol=1e-2, rtol=1e-2)  # the stated error
    assert report.ok
    types = {i.name: i.type.tensor_type.elem_type for i in converted.graph.input}
    assert types["x"] == T.FLOAT16


def test_fp16_torch_mlp_keep_io_types(tmp_path):
    model, feeds, expected = torch_model("mlp")
    out = tmp_path / "mlp16.onnx"
    converted, report = convert_float16(model, data=feeds, keep_io_types=True, output=out)
    assert report.ok and out.exists()
    assert converted.graph.input[0].type.tensor_type.elem_type == T.FLOAT
    assert any(t.data_type == T.FLOAT16 for t in converted.graph.initializer)
    sess = ort.InferenceSession(out.read_bytes(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, feeds)[0], expected, atol=2e-2, rtol=2e-2)


def test_bf16_layernorm(layernorm_model):
    model, x, expected = layernorm_model
    converted, report = convert_float16(model, data={"x": x}, fmt="bfloat16")
    assert any(t.data_type == T.BFLOAT16 for t in converted.graph.initializer)
    got = reference_run(converted, cast_feeds(converted, {"x": x}))["y"].astype(np.float64)
    np.testing.assert_allclose(got, expected, atol=5e-2, rtol=5e-2)
    assert report.ok


def test_fp16_refused_when_tolerance_cannot_be_met(layernorm_model, tmp_path):
    model, x, _ = layernorm_model
    out = tmp_path / "never.onnx"
    with pytest.raises(ConversionError, match="stray from float32"):
        convert_float16(model, data={"x": x}, rtol=1e-7, atol=1e-7, max_rounds=1, output=out)
    assert not out.exists()
    # a tolerance that is not one (was accepted: --max-error -1 ran the whole conversion)
    from onegraph.errors import OnegraphError

    for option in ({"max_error": -1.0}, {"rtol": float("nan")}, {"atol": -1e-3}):
        with pytest.raises(OnegraphError, match=f"{next(iter(option))} .* is not a tolerance"):
            convert_float16(model, data={"x": x}, output=out, **option)
    assert not out.exists()


def test_inf_in_the_data_does_not_keep_nodes_float32_and_is_warned_about():
    """The user's report: one inf in the calibration data kept every node float32 ("values reach inf") and
    the result said ok. inf stays inf in float16: the nodes convert, and the report warns about the data."""
    model, feeds, expected = torch_model("mlp")
    (name,) = feeds
    x = feeds[name].copy()
    x[0, 0] = np.inf
    converted, report = convert_float16(model, data={name: x})
    assert report.ok and any(n.how == "converted to float16" for n in report.nodes)
    (warning,) = report.warnings
    assert f"input {name!r} contains 1 inf value(s)" in warning and "warning: " in str(report)
    got = reference_run(converted, cast_feeds(converted, {name: x}))
    (y,) = got.values()
    np.testing.assert_allclose(y[1:].astype(np.float64), expected[1:], atol=2e-2, rtol=2e-2)  # torch, finite rows


def test_warned_when_nothing_is_converted():
    """Every float node beyond float16's range stays float32: the result is right but is no float16 model,
    and the report says so instead of a bare "ok"."""
    c = numpy_helper.from_array(np.full(3, 1e5, np.float32), "c")
    graph = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"], name="shift")], "g",
                              [helper.make_tensor_value_info("x", T.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", T.FLOAT, ["N", 3])], [c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    converted, report = convert_float16(model, data={"x": x}, keep_io_types=True)
    assert [n.how for n in report.nodes] == ["kept float32: values reach 1e+05, beyond the float16 range (6.55e+04)"]
    assert report.warnings == ["no node was converted to float16: all 1 node(s) with float tensors stay float32"]
    assert report.ok and "result: ok, with 1 warning(s)" in str(report)
    np.testing.assert_allclose(reference_run(converted, {"x": x})["y"], x + np.float32(1e5), rtol=1e-3)


def test_cli_fp16_without_data_warns_that_ranges_were_not_measured_on_real_rows(cli, penguins_onnx, penguins,
                                                                                tmp_path):
    """``convert --fp16`` without --data measured value ranges on generated inputs and printed a plain "ok"; a
    model fine there can overflow on real rows (a LayerNormalization's sums). It warns, and not with --data."""
    result = cli("convert", str(penguins_onnx), "--fp16", "-o", str(tmp_path / "a.onnx"))
    assert result.returncode == 0, result.stderr
    assert "warning: the float16 / bfloat16 ranges were measured on generated inputs" in result.stderr
    penguins.head(40).to_csv(tmp_path / "rows.csv", index=False)
    result = cli("convert", str(penguins_onnx), "--fp16", "--data", str(tmp_path / "rows.csv"), "-o",
                 str(tmp_path / "b.onnx"))
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_statistics_of_onegraph_stats_travel_through_the_conversion(fmt):
    """A model annotated by `onegraph stats` kept its statistics on 2 of 9 tensors once converted: the converter
    appended shape inference's value infos beside the annotated ones (two per tensor, readers taking the last),
    and rounded the float32 scales to float16 (0.06271786 -> 0.06274)."""
    from stats_models import cnn

    from onegraph.stats import annotate_model, read_qparams, read_stats

    model, x = cnn()
    annotated, _, _ = annotate_model(model, {"x": x[:256]})
    before_stats, before_q = read_stats(annotated), read_qparams(annotated)
    assert len(before_stats) == 9 and len(before_q) == 9
    converted, _ = convert_float16(annotated, data={"x": x[:64]}, fmt=fmt, accept_diff=True)
    names = [v.name for v in converted.graph.value_info]
    assert len(names) == len(set(names))
    after_stats, after_q = read_stats(converted), read_qparams(converted)
    assert after_stats.keys() == before_stats.keys()
    for name, stats in before_stats.items():
        assert (after_stats[name].min, after_stats[name].max, after_stats[name].count) == \
            (stats.min, stats.max, stats.count), name
    for name, q in before_q.items():
        assert after_q[name].scale.dtype == np.float32 and np.array_equal(after_q[name].scale, q.scale), name
        assert np.array_equal(after_q[name].zero_point, q.zero_point), name
    # the converted tensors are low precision, their value infos say so
    types = {v.name: v.type.tensor_type.elem_type for v in converted.graph.value_info}
    assert T.FLOAT16 in types.values() or T.BFLOAT16 in types.values()


def _loop_reading_outer_x() -> onnx.ModelProto:
    """y = x + x + x + x by a Loop whose body adds the outer-scope ``x`` to its carried value: ``x`` fits
    float16, the sum does not (|x| ~ 3e4), so the Loop stays float32 while the graph's input becomes float16."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="add_outer"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going")], "body",
        [helper.make_tensor_value_info("i", T.INT64, []), helper.make_tensor_value_info("cond_in", T.BOOL, []),
         helper.make_tensor_value_info("acc_in", T.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("cond_out", T.BOOL, []),
         helper.make_tensor_value_info("acc_out", T.FLOAT, ["N", 3])])
    consts = [numpy_helper.from_array(np.array(4, np.int64), "trips"), numpy_helper.from_array(np.array(True), "go")]
    graph = helper.make_graph(
        [helper.make_node("Sub", ["x", "x"], ["zero"], name="zeros"),
         helper.make_node("Loop", ["trips", "go", "zero"], ["y"], name="sum_loop", body=body)], "g",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", 3])], [helper.make_tensor_value_info("y", T.FLOAT, ["N", 3])],
        consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_loop_kept_float32_reading_an_outer_float16_value_gets_a_cast():
    """A Loop kept float32 whose body read the graph's input, made float16 by the conversion: onnxconverter-common
    casts a kept node's inputs, not what its body reads from outside, and onnxruntime refused the model (float16
    meeting float32 in the body's Add). The body now reads a float32 cast of it."""
    x = np.random.default_rng(0).uniform(2e4, 3e4, (16, 3)).astype(np.float32)
    converted, report = convert_float16(_loop_reading_outer_x(), data={"x": x}, accept_diff=True)
    assert "sum_loop" in {k["node"] for k in report.extra["kept_float32"]}
    sess = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, cast_feeds(converted, {"x": x}))
    x16 = x.astype(np.float16).astype(np.float64)  # the input is float16 at the model's boundary
    assert np.isfinite(y).all()
    np.testing.assert_allclose(np.asarray(y, np.float64), 4 * x16, rtol=1e-3)  # float16's 2**-10 output rounding


def test_inputs_beyond_the_float16_range_keep_the_model_io_float32():
    """Inputs reaching 1e5 were cast to float16 at the model's boundary, inf whatever nodes stayed float32:
    the inputs and outputs stay float32 (as --keep-io-types), the report says why, the values stay finite."""
    model, feeds, _ = torch_model("mlp")
    (name,) = feeds
    x = (feeds[name] * 1e5).astype(np.float32)
    expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {name: x})
    converted, report = convert_float16(model, data={name: x}, accept_diff=True)
    assert any(f"input {name!r} reaches" in w and "stay float32 (as --keep-io-types)" in w for w in report.warnings)
    assert converted.graph.input[0].type.tensor_type.elem_type == T.FLOAT
    sess = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {name: x})
    assert y.dtype == np.float32 and np.isfinite(y).all()
    # every node measured beyond the range stays float32: the same float32 kernels on the same inputs
    np.testing.assert_allclose(y, expected[0], rtol=1e-6)


def test_a_node_the_reference_evaluator_cannot_run_is_one_line_with_a_convert_hint(cli, tmp_path):
    """The reference evaluator verifies the float16 model; where it cannot run a node (the spec's Cast reads
    whole numbers, onnxruntime a leading one out of "1970-01-01"), the error named compare's --against option,
    which convert does not have. It names the node and what to run instead; nothing is written."""
    cast = helper.make_node("Cast", ["x"], ["xf"], to=T.FLOAT, name="read_year")
    mul = helper.make_node("Mul", ["xf", "two"], ["y"], name="double")
    graph = helper.make_graph([cast, mul], "g", [helper.make_tensor_value_info("x", T.STRING, ["N"])],
                              [helper.make_tensor_value_info("y", T.FLOAT, ["N"])],
                              [numpy_helper.from_array(np.array([2], np.float32), "two")])
    path, npz, out = tmp_path / "m.onnx", tmp_path / "x.npz", tmp_path / "m16.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), path)
    np.savez(npz, x=np.array(["1970-01-01", "1971-01-01"]))
    result = cli("convert", str(path), "--fp16", "--data", str(npz), "-o", str(out))
    assert result.returncode != 0 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "node 'read_year' (Cast)" in result.stderr and "onegraph compare" in result.stderr
    assert "--against" not in result.stderr and not out.exists()
