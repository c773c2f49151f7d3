"""The static checks, run in-process on models these tests construct (never on parsed untrusted bytes):
each finding code on a minimal model that has exactly that fault, none on valid models."""

from __future__ import annotations

import os
import random

import numpy as np
import onnx
import onnx.parser
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from onegraph.check import fuzz
from onegraph.check.findings import CODES, Finding
from onegraph.check.static import static_findings


def parsed(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(text)


def codes(model: onnx.ModelProto, **kw) -> list[str]:
    return [f.code for f in static_findings(model, **kw)]


def matmul(w: onnx.TensorProto, opset: int = 21) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 3])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def external(location: str, **entries: str) -> onnx.ModelProto:
    w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2, 3], data_location=TensorProto.EXTERNAL)
    w.external_data.add(key="location", value=location)
    for k, v in entries.items():
        w.external_data.add(key=k, value=v)
    return matmul(w)


# -- tensors --------------------------------------------------------------------------------------
def test_raw_data_and_typed_data_sizes():
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "W")
    assert codes(matmul(w)) == []
    w.raw_data = w.raw_data[:-1]
    [f] = static_findings(matmul(w))
    assert (f.code, f.tensor, f.field) == ("C201", "W", "graph.initializer[0].raw_data") and "23 bytes" in f.message
    typed = helper.make_tensor("W", TensorProto.FLOAT, [2, 3], [1.0] * 6)
    del typed.float_data[-1]
    assert codes(matmul(typed)) == ["C205"]
    packed = helper.make_tensor("W", TensorProto.INT4, [2, 3], [1, 2, 3, 4, 5, 6], raw=False)
    assert codes(matmul(packed)) == []  # int4 in int32_data: packed two per value
    cplx = helper.make_tensor("W", TensorProto.COMPLEX64, [2, 3], np.ones(6, np.complex64))
    assert codes(matmul(cplx)) == []  # two floats per element
    strings = helper.make_tensor("W", TensorProto.STRING, [2], [b"a", b"b"])
    strings.raw_data = b"ab"
    assert codes(matmul(strings)) == ["C201"]


def test_dims_negative_overflowing_and_too_big():
    assert codes(matmul(TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2, -3]))) == ["C202"]
    assert codes(matmul(TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[1 << 62, 1 << 62]))) == ["C203"]
    huge = matmul(TensorProto(name="W", data_type=TensorProto.DOUBLE, dims=[1 << 20, 1 << 20]))
    [f] = static_findings(huge, memory=1 << 30)
    assert f.code == "C204" and "8 TiB" in f.message
    assert codes(matmul(TensorProto(name="W", data_type=0, dims=[2]))) == ["C206"]


def test_external_data_locations(tmp_path):
    weights = np.arange(6, dtype=np.float32).tobytes()
    (tmp_path / "w.bin").write_bytes(weights)
    folder = str(tmp_path)
    assert codes(external("w.bin", length="24"), folder=folder) == []
    assert codes(external("./w.bin"), folder=folder) == []
    assert codes(external("/etc/passwd"), folder=folder) == ["C101"]
    assert codes(external("../w.bin"), folder=folder) == ["C102"]
    assert codes(external("a/../../w.bin"), folder=folder) == ["C102"]
    assert codes(external("..\\w.bin"), folder=folder) == ["C102"]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link.bin").symlink_to(tmp_path / "w.bin")
    assert codes(external("sub/link.bin"), folder=folder) == ["C103"]
    os.symlink(tmp_path / "sub", tmp_path / "dirlink")
    assert codes(external("dirlink/x.bin"), folder=folder) == ["C103"]  # a linked folder on the way
    os.link(tmp_path / "w.bin", tmp_path / "hard.bin")
    assert codes(external("hard.bin"), folder=folder) == ["C104"]
    assert codes(external("none.bin"), folder=folder) == ["C106"]
    assert codes(external("sub"), folder=folder) == ["C106"]  # a folder, not a file
    (tmp_path / "x.bin").write_bytes(weights)
    assert codes(external("x.bin", offset="8", length="24"), folder=folder) == ["C107"]
    assert codes(external("x.bin", offset="8"), folder=folder) == ["C107"]  # 16 bytes left, 24 needed
    assert codes(external("x.bin", length="12"), folder=folder) == ["C108"]
    assert codes(external("x.bin", offset="-1"), folder=folder) == ["C110"]
    assert codes(external("x.bin", length="ten"), folder=folder) == ["C110"]
    assert codes(external(""), folder=folder) == ["C106"]
    [f] = static_findings(external("x.bin", junk="1"), folder=folder)
    assert (f.code, f.severity) == ("C110", "warning")
    assert codes(external("x.bin")) == ["C109"]  # bytes without a folder: not verifiable


