"""onegraph convert --opset: real models both ways between opsets 13, 17, 21 and the current one, verified
against the source library's own outputs; each public converter failure reproduced."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from convert_models import opset_of, penguins_pipeline, sklearn_model, torch_model
from onnx import TensorProto as T
from onnx import helper, numpy_helper, version_converter

from onegraph.convert import convert_opset
from onegraph.convert.opset_adapters import TARGET_DOMAIN
from onegraph.errors import ConfigError, ConversionError

CURRENT = onnx.defs.onnx_opset_version()
TARGETS = sorted({13, 17, 21, CURRENT})


def ort_run(model, feeds):
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    return sess.run(None, {k: v for k, v in feeds.items() if k in names})


def check_both_ways(model: bytes, feeds, expected, target: int, rtol: float) -> None:
    """Convert to ``target`` and back; each step verified by onegraph, and both results equal the source
    library's outputs (computed without ONNX)."""
    src = opset_of(model)
    converted, report = convert_opset(model, target, data=feeds)
    assert report.ok and opset_of(converted) == target
    assert all(n.ok for n in report.nodes)
    onnx.checker.check_model(converted)
    assert not any(n.domain == TARGET_DOMAIN for n in converted.graph.node)
    back, report_back = convert_opset(converted, src, data=feeds)
    assert report_back.ok and opset_of(back) == src
    for m in (converted, back):
        got = ort_run(m, feeds)
        value = got[-1] if expected.ndim == 2 and got[-1].ndim == 2 else got[0]
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["mlp", "cnn", "gru", "transformer"])
def test_torch_exports_convert_both_ways(name, target):
    model, feeds, expected = torch_model(name)
    check_both_ways(model, feeds, expected, target, rtol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["logistic", "forest"])
def test_skl2onnx_models_convert_both_ways(name, target):
    model, feeds, expected = sklearn_model(name)
    check_both_ways(model, feeds, expected, target, rtol=1e-4)


@pytest.mark.parametrize("target", [12, 13, 17, CURRENT])
def test_penguins_pipeline_converts_both_ways(target):
    model, rows, expected = penguins_pipeline()
    converted, report = convert_opset(model, target, data=rows)
    assert report.ok
    back, _ = convert_opset(converted, 21, data=rows)
    import onegraph

    for m in (converted, back):
        got = onegraph.score(m, rows)
        proba = got[[c for c in got.columns if c.startswith("probabilities_")]].to_numpy(float)
        np.testing.assert_allclose(proba, expected, rtol=1e-9, atol=1e-12)
    # the onegraph schema (model metadata) survives, so score() still builds its own feeds
    assert {p.key for p in converted.metadata_props} == {p.key for p in onnx.load_from_string(model).metadata_props}


def test_ml_nodes_are_reported_not_skipped():
    model, feeds, expected = sklearn_model("forest")
    ml_src = next(o.version for o in onnx.load_from_string(model).opset_import if o.domain == "ai.onnx.ml")
    _, report = convert_opset(model, 13, data=feeds)
    ml = [n for n in report.nodes if n.domain == "ai.onnx.ml"]
    assert ml and all(f"kept at ai.onnx.ml opset {ml_src}" in n.how for n in ml)
    assert "ai.onnx.ml.TreeEnsembleClassifier" in str(report)
    # moved to ai.onnx.ml 3 with --ml-opset: its attributes exist there; verified against scikit-learn
    converted, report = convert_opset(model, 13, data=feeds, ml_opset=3)
    assert report.ok and {o.domain: o.version for o in converted.opset_import}["ai.onnx.ml"] == 3
    np.testing.assert_allclose(ort_run(converted, feeds)[-1], expected, rtol=1e-5, atol=1e-6)


