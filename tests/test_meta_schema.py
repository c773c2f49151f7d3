"""The metadata schema: every field round-trips through save / load, malformed values are reported naming
their key (never dropped), unknown keys are kept, build fills the schema, and the shipped JSON Schema is the
one the code generates and agrees with it."""

from __future__ import annotations

import hashlib
import json

import jsonschema
import numpy as np
import onnx
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.contract.jsonschema import SHIPPED, json_schema
from onegraph.contract.metadata import FIELDS, validate
from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler
from onegraph.meta import (
    PREFIX,
    SCHEMA_VERSION,
    MetadataError,
    decode,
    encode,
    read,
    read_metadata,
    set_metadata,
    table_hash,
)

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
SHA = "sha256:" + "ab" * 32

#: one valid value for every field of the schema
FULL = {
    "meta_version": SCHEMA_VERSION,
    "created_at": "2024-05-01T12:30:00.250+02:00",
    "producer": "onegraph 0.1.0",
    "source_library": "scikit-learn 1.9.1",
    "training_algorithm": "sklearn.linear_model.LogisticRegression",
    "hyperparameters": {"C": 0.5, "penalty": "l2", "class_weight": None, "layers": [8, 4], "nested": {"a": True}},
    "training_data": {"name": "penguins.csv", "rows": 333, "columns": NUMERIC, "content_hash": SHA},
    "inputs": [{"name": "bill_length_mm", "kind": "float", "onnx_type": "double", "source_dtype": "float64"},
               {"name": "island", "kind": "string", "onnx_type": "string", "source_dtype": "str"}],
    "outputs": [{"name": "label", "column": "label", "role": "label"},
                {"name": "probabilities", "column": "probabilities", "role": "probabilities",
                 "classes": ["Adelie", "Chinstrap", "Gentoo"], "units": "probability"}],
    "author": "Ada Lovelace <ada@example.org>",
    "license": "Apache-2.0",
    "intended_use": "teaching; not for field identification of live birds",
    "lineage": {"parent": SHA, "parent_name": "penguins-v1.onnx", "relation": "retrained"},
    "transfer_learning": {"base_model": "penguins-v1", "frozen": ["coef"], "trainable": ["intercept"]},
    "precision": {"dtypes": ["double", "float16"], "regions": [{"dtype": "float16", "nodes": ["mm"], "name": "head"}]},
    "models": [{"name": "lr", "source": "sklearn.linear_model.LogisticRegression", "consumes": "double[4]"},
               {"name": "gb", "source": "xgboost.XGBClassifier", "consumes": "float[4]"}],
    "ensemble": {"method": "weighted", "weights": [0.25, 0.75], "final_estimator": None},
    "sequence": {"group": "card_id", "order": "timestamp", "window": 8, "padding": "pre", "pad_value": 0.0,
                 "input": "onegraph.window"},
    "federated": {"fingerprint": SHA, "rounds": [
        {"round": 1, "base_model": SHA, "method": "fedavg", "clients": 4, "samples": 258},
        {"round": 2, "base_model": SHA, "method": "trimmed-mean", "clients": 4, "samples": 250, "trim": 0.25}]},
    "media": {"kind": "image", "input": "image", "layout": "NHWC", "dtype": "uint8", "channels": 3,
              "sample_rate": None, "steps": [{"step": "Resize", "size": [224, 224], "match": "pil"}]},
    "row_width": 3,
}
#: one malformed value per field, and words the error must contain
BAD = {
    "meta_version": ("0", "greater than or equal to 1"),
    "created_at": ("2024-05-01 noon", "RFC 3339"),
    "producer": ("onegraph", "pattern"),
    "source_library": ("", "pattern"),
    "training_algorithm": ("", "at least 1"),
    "hyperparameters": ("[1, 2]", "dictionary"),
    "training_data": ('{"rows": "333"}', "integer"),
    "inputs": ('[{"name": "a", "kind": "weird", "onnx_type": "double"}]', "kind"),
    "outputs": ('[{"name": "label", "role": "verdict"}]', "role"),
    "author": ("", "at least 1"),
    "license": ("", "at least 1"),
    "intended_use": ("", "at least 1"),
    "lineage": ('{"parent": "md5:abc"}', "pattern"),
    "transfer_learning": ('{"base_model": "b", "frozen": ["w"], "trainable": ["w"]}', "both frozen and trainable"),
    "precision": ('{"dtypes": ["float99"]}', "dtypes"),
    "models": ('[{"source": "x"}]', "name"),
    "ensemble": ('{"method": "median"}', "method"),
    "sequence": ('{"group": "card", "order": "t", "window": 0}', "greater than or equal to 1"),
    "federated": ('{"fingerprint": "%s", "rounds": [{"round": 1, "base_model": "%s", "method": "mean", '
                  '"clients": 1, "samples": 3}]}' % (SHA, SHA), "method"),
    "media": ('{"kind": "video", "input": "x", "layout": "NHWC", "dtype": "uint8"}', "kind"),
    "row_width": ("0", "greater than or equal to 1"),
}


