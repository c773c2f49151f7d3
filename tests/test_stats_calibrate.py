"""Calibration on real models equals numpy on the activations read independently, whatever the batching."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnxruntime.quantization import quant_utils
from onnxruntime.quantization.calibrate import CalibrationDataReader, MinMaxCalibrater
from stats_models import activations, cnn, mlp, penguins_pipeline
from test_stats_accumulators import check_against_numpy

import onegraph
from onegraph.errors import DataError, MissingColumnError
from onegraph.stats import calibrate
from onegraph.stats.qparams import scale_zero_point


def check_calibration(calibration, acts: dict[str, np.ndarray]) -> None:
    stats = calibration.stats()
    assert set(stats) == set(acts), set(stats) ^ set(acts)
    for name, s in stats.items():
        axis = 1 if acts[name].ndim > 1 and calibration.accumulators[name].channel_axis is not None else None
        check_against_numpy(s, acts[name], axis=axis)


def test_penguins_pipeline_from_a_dataframe():
    model, frame = penguins_pipeline()
    calibration = calibrate(model, frame, batch_size=50, progress=False)
    _, feeds = onegraph.Session(model).feeds(frame)
    check_calibration(calibration, activations(model, feeds))
    assert calibration.samples == len(frame)
    assert calibration.stats()["bill_length_mm"].nan == frame["bill_length_mm"].isna().sum()


def test_mlp_from_an_npz_file(tmp_path):
    model, x = mlp()
    np.savez(tmp_path / "data.npz", x=x.astype(np.float64))  # converted to the input's float32
    calibration = calibrate(model, tmp_path / "data.npz", batch_size=37, progress=False)
    check_calibration(calibration, activations(model, {"x": x}))
    assert calibration.samples == len(x)


def test_cnn_per_channel_from_numpy_feeds_and_batches():
    model, x = cnn()
    acts = activations(model, {"x": x})
    calibration = calibrate(model, {"x": x}, batch_size=200, progress=False)
    check_calibration(calibration, acts)
    conv = calibration.stats()["/conv1/Conv_output_0"]
    assert conv.channels.axis == 1 and len(conv.channels.min) == 6
    streamed = calibrate(model, ({"x": x[i:i + 500]} for i in range(0, len(x), 500)), progress=False)
    check_calibration(streamed, acts)


def test_batches_of_changing_sizes_buffered_as_one_pass():
    """Batches smaller, larger than and far larger than the first go through each tensor's buffer (copied in,
    flushed before one that does not fit, the largest passed on without a copy) as one pass over them."""
    model, x = cnn()
    edges = np.cumsum([0, 50, 400, 3, 50, 1200, 7, 1, 86])
    batches = ({"x": x[a:b]} for a, b in zip(edges, edges[1:]))
    calibration = calibrate(model, batches, batch_size=10_000, progress=False)
    assert calibration.samples == edges[-1]
    check_calibration(calibration, activations(model, {"x": x[:edges[-1]]}))


@pytest.mark.parametrize("shards", [2, 7])
def test_merged_calibrations_equal_one_pass(shards):
    model, x = cnn()
    one = calibrate(model, {"x": x}, batch_size=256, progress=False).stats()
    parts = [calibrate(model, {"x": part}, batch_size=64, progress=False) for part in np.array_split(x, shards)]
    merged = parts[0]
    for part in parts[1:]:
        merged.merge(part)
    assert merged.samples == len(x)
    for name, s in merged.stats().items():
        o = one[name]
        assert (s.count, s.nan, s.min, s.max, s.zero_fraction, s.histogram) == (o.count, o.nan, o.min, o.max,
                                                                                o.zero_fraction, o.histogram)
        np.testing.assert_allclose([s.mean, s.std], [o.mean, o.std], rtol=1e-9)
        assert s.channels.min == o.channels.min


def test_selection_by_name_op_type_and_predicate():
    model, x = cnn()
    feeds = {"x": x[:100]}
    by_op = calibrate(model, feeds, op_types=["Relu"], progress=False)
    assert set(by_op.accumulators) == {"/Relu_output_0", "/Relu_1_output_0"}
    by_name = calibrate(model, feeds, tensors=["/conv*"], progress=False)
    assert set(by_name.accumulators) == {"/conv1/Conv_output_0", "/conv2/Conv_output_0"}
    by_rank = calibrate(model, feeds, where=lambda v: v.shape is not None and len(v.shape) == 2, progress=False)
    assert set(by_rank.accumulators) == {"/Flatten_output_0", "y"}


def test_functions_are_selected_by_their_call_nodes():
    x = ir.val("x", ir.DataType.FLOAT, ir.Shape(["N", 3]))
    inner_in = ir.val("a", ir.DataType.FLOAT, ir.Shape(["N", 3]))
    relu = ir.node("Relu", [inner_in])
    body = ir.Graph([inner_in], [relu.outputs[0]], nodes=[relu], opset_imports={"": 21})
    function = ir.Function("torch.nn", "ReLU", "act1", graph=body, attributes=[])
    call = ir.node("ReLU", [x], domain="torch.nn", overload="act1")
    call.outputs[0].name = "act"
    neg = ir.node("Neg", [call.outputs[0]])
    neg.outputs[0].name = "y"
    for v in (call.outputs[0], neg.outputs[0]):
        v.dtype, v.shape = ir.DataType.FLOAT, ir.Shape(["N", 3])
    graph = ir.Graph([x], [neg.outputs[0]], nodes=[call, neg], opset_imports={"": 21, "torch.nn": 1})
    model = ir.Model(graph, ir_version=10, functions=[function])
    data = {"x": np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)}
    calibration = calibrate(model, data, functions=["torch.nn:ReLU"], progress=False)
    assert list(calibration.accumulators) == ["act"]
    assert calibration.stats()["act"].min == np.maximum(data["x"], 0).min()


def test_data_errors_name_the_input(tmp_path):
    model, x = cnn()
    np.savez(tmp_path / "wrong.npz", image=x)
    with pytest.raises(MissingColumnError, match="'x'"):
        calibrate(model, tmp_path / "wrong.npz", progress=False)
    (tmp_path / "rows.csv").write_text("x\n1\n")
    with pytest.raises(DataError, match="takes .npz data"):
        calibrate(model, tmp_path / "rows.csv", progress=False)
    with pytest.raises(DataError, match="no sample"):
        calibrate(model, {"x": x[:0]}, progress=False)


# -- the onnxruntime failure cases of the issue ------------------------------------------------------
def passthrough_model(path) -> None:
    """y = x + 0 on [N, 1] float32: x's range is calibrated by both tools."""
    x = ir.val("x", ir.DataType.FLOAT, ir.Shape(["N", 1]))
    zero = ir.Value(name="zero", const_value=ir.tensor(np.zeros((1, 1), np.float32), name="zero"))
    add = ir.node("Add", [x, zero])
    add.outputs[0].name = "y"
    add.outputs[0].dtype, add.outputs[0].shape = ir.DataType.FLOAT, ir.Shape(["N", 1])
    graph = ir.Graph([x], [add.outputs[0]], nodes=[add], initializers=[zero], opset_imports={"": 21})
    onnx.save(ir.to_proto(ir.Model(graph, ir_version=10)), path)


