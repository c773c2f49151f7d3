"""Safe loading: every reader pre-checks a model in the checking process once per content, trusted files
skip it, models build() made are trusted, and a model with external data opens from its folder."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import onnx
import pytest

import onegraph
from onegraph.check import guard
from onegraph.check.guard import UnsafeModelError
from onegraph.check.loader import load_model
from onegraph.inspect import describe

CORPUS = Path(__file__).parent / "data" / "malformed"


@pytest.fixture
def checks(monkeypatch):
    """Counts the pre-checks, from a clean cache."""
    guard.clear()
    calls = []
    check_module = importlib.import_module("onegraph.check.run")  # the module: onegraph.check.check is the function
    real = check_module.check

    def counting(model, **kw):
        calls.append(tuple(kw["stages"]))
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
    assert checks == [("parse", "static", "checker", "runtime")]
    onegraph.Session(path)
    load_model(path)  # loading is covered by the run check already
    describe(path)
    assert len(checks) == 1
    np.testing.assert_allclose(session.run(x)["probabilities"],
                               onegraph.Session(proto).run(x)["probabilities"])
    (tmp_path / "other").mkdir()
    copy = tmp_path / "other" / "copy.onnx"
    copy.write_bytes(path.read_bytes())
    load_model(copy)  # same content, other folder: checked again, for loading only
    assert checks[-1] == ("parse", "static", "checker")


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
    assert checks == [("parse", "static", "checker", "runtime")]


def _memory_forgotten() -> None:
    """What a new process knows: nothing in memory, the cache folder as it is."""
    with guard._LOCK:
        guard._MEMORY.clear()


def test_a_passed_check_is_remembered_across_processes(checks, tmp_path, penguins_model):
    proto, x = penguins_model
    edited = onnx.ModelProto.FromString(proto.SerializeToString())
    edited.doc_string = "not build's bytes"
    path = tmp_path / "m.onnx"
    onnx.save_model(edited, path)
    onegraph.Session(path)
    _memory_forgotten()
    onegraph.Session(path)  # the cache folder remembers it
    assert len(checks) == 1
    entry = guard.cache_folder() / f"{guard._key(path.read_bytes(), str(path.resolve().parent))}.json"
    entry.write_text(entry.read_text().replace("onegraph ", "onegraph 0.0.0-other "))  # another version checked
    _memory_forgotten()
    onegraph.Session(path)
    assert len(checks) == 2


def test_an_external_file_swapped_after_the_check_is_checked_again(checks, tmp_path, penguins_model):
    """Time of check / time of use: the check is remembered for the external data files it read, as they
    were; a hard link to a file outside the folder put in place of one is refused (C104), not read."""
    proto, x = penguins_model
    folder = tmp_path / "ext"
    folder.mkdir()
    copy = onnx.ModelProto.FromString(proto.SerializeToString())
    onnx.save_model(copy, folder / "m.onnx", save_as_external_data=True, location="weights.bin", size_threshold=128)
    onegraph.Session(folder / "m.onnx")
    assert len(checks) == 1
    outside = tmp_path / "secret.bin"
    outside.write_bytes((folder / "weights.bin").read_bytes())
    (folder / "weights.bin").unlink()
    (folder / "weights.bin").hardlink_to(outside)
    with pytest.raises(UnsafeModelError, match="C104"):
        onegraph.Session(folder / "m.onnx")
    assert len(checks) == 2
    _memory_forgotten()
    with pytest.raises(UnsafeModelError, match="C104"):  # nor does the cache folder believe the old check
        onegraph.Session(folder / "m.onnx")


def test_in_memory_models_are_the_callers_own(checks, penguins_model):
    proto, x = penguins_model
    edited = onnx.ModelProto.FromString(proto.SerializeToString())
    edited.doc_string = "edited in memory"
    onegraph.Session(edited)
    load_model(edited)
    assert checks == []


def test_the_check_cache_reads_each_installed_packages_version_as_importlib_metadata_does():
    """The remembered checks are keyed by the checking code's versions, read from each distribution's header
    lines instead of importlib.metadata's whole e-mail parse: the same answer for every installed package."""
    from importlib import metadata

    from onegraph.check.guard import _version

    dists = list(metadata.distributions())
    assert len(dists) > 50
    for dist in dists:
        assert _version(dist) == dist.version, dist.metadata["Name"]
