"""Parameters of a model: kinds, selection, get / set, the structural fingerprint, the delta file format, and
how each kind is merged (floats averaged in float64 like numpy; integer and quantized values exchanged
exactly, never averaged), on a model mixing float, float16, int64 and int8-quantized initializers."""

from __future__ import annotations

import json

import federated_models as fm
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from safetensors import safe_open

import onegraph.io
from onegraph import errors as og_errors
from onegraph import federated as fed
from onegraph.errors import FederatedError
from onegraph.federated.aggregate import chunks
from onegraph.meta import model_hash, read_metadata, set_metadata

X = np.random.default_rng(7).normal(size=(32, fm.FEATURES)).astype(np.float32)


def _save(tmp_path, name, proto) -> str:
    path = tmp_path / name
    onnx.save(proto, path)
    return str(path)


def _client(seed: int, base: dict[str, np.ndarray], **changes) -> dict[str, np.ndarray]:
    """The base values with bias and gamma trained (moved) by a client."""
    rng = np.random.default_rng(seed)
    values = {k: v.copy() for k, v in base.items()}
    values["bias"] = (base["bias"] + rng.normal(scale=0.3, size=base["bias"].shape)).astype(np.float32)
    values["gamma"] = (base["gamma"].astype(np.float32) + rng.normal(scale=0.05, size=3)).astype(np.float16)
    values.update(changes)
    return values


def test_kinds_and_the_default_selection():
    listed = {p.name: p for p in fed.list_parameters(fm.model(), trusted=True)}
    assert {n: p.kind for n, p in listed.items()} == {"w_q": "quantized", "w_scale": "quantized", "w_zp": "quantized",
                                                       "bias": "float", "gamma": "float", "shape": "integer"}
    assert [n for n, p in listed.items() if p.exchanged] == ["bias", "gamma"]  # float scale of a quantizer: no
    assert listed["gamma"].dtype == "float16" and listed["w_q"].shape == (fm.FEATURES, fm.UNITS)
    assert listed["w_q"].size == fm.FEATURES * fm.UNITS


def test_selection_by_pattern_and_by_metadata():
    model = fm.model()
    assert [p.name for p in fed.list_parameters(model, ["w_*"]) if p.exchanged] == ["w_q", "w_scale", "w_zp"]
    with pytest.raises(FederatedError, match="'nothing\\*' matches no initializer"):
        fed.list_parameters(model, ["nothing*"])
    marked = fed.mark_trainable(model, ["bias"])
    tl = read_metadata(marked, trusted=True).fields["transfer_learning"]
    assert tl == {"base_model": model_hash(model), "frozen": [], "trainable": ["bias"]}
    assert [p.name for p in fed.list_parameters(marked) if p.exchanged] == ["bias"]
    frozen = set_metadata(model, {"transfer_learning": {"base_model": "m", "frozen": ["gamma"]}}, trusted=True)
    assert [p.name for p in fed.list_parameters(frozen) if p.exchanged] == ["bias"]
    with pytest.raises(FederatedError, match="'gamma' is selected but .* frozen") as info:
        fed.list_parameters(frozen, ["*a"])
    assert info.value.parameter == "gamma"


def test_get_and_set_copy_and_never_touch_the_input():
    model = fm.model()
    before = model.SerializeToString()
    got = fed.get_parameters(model, ["*"])
    for name, value in fm.parameters().items():
        np.testing.assert_array_equal(got[name], value)
        assert got[name].dtype == value.dtype
    new_bias = np.array([1.0, 2.0, 3.0])  # float64 in, cast to the initializer's float
    updated = fed.set_parameters(model, {"bias": new_bias, "w_zp": np.int64(5)})
    assert model.SerializeToString() == before
    values = {t.name: numpy_helper.to_array(t) for t in updated.graph.initializer}
    assert values["bias"].dtype == np.float32 and values["bias"].tolist() == [1.0, 2.0, 3.0]
    assert values["w_zp"].dtype == np.int8 and values["w_zp"].shape == () and values["w_zp"] == 5
    np.testing.assert_array_equal(ReferenceEvaluator(updated).run(None, {"x": X})[0],
                                  fm.forward({**fm.parameters(), **values}, X))


