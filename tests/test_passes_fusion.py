"""Re-fusing decomposed LayerNormalization, GELU, LSTM and GRU in real exporter output."""

from __future__ import annotations

import numpy as np
import passes_models as pm
import pytest

from onegraph import passes
from onegraph.errors import PassError


def fused(name: str, rules=None, **kw):
    model = pm.load(name, **{k: v for k, v in kw.items() if k in ("dynamo", "opset")})
    counts = passes.fuse(model, rules, as_functions=kw.get("as_functions", False))
    return model, counts


def check_values(model, name: str, **kw) -> None:
    """Every output equal, within 1e-5, to the exported graph's (onnxruntime) and to PyTorch's."""
    got = pm.run(pm.checked(model), pm.inputs(name))
    pm.assert_close(got, pm.run(pm.load(name, **kw), pm.inputs(name), optimize=False))
    if kw.get("dynamo", True):
        pm.assert_close(got, pm.torch_outputs(name))


def test_lstm_cell_loops_become_one_lstm_per_layer():
    model, counts = fused("classifiers")
    # cells: 2 layers x STEPS steps of nn.LSTMCell -> one LSTM per layer; lstm: nn.LSTM, exported as LSTM already
    assert counts["lstm_cell"] == 2 * pm.STEPS
    assert counts["lstm_sequence"] == 2 and counts["lstm_steps_merged"] == 2 * pm.STEPS
    ops = pm.op_counts(model)
    assert ops["LSTM"] == 4
    assert "Sigmoid" not in ops and "Tanh" not in ops and "Split" not in ops
    lstms = [n for n in model.graph if n.op_type == "LSTM"]
    assert all(n.attributes["hidden_size"].value == pm.HIDDEN for n in lstms)
    check_values(model, "classifiers")


def test_gru_cells_and_hand_written_cells_become_gru_and_lstm():
    model, counts = fused("recurrent_tagger")
    assert counts["gru_cell"] == 2 * pm.STEPS and counts["gru_sequence"] == 2
    assert counts["lstm_cell"] == pm.STEPS and counts["lstm_sequence"] == 1
    ops = pm.op_counts(model)
    assert ops["GRU"] == 2 and ops["LSTM"] == 1
    assert not {"Sigmoid", "Tanh", "Split", "Sub"} & set(ops)
    grus = [n for n in model.graph if n.op_type == "GRU"]
    assert all(n.attributes["linear_before_reset"].value == 1 for n in grus)
    check_values(model, "recurrent_tagger")


def test_primitive_layer_norms_and_gelus_become_standard_operators():
    model, counts = fused("encoder")
    # prim.ln1 (scale and bias), prim.ln2 (no affine), one erf GELU, one tanh GELU
    assert counts["layer_norm"] == 2 and counts["gelu_erf"] == 1 and counts["gelu_tanh"] == 1
    ops = pm.op_counts(model)
    # 2 blocks x 2 nn.LayerNorm + 2 fused + the final norm; 2 nn.GELU + 2 fused
    assert ops["LayerNormalization"] == 7 and ops["Gelu"] == 4
    assert not {"ReduceMean", "Sqrt", "Erf", "Tanh", "Pow"} & set(ops)
    approximate = sorted(n.attributes["approximate"].value if "approximate" in n.attributes else "none"
                         for n in model.graph if n.op_type == "Gelu")
    assert approximate == ["none", "none", "none", "tanh"]
    check_values(model, "encoder")


def test_rules_never_fire_where_values_would_change():
    model, counts = fused("not_fusable")
    assert not any(v for k, v in counts.items() if k != "layer_norm")
    ops = pm.op_counts(model)
    assert not {"Gelu", "LSTM", "GRU"} & set(ops)
    # one normalization is fused: the one whose [steps, d] scale broadcasts over the batch, which the
    # fused operator cannot take; the scale stays a Mul after it, the operator's own scale is ones
    assert counts["layer_norm"] == 1 and ops["LayerNormalization"] == 1
    (ln,) = [n for n in model.graph if n.op_type == "LayerNormalization"]
    assert np.all(ln.inputs[1].const_value.numpy() == 1) if ln.inputs[1].const_value is not None else \
        np.all(ln.inputs[1].producer().attributes["value"].value.numpy() == 1)
    (mul,) = [u.node for u in ln.outputs[0].uses()]
    assert mul.op_type == "Mul" and [i.shape for i in mul.inputs if i is not ln.outputs[0]][0].dims == (pm.STEPS, 4)
    # keepdims=0, the unbiased variance and eps outside the root stay decomposed
    assert ops["ReduceMean"] >= 3 and ops["Sqrt"] == 3
    check_values(model, "not_fusable")


def test_rules_need_the_opset_of_the_fused_operator():
    model, counts = fused("encoder", dynamo=False, opset=17)  # the TorchScript exporter, GELU decomposed
    assert counts["layer_norm"] == 2 and counts["gelu_erf"] == 0 and counts["gelu_tanh"] == 0
    assert pm.op_counts(model)["Erf"] == 3
    check_values(model, "encoder", dynamo=False, opset=17)
    model, counts = fused("encoder", dynamo=False, opset=14)  # no LayerNormalization before opset 17
    assert not any(counts.values()) and "LayerNormalization" not in pm.op_counts(model)


def test_torchscript_lstm_cells():
    model, counts = fused("lstm_cell_classifier", ["lstm"], dynamo=False)
    assert counts == {"lstm_cell": 2 * pm.STEPS, "lstm_sequence": 2, "lstm_steps_merged": 2 * pm.STEPS}
    assert pm.op_counts(model)["LSTM"] == 2
    check_values(model, "lstm_cell_classifier", dynamo=False)


def test_matches_wrapped_as_named_functions():
    model, counts = fused("recurrent_tagger", as_functions=True)
    assert counts["gru_cell"] == 2 * pm.STEPS and counts["lstm_cell"] == pm.STEPS
    calls = {passes.format_id(k): v for k, v in passes.call_counts(model).items()}
    assert sum(v for k, v in calls.items() if k.startswith("onegraph.fusion:GRUCell")) == 2 * pm.STEPS
    assert sum(v for k, v in calls.items() if k.startswith("onegraph.fusion:LSTMCell")) == pm.STEPS
    assert "GRU" not in pm.op_counts(model)  # the original nodes, wrapped
    check_values(model, "recurrent_tagger")
    model, counts = fused("encoder", as_functions=True)
    assert counts["layer_norm"] == 2 and counts["gelu_erf"] == 1 and counts["gelu_tanh"] == 1
    gelus = [f for k, f in model.functions.items() if k[1] == "Gelu"]
    # the constants of the formula live in the body: the function takes x alone, as Gelu does
    assert len(gelus) == 2 and all(len(f.inputs) == 1 for f in gelus)
    check_values(model, "encoder")
    passes.inline(model)
    check_values(model, "encoder")


def test_unknown_rule_is_an_error():
    with pytest.raises(PassError, match="unknown fusion rule 'lstm2'"):
        fused("encoder", ["lstm2"])


def test_a_rule_named_twice_counts_its_matches_once_and_no_rule_is_an_error():
    """``--rules lstm,lstm`` fused the cells and reported 0 matches (the second pass, finding nothing, overwrote
    the counts); ``--rules ""`` ran every rule."""
    _, once = fused("classifiers", ["lstm"])
    _, twice = fused("classifiers", ["lstm", "lstm"])
    assert twice == once and once["lstm_cell"] == 2 * pm.STEPS
    with pytest.raises(PassError, match="no fusion rule given"):
        fused("classifiers", [])
