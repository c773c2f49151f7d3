"""``onegraph functions list / group / inline`` and ``onegraph fuse`` on exported models."""

from __future__ import annotations

import hashlib

import onnx
import onnx_ir as ir
import passes_models as pm
import pytest
from typer.testing import CliRunner

from onegraph.cli import app


@pytest.fixture()
def encoder_file(tmp_path):
    path = tmp_path / "encoder.onnx"
    path.write_bytes(pm.export("encoder"))
    return path


def invoke(*args: str):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_group_list_inline_round_trip(encoder_file, tmp_path):
    before = digest(encoder_file)
    grouped, flat = tmp_path / "grouped.onnx", tmp_path / "flat.onnx"
    out = invoke("functions", "group", encoder_file, "--by", "metadata", "-o", grouped)
    assert "4 call(s) of 3 function(s)" in out and "passes_models:Block:block0" in out
    out = invoke("functions", "list", grouped)
    assert "passes_models:Block:block0" in out and "torch.nn:LayerNorm:norm" in out
    out = invoke("functions", "inline", grouped, "--only", "passes_models:Block", "-o", flat)
    assert "inlined 2 call(s) of 1 function(s)" in out
    model = ir.from_proto(onnx.load(flat))
    assert {k[1] for k in model.functions} == {"PrimBlock", "LayerNorm"}
    pm.assert_close(pm.run(pm.checked(model), pm.inputs("encoder")),
                    pm.run(onnx.load(encoder_file), pm.inputs("encoder"), optimize=False))
    assert digest(encoder_file) == before  # the input is never modified


def test_group_by_class_and_by_nodes(encoder_file, tmp_path):
    out = invoke("functions", "group", encoder_file, "--class", "torch.nn.GELU", "-o", tmp_path / "a.onnx")
    assert "2 call(s) of 1 function(s)" in out and "torch.nn:GELU" in out
    listing = invoke("functions", "list", encoder_file, "--nodes")
    assert "block0.ln1" in listing
    names = [n.name for n in onnx.load(encoder_file).graph.node if n.op_type == "Gelu"][:1]
    out = invoke("functions", "group", encoder_file, "--by", "nodes", "--node", names[0],
                 "--function", "my:Act:first", "-o", tmp_path / "b.onnx")
    assert "my:Act:first" in out
    # a name holding an emoji code (":cat:", a module named "up" in "scope:up:...") prints as written
    out = invoke("functions", "group", encoder_file, "--by", "nodes", "--node", names[0],
                 "--function", "my:cat:x", "-o", tmp_path / "c.onnx")
    assert "my:cat:x" in out and "my:cat:x" in invoke("functions", "list", tmp_path / "c.onnx")
    pm.checked(onnx.load(tmp_path / "b.onnx"))


def test_group_torchscript_scopes_named_on_the_command_line(tmp_path):
    path = tmp_path / "ts.onnx"
    path.write_bytes(pm.export("encoder", False, 17))
    out = invoke("functions", "group", path, "--by", "scope", "--scope", "/block0=my.nn:Block",
                 "--scope", "/block1=my.nn:Block", "-o", tmp_path / "g.onnx")
    assert "2 call(s) of 1 function(s)" in out and "my.nn:Block:block0" in out


def test_fuse_prints_each_rules_matches(tmp_path):
    path = tmp_path / "tagger.onnx"
    path.write_bytes(pm.export("recurrent_tagger"))
    out = invoke("fuse", path, "--rules", "gru,lstm", "-o", tmp_path / "fused.onnx")
    rows = dict(line.split() for line in out.strip().splitlines()[1:] if not line.startswith("wrote"))
    assert rows == {"gru_cell": str(2 * pm.STEPS), "gru_sequence": "2", "gru_steps_merged": str(2 * pm.STEPS),
                    "lstm_cell": str(pm.STEPS), "lstm_sequence": "1", "lstm_steps_merged": str(pm.STEPS)}
    fused = onnx.load(tmp_path / "fused.onnx")
    assert pm.op_counts(fused)["GRU"] == 2
    pm.assert_close(pm.run(pm.checked(fused), pm.inputs("recurrent_tagger")), pm.torch_outputs("recurrent_tagger"))
    out = invoke("fuse", path, "--rules", "gru", "--as-functions", "-o", tmp_path / "wrapped.onnx")
    assert "gru_cell" in out and "onegraph.fusion" not in out
    assert any(f.name == "GRUCell" for f in onnx.load(tmp_path / "wrapped.onnx").functions)


def test_errors_are_one_line(encoder_file, tmp_path):
    from cli_run import run

    result = run("functions", "inline", encoder_file, "--only", "torch.nn:LSTM", "-o", tmp_path / "x.onnx")
    assert result.returncode == 1 and result.stderr.startswith("error: no function of the model matches")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    result = run("fuse", encoder_file, "--rules", "layernorm", "-o", tmp_path / "x.onnx")
    assert result.returncode == 1 and "unknown fusion rule 'layernorm'" in result.stderr
    result = run("functions", "group", encoder_file, "-o", encoder_file)
    assert result.returncode == 1 and "is the input" in result.stderr
    assert not (tmp_path / "x.onnx").exists()


def test_list_keeps_every_column_on_a_narrow_console(penguins_onnx, monkeypatch):
    """Piped or at 80 columns, `functions list` of the penguins model printed the ids alone: rich dropped the
    calls / nodes / inputs / outputs columns to make room for ids that may not wrap. The ids fold instead."""
    import re

    from onegraph.passes import list_functions

    monkeypatch.setenv("COLUMNS", "80")
    out = invoke("functions", "list", penguins_onnx)
    assert re.search(r"calls\s+nodes\s+inputs\s+outputs", out), out
    infos = list_functions(ir.from_proto(onnx.load(penguins_onnx)))
    counts = [line.split()[-4:] for line in out.splitlines()[1:] if re.search(r"(\s+\d+){4}\s*$", line)]
    assert counts == [[str(f.calls), str(f.nodes), str(len(f.inputs)), str(len(f.outputs))] for f in infos]