@pytest.mark.parametrize("values, words", [
    ({"nope": np.zeros(3)}, "has no initializer 'nope'"),
    ({"bias": np.zeros(4)}, "'bias': the value has shape [4], the model has [3]"),
    ({"bias": np.array([0.0, np.nan, 1.0])}, "'bias': the value holds NaN or infinity"),
    # finite in float64, beyond float32: it was written as inf, with only numpy's RuntimeWarning
    ({"bias": np.array([0.0, 1e300, 1.0])}, "'bias': the value 1e+300 at [1] is beyond the range of float"),
    ({"w_zp": np.float32(2.5)}, "'w_zp' is quantized (int8): the values do not convert exactly"),
    ({"shape": np.array([-1.0, 3.5])}, "'shape' is integer (int64): the values do not convert exactly"),
])
def test_set_refuses_naming_the_parameter(values, words):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one error, no numpy warning before it
        with pytest.raises(FederatedError) as info:
            fed.set_parameters(fm.model(), values)
    assert words in str(info.value)
    assert info.value.parameter == next(iter(values))


def test_the_fingerprint_sees_structure_not_values_or_metadata():
    base = fed.fingerprint(fed.load(fm.model()).model)
    other_values = fm.model(_client(1, fm.parameters()))
    tagged = set_metadata(other_values, {"author": "Ada"}, trusted=True)
    assert fed.fingerprint(fed.load(tagged).model) == base
    assert fed.fingerprint(fed.load(fm.model(units=4)).model) != base
    assert fed.fingerprint(fed.load(fm.model(extra_node=True)).model) != base
    cast16 = fm.model()
    cast16.graph.node[3].attribute[0].i = onnx.TensorProto.BFLOAT16  # an attribute value is structure
    assert fed.fingerprint(fed.load(cast16).model) != base


def test_delta_files_describe_themselves(tmp_path):
    base = _save(tmp_path, "base.onnx", fm.model())
    local = fm.model(_client(1, fm.parameters()))
    header = fed.make_delta(local, base, tmp_path / "d.safetensors", samples=12, round=3, client="ward 7",
                            select_patterns=["bias", "gamma", "w_*"])
    with safe_open(tmp_path / "d.safetensors", framework="numpy") as f:  # safetensors alone reads it
        meta = f.metadata()
        assert meta["format"] == "onegraph.federated.delta" and meta["format_version"] == "1"
        assert meta["base_model"] == model_hash(base) == header.base_model
        assert meta["fingerprint"] == fed.fingerprint(fed.load(base).model)
        assert (meta["samples"], meta["round"], meta["client"]) == ("12", "3", "ward 7")
        assert json.loads(meta["parameters"]) == {
            "w_q": {"dtype": "int8", "mode": "exact"}, "w_scale": {"dtype": "float", "mode": "exact"},
            "w_zp": {"dtype": "int8", "mode": "exact"}, "bias": {"dtype": "float", "mode": "delta"},
            "gamma": {"dtype": "float16", "mode": "delta"}}
        assert sorted(f.keys()) == ["bias", "gamma", "w_q", "w_scale", "w_zp"]
        bias, gamma = f.get_tensor("bias"), f.get_tensor("gamma")
        np.testing.assert_array_equal(f.get_tensor("w_q"), fm.parameters()["w_q"])
    client, base_values = _client(1, fm.parameters()), fm.parameters()
    np.testing.assert_array_equal(bias, client["bias"] - base_values["bias"])
    assert gamma.dtype == np.float32  # a float16 difference is widened, not rounded to 16 bits
    np.testing.assert_array_equal(gamma, client["gamma"].astype(np.float32) - base_values["gamma"].astype(np.float32))


def test_mixed_dtypes_merge_like_numpy_and_run(tmp_path):
    base_values = fm.parameters()
    base = _save(tmp_path, "base.onnx", fm.model())
    samples = [5, 7, 11]
    clients = [_client(seed, base_values) for seed in (1, 2, 3)]
    deltas = []
    for i, values in enumerate(clients):
        path = tmp_path / f"d{i}.safetensors"
        fed.make_delta(fm.model(values), base, path, samples=samples[i], select_patterns=["*"])
        deltas.append(path)
    merged = fed.average(base, deltas, path=tmp_path / "avg.onnx")
    got = {t.name: numpy_helper.to_array(t) for t in merged.graph.initializer}
    expected = dict(base_values)
    for name in ("bias", "gamma"):
        b = base_values[name].astype(np.float32)
        updates = np.stack([c[name].astype(np.float32) - b for c in clients])
        mean = np.average(updates, axis=0, weights=samples)  # float64, as numpy promotes
        expected[name] = (base_values[name].astype(np.float64) + mean).astype(base_values[name].dtype)
    for name, value in expected.items():
        assert got[name].dtype == value.dtype, name
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    np.testing.assert_array_equal(ReferenceEvaluator(merged).run(None, {"x": X})[0], fm.forward(expected, X))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # no QDQ fusion of x
    y = ort.InferenceSession(merged.SerializeToString(), options).run(None, {"x": X})[0]
    np.testing.assert_allclose(y, fm.forward(expected, X), rtol=2e-3, atol=2e-2)  # float16 steps


