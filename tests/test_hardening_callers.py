"""Issue 14, kinds 1 and 2: the caller survives, and every bad model is one onegraph error.

Kind 1 (caller SIGSEGV): onnx's native code on a model derived from a file (a function body converted, an
inlined copy) runs in the checking process (onegraph.check.native). Kind 2 (tracebacks): onnx-ir's SerdeError,
the inliner's errors, JSON nested too deeply, are onegraph errors naming the model (onegraph.check.irsafe,
contract.metadata). Each case failed before its fix (a dead test process, or exit 70 / a traceback)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import numpy as np

from onegraph.errors import OnegraphError

CAMPAIGN = Path(__file__).parent / "data" / "campaign"


def _one_line_error(done) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode not in (0, 70), done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr


def test_a_converter_crash_is_contained(cli, tmp_path):
    """Kind 1: `convert --opset` of this mutant segfaulted onnx's version converter in the caller."""
    done = cli("convert", str(CAMPAIGN / "converter-segfault.onnx"), "--opset", "13", "-o", str(tmp_path / "o.onnx"))
    _one_line_error(done)
    assert not (tmp_path / "o.onnx").exists()


def _duplicate_outputs() -> onnx.ModelProto:
    """Two nodes writing one value: onnx-ir refuses it (SerdeError), onnx's checker does not stop it first."""
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])], "dup",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _calling(name: str, body: list[onnx.NodeProto], function_opset: int, model_opset: int) -> onnx.ModelProto:
    """A model whose graph is one call of the local function ``local:name`` (``a`` -> ``b``) of ``body``."""
    f = helper.make_function("local", name, ["a"], ["b"], body, [helper.make_opsetid("", function_opset)])
    g = helper.make_graph([helper.make_node(name, ["x"], ["y"], domain="local")], "fn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, functions=[f], opset_imports=[helper.make_opsetid("", model_opset),
                                                              helper.make_opsetid("local", 1)], ir_version=10)


def _function_of_another_opset() -> onnx.ModelProto:
    """A local function whose opset differs from the model's: onnx-ir's inliner raises ValueError."""
    return _calling("F", [helper.make_node("Relu", ["a"], ["b"])], 21, 17)


def _undefined_in_a_function() -> onnx.ModelProto:
    """A function body reading a value nothing defines: onnx-ir reads it anyway (a new value, and a logged
    warning line beside the error), inline failed with a repr of its clone_node call, fuse blamed the result."""
    return _calling("Bad", [helper.make_node("Add", ["a", "ghost"], ["b"])], 18, 18)


def _function_defined_twice() -> onnx.ModelProto:
    """Two bodies for one function id: onnx's checker and onnxruntime refuse it; onnx-ir kept the second and
    `functions inline` wrote a valid model from it without a word."""
    model = _undefined_in_a_function()
    del model.functions[:]
    for op in ("Relu", "Neg"):
        model.functions.append(helper.make_function("local", "Bad", ["a"], ["b"], [helper.make_node(op, ["a"], ["b"])],
                                                    [helper.make_opsetid("", 18)]))
    return model