def tiny_model() -> onnx.ModelProto:
    """A graph with the names FULL mentions (inputs, outputs, initializers coef / intercept, node mm)."""
    g = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["bill_length_mm", "coef"], ["s"], name="mm"),
         onnx.helper.make_node("Add", ["s", "intercept"], ["probabilities"]),
         onnx.helper.make_node("Identity", ["island"], ["label"])], "g",
        [onnx.helper.make_tensor_value_info("bill_length_mm", onnx.TensorProto.DOUBLE, ["N", 1]),
         onnx.helper.make_tensor_value_info("island", onnx.TensorProto.STRING, ["N"])],
        [onnx.helper.make_tensor_value_info("label", onnx.TensorProto.STRING, ["N"]),
         onnx.helper.make_tensor_value_info("probabilities", onnx.TensorProto.DOUBLE, ["N", 3])],
        [onnx.numpy_helper.from_array(np.ones((1, 3)), "coef"), onnx.numpy_helper.from_array(np.zeros(3), "intercept")])
    return onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 21)], ir_version=10)


def with_props(props: dict[str, str]) -> onnx.ModelProto:
    model = tiny_model()
    for k, v in props.items():
        model.metadata_props.add(key=k, value=v)
    return model


def test_the_full_example_covers_every_field():
    assert set(FULL) == set(FIELDS) == set(BAD)