def test_ml_node_deprecated_at_the_target_ml_opset_is_refused_by_name_not_reported_kept():
    """TreeEnsembleClassifier (skl2onnx's forests) is deprecated at ai.onnx.ml 5 (TreeEnsemble replaces it):
    the report said "kept: every attribute it uses exists in TreeEnsembleClassifier-5", then onnx's checker
    refused the model. The node itself is refused, naming the replacement and the highest ml opset that has it."""
    model, feeds, _ = sklearn_model("forest")
    with pytest.raises(ConversionError) as caught:
        convert_opset(model, 21, data=feeds, ml_opset=5)
    refused = [n for n in caught.value.report.nodes if not n.ok]
    assert [n.op_type for n in refused] == ["TreeEnsembleClassifier"]
    assert "deprecated at ai.onnx.ml opset 5 (replaced by TreeEnsemble)" in refused[0].how
    assert "--ml-opset 4" in refused[0].how
    converted, report = convert_opset(model, 21, data=feeds, ml_opset=4)
    assert report.ok and {o.domain: o.version for o in converted.opset_import}["ai.onnx.ml"] == 4


def test_ml_node_without_equivalent_is_refused_by_name():
    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", name="codes",
                            keys_int64s=[1, 2], values_int64s=[10, 20])
    model = make([node], [vi("x", T.INT64, [3])], [vi("y", T.INT64, [3])], 17)
    model.opset_import.append(helper.make_opsetid("ai.onnx.ml", 2))
    with pytest.raises(ConversionError, match="LabelEncoder node 'codes'.*keys_int64s"):
        convert_opset(model, 13, ml_opset=1)


# -- the public failures, reproduced as small models -------------------------------------------------------
def make(nodes, inputs, outputs, opset, inits=(), **kw):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)


vi = helper.make_tensor_value_info
RNG = np.random.default_rng(0)


def test_no_adapter_for_conv_7_to_12():
    w = numpy_helper.from_array(RNG.standard_normal((2, 1, 3, 3)).astype(np.float32), "W")
    model = make([helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 1, 1, 1])], [vi("x", T.FLOAT, [1, 1, 5, 5])],
                 [vi("y", T.FLOAT, None)], 7, [w])
    converted, report = convert_opset(model, 12)
    assert report.ok and opset_of(converted) == 12
    x = RNG.standard_normal((1, 1, 5, 5)).astype(np.float32)
    from onnx.reference import ReferenceEvaluator

    np.testing.assert_allclose(ort_run(converted, {"x": x})[0], ReferenceEvaluator(model).run(None, {"x": x})[0],
                               rtol=1e-5, atol=1e-6)


def resize_model(**attrs):
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    roi = numpy_helper.from_array(np.array([], np.float32), "roi")
    return make([helper.make_node("Resize", ["x", "roi", "scales"], ["y"], **attrs)], [vi("x", T.FLOAT, [1, 1, 3, 3])],
                [vi("y", T.FLOAT, None)], 11, [scales, roi])