def _mixed_types() -> onnx.ModelProto:
    """float + double in one Add: invalid (the checker's shape inference refuses it), which inline and fuse
    reported as their result failing the checker, "report this model to onegraph"."""
    g = helper.make_graph([helper.make_node("Add", ["x", "d"], ["y"])], "mix",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                           helper.make_tensor_value_info("d", TensorProto.DOUBLE, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


@pytest.mark.parametrize("make,argv", [
    (_mixed_types, ["functions", "inline", "-o", "{out}"]),
    (_mixed_types, ["fuse", "-o", "{out}"]),
    (_function_defined_twice, ["functions", "inline", "-o", "{out}"]),
    (_undefined_in_a_function, ["functions", "list"]),
    (_undefined_in_a_function, ["functions", "inline", "-o", "{out}"]),
    (_undefined_in_a_function, ["fuse", "-o", "{out}"]),
    (_undefined_in_a_function, ["stats", "strip", "-o", "{out}"]),
    (_duplicate_outputs, ["functions", "list"]),
    (_duplicate_outputs, ["stats", "strip", "-o", "{out}"]),
    (_duplicate_outputs, ["fuse", "-o", "{out}"]),
    (_duplicate_outputs, ["compare", "--rows", "2"]),
    (_function_of_another_opset, ["functions", "inline", "-o", "{out}"]),
    (_function_of_another_opset, ["compare", "--rows", "2"]),
    (_function_of_another_opset, ["convert", "--fp16", "-o", "{out}"]),
], ids=["invalid-inline", "invalid-fuse", "twice-inline", "undefined-list", "undefined-inline", "undefined-fuse", "undefined-strip", "serde-list", "serde-strip", "serde-fuse", "serde-compare", "inline", "inline-compare", "inline-fp16"])
def test_what_onnx_ir_refuses_is_one_error(cli, tmp_path, make, argv):
    """Kind 2: onnx-ir's SerdeError and the inliner's ValueError reached the user as internal errors."""
    path = tmp_path / "m.onnx"
    onnx.save(make(), path)
    command, rest = argv[0], [a.replace("{out}", str(tmp_path / "o.onnx")) for a in argv[1:]]
    words = [command] + ([rest.pop(0)] if command in ("functions", "stats") else [])
    done = cli(*words, str(path), *rest)
    _one_line_error(done)
    if make is _undefined_in_a_function:
        assert "reads 'ghost', which no node, input or initializer defines" in done.stderr
    if make is _mixed_types:  # the input is at fault, not the result
        assert f"model file {path} does not pass the ONNX checker" in done.stderr and "report" not in done.stderr
    if make is _function_defined_twice:
        assert "defines the model-local function 'local:Bad' twice" in done.stderr
    assert not (tmp_path / "o.onnx").exists()


def _nested_metadata(depth: int = 100_000) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "meta",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    helper.set_model_props(model, {"org.onegraph.outputs": "[" * depth + "]" * depth})
    return model


@pytest.mark.parametrize("argv", [["show"], ["show", "--json"], ["meta", "show"], ["fed", "params"]])
def test_metadata_nested_too_deeply_is_one_error_or_reported(cli, tmp_path, argv):
    """Kind 2: a RecursionError from deeply nested metadata JSON was a traceback of show / fed params."""
    path = tmp_path / "m.onnx"
    onnx.save(_nested_metadata(), path)
    done = cli(*argv, str(path))
    assert done.returncode != 70 and "Traceback" not in done.stderr, done.stderr
    if done.returncode:
        _one_line_error(done)


def test_the_python_functions_raise_onegraph_errors(tmp_path):
    from onegraph.convert import convert_opset
    from onegraph.stats import read_stats
    from onegraph.verify import compare_runtimes

    for make, call in [(_duplicate_outputs, read_stats), (_function_of_another_opset, compare_runtimes),
                       (_duplicate_outputs, lambda p: convert_opset(p, 13))]:
        path = tmp_path / f"{make.__name__}.onnx"
        onnx.save(make(), path)
        with pytest.raises(OnegraphError):
            call(path)
    with pytest.raises(OnegraphError):
        convert_opset(CAMPAIGN / "converter-segfault.onnx", 13)


def test_an_attribute_without_its_value_is_refused_before_any_tool_reads_it(cli, tmp_path):
    """Kind 2 (found by the campaign, seed 5): an attribute that declares a tensor and holds none reached the
    federated fingerprint, the float16 converter and the fusion rewriter as an undefined tensor (ValueError /
    IndexError / AttributeError). `check` flags it (C207) and the loader refuses it."""
    from onegraph.check import check

    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
    node = helper.make_node("Gemm", ["x", "w"], ["y"])
    node.attribute.append(onnx.AttributeProto(name="alpha", type=onnx.AttributeProto.TENSOR))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [w])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), path)
    assert "C207" in check(path).codes()
    for argv in (["fed", "params"], ["fuse", "-o", str(tmp_path / "o.onnx")], ["convert", "--fp16", "-o",
                                                                            str(tmp_path / "o.onnx")]):
        done = cli(argv[0], *argv[1:2] if argv[0] == "fed" else (), str(path), *argv[1:] if argv[0] != "fed" else ())
        _one_line_error(done)
        assert "C207" in done.stderr