def test_every_field_round_trips_through_save_and_load(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(set_metadata(tiny_model(), FULL, trusted=True), path)
    md = read_metadata(path)
    assert md.ok, md.errors
    assert md.fields == FULL
    assert md.others == {"model_author": FULL["author"], "model_license": FULL["license"]}
    props = {p.key: p.value for p in onnx.load(path).metadata_props}
    assert props[PREFIX + "created_at"] == FULL["created_at"]  # text fields are stored as the text itself
    assert json.loads(props[PREFIX + "training_data"]) == FULL["training_data"]
    assert decode(props)[0] == FULL


@pytest.mark.parametrize("key", sorted(BAD))
def test_malformed_values_are_refused_when_written_naming_the_key(key):
    value, words = BAD[key]
    with pytest.raises(MetadataError) as info:
        encode({key: value})
    assert info.value.key == PREFIX + key
    assert PREFIX + key in str(info.value) and words in str(info.value)
    with pytest.raises(MetadataError, match=key):
        set_metadata(tiny_model(), {key: value}, trusted=True)


@pytest.mark.parametrize("key", sorted(BAD))
def test_malformed_values_are_reported_when_read_and_kept(key, tmp_path):
    value, words = BAD[key]
    path = tmp_path / "m.onnx"
    onnx.save(with_props({PREFIX + key: value, "com.example.note": "x"}), path)
    md = read_metadata(path)
    assert [e.key for e in md.errors] == [PREFIX + key] and words in md.errors[0].message
    assert md.invalid == {key: value}  # kept verbatim, not dropped
    assert md.fields == {} and md.others == {"com.example.note": "x"}
    assert md.props()[PREFIX + key] == value
    with pytest.raises(MetadataError, match=key):
        decode(md.props())


def test_unknown_keys_are_kept_through_set():
    model = with_props({PREFIX + "future_field": '{"x": 1}', "com.example.note": "keep me"})
    updated = set_metadata(model, {"author": "Ada", "com.example.other": "also"}, remove=["model_license"],
                           trusted=True)
    props = {p.key: p.value for p in updated.metadata_props}
    assert props[PREFIX + "future_field"] == '{"x": 1}' and props["com.example.note"] == "keep me"
    assert props["com.example.other"] == "also" and props["model_author"] == props[PREFIX + "author"] == "Ada"
    md = read(props)
    assert md.ok and md.fields["future_field"] == '{"x": 1}'
    assert {p.key for p in model.metadata_props} == {PREFIX + "future_field", "com.example.note"}  # input unchanged
    removed = set_metadata(updated, remove=["author"], trusted=True)
    assert not {"model_author", PREFIX + "author"} & {p.key for p in removed.metadata_props}


def test_standard_keys_must_agree_and_are_aliases():
    md = read({PREFIX + "author": "Ada", "model_author": "Charles"})
    assert [e.key for e in md.errors] == ["model_author"]
    props = {p.key: p.value for p in set_metadata(tiny_model(), {"model_license": "MIT"}, trusted=True).metadata_props}
    assert props == {PREFIX + "license": "MIT", "model_license": "MIT"}


GHOSTS = {"transfer_learning": {"base_model": "b", "frozen": ["coef", "ghost"]},
          "precision": {"dtypes": ["double"], "regions": [{"dtype": "float16", "nodes": ["nope"]}]},
          "outputs": [{"name": "verdict", "role": "label"}],
          "inputs": []}


def test_names_must_exist_in_the_graph():
    """read_metadata names each key whose names the graph lacks (a model written by another tool)."""
    model = tiny_model()
    for key, value in GHOSTS.items():
        model.metadata_props.add(key=PREFIX + key, value=json.dumps(value))
    md = read_metadata(model)
    assert sorted(e.key for e in md.errors) == sorted(PREFIX + k for k in GHOSTS)
    assert "ghost" in str(md.errors) and "nope" in str(md.errors)


@pytest.mark.parametrize("key", sorted(GHOSTS))
def test_set_refuses_a_value_the_graph_contradicts(key):
    """A new user's case: `meta set MODEL inputs=[]` wrote a model that `meta validate` refused and `score`
    could not open (its hint naming the wrong key). set_metadata refuses such a value, naming the key."""
    with pytest.raises(onegraph.errors.MetadataError) as info:
        set_metadata(tiny_model(), {key: GHOSTS[key]}, trusted=True)
    assert info.value.key == PREFIX + key


def test_set_refuses_a_key_that_is_not_text():
    with pytest.raises(onegraph.errors.MetadataError, match="a key is text, not int"):
        set_metadata(tiny_model(), {5: "x"}, trusted=True)


def test_newer_schema_versions_are_noted_not_refused():
    md = read({PREFIX + "meta_version": str(SCHEMA_VERSION + 1), PREFIX + "new_thing": "x"})
    assert md.ok and md.fields["new_thing"] == "x" and "version" in md.notes[0]


def test_a_prefixed_key_this_schema_version_does_not_know_is_noted_with_the_field_it_is_close_to(cli, penguins_onnx,
                                                                                                 tmp_path):
    """A model carrying ``org.onegraph.licence`` (another tool's or a hand's typo) read as valid without a word,
    the license unset; a key the schema does not have is kept (forward compatibility) but noted."""
    md = read({PREFIX + "licence": "MIT", PREFIX + "flavour": "x", PREFIX + "meta_version": str(SCHEMA_VERSION)})
    assert md.ok and md.fields["licence"] == "MIT"
    assert any("licence is not a field" in n and f"did you mean {PREFIX}license?" in n for n in md.notes), md.notes
    assert any("flavour is not a field" in n and "did you mean" not in n for n in md.notes), md.notes
    proto = onnx.load(penguins_onnx)
    proto.metadata_props.add(key=PREFIX + "licence", value="MIT")
    onnx.save(proto, tmp_path / "typo.onnx")
    result = cli("meta", "validate", str(tmp_path / "typo.onnx"))
    assert f"did you mean {PREFIX}license?" in result.stdout, result.stdout


@pytest.fixture(scope="module")
def built(penguins, tmp_path_factory):
    df = penguins.dropna(subset=["species"]).reset_index(drop=True)
    y = df.pop("species")
    x = df[NUMERIC + ["island"]]
    from sklearn.compose import ColumnTransformer

    pipe = make_pipeline(ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMERIC),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["island"]),
    ]), LogisticRegression(C=0.5, max_iter=300)).fit(x, y)
    path = tmp_path_factory.mktemp("built") / "penguins.onnx"
    onegraph.build(pipe, None, x, path=path, metadata={"author": "Ada", "training_data": {"name": "penguins.csv"}})
    return path, pipe, x