def test_exact_parameters_are_never_averaged(tmp_path):
    base_values = fm.parameters()
    base = _save(tmp_path, "base.onnx", fm.model())
    requantized = base_values["w_q"].copy()
    requantized[0, 0] += 1
    same = [_client(1, base_values, w_q=requantized), _client(2, base_values, w_q=requantized)]
    paths = []
    for i, values in enumerate(same):
        paths.append(tmp_path / f"d{i}.safetensors")
        fed.make_delta(fm.model(values), base, paths[-1], samples=3, select_patterns=["w_q", "bias", "gamma"])
    merged = {t.name: numpy_helper.to_array(t) for t in fed.average(base, paths).graph.initializer}
    np.testing.assert_array_equal(merged["w_q"], requantized)  # all clients agree: taken as is
    odd = tmp_path / "odd.safetensors"
    fed.make_delta(fm.model(_client(3, base_values)), base, odd, samples=3, select_patterns=["w_q", "bias", "gamma"])
    for method in ("fedavg", "median"):
        with pytest.raises(FederatedError, match="never averaged") as info:
            fed.average(base, [*paths, odd], method=method, path=tmp_path / "out.onnx")
        assert info.value.parameter == "w_q" and info.value.file == str(odd)
    assert not (tmp_path / "out.onnx").exists()


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=4), budget=st.integers(1, 40))
def test_chunks_cover_every_element_once_contiguously(shape, budget):
    shape = tuple(shape)
    seen = np.zeros(shape, dtype=np.int64)
    for index in chunks(shape, budget):
        assert seen[index].size <= budget
        flat = np.arange(seen.size).reshape(shape)[index].ravel()
        assert flat.size == 0 or np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size))  # one read
        seen[index] += 1
    assert (seen == 1).all()


def test_non_finite_constants_are_not_exchanged_by_default(penguins_onnx, tmp_path):
    """A model onegraph builds holds NaN constants (the imputer's missing-value marker): exchanged by default,
    every delta of it was refused ("holds NaN or infinite values ... retrain the client"). A small float
    initializer holding NaN or ±inf is a constant, exchanged only when named; the fitted values are exchanged
    and a delta of the model against itself holds zeros for them."""
    listed = {p.name: p for p in fed.list_parameters(penguins_onnx, trusted=True)}
    constants = [name for name, p in listed.items() if p.kind == "float" and not p.exchanged]
    assert constants and all("NaN or ±inf" in listed[n].why for n in constants)
    values = {n: numpy_helper.to_array(t) for t in onnx.load(penguins_onnx).graph.initializer
              for n in [t.name] if n in listed}
    assert all(not np.isfinite(values[n]).all() for n in constants)
    assert all(np.isfinite(values[n]).all() for n, p in listed.items() if p.exchanged)
    header = fed.make_delta(penguins_onnx, penguins_onnx, tmp_path / "d.safetensors", samples=3, trusted=True)
    assert set(header.parameters) == {n for n, p in listed.items() if p.exchanged}
    with pytest.raises(FederatedError, match="NaN or infinite"):  # named, it is exchanged and refused by name
        fed.make_delta(penguins_onnx, penguins_onnx, tmp_path / "e.safetensors", samples=3, trusted=True,
                       select_patterns=[constants[0]])


def test_an_apply_whose_sum_overflows_the_parameter_type_is_one_error(tmp_path):
    """Two deltas each near float32's maximum: their sum overflows float32. The refusal was preceded by numpy's
    RuntimeWarning (three lines of stderr); it is the one error now. A working memory below one byte is
    refused too (0 and -5 were taken)."""
    import warnings

    values = fm.parameters()
    values["bias"] = values["bias"].copy()
    values["bias"][0] = 3.3e38
    base, local = tmp_path / "base.onnx", tmp_path / "local.onnx"
    onegraph.io.save_model(fm.model(), base)
    onegraph.io.save_model(fm.model(values), local)
    deltas = [tmp_path / f"d{i}.safetensors" for i in range(2)]
    for delta in deltas:
        fed.make_delta(local, base, delta, samples=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FederatedError, match="'bias': the merged value overflows float"):
            fed.apply_deltas(base, deltas, path=tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()
    for memory in (0, -5, 1.5):
        with pytest.raises(og_errors.ConfigError, match=rf"memory={memory!r} is not a whole number"):
            fed.apply_deltas(base, deltas[:1], memory=memory)