# -- wiring ---------------------------------------------------------------------------------------
def test_undefined_inputs_cycles_and_order():
    [f] = static_findings(parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { y = Add (x, ghost) }"""))
    assert (f.code, f.node, f.tensor, f.field) == ("C303", "#0 Add", "ghost", "graph.node[0].input[1]")
    cycle = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { a = Add (x, b)  b = Relu (a)  y = Neg (b) }""")
    assert codes(cycle) == ["C304"]
    unsorted = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { y = Neg (a)  a = Relu (x) }""")
    [f] = static_findings(unsorted)
    assert (f.code, f.severity) == ("C307", "warning")
    dup = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { y = Neg (x)  y = Relu (x) }""")
    assert codes(dup) == ["C305"]
    missing_out = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y, float[2] z) { y = Neg (x) }""")
    assert codes(missing_out) == ["C306"]


def test_subgraphs_see_outer_names_and_are_checked():
    ok = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (bool c, float[3] x) => (float[3] y) {
            y = If (c) <then_branch = t () => (float[3] a) { a = Relu (x) },
                        else_branch = e () => (float[3] b) { b = Neg (x) }>
        }""")
    assert codes(ok) == []
    bad = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (bool c, float[3] x) => (float[3] y) {
            y = If (c) <then_branch = t () => (float[3] a) { a = Relu (nowhere) },
                        else_branch = e () => (float[3] b) { b = Neg (x) }>
        }""")
    [f] = static_findings(bad)
    assert f.code == "C303" and f.field == "graph.node[0].attribute[then_branch].g.node[0].input[0]"


def test_recursive_local_functions():
    model = parsed("""<ir_version: 10, opset_import: ["" : 21, "local" : 1]>
        g (float[3] x) => (float[3] y) { y = local.A (x) }
        <domain: "local", opset_import: ["" : 21, "local" : 1]> A (a) => (b) { b = local.B (a) }
        <domain: "local", opset_import: ["" : 21, "local" : 1]> B (a) => (b) { b = local.A (a) }""")
    assert codes(model) == ["C304", "C304"]


# -- operators ------------------------------------------------------------------------------------
def test_schema_arity_and_attributes():
    many = parsed("""<ir_version: 10, opset_import: ["" : 21]> g (float[2] x) => (float[2] y) { y = Relu (x, x) }""")
    assert codes(many) == ["C301"]
    empty_required = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { y = Add (x, "") }""")
    assert codes(empty_required) == ["C301"]
    optional_empty = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2,2] x, float[2,2] w) => (float[2,2] y) { y = Gemm (x, w, "") }""")
    assert codes(optional_empty) == []
    outputs = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { y, z = Relu (x) }""")
    assert codes(outputs) == ["C302"]
    model = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { y = Softmax <axis = 0, colour = 3> (x) }""")
    assert codes(model) == ["C309"]
    wrong_type = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { y = Softmax <axis = 1.5> (x) }""")
    assert codes(wrong_type) == ["C308"]
    required = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { y = Cast (x) }""")
    assert codes(required) == ["C310"]


def test_versions_and_domains():
    relu = """<ir_version: {ir}, opset_import: ["" : {opset}]> g (float[2] x) => (float[2] y) {{ y = Relu (x) }}"""
    assert codes(parsed(relu.format(ir=10, opset=99))) == ["C401"]
    assert codes(parsed(relu.format(ir=99, opset=21))) == ["C405"]
    no_import = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2] x) => (float[2] y) { y = ai.onnx.ml.Normalizer (x) }""")
    assert codes(no_import) == ["C404"]
    unknown = parsed("""<ir_version: 10, opset_import: ["" : 21, "x.y" : 1]>
        g (float[2] x) => (float[2] y) { y = x.y.Thing (x) }""")
    assert codes(unknown) == ["C403"]
    old_gemm = parsed("""<ir_version: 10, opset_import: ["" : 6]>
        g (float[2,2] a, float[2,2] b, float[2,2] c) => (float[2,2] y) { y = Gemm (a, b, c) }""")
    assert codes(old_gemm) == ["C402"]  # onnxruntime's Gemm kernels start at opset 7


def test_rules_for_public_crash_reports():
    gemm = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[2,3] a, float[3] b, float[2] c) => (float y) { y = Gemm <transA = 7> (a, b, c) }""")
    found = static_findings(gemm)
    assert [f.code for f in found] == ["C311", "C312"]
    assert found[0].field == "graph.node[0].attribute[transA]" and found[1].field == "graph.node[0].input[1]"
    conv = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[1,2,5,5] x, float[3,2,3,3] w) => (float y) { y = Conv <kernel_shape = [3], group = 0> (x, w) }""")
    assert codes(conv) == ["C311", "C311"]
    conv_rank = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g (float[1,2,5,5] x, float[3,2,3] w) => (float y) { y = Conv (x, w) }""")
    assert codes(conv_rank) == ["C312"]
    fill = parsed("""<ir_version: 10, opset_import: ["" : 21]>
        g () => (float y) { s = Constant <value = int64[2] {1048576, 1048576}> ()  y = ConstantOfShape (s) }""")
    assert codes(fill, memory=1 << 30) == ["C204"]
    assert codes(fill, memory=1 << 50) == []


# -- no false alarms ------------------------------------------------------------------------------
def test_valid_models_have_no_findings(penguins):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

    df = penguins.dropna(subset=["species"])
    y = df.pop("species")
    pipe = make_pipeline(ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["bill_length_mm", "body_mass_g"]),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         ["island", "sex"]),
    ]), RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)).fit(df, y)
    model = onegraph.build(pipe, None, df)
    assert static_findings(model) == []
    for name, data in fuzz.seed_models().items():
        assert static_findings(onnx.load_from_string(data)) == [], name


def test_every_code_is_documented():
    for code, (name, severity, meaning) in CODES.items():
        assert code[0] == "C" and name and severity in ("error", "warning") and meaning
    with pytest.raises(ValueError):
        Finding("C999", "x", "graph")


# -- property: the static checks never raise, whatever the fields hold ---------------------------
SEEDS = {name: onnx.load_from_string(data) for name, data in fuzz.seed_models().items()}


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(sorted(SEEDS)), rnd=st.randoms(use_true_random=False), n=st.integers(1, 4))
def test_static_checks_return_findings_for_any_field_mutation(seed, rnd, n, tmp_path_factory):
    model = onnx.ModelProto()
    model.CopyFrom(SEEDS[seed])
    mutator = fuzz.Mutator(random.Random(rnd.random()))
    for _ in range(n):
        _, mutate = mutator.rng.choice(mutator._field)
        mutate(model)
    found = static_findings(model, folder=str(tmp_path_factory.getbasetemp()), memory=1 << 30)
    assert all(isinstance(f, Finding) and f.field for f in found)