def test_a_built_model_validates_and_carries_what_build_knows(built):
    path, pipe, x = built
    md = read_metadata(path)
    assert md.ok and not md.notes, md.errors
    f = md.fields
    assert f["meta_version"] == SCHEMA_VERSION and f["producer"] == f"onegraph {onegraph.__version__}"
    model = pipe[-1]
    assert f["training_algorithm"] == "sklearn.linear_model.LogisticRegression"
    assert f["hyperparameters"]["C"] == 0.5 and f["hyperparameters"]["max_iter"] == 300
    assert set(f["hyperparameters"]) == set(model.get_params(deep=False))
    data = f["training_data"]
    assert data["name"] == "penguins.csv" and data["rows"] == len(x) and data["columns"] == list(x.columns)
    expected = hashlib.sha256(json.dumps([[c, str(x[c].dtype)] for c in x.columns]).encode())
    expected.update(pd.util.hash_pandas_object(x, index=False).to_numpy().tobytes())
    assert data["content_hash"] == f"sha256:{expected.hexdigest()}" == table_hash(x)
    changed = x.copy()
    changed.iloc[0, 0] += 1.0
    assert table_hash(changed) != data["content_hash"]
    proto = onnx.load(path)
    used = {onnx.TensorProto.DataType.Name(t.data_type).lower() for t in proto.graph.initializer}
    used |= {onnx.TensorProto.DataType.Name(i.type.tensor_type.elem_type).lower() for i in proto.graph.input}
    assert used <= set(f["precision"]["dtypes"]) and {"double", "string"} <= used
    assert f["author"] == "Ada" and md.others["model_author"] == "Ada"
    assert [i["name"] for i in f["inputs"]] == list(x.columns)
    assert f["outputs"][1]["classes"] == list(model.classes_)


def test_shipped_json_schema_is_the_generated_one():
    assert json.loads(SHIPPED.read_text()) == json_schema()


def test_json_schema_agrees_with_the_code(built):
    validator = jsonschema.Draft202012Validator(json.loads(SHIPPED.read_text()),
                                                format_checker=jsonschema.FormatChecker())
    validator.validate(FULL)
    validator.validate(read_metadata(built[0]).fields)
    for key, (value, _) in BAD.items():
        if key == "transfer_learning":
            continue  # "never both frozen and trainable" relates two lists: JSON Schema cannot say it
        bad = json.loads(value) if FIELDS[key] == "json" and value.startswith(("[", "{")) else value
        if key == "meta_version":
            bad = 0
        assert list(validator.iter_errors({key: bad})), f"the JSON Schema accepts the malformed {key}"


