"""The portability walker: standard operators only, none locale-bound, in graphs, subgraphs and functions.

conftest.py runs it on every graph the suite builds; these tests show it catches what it must.
"""

from __future__ import annotations

import conftest
import numpy as np
import onnx
import pandas as pd
from onnx import TensorProto, helper

import onegraph
from onegraph.frame import DateParts, StringCase, StringStrip
from onegraph.verify.portable import all_nodes, onnxruntime_ops, portability_problems


def _model(nodes, inputs, outputs, functions=(), opsets=(("", 21), ("ai.onnx.ml", 5))):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    imports = [helper.make_opsetid(d, v) for d, v in opsets]
    return helper.make_model(graph, opset_imports=imports, functions=list(functions), ir_version=10)


X = helper.make_tensor_value_info("x", TensorProto.STRING, ["N"])
Y_STR = helper.make_tensor_value_info("y", TensorProto.STRING, ["N"])
Y_DBL = helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["N"])


def test_the_suite_hook_checks_every_build(penguins):
    before = len(conftest.CHECKED_GRAPHS)
    frame = pd.DataFrame({"t": ["2020-01-01T10:00:00+01:00", None], "s": [" A ", "b"]})
    onegraph.build(DateParts(["hour"], tz="Europe/Paris").fit(frame[["t"]]), None, frame[["t"]])
    model = onegraph.build(StringStrip().fit(frame[["s"]]), None, frame[["s"]])
    assert len(conftest.CHECKED_GRAPHS) == before + 2
    # the strip fallback's Loop bodies are walked, and every node in them is standard
    inner = [where for node, where in all_nodes(model) if ">" in where]
    assert inner and not portability_problems(model)


def test_custom_domain_operators_are_reported():
    node = helper.make_node("Date", ["x"], ["y"], domain="ai.onnx.ml.ibm")
    problems = portability_problems(_model([node], [X], [Y_STR], opsets=(("", 21), ("ai.onnx.ml.ibm", 1))))
    assert problems == ["ai.onnx.ml.ibm.Date (graph) is not a standard operator"]


def test_onnxruntime_contrib_murmurhash_runs_on_onnxruntime_only():
    """HashingVectorizer's com.microsoft.MurmurHash3: reported for any runtime, accepted for onnxruntime when
    its domain is imported; any other com.microsoft operator stays a problem."""
    y = helper.make_tensor_value_info("y", TensorProto.INT32, ["N"])
    node = helper.make_node("MurmurHash3", ["x"], ["y"], domain="com.microsoft", seed=0, positive=0)
    model = _model([node], [X], [y], opsets=(("", 21), ("com.microsoft", 1)))
    (problem,) = portability_problems(model)
    assert "com.microsoft.MurmurHash3 (graph) is an onnxruntime contrib operator" in problem
    assert "runs on onnxruntime only" in problem
    assert portability_problems(model, runtime="onnxruntime") == []
    assert onnxruntime_ops(model) == ["com.microsoft.MurmurHash3"]
    unimported = _model([node], [X], [y])
    assert any("does not import its domain" in p for p in portability_problems(unimported, runtime="onnxruntime"))
    other = _model([helper.make_node("Gelu", ["d"], ["e"], domain="com.microsoft")],
                   [helper.make_tensor_value_info("d", TensorProto.FLOAT, ["N"])],
                   [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["N"])], opsets=(("", 21), ("com.microsoft", 1)))
    assert portability_problems(other, runtime="onnxruntime") == ["com.microsoft.Gelu (graph) is not a standard operator"]


def test_string_normalizer_inside_a_loop_body_is_reported():
    body = helper.make_graph(
        [helper.make_node("StringNormalizer", ["acc"], ["out"], case_change_action="LOWER"),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", TensorProto.STRING, ["N"])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("out", TensorProto.STRING, ["N"])])
    loop = helper.make_node("Loop", ["", "", "x"], ["y"], body=body)
    problems = portability_problems(_model([loop], [X], [Y_STR]))
    assert len(problems) == 1 and "StringNormalizer (graph > Loop) depends on the host locale" in problems[0]


def test_text_float_casts_in_a_local_function_are_reported_and_integer_casts_are_not():
    fn = helper.make_function("onegraph.frame", "Parse", ["t"], ["v"],
                              [helper.make_node("Cast", ["t"], ["v"], to=TensorProto.DOUBLE)],
                              opset_imports=[helper.make_opsetid("", 21)])
    call = helper.make_node("Parse", ["x"], ["y"], domain="onegraph.frame")
    model = _model([call], [X], [Y_DBL], functions=[fn], opsets=(("", 21), ("onegraph.frame", 1)))
    onnx.checker.check_model(model)
    problems = portability_problems(model)
    assert len(problems) == 1 and "text and floating point" in problems[0]  # the call itself is allowed
    to_int = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT64)], [X],
                    [helper.make_tensor_value_info("y", TensorProto.INT64, ["N"])])
    assert portability_problems(to_int) == []
    to_text = _model([helper.make_node("Cast", ["d"], ["y"], to=TensorProto.STRING)],
                     [helper.make_tensor_value_info("d", TensorProto.DOUBLE, ["N"])], [Y_STR])
    assert "text and floating point" in portability_problems(to_text)[0]


def test_case_mapping_graphs_use_no_string_normalizer():
    frame = pd.DataFrame({"t": ["Ab", "ÉTÉ", None]})
    model = onegraph.build(StringCase("lower").fit(frame), None, frame)
    ops = {node.op_type for node, _ in all_nodes(model)}
    assert "StringNormalizer" not in ops and {"LabelEncoder", "StringSplit", "Loop", "If"} <= ops
    assert np.array_equal(onegraph.score(model, frame)["t"].to_numpy(), np.array(["ab", "été", None], dtype=object))
