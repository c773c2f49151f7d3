"""``onegraph meta show|set|validate|diff`` on a model onegraph build wrote."""

from __future__ import annotations

import json

import pytest

import onegraph


@pytest.fixture
def run(cli):
    return lambda *args: cli("meta", *args)


@pytest.fixture(scope="module")
def model(penguins, tmp_path_factory):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline

    from onegraph.frame import SimpleImputer

    df = penguins.dropna(subset=["species"])
    x = df[["bill_length_mm", "body_mass_g"]]
    pipe = make_pipeline(SimpleImputer(), RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0))
    path = tmp_path_factory.mktemp("meta") / "model.onnx"
    onegraph.build(pipe.fit(x, df["species"]), None, x, path=path)
    return path


def test_a_model_written_by_build_validates(run, model):
    result = run("validate", str(model))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "onegraph fields valid (schema version 2)" in result.stdout


def test_show_json(run, model):
    result = run("show", str(model), "--json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["fields"]["training_algorithm"] == "sklearn.ensemble.RandomForestClassifier"
    assert shown["fields"]["hyperparameters"]["n_estimators"] == 3 and shown["errors"] == []


def test_set_writes_a_copy_and_diff_shows_it(run, model, tmp_path):
    out = tmp_path / "tagged.onnx"
    before = model.read_bytes()
    result = run("set", str(model), "author=Ada Lovelace", "license=Apache-2.0", "intended_use=teaching",
                 'lineage={"parent": "sha256:' + "0" * 64 + '"}', "com.example.team=birds", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert model.read_bytes() == before  # the input is not modified
    result = run("diff", str(model), str(out), "--json")
    assert result.returncode == 1
    changed = {c["key"]: (c["a"], c["b"]) for c in json.loads(result.stdout)}
    assert changed["org.onegraph.author"] == changed["model_author"] == (None, "Ada Lovelace")
    assert changed["com.example.team"] == (None, "birds") and len(changed) == 7
    assert run("diff", str(out), str(out)).returncode == 0
    result = run("set", str(out), "--remove", "author", "--in-place")
    assert result.returncode == 0 and "removed author" in result.stdout
    assert "author" not in json.loads(run("show", str(out), "--json").stdout)["fields"]


def test_set_refuses_bad_values_and_missing_destination(run, model, tmp_path):
    result = run("set", str(model), 'training_data={"rows": -5}', "-o", str(tmp_path / "x.onnx"))
    assert result.returncode == 1 and "org.onegraph.training_data" in result.stderr and "rows" in result.stderr
    assert not (tmp_path / "x.onnx").exists()
    result = run("set", str(model), "author=Ada")
    assert result.returncode == 1 and "-o OUT or --in-place" in result.stderr
    # a typo of a field was stored as a stray key 'autor', the author left unset
    result = run("set", str(model), "autor=Ada", "-o", str(tmp_path / "x.onnx"))
    assert result.returncode == 1 and "'autor': is not a field (did you mean 'author'?)" in result.stderr
    assert run("set", str(model), "team=ml", "-o", str(tmp_path / "x.onnx")).returncode == 0  # a key of its own


def test_validate_names_each_malformed_key(run, model, tmp_path):
    import onnx

    proto = onnx.load(model)
    for p in proto.metadata_props:
        if p.key == "org.onegraph.created_at":
            p.value = "yesterday"
        if p.key == "org.onegraph.precision":
            p.value = '{"dtypes": ["float99"]}'
    bad = tmp_path / "bad.onnx"
    onnx.save(proto, bad)
    result = run("validate", str(bad), "--json")
    assert result.returncode == 1
    keys = {e["key"] for e in json.loads(result.stdout)["errors"]}
    assert keys == {"org.onegraph.created_at", "org.onegraph.precision"}
    shown = json.loads(run("show", str(bad), "--json").stdout)
    assert shown["invalid"]["created_at"] == "yesterday"  # kept, flagged


def test_show_says_when_there_is_no_metadata(run, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    path = tmp_path / "bare.onnx"
    onnx.save(helper.make_model(graph), path)
    result = run("show", str(path))
    assert result.returncode == 0 and result.stdout.strip() == f"{path}: no metadata"


def test_set_refuses_removing_an_absent_key_and_a_future_schema_version(run, model, tmp_path):
    from onegraph.meta import SCHEMA_VERSION, read_metadata

    out = tmp_path / "x.onnx"
    result = run("set", str(model), "--remove", "nosuchkey", "-o", str(out))
    assert result.returncode == 1 and "'nosuchkey': is not in the model's metadata" in result.stderr
    assert not out.exists()
    result = run("set", str(model), f"meta_version={SCHEMA_VERSION + 97}", "-o", str(out))
    assert result.returncode == 1 and "newer than the schema version" in result.stderr and not out.exists()
    # a key the model carries is removed, and the version this onegraph writes is accepted
    authored = tmp_path / "authored.onnx"
    assert run("set", str(model), "author=Ada", "-o", str(authored)).returncode == 0
    result = run("set", str(authored), "--remove", "author", f"meta_version={SCHEMA_VERSION}", "-o", str(out))
    assert result.returncode == 0 and "author" not in read_metadata(out).fields


def test_classes_that_are_not_one_per_probability_column_are_refused(run, model, tmp_path):
    """The user's report: ``meta set outputs=`` with 2 classes for the [N, 3] probabilities passed set, validate
    and check, and ``score`` silently dropped the third class's column. set refuses it; a model carrying it
    (written by another tool) is named by validate and refused by score."""
    import onnx

    entries = json.loads(next(p.value for p in onnx.load(model).metadata_props if p.key == "org.onegraph.outputs"))
    probabilities = next(e for e in entries if e["role"] == "probabilities")
    probabilities["classes"] = probabilities["classes"][:2]
    value = "outputs=" + json.dumps(entries)
    result = run("set", str(model), value, "-o", str(tmp_path / "two.onnx"))
    said = "entry 'probabilities' names 2 classes but the graph's output has 3 columns"
    assert result.returncode == 1 and said in result.stderr and not (tmp_path / "two.onnx").exists()
    proto = onnx.load(model)
    for p in proto.metadata_props:
        if p.key == "org.onegraph.outputs":
            p.value = json.dumps(entries)
    onnx.save(proto, tmp_path / "two.onnx")
    result = run("validate", str(tmp_path / "two.onnx"))
    assert result.returncode == 1 and said in result.stdout + result.stderr
    with pytest.raises(onegraph.errors.ModelFileError, match=said):
        onegraph.Session(tmp_path / "two.onnx")