class Reader(CalibrationDataReader):
    def __init__(self, batches):
        self.batches = iter(batches)

    def get_next(self):
        return next(self.batches, None)


def ort_minmax(path, batches, **options):
    calibrator = MinMaxCalibrater(str(path), augmented_model_path=str(path.with_suffix(".aug.onnx")), **options)
    calibrator.augment_graph()
    calibrator.create_inference_session()
    calibrator.collect_data(Reader(batches))
    return tuple(float(np.asarray(v).reshape(-1)[0]) for v in calibrator.compute_data()["x"].range_value)


def batches_of(*rows):
    return [{"x": np.array(r, dtype=np.float32).reshape(-1, 1)} for r in rows]


def test_chunked_minmax_keeps_every_chunk(tmp_path):
    path = tmp_path / "m.onnx"
    passthrough_model(path)
    data = batches_of([-5.0], [1.0], [2.0], [3.0], [4.0])
    assert ort_minmax(path, data, max_intermediate_outputs=2) == (4.0, 4.0)  # onnxruntime drops chunks
    assert calibrate(path, data, progress=False).stats()["x"].range == (-5.0, 4.0)


def test_nan_does_not_discard_a_batch(tmp_path):
    path = tmp_path / "m.onnx"
    passthrough_model(path)
    data = batches_of([0.5, 1.0], [np.nan, -7.0, 9.0])
    assert ort_minmax(path, data) == (0.5, 1.0)  # the second batch's ReduceMin is NaN, then dropped
    stats = calibrate(path, data, progress=False).stats()["x"]
    assert stats.range == (-7.0, 9.0) and stats.nan == 1


