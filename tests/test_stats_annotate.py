"""Statistics written into the model: where they live, typed readers, passes keep them, strip removes them."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnx.version_converter
import onnx_ir as ir
import pytest
from stats_models import cnn, penguins_pipeline

import onegraph
from onegraph.stats import annotate_model, read_qparams, read_stats, strip
from onegraph.stats.annotate import (
    STATS_KEY,
    AnnotateStatsPass,
    StatsFormatError,
    StripStatsPass,
    annotate,
)


@pytest.fixture(scope="module")
def annotated_penguins():
    model, frame = penguins_pipeline()
    proto, calibration, qparams = annotate_model(model, frame, quant_type="uint8", progress=False)
    return model, frame, proto, calibration, qparams


def test_documents_and_quantization_annotation_in_the_protobuf(annotated_penguins):
    model, frame, proto, calibration, qparams = annotated_penguins
    onnx.checker.check_model(proto, full_check=True)
    infos = [*proto.graph.input, *proto.graph.value_info, *proto.graph.output]
    documents = {vi.name: json.loads(p.value) for vi in infos for p in vi.metadata_props if p.key == STATS_KEY}
    assert set(documents) == set(calibration.accumulators)
    assert all(d["version"] == 1 and d["source"] == "calibration" for d in documents.values())
    doc = documents["bill_length_mm"]
    assert (doc["count"], doc["nan"]) == (frame["bill_length_mm"].notna().sum(), frame["bill_length_mm"].isna().sum())
    assert doc["min"] == frame["bill_length_mm"].min() and doc["max"] == frame["bill_length_mm"].max()
    initializers = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    annotations = {a.tensor_name: {e.key: e.value for e in a.quant_parameter_tensor_names}
                   for a in proto.graph.quantization_annotation}
    assert set(annotations) == set(qparams)
    for name, refs in annotations.items():
        assert initializers[refs["SCALE_TENSOR"]] == qparams[name].scale
        assert initializers[refs["ZERO_POINT_TENSOR"]] == qparams[name].zero_point
    # onnxruntime runs the annotated model and computes the same thing
    np.testing.assert_array_equal(onegraph.score(proto, frame).to_numpy(), onegraph.score(model, frame).to_numpy())


def test_typed_readers_return_what_was_written(annotated_penguins):
    _, _, proto, calibration, qparams = annotated_penguins
    assert read_stats(proto) == calibration.stats()
    back = read_qparams(proto)
    assert set(back) == set(qparams)
    for name, q in qparams.items():
        assert back[name].scale == q.scale and back[name].zero_point == q.zero_point
        assert (back[name].quant_type, back[name].method, back[name].axis) == ("uint8", "minmax", None)


def test_onnx_ir_round_trip_and_passes_keep_them(annotated_penguins, tmp_path):
    _, _, proto, calibration, qparams = annotated_penguins
    onnx.save(proto, tmp_path / "a.onnx")
    model = ir.load(tmp_path / "a.onnx")
    passes = ir.passes.PassManager([
        ir.passes.common.TopologicalSortPass(),
        ir.passes.common.CommonSubexpressionEliminationPass(),
        ir.passes.common.IdentityEliminationPass(),
        ir.passes.common.RemoveUnusedOpsetsPass(),
        ir.passes.common.NameFixPass(),
        AnnotateStatsPass({}),  # onegraph's own passes are InPlacePasses on the same model
    ])
    passes(model)
    ir.save(model, tmp_path / "b.onnx")
    again = onnx.load(tmp_path / "b.onnx")
    assert read_stats(again) == calibration.stats()
    assert {k: (q.scale, q.zero_point) for k, q in read_qparams(again).items()} == {
        k: (q.scale, q.zero_point) for k, q in qparams.items()}


def test_onnx_version_converter_drops_them():
    model, x = cnn()
    proto, _, _ = annotate_model(model, {"x": x[:100]}, progress=False)
    assert read_stats(proto) and proto.graph.quantization_annotation
    converted = onnx.version_converter.convert_version(proto, 18)
    # why onegraph's passes must keep them: onnx's converter loses both
    assert read_stats(converted) == {} and not converted.graph.quantization_annotation


def test_strip_removes_everything_it_added(annotated_penguins):
    model, frame, proto, _, _ = annotated_penguins
    lean = strip(proto)
    assert read_stats(lean) == {} and read_qparams(lean) == {}
    assert not lean.graph.quantization_annotation
    assert len(lean.graph.initializer) == len(onnx.load_from_string(model).graph.initializer)
    np.testing.assert_array_equal(onegraph.score(lean, frame).to_numpy(), onegraph.score(model, frame).to_numpy())
    assert StripStatsPass()(ir.from_proto(lean)).modified is False


def test_per_channel_scales_on_a_cnn():
    model, x = cnn()
    proto, calibration, qparams = annotate_model(model, {"x": x[:300]}, quant_type="int8", symmetric=True,
                                                 per_channel=True, progress=False)
    conv = read_qparams(proto)["/conv1/Conv_output_0"]
    assert conv.axis == 1 and conv.scale.shape == (6,) and (conv.zero_point == 0).all()
    channels = calibration.stats()["/conv1/Conv_output_0"].channels
    absmax = np.maximum(np.abs(channels.min), np.abs(channels.max))
    np.testing.assert_allclose(conv.scale, absmax / 127, rtol=1e-6)


def test_malformed_documents_name_the_tensor(annotated_penguins):
    _, _, proto, _, _ = annotated_penguins
    broken = onnx.ModelProto()
    broken.CopyFrom(proto)
    vi = next(v for v in broken.graph.input if v.name == "bill_depth_mm")
    entry = next(p for p in vi.metadata_props if p.key == STATS_KEY)
    entry.value = "{not json"
    with pytest.raises(StatsFormatError, match="'bill_depth_mm'.*not JSON"):
        read_stats(broken)
    entry.value = json.dumps({"version": 99})
    with pytest.raises(StatsFormatError, match="'bill_depth_mm'.*version 99 is newer"):
        read_stats(broken)
    with pytest.raises(StatsFormatError, match="'nope'.*not a tensor"):
        annotate(proto, {"nope": read_stats(proto)["bill_depth_mm"]})