def test_resize_11_to_9_nearest_becomes_upsample():
    model = resize_model(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    with pytest.raises(Exception, match="No Adapter From Version \\$11 for Resize"):
        version_converter.convert_version(model, 9)  # the public failure
    converted, report = convert_opset(model, 9)
    assert [n.op_type for n in converted.graph.node] == ["Constant", "Upsample"] and report.ok
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    np.testing.assert_array_equal(ort_run(converted, {"x": x})[0], x.repeat(2, axis=2).repeat(2, axis=3))


def test_resize_11_to_9_half_pixel_linear_is_refused_with_reason():
    model = resize_model(mode="linear")
    with pytest.raises(ConversionError, match="half_pixel") as info:
        convert_opset(model, 9)
    (node,) = info.value.report.refused
    assert node.op_type == "Resize" and "asymmetric" in node.how


@pytest.mark.parametrize("dynamic", [False, True])
def test_gather_11_to_10_negative_indices(dynamic):
    inits = [] if dynamic else [numpy_helper.from_array(np.array([-1, 0], np.int64), "i")]
    inputs = [vi("x", T.FLOAT, ["n", 3])] + ([vi("i", T.INT64, [2])] if dynamic else [])
    model = make([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], inputs, [vi("y", T.FLOAT, None)], 11, inits)
    with pytest.raises(Exception, match="No Adapter From Version \\$11 for Gather"):
        version_converter.convert_version(model, 10)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    feeds = {"x": x, "i": np.array([-1, 0])}
    converted, report = convert_opset(model, 10, data=feeds if dynamic else {"x": x})
    assert report.ok
    np.testing.assert_array_equal(ort_run(converted, feeds)[0], x[:, [2, 0]])


def test_identity_16_to_15():
    model = make([helper.make_node("Identity", ["x"], ["y"])], [vi("x", T.FLOAT, [3])], [vi("y", T.FLOAT, [3])], 16)
    with pytest.raises(Exception, match="No Adapter From Version \\$16 for Identity"):
        version_converter.convert_version(model, 15)
    converted, report = convert_opset(model, 15)
    assert report.ok and "admit more types" in str(report)


def test_input_not_in_initializer_refused_or_folded():
    # axes fed at run time: no opset-12 Unsqueeze can take it; refused naming node and tensor
    model = make([helper.make_node("Unsqueeze", ["x", "ax"], ["y"], name="unsq")],
                 [vi("x", T.FLOAT, [3, 2]), vi("ax", T.INT64, [1])], [vi("y", T.FLOAT, None)], 13)
    with pytest.raises(Exception, match="No initializer or constant input"):
        version_converter.convert_version(model, 12)
    with pytest.raises(ConversionError, match="'ax' is a graph input, not an initializer") as info:
        convert_opset(model, 12)
    assert info.value.report.refused[0].name == "unsq"
    # axes computed from a fixed shape (what exporters emit for x.size(0)): folded, converted, verified
    model = make([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["d"]),
                  helper.make_node("Unsqueeze", ["x", "d"], ["y"])],
                 [vi("x", T.FLOAT, [1, 2])], [vi("y", T.FLOAT, None)], 13,
                 [numpy_helper.from_array(np.array([0], np.int64), "zero")])
    converted, report = convert_opset(model, 12)
    assert report.ok and any("folded to [1]" in n for n in report.notes)


def test_onnx_converter_silently_changes_softmax_but_onegraph_does_not():
    model = make([helper.make_node("Softmax", ["x"], ["y"], axis=0)], [vi("x", T.FLOAT, [4, 3])],
                 [vi("y", T.FLOAT, None)], 13)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    expected = np.exp(x) / np.exp(x).sum(axis=0)
    plain = version_converter.convert_version(model, 12)
    assert not np.allclose(ort_run(plain, {"x": x})[0], expected, atol=1e-3)
    converted, report = convert_opset(model, 12, data={"x": x})
    np.testing.assert_allclose(ort_run(converted, {"x": x})[0], expected, rtol=1e-5)


def test_layer_normalization_17_to_16_decomposed():
    model, feeds, expected = torch_model("transformer")
    converted, report = convert_opset(model, 16, data=feeds)
    assert report.ok
    assert "decomposed" in str(report)
    np.testing.assert_allclose(ort_run(converted, feeds)[0], expected, rtol=1e-4, atol=1e-5)


def test_function_bodies_are_converted_with_their_attribute_references():
    body = [helper.make_node("Unsqueeze", ["x", "axes"], ["u"]), helper.make_node("LeakyRelu", ["u"], ["y"])]
    body.insert(0, helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(np.array([0], np.int64))))
    ref = onnx.AttributeProto(name="alpha", ref_attr_name="ax", type=onnx.AttributeProto.FLOAT)
    body[2].attribute.append(ref)
    fn = helper.make_function("local", "Norm", ["x"], ["y"], body, [helper.make_opsetid("", 13)], attributes=["ax"])
    call = helper.make_node("Norm", ["x"], ["y"], domain="local", ax=0.5)
    model = make([call], [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, None)], 13, functions=[fn])
    model.opset_import.append(helper.make_opsetid("local", 1))
    assert len(version_converter.convert_version(model, 12).functions) == 0  # onnx drops the bodies
    converted, report = convert_opset(model, 12)
    (f,) = converted.functions
    assert {o.domain: o.version for o in f.opset_import}[""] == 12
    leaky = next(n for n in f.node if n.op_type == "LeakyRelu")
    assert [(a.name, a.ref_attr_name) for a in leaky.attribute] == [("alpha", "ax")]
    assert any(n.where == "function local.Norm" and n.op_type == "Unsqueeze" for n in report.nodes)
    assert report.ok