def test_inf_gives_a_finite_scale(tmp_path):
    path = tmp_path / "m.onnx"
    passthrough_model(path)
    data = batches_of([1.0, np.inf, -2.0])
    lo, hi = ort_minmax(path, data)
    _, ort_scale = quant_utils.compute_scale_zp(np.float32(lo), np.float32(hi), np.uint8(0), np.uint8(255))
    assert np.isinf(ort_scale)
    stats = calibrate(path, data, progress=False).stats()["x"]
    assert stats.range == (-2.0, 1.0) and stats.posinf == 1
    scale, zp = scale_zero_point(*stats.range, "uint8")
    assert scale == np.float32(3 / 255) and zp == 170


def test_data_of_another_shape_or_type_is_refused_naming_the_input_and_both_shapes(tmp_path):
    """A new user's case: calibration data one column wider than the model's input failed with onnxruntime's
    own three-line text, cut at "(...)" on the command line before the shapes. It is one line naming the
    input and both shapes, before any run; text where numbers go is named too. A bfloat16 tensor's statistics
    keep its type (they said float32, the type of the Cast it is read through)."""
    model, x = cnn()
    with pytest.raises(DataError, match=r"^input 'x' of the model: the data's shape \[5, 1, 8, 9\] does not fit "
                                        r"the model's \['N', 1, 8, 8\]"):
        calibrate(model, {"x": np.zeros((5, 1, 8, 9), np.float32)}, progress=False)
    with pytest.raises(DataError, match=r"^input 'x': <U1 values where the model takes float32"):
        calibrate(model, {"x": np.full((5, 1, 8, 8), "a")}, progress=False)
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["c"], to=TensorProto.BFLOAT16),
                               helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)], "bf",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    bf = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    stats = calibrate(bf, {"x": x.reshape(-1, 4)[:40]}, progress=False).stats()
    assert stats["c"].dtype == "bfloat16" and stats["y"].dtype == "float32"


_CNN = Path(__file__).parent / "data" / "digits-cnn.onnx"
_GOOD = np.random.default_rng(5).random((4, 1, 8, 8), dtype=np.float32)


@pytest.mark.parametrize("data, says", [
    ([{"x": _GOOD}, None], "batch 1 .* NoneType, not a dict"),
    (({"x": _GOOD} if i == 0 else None for i in range(2)), "batch 1 .* NoneType"),
    (({"x": [[1.0], [1.0, 2.0]]} for _ in range(1)), "input 'x': its values are not one array"),
    (_GOOD, "bare array: name it"),
    ((_GOOD for _ in range(2)), "batch 0 .* ndarray, not a dict"),
    ([], "holds no sample"),
    ([{"x": np.float32(1)}], "input 'x': a scalar is no batch"),
    ([{"x": np.full((2, 1, 8, 8), 1e40)}], r"input 'x': value 1e\+40 \(sample 0\) is beyond the range of float32"),
], ids=["None in a list", "None from a generator", "ragged", "bare array", "arrays from a generator", "empty list",
        "scalar in a list", "float64 beyond float32"])
