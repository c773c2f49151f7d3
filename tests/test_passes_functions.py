"""Grouping nodes into named model-local functions and inlining them back, on real exporter output."""

from __future__ import annotations

import collections

import numpy as np
import onnx_ir as ir
import passes_models as pm
import pytest

from onegraph import passes
from onegraph.errors import GroupingError, PassError
from onegraph.passes import functions, grouping
from onegraph.passes.scopes import function_name, metadata_chain, name_chain


def node_multiset(model: ir.Model) -> collections.Counter:
    return collections.Counter((n.domain, n.op_type) for n in model.graph)


def function_ids(model: ir.Model) -> set[tuple[str, str, str]]:
    return set(model.functions)


def check_values(model: ir.Model, name: str, **kw) -> None:
    """Every output equal, within 1e-5, to the exported graph's and to PyTorch's."""
    got = pm.run(pm.checked(model), pm.inputs(name))
    pm.assert_close(got, pm.run(pm.load(name, **kw), pm.inputs(name), optimize=False))
    if kw.get("dynamo", True):
        pm.assert_close(got, pm.torch_outputs(name))


def test_group_top_level_modules_names_functions_after_their_source():
    model = pm.load("classifiers")
    calls = passes.group_functions(model)  # depth 1: the model's children
    assert function_ids(model) == {("passes_models", "LstmClassifier", "lstm"),
                                   ("passes_models", "LstmCellClassifier", "cells")}
    assert [n.op_type for n in model.graph] == ["LstmClassifier", "LstmCellClassifier"]
    assert sorted(c.name for c in calls) == ["cells", "lstm"]
    assert [o.name for o in model.graph.outputs] == [o.name for o in pm.load("classifiers").graph.outputs]
    # the weights stay with the graph and are passed in
    initializers = set(model.graph.initializers)
    assert initializers and all(f.graph.initializers == {} for f in model.functions.values())
    assert initializers <= {v.name for n in model.graph for v in n.inputs if v is not None}
    check_values(model, "classifiers")


def test_one_class_twice_is_one_function_called_twice():
    model = pm.load("encoder")
    passes.group_functions(model)
    counts = {functions.format_id(k): v for k, v in passes.call_counts(model).items()}
    assert counts == {"passes_models:Block:block0": 2, "passes_models:PrimBlock:prim": 1, "torch.nn:LayerNorm:norm": 1}
    check_values(model, "encoder")


def test_one_class_with_different_bodies_gets_overloads():
    model = pm.load("encoder")
    passes.group_functions(model, classes=["PrimLayerNorm"])  # prim.ln1 has scale and bias, ln2 not
    assert function_ids(model) == {("passes_models", "PrimLayerNorm", "prim.ln1"),
                                   ("passes_models", "PrimLayerNorm", "prim.ln2")}
    bodies = {k[2]: collections.Counter(n.op_type for n in f) for k, f in model.functions.items()}
    assert bodies["prim.ln1"]["Mul"] == 1 and bodies["prim.ln2"]["Mul"] == 0
    check_values(model, "encoder")


def test_nested_modules_nest_and_each_module_call_is_one_call():
    model = pm.load("classifiers")
    passes.group_functions(model, depth=None)
    counts = {functions.format_id(k): v for k, v in passes.call_counts(model).items()}
    # both heads (one class, one body) call one function from inside their classifier's body
    assert counts["torch.nn:Linear"] == 2
    # each time step is one call of an LSTMCell; the steps between the first (the exporter folded its zero
    # state into constants) and the last (its cell state is not used) share one body, the one nested
    # function of the class (onnxruntime cannot call an overloaded function from a function body)
    assert counts["torch.nn:LSTMCell"] == 2 * (pm.STEPS - 2)
    outer = model.functions[("passes_models", "LstmCellClassifier", "cells")]
    assert collections.Counter(n.op_type for n in outer)["LSTMCell"] == 2 * (pm.STEPS - 2)
    check_values(model, "classifiers")


@pytest.mark.parametrize("name", ["classifiers", "encoder", "recurrent_tagger"])
def test_group_then_inline_restores_the_nodes_and_values(name):
    original = pm.load(name)
    model = pm.load(name)
    passes.group_functions(model, depth=None)
    assert model.functions and len(model.graph) < len(original.graph)
    inlined = passes.inline(model)
    assert sum(inlined.values()) > 0 and not model.functions
    assert node_multiset(model) == node_multiset(original)
    assert [o.name for o in model.graph.outputs] == [o.name for o in original.graph.outputs]
    assert dict(model.opset_imports) == dict(original.opset_imports)
    check_values(model, name)


def test_inline_only_the_selected_functions():
    model = pm.load("encoder")
    passes.group_functions(model)
    inlined = passes.inline(model, ["torch.nn:LayerNorm"])
    assert {functions.format_id(k) for k in inlined} == {"torch.nn:LayerNorm:norm"}
    assert {k[1] for k in model.functions} == {"Block", "PrimBlock"}
    check_values(model, "encoder")
    with pytest.raises(PassError, match="no function of the model matches 'torch.nn:GELU'"):
        passes.inline(model, ["torch.nn:GELU"])


def test_group_torchscript_exports_by_node_name_scopes():
    model = pm.load("lstm_cell_classifier", dynamo=False)
    names = {"cell1": ("torch.nn", "LSTMCell"), "cell2": ("torch.nn", "LSTMCell")}
    names.update({f"cell{k}_{t}": ("torch.nn", "LSTMCell") for k in (1, 2) for t in range(1, pm.STEPS)})
    passes.group_functions(model, "scope", names=names)
    assert {k[:2] for k in model.functions} == {("torch.nn", "LSTMCell"), ("onegraph.scope", "head")}
    calls = passes.call_counts(model)
    assert sum(v for k, v in calls.items() if k[1] == "LSTMCell") == 2 * pm.STEPS
    # three bodies: the first step (from constant zeros), the middle steps, the last (its cell state unused)
    assert len([k for k in model.functions if k[1] == "LSTMCell"]) == 3
    check_values(model, "lstm_cell_classifier", dynamo=False)


