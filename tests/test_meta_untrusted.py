"""Metadata of untrusted models (issue 14, kind 3): reading it raises ``MetadataError`` naming the key and
nothing else, whatever the values hold; ``check`` flags the keys the other commands cannot take (C601); an
input no feed fits is refused before anything is allocated (C602, ``DataError``)."""

from __future__ import annotations

import json
import re

import onnx.parser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onegraph.check.findings import Finding, blocks
from onegraph.check.static import static_findings
from onegraph.contract import metadata as meta
from onegraph.errors import DataError, MetadataError
from onegraph.verify.feeds import generated_feeds

NASTY = {
    "nested past the recursion limit": "[" * 100_000 + "]" * 100_000,
    "nested dicts": '{"a":' * 5000 + "1" + "}" * 5000,
    "nested 65 levels": "[" * 65 + "]" * 65,
    "an integer of 5000 digits": "1" * 5000,
    "a dict where a list is wanted": '{"name": "x"}',
    "a list where a dict is wanted": "[1, 2]",
    "not JSON": "{",
    "text that is not UTF-8": b"\xff\xfe[]",
}


@pytest.mark.parametrize("what", sorted(NASTY))
@pytest.mark.parametrize("key", sorted(meta.FIELDS))
def test_reading_any_value_raises_metadata_error_naming_the_key_and_nothing_else(key, what):
    value = NASTY[what]
    found = meta.read({meta.PREFIX + key: value})
    assert all(isinstance(e, MetadataError) for e in found.errors)
    if found.errors:
        assert found.errors[0].key == meta.PREFIX + key and key in found.invalid
    else:  # accepted (text fields take any UTF-8 text): then every reader can print it
        json.dumps(found.fields)
    try:
        meta.decode({meta.PREFIX + key: value})
    except MetadataError as exc:
        assert exc.key == meta.PREFIX + key


def test_keys_that_are_not_utf8_are_reported_not_raised():
    found = meta.read({(meta.PREFIX + "inputs").encode() + b"\xff": "[]", b"other\xff": "1"})
    assert [e.key for e in found.errors] == [meta.PREFIX + "inputs\\xff"]
    assert b"other\xff" in found.others


@settings(max_examples=200, deadline=None, derandomize=True)
@given(key=st.sampled_from(sorted(meta.FIELDS)),
       value=st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                    max_size=3), max_leaves=20))
def test_any_json_value_reads_without_raising(key, value):
    found = meta.read({meta.PREFIX + key: json.dumps(value)})
    assert all(isinstance(e, MetadataError) for e in found.errors)


def _model(inputs: str = "float[4] x") -> onnx.ModelProto:
    return onnx.parser.parse_model(f"""<ir_version: 10, opset_import: ["" : 21]>
g ({inputs}) => (float[4] y) {{ y = Relu (x) }}""")


def test_check_flags_every_metadata_key_the_readers_refuse():
    m = _model()
    m.metadata_props.add(key="model_author", value="someone")
    m.metadata_props.add(key=meta.PREFIX + "outputs", value=NASTY["nested past the recursion limit"])
    m.metadata_props.add(key=meta.PREFIX + "hyperparameters", value='{"a": [1]}')  # valid
    m.metadata_props.add(key=meta.PREFIX + "inputs", value=NASTY["a dict where a list is wanted"])
    m.metadata_props.add(key=meta.PREFIX + "training_data", value=NASTY["a list where a dict is wanted"])
    got = [f for f in static_findings(m) if f.code == "C601"]
    assert [f.field for f in got] == [f"metadata_props[{meta.PREFIX}{k}].value"
                                      for k in ("outputs", "inputs", "training_data")]
    assert all(f.severity == "error" for f in got)
    assert "`score` cannot use the model" in got[0].message and "nested too deeply" in got[0].message
    assert "`show`" in got[2].message
    assert not any(blocks(f, p) for f in got for p in ("load", "run"))  # the readers refuse it themselves


@pytest.mark.parametrize("entry, message", [
    ({"name": "X", "kind": "float", "onnx_type": "double"}, r"names inputs the graph does not have: \['X'\]"),
    ({"name": "island", "kind": "float", "onnx_type": "string"}, "kind 'float' cannot be fed as onnx_type 'string'"),
    ({"name": "island", "kind": "float", "onnx_type": "double"},
     "says onnx_type 'double' but the graph input is string"),
], ids=["renamed", "kind", "type"])
def test_inputs_that_contradict_the_graph_are_found_by_check_meta_and_score(penguins_onnx, entry, message):
    """The user's report: an ``inputs`` entry renamed (or retyped) by hand passed ``onegraph check`` as clean,
    and ``score`` then blamed the data ("column 'ISLAND' is required ... missing from the data"). ``check``
    (C601), ``meta validate`` and opening a session now say the same, naming the key."""
    from onegraph.errors import ModelFileError
    from onegraph.meta import read_metadata
    from onegraph.runtime import Session

    m = onnx.load(penguins_onnx)
    prop = next(p for p in m.metadata_props if p.key == meta.PREFIX + "inputs")
    entries = json.loads(prop.value)
    entries[next(i for i, e in enumerate(entries) if e["name"] == "island")] = entry
    prop.value = json.dumps(entries)
    [finding] = [f for f in static_findings(m) if f.code == "C601"]
    assert finding.severity == "error" and re.search(message, finding.message)
    assert [e.key for e in read_metadata(m).errors] == [meta.PREFIX + "inputs"]
    with pytest.raises(ModelFileError, match=message):
        Session(m.SerializeToString())
    assert not [f for f in static_findings(onnx.load(penguins_onnx)) if f.code == "C601"]  # as built: clean


def test_an_input_no_feed_fits_is_warned_about_and_refused_before_allocating():
    m = _model("float[N, 2147483648, 128] x")
    [f] = static_findings(m)
    assert (f.code, f.severity, f.tensor) == ("C602", "warning", "x")
    assert f.field == "graph.input[0].type.tensor_type.shape" and "1,099,511,627,776 bytes" in f.message
    assert not blocks(f, "run")
    with pytest.raises(DataError, match=r"input 'x' of shape \[16, 2147483648, 128\] needs 17,592,186,044,416 bytes"):
        generated_feeds(m)
    small = _model("float[N, 1000] x")
    assert static_findings(small) == []
    with pytest.raises(DataError, match="input 'x'.*more than the memory limit of 1,000"):
        generated_feeds(small, memory=1000)
    assert generated_feeds(small)["x"].shape == (16, 1000)


def test_c601_and_c602_are_documented_codes():
    from onegraph.check.static import metadata as rule

    for code in ("C601", "C602"):
        Finding(code, "x", "graph")
    assert rule.PREFIX == meta.PREFIX


@pytest.mark.parametrize("elem", ["float16", "bool", "int8"])
def test_generated_values_take_the_feed_and_one_step_beside_it(elem):
    """Campaign case (`convert_float16`, seed 12): a float16 input of 2**31 values fits the 4 GiB budget, but
    drawing it as float64 asked for 16 GiB. Generation fills the feed in place: the peak beyond the feed is
    one step's float64 draws."""
    import tracemalloc

    import numpy as np

    from onegraph.verify import feeds

    m = _model(f"{elem}[N, 1048576] x")  # 16 rows: 16 Mi values
    tracemalloc.start()
    try:
        x = generated_feeds(m)["x"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert x.shape == (16, 1 << 20) and x.dtype == np.dtype(elem)
    assert peak <= x.nbytes + 3 * 8 * feeds._STEP, (peak, x.nbytes)