def test_annotations_and_metadata_carried_over():
    model, feeds, _ = torch_model("mlp")
    proto = onnx.load_from_string(model)
    g = proto.graph
    g.input[0].metadata_props.add(key="onegraph.stats", value='{"max": 3.1}')
    first = g.node[0].output[0]
    info = g.value_info.add()
    info.CopyFrom(vi(first, T.FLOAT, ["batch", 16]))
    info.metadata_props.add(key="onegraph.stats", value='{"max": 9.5}')
    ann = g.quantization_annotation.add(tensor_name=first)
    ann.quant_parameter_tensor_names.add(key="SCALE_TENSOR", value="s")
    proto.metadata_props.add(key="author", value="me")
    g.node[0].metadata_props.add(key="namespace", value="0")
    before = proto.SerializeToString()
    plain = version_converter.convert_version(proto, 21)
    assert not plain.graph.quantization_annotation and not plain.graph.input[0].metadata_props
    converted, report = convert_opset(proto, 21, data=feeds)
    assert proto.SerializeToString() == before  # the input is not modified
    cg = converted.graph
    assert [(p.key, p.value) for p in cg.input[0].metadata_props] == [("onegraph.stats", '{"max": 3.1}')]
    assert any(v.name == first and v.metadata_props[0].value == '{"max": 9.5}' for v in cg.value_info)
    assert cg.quantization_annotation[0].tensor_name == first
    assert ("author", "me") in [(p.key, p.value) for p in converted.metadata_props]
    assert cg.node[0].metadata_props[0].value == "0"
    assert report.ok and not report.lost


def test_changed_values_fail_unless_accepted():
    # Upsample-9 floors; the opset-11 'round_prefer_ceil' Resize picks other pixels -> refused up front,
    # and a conversion whose values change is refused by verification unless accept_diff
    model = make([helper.make_node("Softmax", ["x"], ["y"], axis=0)], [vi("x", T.FLOAT, [4, 3])],
                 [vi("y", T.FLOAT, None)], 13)
    from onegraph.convert import opset_adapters

    saved = opset_adapters.ADAPTERS.pop(("Softmax", 13))
    opset_adapters.ONNX[("Softmax", 13)] = "for this test: onnx's (wrong) Softmax_13_12"
    try:
        with pytest.raises(ConversionError, match="differ from the original"):
            convert_opset(model, 12)
        converted, report = convert_opset(model, 12, accept_diff=True)
        assert not report.ok and report.agreement.outputs[0].max_abs > 1e-3
    finally:
        opset_adapters.ADAPTERS[("Softmax", 13)] = saved
        del opset_adapters.ONNX[("Softmax", 13)]