def test_external_tensors_are_read_from_the_models_folder(tmp_path, monkeypatch):
    """Campaign case (`stats show`, seed 11): onnx-ir read an external tensor relative to the working folder
    (FileNotFoundError, exit 70) — or, worse, read a file of that name there."""
    from onnx.external_data_helper import convert_model_to_external_data

    from onegraph.check.loader import load_ir

    weights = np.arange(64, dtype=np.float32).reshape(8, 8)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "ext",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
                          [numpy_helper.from_array(weights, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    convert_model_to_external_data(model, location="weights.bin", size_threshold=0)
    folder = tmp_path / "model"
    folder.mkdir()
    onnx.save(model, folder / "m.onnx")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "weights.bin").write_bytes(b"\xff" * weights.nbytes)  # a decoy where the old code looked
    monkeypatch.chdir(elsewhere)
    loaded = load_ir(folder / "m.onnx")
    np.testing.assert_array_equal(loaded.graph.initializers["w"].const_value.numpy(), weights)


def test_a_model_with_external_data_converts_compares_and_is_written_elsewhere_whole(cli, tmp_path):
    """The user's report: `compare` / `convert` refused a model with external data ("model_path must not be
    empty": onnxruntime's optimizer, given bytes), and every writer copied the relative location into a model
    written to another folder, where no data file is (C106). The one loader reads the tensors in."""
    from onnx.external_data_helper import convert_model_to_external_data

    model = onnx.load(Path(__file__).parent / "data" / "digits-cnn.onnx")
    convert_model_to_external_data(model, location="cnn.bin", size_threshold=0)
    onnx.save(model, tmp_path / "cnn.onnx")
    out = tmp_path / "out"
    out.mkdir()
    assert cli("compare", str(tmp_path / "cnn.onnx")).returncode == 0
    for argv in (["convert", "--opset", "16"], ["convert", "--fp16"], ["meta", "set", "description=x"],
                 ["stats", "strip"], ["functions", "inline"], ["fuse"]):
        words = 2 if argv[0] in ("meta", "stats", "functions") else 1
        target = out / f"{'-'.join(argv[:words])}.onnx"
        done = cli(*argv[:words], str(tmp_path / "cnn.onnx"), *argv[words:], "-o", str(target))
        assert done.returncode == 0, (argv, done.stderr)
        assert cli("check", str(target)).returncode == 0, argv  # whole: no external reference left
        assert not any(t.data_location == TensorProto.EXTERNAL for t in onnx.load(target).graph.initializer)


def test_calibrating_a_model_whose_runs_take_no_sample_is_one_error(cli, tmp_path):
    """Campaign case (`stats calibrate`, seed 11): an input declared [0, 4] made a zero batch size (exit 70)."""
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "empty",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [0, 4])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), path)
    np.savez(tmp_path / "d.npz", x=np.ones((3, 4), np.float32))
    done = cli("stats", "calibrate", str(path), "--data", str(tmp_path / "d.npz"), "-o", str(tmp_path / "o.onnx"))
    _one_line_error(done)
    assert "'x'" in done.stderr and "first dimension of 0" in done.stderr
    assert not (tmp_path / "o.onnx").exists()


@pytest.mark.parametrize("argv", [["nosuchcmd"], ["score", "m.onnx", "d.csv"]]
                         + [[command, "--no-such-option"] for command in sorted(
                             __import__("onegraph.cli", fromlist=["COMMANDS"]).COMMANDS)])
def test_usage_errors_are_one_line_on_every_command(cli, argv):
    """A new user's case: click's usage errors printed a five-line box; they leave through the one exit too
    (exit code 2, as click's)."""
    done = cli(*argv)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "--help`)" in lines[0]


def test_misused_python_functions_raise_onegraph_errors_naming_the_argument(tmp_path):
    """The user's report: the Python API let AttributeError / TypeError / ValueError / FileNotFoundError out for
    simple misuse (a path to a pass that rewrites an onnx_ir.Model, a rule given as one string, bins=0, a
    missing file for model_hash, no statistics to annotate)."""
    import onnx_ir as ir

    from onegraph import meta, passes, stats
    from onegraph.errors import ConfigError, ModelFileError, PassError

    path = tmp_path / "m.onnx"
    model = _mixed_types()
    model.graph.input[1].type.tensor_type.elem_type = TensorProto.FLOAT  # valid now
    onnx.save(model, path)
    for call in (lambda: passes.fuse(str(path)), lambda: passes.fuse(onnx.load(path)),
                 lambda: passes.inline(str(path)), lambda: passes.list_functions(str(path)),
                 lambda: passes.group_functions(onnx.load(path))):
        with pytest.raises(PassError, match=r"rewrites an onnx_ir.Model in place, not a (str|ModelProto).*load_ir"):
            call()
    assert passes.fuse(ir.load(path), rules="layer_norm") == {"layer_norm": 0}  # one family, not its letters
    feeds = {"x": np.ones((4, 2), np.float32), "d": np.ones((4, 2), np.float32)}
    for option, words in (({"bins": 0}, "bins=0 is not a whole number >= 2"),
                          ({"sketch_k": 0}, "sketch_k=0 is not a whole number >= 8"),
                          ({"sketch_k": 70_000}, "more than 65535")):
        with pytest.raises(ConfigError, match=words):
            stats.calibrate(path, feeds, **option)
    with pytest.raises(ModelFileError, match="does not exist"):
        meta.model_hash(tmp_path / "nope.onnx")
    with pytest.raises(ConfigError, match="stats is a NoneType, not a mapping"):
        stats.annotate(path, None)
