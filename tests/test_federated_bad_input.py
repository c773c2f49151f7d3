"""Bad input to the federated exchange is refused naming the parameter and the file, nothing is written, and the
base model file is never modified: deltas from another architecture or base model, shapes and dtypes that
differ, NaN and infinity, truncated files, files that are not deltas, mismatched rounds and parameter sets."""

from __future__ import annotations

import hashlib
import json
import shutil

import federated_models as fm
import numpy as np
import onnx
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

from onegraph import federated as fed
from onegraph.errors import FederatedError


def _client(seed: int) -> dict[str, np.ndarray]:
    values = fm.parameters()
    rng = np.random.default_rng(seed)
    values["bias"] = (values["bias"] + rng.normal(size=3)).astype(np.float32)
    values["gamma"] = (values["gamma"] + rng.normal(scale=0.1, size=3)).astype(np.float16)
    return values


@pytest.fixture
def setup(tmp_path):
    base = tmp_path / "base.onnx"
    onnx.save(fm.model(), base)
    deltas = []
    for i in range(3):
        deltas.append(tmp_path / f"d{i}.safetensors")
        fed.make_delta(fm.model(_client(i)), base, deltas[-1], samples=10 + i)
    digest = hashlib.sha256(base.read_bytes()).hexdigest()
    yield base, deltas, tmp_path
    assert hashlib.sha256(base.read_bytes()).hexdigest() == digest  # never modified, whatever happened


def _forge(good, path, *, tensors=None, metadata=None):
    """A copy of the delta ``good`` with some tensors or header entries replaced."""
    with safe_open(good, framework="numpy") as f:
        meta = dict(f.metadata())
        values = {k: f.get_tensor(k) for k in f.keys()}
    values.update(tensors or {})
    meta.update(metadata or {})
    save_file(values, path, metadata=meta)
    return path


def _refused(base, deltas, out, *, parameter=None, file=None, words="", method="fedavg", memory=64 << 20):
    with pytest.raises(FederatedError) as info:
        fed.average(base, deltas, method=method, path=out, memory=memory)
    assert words in str(info.value), str(info.value)
    if parameter is not None:
        assert info.value.parameter == parameter and repr(parameter) in str(info.value)
    if file is not None:
        assert info.value.file == str(file) and str(file) in str(info.value)
    assert not out.exists()
    return info.value


def test_a_delta_from_another_architecture(setup):
    base, deltas, tmp = setup
    other_base = tmp / "wide.onnx"
    onnx.save(fm.model(units=4), other_base)
    wide = tmp / "wide.safetensors"
    fed.make_delta(fm.model(units=4), other_base, wide, samples=1, select_patterns=["bias"])
    _refused(base, [deltas[0], wide], tmp / "out.onnx", parameter="bias", file=wide,
             words="has shape [4], not the base's [3]")
    relu_base = tmp / "relu.onnx"
    onnx.save(fm.model(extra_node=True), relu_base)
    relu = tmp / "relu.safetensors"
    fed.make_delta(fm.model(_client(6), extra_node=True), relu_base, relu, samples=1)
    _refused(base, [relu], tmp / "out.onnx", file=relu, words="made for another architecture")
    with pytest.raises(FederatedError, match="different architectures: graph node 6 .*-> \\['r'\\]") as info:
        fed.make_delta(fm.model(extra_node=True), base, tmp / "x.safetensors", samples=1)
    with pytest.raises(FederatedError, match="graph initializer w_q int8 \\[4,4\\] \\| .* w_q int8 \\[4,3\\]") as info:
        fed.make_delta(fm.model(units=4), base, tmp / "x.safetensors", samples=1)
    assert info.value.parameter == "w_q" and not (tmp / "x.safetensors").exists()


def test_a_delta_against_another_base_model(setup):
    base, deltas, tmp = setup
    other = tmp / "other.onnx"
    onnx.save(fm.model(_client(9)), other)
    stale = tmp / "stale.safetensors"
    fed.make_delta(fm.model(_client(1)), other, stale, samples=4)
    _refused(base, [deltas[0], stale], tmp / "out.onnx", file=stale, words="computed against another base model")


@pytest.mark.parametrize("name, value, words", [
    ("bias", np.zeros(4, np.float32), "has shape [4], not the base's [3]"),
    ("gamma", np.zeros((1, 3), np.float32), "has shape [1, 3], not the base's [3]"),
    ("bias", np.zeros(3, np.float64), "is stored as F64; a float parameter in mode delta is stored as float32"),
])
def test_shape_and_dtype_mismatches(setup, name, value, words):
    base, deltas, tmp = setup
    bad = _forge(deltas[1], tmp / "bad.safetensors", tensors={name: value})
    _refused(base, [deltas[0], bad], tmp / "out.onnx", parameter=name, file=bad, words=words)


def test_a_header_that_lies_about_the_dtype(setup):
    base, deltas, tmp = setup
    described = {"bias": {"dtype": "double", "mode": "delta"}, "gamma": {"dtype": "float16", "mode": "delta"}}
    bad = _forge(deltas[1], tmp / "bad.safetensors", tensors={"bias": np.zeros(3)},
                 metadata={"parameters": json.dumps(described)})
    _refused(base, [bad], tmp / "out.onnx", parameter="bias", file=bad, words="has dtype double, not the base's float")