def test_cli_convert_writes_only_verified_models(tmp_path):
    from typer.testing import CliRunner

    from onegraph.cli import app

    model, feeds, _ = torch_model("cnn")
    src = tmp_path / "cnn.onnx"
    src.write_bytes(model)
    out = tmp_path / "cnn9.onnx"
    result = CliRunner().invoke(app, ["convert", str(src), "--opset", "9", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Upsample-9" in result.output and "result: ok" in result.output
    assert opset_of(out.read_bytes()) == 9 and src.read_bytes() == model
    refused = tmp_path / "refused.onnx"
    model = resize_model(mode="linear")
    bad = tmp_path / "linear.onnx"
    onnx.save(model, bad)
    result = CliRunner().invoke(app, ["convert", str(bad), "--opset", "9", "-o", str(refused)])
    assert result.exit_code != 0 and "REFUSED" in result.output and not refused.exists()
    assert not list(tmp_path.glob(".*.tmp"))


# -- operators onegraph emits, one node each: converted to the old opset and computing what the source
# -- model computes in onnx's reference evaluator, or refused with the reason --------------------------
def _unit(op, opset, x, out_type, **attrs):
    node = helper.make_node(op, ["x"], ["y"], name="n", **attrs)
    return make([node], [vi("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))],
                [vi("y", out_type, None)], opset)


@pytest.mark.parametrize("op, src, dst, x, out_type, attrs", [
    ("Cast", 21, 9, np.array([1.5, -2.0, np.nan], np.float32), T.DOUBLE, {"to": T.DOUBLE}),
    ("Cast", 21, 12, np.array([1, 0, 3], np.int64), T.BOOL, {"to": T.BOOL, "saturate": 1}),
    ("IsNaN", 20, 9, np.array([1.5, np.nan], np.float32), T.BOOL, {}),
    ("ArgMax", 13, 11, np.array([[1, 3, 3], [2, 0, 1]], np.float32), T.INT64, {"axis": -1}),
    ("ArgMax", 13, 10, np.array([[1, 3, 3], [2, 0, 1]], np.float32), T.INT64, {"axis": -1}),
    ("Shape", 21, 13, np.zeros((2, 3, 5), np.float32), T.INT64, {"start": 1, "end": -1}),
    ("Shape", 21, 9, np.zeros((2, 3, 5), np.float32), T.INT64, {"start": -2}),
    ("Mod", 13, 10, np.array([5, -7, 9], np.int64), T.INT64, {}),
])
def test_onegraph_operators_convert_down(op, src, dst, x, out_type, attrs):
    from onnx.reference import ReferenceEvaluator

    if op == "Mod":  # a second input: the divisor, as a constant
        model = make([helper.make_node("Mod", ["x", "d"], ["y"], name="n")], [vi("x", T.INT64, [3])],
                     [vi("y", T.INT64, None)], src, [numpy_helper.from_array(np.array([3, 3, -4], np.int64), "d")])
    else:
        model = _unit(op, src, x, out_type, **attrs)
    converted, report = convert_opset(model, dst, data={"x": x})
    assert report.ok and opset_of(converted) == dst
    onnx.checker.check_model(converted)
    np.testing.assert_array_equal(ort_run(converted, {"x": x})[0], ReferenceEvaluator(model).run(None, {"x": x})[0])


@pytest.mark.parametrize("op, src, dst, out_type, attrs, reason", [
    ("Cast", 21, 12, T.BFLOAT16, {"to": T.BFLOAT16}, "bfloat16"),
    ("Cast", 21, 18, T.FLOAT8E4M3FN, {"to": T.FLOAT8E4M3FN, "saturate": 0},
     "tensor(float8e4m3fn), which Cast-13 does not"),
    ("ArgMax", 13, 11, T.INT64, {"axis": 0, "select_last_index": 1}, "select_last_index"),
])
def test_onegraph_operators_refused_when_the_old_opset_lacks_them(op, src, dst, out_type, attrs, reason):
    model = _unit(op, src, np.array([1.0, 2.0], np.float32), out_type, **attrs)
    with pytest.raises(ConversionError) as info:
        convert_opset(model, dst)
    (node,) = info.value.report.refused
    assert node.op_type == op and reason in node.how


@pytest.mark.parametrize("args, message", [
    (["--opset", "0"], "opset 0 does not exist"), (["--opset", "99"], "opset 99 does not exist"),
    (["--opset", "13", "--ml-opset", "9"], "ml opset 9 does not exist"),
])
def test_cli_refuses_opsets_onnx_does_not_define(tmp_path, cli, args, message):
    model, _, _ = torch_model("mlp")
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model)
    result = cli("convert", str(path), *args, "-o", str(tmp_path / "out.onnx"))
    top = onnx.defs.onnx_ml_opset_version() if "--ml-opset" in args else CURRENT
    assert result.returncode == 1 and message in result.stderr and f"1 to {top}" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out.onnx").exists()


@pytest.mark.parametrize("opset, ml_opset", [("13", None), (13.5, None), (None, None), (13, "3")])
def test_the_python_api_refuses_an_opset_that_is_not_a_whole_number(opset, ml_opset):
    """convert_opset(model, "13") raised "'<=' not supported between instances of 'int' and 'str'"."""
    model, _, _ = torch_model("mlp")
    with pytest.raises(ConfigError, match="is not a whole number"):
        convert_opset(model, opset, ml_opset=ml_opset)
