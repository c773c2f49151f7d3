"""The malformed-model corpus: each public crash class is reported with its code, the test process survives,
and every onegraph reader refuses the file with an error naming the finding."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import onnx
import pytest

import onegraph
from onegraph.check.guard import UnsafeModelError
from onegraph.check.run import check, check_many
from onegraph.errors import DataError, MetadataError, ModelFileError

CORPUS = Path(__file__).parent / "data" / "malformed"
MANIFEST = json.loads((CORPUS / "corpus.json").read_text())
#: the crash classes issue 7 names, each of which needs a reproducer
PUBLIC_CLASSES = {"path traversal", "symbolic link", "hard link", "huge declared dims", "Gemm with garbage",
                  "Conv with a rank-0", "more inputs than its schema", "Imputer without input", "truncated file",
                  "random bytes"}


def _make_corpus():
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def corpus_paths(tmp_path_factory) -> dict[str, Path]:
    """Every reproducer: the committed files, and the link cases made in a scratch folder."""
    paths = {name: CORPUS / name for name, entry in MANIFEST.items() if "made_by" not in entry}
    paths.update(_make_corpus().make_links(tmp_path_factory.mktemp("links")))
    return paths


@pytest.fixture(scope="module")
def reports(corpus_paths) -> dict[str, object]:
    names = list(corpus_paths)
    return dict(zip(names, check_many([corpus_paths[n] for n in names])))


def test_every_public_crash_class_has_a_reproducer():
    classes = " | ".join(entry["class"] for entry in MANIFEST.values())
    missing = [c for c in PUBLIC_CLASSES if c not in classes]
    assert not missing, f"no reproducer for {missing}"


def test_committed_files_are_what_the_script_makes(tmp_path):
    _make_corpus().main(tmp_path)
    for name in [*MANIFEST, "valid.onnx", "weights.bin"]:
        if "made_by" in MANIFEST.get(name, {}):
            continue
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), f"{name}: rerun make_corpus.py"
    assert json.loads((tmp_path / "corpus.json").read_text()) == MANIFEST


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_reproducer_is_reported_with_its_code(name, reports):
    report = reports[name]
    expected = MANIFEST[name]["codes"]
    if MANIFEST[name].get("onnx", onnx.__version__) != onnx.__version__:
        expected = [c for c in report.codes() if c in ("C003", "C501", "C502")][:1]  # the crash may be fixed
    assert report.checked, str(report)
    assert report.exit_code == 1
    assert set(expected) <= set(report.codes()), f"{name}: expected {expected}\n{report}"
    for f in report.findings:
        assert f.field and f.message and f.severity in ("error", "warning", "info")
        if f.code in expected and f.code.startswith(("C1", "C2", "C3")):
            assert f.node or f.tensor, f"{f} names neither node nor tensor"


def test_valid_model_is_clean():
    report = check(CORPUS / "valid.onnx")
    assert report.ok and report.exit_code == 0, str(report)
    assert report.stages == {"parse": "ok", "static": "ok", "checker": "ok", "runtime": "ok"}


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_readers_refuse_the_reproducer(name, corpus_paths, reports):
    expected = MANIFEST[name]["codes"][0]
    # C601 / C602 do not block opening (findings.blocks): the reader that cannot take the model refuses it
    if expected == "C601":  # the metadata key: scoring refuses it with an error naming the key, no traceback
        with pytest.raises(MetadataError) as info:
            onegraph.Session(corpus_paths[name])
        assert info.value.key.startswith("org.onegraph.")
        assert info.value.key in {f.field.removeprefix("metadata_props[").removesuffix("].value")
                                  for f in reports[name].findings}
        return
    if expected == "C602":  # generated feeds refuse the input before allocating
        from onegraph.verify.feeds import model_feeds

        with pytest.raises(DataError, match="input 'x'.*bytes"):
            model_feeds(corpus_paths[name])
        return
    if expected == "C003":  # the loader does not run onnx.checker; onnxruntime refuses the model
        expected = "C503"
    with pytest.raises(ModelFileError) as info:
        onegraph.Session(corpus_paths[name])
    assert isinstance(info.value, UnsafeModelError)
    assert expected in {f.code for f in info.value.findings}
    if expected == "C001":
        assert "is not a valid ONNX model" in str(info.value)
    else:
        assert expected in str(info.value) or expected in {f.code for f in info.value.findings[1:]}