def test_group_an_explicit_node_list():
    model = pm.load("encoder")
    # the attention's nodes as its scope gives them (with the Split the exporter left without a record)
    (found,) = grouping.by_metadata(model.graph, paths=["block0.attn"], depth=None)
    attention = [n.name for n in found.nodes]
    assert "Split" in {n.op_type for n in found.nodes} and len(attention) > 3
    (call,) = passes.group_functions(model, "nodes", nodes={"my.layers:Attention:block0.attn": attention})
    assert call.op_identifier() == ("my.layers", "Attention", "block0.attn")
    assert len(model.functions[call.op_identifier()]) == len(attention)
    check_values(model, "encoder")


def chain_of_three(model: ir.Model) -> tuple[ir.Node, ir.Node, ir.Node]:
    for a in model.graph:
        for b in (u.node for v in a.outputs for u in v.uses()):
            for c in (u.node for v in b.outputs for u in v.uses()):
                return a, b, c
    raise AssertionError("no chain of three nodes")


def test_a_non_convex_group_is_refused_naming_the_node_in_between():
    model = pm.load("encoder")
    a, b, c = chain_of_three(model)
    with pytest.raises(GroupingError, match=f"not convex.*{b.name}"):
        passes.group_functions(model, "nodes", nodes={"x:Bad": [a.name, c.name]})
    assert not model.functions  # nothing was changed


def test_overlapping_groups_and_unknown_nodes_are_refused():
    model = pm.load("encoder")
    a, b, c = chain_of_three(model)
    groups = grouping.by_nodes(model.graph, {"x:First": [a.name, b.name], "x:Second": [b.name, c.name]})
    with pytest.raises(GroupingError, match=f"overlap.*{b.name}"):
        passes.group(model, groups)
    with pytest.raises(GroupingError, match="'no such node'"):
        passes.group_functions(model, "nodes", nodes={"x:F": ["no such node"]})
    with pytest.raises(GroupingError, match="DOMAIN:NAME"):
        passes.group_functions(model, "nodes", nodes={"justaname": [a.name]})


def test_scope_chains_read_from_each_record():
    model = pm.load("encoder")
    ln = next(n for n in model.graph if n.op_type == "LayerNormalization")
    chain = metadata_chain(ln)
    assert [s.path for s in chain] == ["block0", "block0.ln1"]
    assert function_name(chain[-1]) == ("torch.nn", "LayerNorm")
    ts = pm.load("encoder", dynamo=False)
    node = next(n for n in ts.graph if n.name.startswith("/block0/attn/qkv/"))
    assert [s.path for s in name_chain(node)] == ["block0", "block0.attn", "block0.attn.qkv"]


# -- onegraph's own pipelines ---------------------------------------------------------------------
def test_built_pipelines_call_one_function_per_step(penguins):
    import sklearn.preprocessing
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.frame import OneHotEncoder, SimpleImputer

    frame = penguins.drop(columns="species")
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    pipe = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), sklearn.preprocessing.StandardScaler()), numeric),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["island", "sex"]),
        ]),
        LogisticRegression(max_iter=1000),
    ).fit(frame, penguins["species"])
    grouped = onegraph.build(pipe, None, frame)  # checks parity with scikit-learn and the ONNX checker
    flat = onegraph.build(pipe, None, frame, functions=False)
    calls = {(n.domain, n.op_type, n.overload) for n in grouped.graph.node if n.domain}
    assert calls == {
        ("onegraph.frame", "SimpleImputer", "pipeline.columntransformer.num.simpleimputer"),
        ("sklearn.preprocessing", "StandardScaler", "pipeline.columntransformer.num.standardscaler"),
        ("onegraph.frame", "OneHotEncoder", "pipeline.columntransformer.cat"),
        ("sklearn.linear_model", "LogisticRegression", "logisticregression"),
    }
    assert {(f.domain, f.name, f.overload) for f in grouped.functions} == calls
    pm.checked(grouped)
    rows = frame.iloc[:50]
    got, expected = onegraph.score(grouped, rows), onegraph.score(flat, rows)
    assert (got["label"] == expected["label"]).all()
    np.testing.assert_allclose(got.drop(columns="label").to_numpy(), expected.drop(columns="label").to_numpy(),
                               rtol=0, atol=0)
    model = ir.from_proto(grouped)
    passes.inline(model)
    assert node_multiset(model) == node_multiset(ir.from_proto(flat))


def test_cli_group_matching_nothing_is_an_error_and_writes_nothing(cli, tmp_path):
    """``functions group --class Nope`` wrote an unchanged copy and said "0 call(s) of 0 function(s)", exit 0."""
    path = tmp_path / "m.onnx"
    path.write_bytes(pm.export("classifiers", True, None))
    result = cli("functions", "group", str(path), "--class", "Nope", "-o", str(tmp_path / "g.onnx"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "nothing to group: no nodes of" in result.stderr and "--class Nope" in result.stderr
    assert not (tmp_path / "g.onnx").exists()
    result = cli("functions", "group", str(path), "--class", "LSTM", "-o", str(tmp_path / "g.onnx"))
    assert result.returncode == 0 and (tmp_path / "g.onnx").exists(), result.stderr