def test_inputs_that_describe_no_graph_input_are_a_problem_for_validate_and_score(cli, penguins_onnx, penguins,
                                                                                   tmp_path):
    """``meta set inputs=[]`` was accepted, ``meta validate`` called the model valid (exit 0), and score then said
    "takes table columns, not a folder of images" of a CSV: an inputs list must describe every graph input (but
    the ones other fields describe: a sequence model's window index, a media model's tensor)."""
    emptied = tmp_path / "emptied.onnx"
    refused = cli("meta", "set", str(penguins_onnx), "inputs=[]", "-o", str(emptied))  # valid JSON, not for this graph
    assert refused.returncode == 1 and "'org.onegraph.inputs': does not describe the graph's input(s)" in refused.stderr
    assert not emptied.exists()
    _written_by_another_tool(penguins_onnx, emptied, "inputs", "[]")
    result = cli("meta", "validate", str(emptied))
    assert result.returncode == 1 and "does not describe the graph's input(s)" in result.stdout, result.stdout
    penguins.head(3).to_csv(tmp_path / "rows.csv", index=False)
    result = cli("score", str(emptied), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "s.csv"))
    assert result.returncode == 1 and "org.onegraph.inputs" in result.stderr, result.stderr
    assert "does not describe the graph's input(s) ['island'" in result.stderr
    assert "--remove inputs" in result.stderr  # the hint named `--remove outputs`


def _written_by_another_tool(model, path, key: str, value: str) -> None:
    """``model`` with the metadata ``key`` set to ``value`` as a tool other than onegraph's meta set writes it."""
    import onnx

    proto = onnx.load(model)
    kept = [p for p in proto.metadata_props if p.key != PREFIX + key]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    proto.metadata_props.add(key=PREFIX + key, value=value)
    onnx.save(proto, path)


@pytest.mark.parametrize("entries", ["[]", '[{"name": "label", "column": "label", "role": "label"}]'])
def test_outputs_that_leave_a_graph_output_undescribed_are_a_problem_for_validate_and_score(
        cli, penguins_onnx, penguins, tmp_path, entries):
    """``meta set outputs=[]`` passed ``meta validate`` (exit 0) and score then wrote ``probabilities_0..2``
    instead of the class names; an outputs list naming ``label`` alone made score drop the probabilities
    without a word. An outputs list must describe every graph output (check outputs are told by their names)."""
    edited = tmp_path / "edited.onnx"
    refused = cli("meta", "set", str(penguins_onnx), f"outputs={entries}", "-o", str(edited))
    assert refused.returncode == 1 and "does not describe the graph's output(s)" in refused.stderr
    _written_by_another_tool(penguins_onnx, edited, "outputs", entries)
    result = cli("meta", "validate", str(edited))
    assert result.returncode == 1 and "does not describe the graph's output(s)" in result.stdout, result.stdout
    assert "'probabilities'" in result.stdout
    penguins.head(3).to_csv(tmp_path / "rows.csv", index=False)
    result = cli("score", str(edited), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "s.csv"))
    assert result.returncode == 1 and "org.onegraph.outputs" in result.stderr, result.stderr
    assert "'probabilities'" in result.stderr and not (tmp_path / "s.csv").exists()
    # the way out the message gives: without the key the outputs are read from the graph
    cleared = tmp_path / "cleared.onnx"
    assert cli("meta", "set", str(edited), "--remove", "outputs", "-o", str(cleared)).returncode == 0
    assert cli("score", str(cleared), str(tmp_path / "rows.csv"), "-o", str(tmp_path / "s.csv")).returncode == 0
    assert len(pd.read_csv(tmp_path / "s.csv")) == 3


def test_meta_set_refuses_a_key_given_twice(cli, penguins_onnx, tmp_path):
    """``meta set author=A author=B`` kept B without a word."""
    result = cli("meta", "set", str(penguins_onnx), "author=A", "author=B", "-o", str(tmp_path / "m.onnx"))
    assert result.returncode == 1 and "'author' is given twice" in result.stderr, result.stderr
    assert not (tmp_path / "m.onnx").exists()


def test_a_row_width_no_graph_has_is_refused():
    """2**31 values a row is the most a row may hold (16 GiB in double); beyond, scoring would run one row at a
    time, 1,000 times slower, on a value written by hand."""
    validate("row_width", 2**31)
    with pytest.raises(MetadataError, match="row_width.*less than or equal"):
        validate("row_width", 10**30)