def test_bad_calibration_batches_raise_one_data_error_naming_what(data, says):
    """Each of these once raised TypeError / ValueError from inside, printed a 3 KB array as the 'columns
    given', told a list from a generator apart, or counted 1e40 as +inf; now one DataError says what is wrong."""
    with pytest.raises(DataError, match=says):
        calibrate(_CNN, data, progress=False).stats()


def test_a_model_that_cannot_run_is_refused_naming_its_file(tmp_path):
    """A model file whose functions were cut off (as a truncated copy that still parses): calibration checks the
    file for an onnxruntime session first, so the refusal names the file, not 'the model bytes' of the model
    with its tensors exposed."""
    data, frame = penguins_pipeline()
    proto = onnx.load_from_string(data)
    del proto.functions[:]
    path = tmp_path / "cut.onnx"
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(onegraph.check.UnsafeModelError, match=r"model file .*cut\.onnx was not opened: error C403"):
        calibrate(path, frame, progress=False)


@pytest.mark.parametrize("setting, named", [
    ({"sketch_per_sample": 0}, "sketch_per_sample"), ({"sketch_per_sample": "16"}, "sketch_per_sample"),
    ({"sketch_per_sample": 2.5}, "sketch_per_sample"), ({"sketch_k": None}, "sketch_k"),
    ({"sketch_k": "200"}, "sketch_k"), ({"std_k": 3}, "std_k")])
def test_unusable_calibration_settings_are_refused_naming_them(setting, named):
    from onegraph.errors import ConfigError

    with pytest.raises(ConfigError, match=named):
        calibrate(_CNN, {"x": _GOOD}, progress=False, **setting)


def test_a_merged_calibration_is_not_changed_by_later_merges_into_the_other():
    """Tensors only the other calibration saw are copied in: merging more into that one later leaves this one
    as it was."""
    _, x = cnn()
    first = calibrate(_CNN, {"x": x[:100]}, tensors=["x"], progress=False)
    second = calibrate(_CNN, {"x": x[100:200]}, progress=False)
    first.merge(second)
    before = first.accumulators["y"].samples
    second.merge(calibrate(_CNN, {"x": x[200:300]}, progress=False))
    assert first.accumulators["y"].samples == before == 100
    with pytest.raises(DataError, match="cannot merge a dict"):
        first.merge({})


def test_a_tensors_shape_reads_its_dynamic_batch_axis_as_none_however_the_data_is_split():
    """The penguins pipeline's tensors are batch-first (a dynamic axis): their shape in the statistics says None
    there, whether the 344 rows come in one batch, in batches of 100 or as two calibrations merged (a short
    calibration's one flush of its buffer gave the rows it held)."""
    model, frame = penguins_pipeline()
    whole = calibrate(model, frame, progress=False).stats()
    batched = calibrate(model, frame, batch_size=100, progress=False).stats()
    merged = calibrate(model, frame.iloc[:150], progress=False).merge(
        calibrate(model, frame.iloc[150:], progress=False)).stats()
    batch_first = [name for name, s in whole.items() if s.shape and len(s.shape) >= 1 and s.samples == len(frame)]
    assert batch_first
    for name in batch_first:
        assert whole[name].shape[0] is None, name
        assert whole[name].shape == batched[name].shape == merged[name].shape, name


def test_a_model_without_float_tensors_or_a_predicate_selecting_none_is_refused():
    """Statistics of nothing read as a calibration done (exit 0, "statistics of 0 tensors"): refused, as a
    tensor pattern that selects nothing is."""
    from onnx import TensorProto, helper

    from onegraph.errors import ConfigError

    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "ints",
                              [helper.make_tensor_value_info(n, TensorProto.INT64, ["N"]) for n in "xy"],
                              [helper.make_tensor_value_info("z", TensorProto.INT64, ["N"])])
    ints = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()
    with pytest.raises(ConfigError, match="no float tensor"):
        calibrate(ints, {"x": np.arange(3), "y": np.arange(3)}, progress=False)
    model, x = mlp()
    with pytest.raises(ConfigError, match="select none of the model's"):
        calibrate(model, {"x": x}, where=lambda v: False, progress=False)
