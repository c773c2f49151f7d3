"""Safe loading: every reader pre-checks a model in the checking process once per content, trusted files
skip it, models build() made are trusted, and a model with external data opens from its folder."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import onnx
import pytest

import onegraph
from onegraph.inspect import describe
from onegraph.io import load_model
from onegraph.verify import guard
from onegraph.verify.guard import UnsafeModelError

CORPUS = Path(__file__).parent / "data" / "malformed"


@pytest.fixture
def checks(monkeypatch):
    """Counts the pre-checks, from a clean cache."""
    guard.clear()
    calls = []
    check_module = importlib.import_module("onegraph.verify.check")  # the module: onegraph.verify.check is the function
    real = check_module.check

    def counting(model, **kw):
        calls.append(kw["stages"])
        return real(model, **kw)

    monkeypatch.setattr(check_module, "check", counting)
    yield calls
    guard.clear()


@pytest.fixture
def penguins_model(penguins, checks):
    """Built after the pre-check cache was cleared: build's trust in its own output is part of the test."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from onegraph.frame import SimpleImputer, StandardScaler

    df = penguins.dropna(subset=["species"])
    x = df[["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]]
    pipe = make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression()).fit(x, df["species"])
    return onegraph.build(pipe, None, x), x


def test_each_content_is_checked_once_and_again_when_it_changes(checks, tmp_path, penguins_model):
    proto, x = penguins_model
    path = tmp_path / "m.onnx"
    data = proto.SerializeToString()
    path.write_bytes(data + b"")  # the same bytes as build's output: trusted, no check
    onegraph.Session(path)
    assert checks == []
    edited = onnx.load_from_string(data)
    edited.doc_string = "edited"
    path.write_bytes(edited.SerializeToString())
    session = onegraph.Session(path)
    assert checks == [("parse", "static", "runtime")]
    onegraph.Session(path)
    load_model(path)  # parse is covered by the run check already
    describe(path)
    assert len(checks) == 1
    np.testing.assert_allclose(session.run(x)["probabilities"],
                               onegraph.Session(proto).run(x)["probabilities"])
    (tmp_path / "other").mkdir()
    copy = tmp_path / "other" / "copy.onnx"
    copy.write_bytes(path.read_bytes())
    load_model(copy)  # same content, other folder: checked again, for parsing only
    assert checks[-1] == ("parse",)


def test_trusted_skips_the_pre_check(checks, tmp_path):
    load_model(CORPUS / "valid.onnx", trusted=True)
    onegraph.Session(CORPUS / "valid.onnx", trusted=True)
    assert checks == []
    with pytest.raises(onegraph.errors.ModelFileError, match="not a valid ONNX model"):
        load_model(CORPUS / "truncated.onnx", trusted=True)  # parsed in-process: the caller asked for it


def test_readers_name_the_finding(checks):
    for reader in (onegraph.Session, lambda p: onegraph.score(p, {"x": [1.0]}), describe):
        with pytest.raises(UnsafeModelError) as info:
            reader(CORPUS / "truncated.onnx")
        assert info.value.findings[0].code == "C001" and "not a valid ONNX model" in str(info.value)
    with pytest.raises(UnsafeModelError) as info:
        onegraph.score(CORPUS / "traversal-dotdot.onnx", {"X": [[1.0, 2.0]]})
    assert "C102" in str(info.value) and "onegraph check" in str(info.value)


def test_external_data_opens_from_the_model_folder(checks, tmp_path, penguins_model, monkeypatch):
    proto, x = penguins_model
    folder = tmp_path / "ext"
    folder.mkdir()
    copy = onnx.ModelProto.FromString(proto.SerializeToString())  # save_model moves the data out in place
    onnx.save_model(copy, folder / "m.onnx", save_as_external_data=True, location="weights.bin", size_threshold=128)
    stored = onnx.load(folder / "m.onnx", load_external_data=False).graph.initializer
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in stored)
    # onnx's size_threshold counts the Python object: only the [4, 3] coefficients (96 bytes) go out; onnxruntime
    # cannot infer shapes from external shape tensors (Unsqueeze axes)
    monkeypatch.chdir(tmp_path)  # not the model's folder: locations are resolved against the file's own
    got = onegraph.score(folder / "m.onnx", x)
    expected = onegraph.score(proto, x)
    np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())
    assert checks == [("parse", "static", "runtime")]