@pytest.mark.parametrize("bad_value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("method", ["fedavg", "median", "trimmed-mean"])
@pytest.mark.parametrize("memory", [64 << 20, 100])  # 100 bytes: one coordinate per chunk
def test_nan_and_infinity_in_a_delta(setup, bad_value, method, memory):
    base, deltas, tmp = setup
    with safe_open(deltas[2], framework="numpy") as f:
        gamma = f.get_tensor("gamma").copy()
    gamma[1] = bad_value
    bad = _forge(deltas[2], tmp / "bad.safetensors", tensors={"gamma": gamma})
    error = _refused(base, [deltas[0], deltas[1], bad], tmp / "out.onnx", parameter="gamma", file=bad,
                     words="holds NaN or infinite values (first at [1]:", method=method, memory=memory)
    assert str(bad) in str(error)


def test_nan_in_a_local_model_is_refused_before_any_file_is_written(setup):
    base, _, tmp = setup
    values = _client(1)
    values["bias"][2] = np.nan
    with pytest.raises(FederatedError, match=r"'bias' in the local model holds NaN or infinite values "
                                             r"\(first at \[2\]: nan\)") as info:
        fed.make_delta(fm.model(values), base, tmp / "x.safetensors", samples=1)
    assert info.value.parameter == "bias" and not (tmp / "x.safetensors").exists()


@pytest.mark.parametrize("cut", [1, 8, 300])
def test_a_truncated_delta(setup, cut):
    base, deltas, tmp = setup
    bad = tmp / "cut.safetensors"
    shutil.copy(deltas[1], bad)
    data = bad.read_bytes()
    bad.write_bytes(data[:-cut] if cut < len(data) else data[:5])
    with pytest.raises(FederatedError) as info:
        fed.apply_deltas(base, [deltas[0], bad], path=tmp / "out.onnx")
    assert info.value.file == str(bad) and str(bad) in str(info.value)
    if cut < 300:  # the data is cut: the header names what is missing
        assert "truncated" in str(info.value) and info.value.parameter == "gamma"
    assert not (tmp / "out.onnx").exists()


def test_files_that_are_not_deltas(setup):
    base, deltas, tmp = setup
    plain = tmp / "plain.safetensors"
    save_file({"bias": np.zeros(3, np.float32)}, plain)
    _refused(base, [plain], tmp / "out.onnx", file=plain, words="is not an onegraph delta")
    _refused(base, [base], tmp / "out.onnx", file=base, words="is not a readable safetensors file")
    _refused(base, [tmp / "missing.safetensors"], tmp / "out.onnx", file=tmp / "missing.safetensors",
             words="does not exist")
    newer = _forge(deltas[0], tmp / "v9.safetensors", metadata={"format_version": "9"})
    _refused(base, [newer], tmp / "out.onnx", file=newer, words="format version '9'")


def test_deltas_that_do_not_belong_together(setup):
    base, deltas, tmp = setup
    round2 = _forge(deltas[1], tmp / "r2.safetensors", metadata={"round": "2"})
    _refused(base, [deltas[0], round2], tmp / "out.onnx", file=round2, words="is for round 2")
    bias_only = tmp / "bias.safetensors"
    fed.make_delta(fm.model(_client(1)), base, bias_only, samples=1, select_patterns=["bias", "gamma", "w_zp"])
    _refused(base, [deltas[0], bias_only], tmp / "out.onnx", parameter="w_zp", file=bias_only,
             words="exchange different parameters")
    _refused(base, [deltas[0], deltas[1], deltas[0]], tmp / "out.onnx", file=deltas[0], words="is given twice")
    zero = [_forge(d, tmp / f"z{i}.safetensors", metadata={"samples": "0"}) for i, d in enumerate(deltas[:2])]
    _refused(base, zero, tmp / "out.onnx", words="every delta has 0 samples")
    fed.average(base, zero, method="median", path=tmp / "median.onnx")  # no weights needed


def test_a_round_that_is_already_merged(setup):
    base, deltas, tmp = setup
    merged = tmp / "g1.onnx"
    fed.average(base, deltas, path=merged)
    again = tmp / "again.safetensors"
    fed.make_delta(fm.model(_client(4)), merged, again, samples=1, round=1)
    _refused(merged, [again], tmp / "out.onnx", file=again, words="already the result of round 1")
    fed.make_delta(fm.model(_client(4)), merged, again, samples=1)  # round defaults to 2
    fed.average(merged, [again], path=tmp / "g2.onnx")


def test_the_output_is_atomic_and_checked_first(setup):
    base, deltas, tmp = setup
    out = tmp / "out.onnx"
    out.write_bytes(b"previous")
    with safe_open(deltas[2], framework="numpy") as f:
        bias = f.get_tensor("bias").copy()
    bias[0] = np.nan
    bad = _forge(deltas[2], tmp / "bad.safetensors", tensors={"bias": bias})
    with pytest.raises(FederatedError):
        fed.average(base, [deltas[0], bad], path=out)
    assert out.read_bytes() == b"previous" and [p.name for p in tmp.glob(".out.onnx.*")] == []
    with pytest.raises(Exception, match="is a folder"):
        fed.average(base, deltas, path=tmp)


def test_trim_without_trimmed_mean_is_refused(setup):
    """``--trim 0.1`` with FedAvg wrote "fedavg of 2 deltas" without a word: the cut asked for was not made."""
    base, deltas, tmp = setup
    with pytest.raises(FederatedError, match="trim 0.1 applies to --method trimmed-mean, not fedavg"):
        fed.average(base, deltas, trim=0.1, path=tmp / "out.onnx")
    assert not (tmp / "out.onnx").exists()
