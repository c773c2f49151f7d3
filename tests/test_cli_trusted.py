"""``--trusted`` is one promise at one boundary: every command that reads a model takes it
(:func:`onegraph.cli.base.reads_models`), and under it no file the command reads goes to the isolated check,
whichever function reads it (:func:`onegraph.check.loader.trusting`)."""

from __future__ import annotations

import numpy as np
import pytest
from test_io_leftovers import _commands

from onegraph.errors import ModelFileError

#: commands that read no model file (build and quickstart read tables; check is the isolated check itself)
READS_NO_MODEL = {"quickstart", "build", "check"}


def _model_reading(model: str, data: str, delta: str, out: str) -> list[list[str]]:
    """A command line per command that reads a model."""
    return [
        ["score", model, data, "-o", out + ".csv"],
        ["show", model],
        ["compare", model, "--rows", "4"],
        ["convert", model, "--opset", "18", "-o", out + ".onnx"],
        ["compose", model, model, "--name", "a", "--name", "b", "-o", out + ".onnx"],
        ["fuse", model, "-o", out + ".onnx"],
        ["functions", "list", model],
        ["functions", "group", model, "--by", "scope", "-o", out + ".onnx"],
        ["functions", "inline", model, "-o", out + ".onnx"],
        ["stats", "calibrate", model, "--data", data, "-o", out + ".onnx"],
        ["stats", "show", model],
        ["stats", "recover", model, "-o", out + ".onnx"],
        ["stats", "strip", model, "-o", out + ".onnx"],
        ["meta", "show", model],
        ["meta", "set", model, "description=x", "-o", out + ".onnx"],
        ["meta", "validate", model],
        ["meta", "diff", model, model],
        ["fed", "params", model, "--select", "coef*", "-o", out + ".onnx"],
        ["fed", "delta", model, model, "--samples", "5", "-o", out + ".safetensors"],
        ["fed", "apply", model, delta, "-o", out + ".onnx"],
        ["fed", "average", model, delta, "-o", out + ".onnx"],
        ["serve", model, "--port", "0"],
    ]


def _words(args: list[str]) -> str:
    return " ".join(args[:2] if args[0] in {"functions", "meta", "stats", "fed"} else args[:1])


def test_every_command_that_reads_a_model_takes_trusted_at_the_boundary():
    commands = {" ".join(words): c for words, c in _commands()}
    reading = {name for name, c in commands.items() if name not in READS_NO_MODEL}
    assert reading == {_words(a) for a in _model_reading("M", "D", "X", "O")}
    for name in reading:
        options = {o for p in commands[name].params for o in getattr(p, "opts", [])}
        assert "--trusted" in options and getattr(commands[name].callback, "reads_models", False), name


@pytest.fixture
def refusing_guard(monkeypatch):
    """The isolated check refuses every file: a command reaching it prints its refusal."""
    from onegraph.check import guard
    from onegraph.serve import server

    def refuse(source, *, purpose, limits=None):
        raise ModelFileError(f"{source.label} refused by the test's guard")

    monkeypatch.setattr(guard, "ensure_safe", refuse)
    monkeypatch.setattr(server.Server, "run", lambda self: None)  # serve loads its models, then returns


def test_trusted_skips_the_check_of_every_file_every_command_reads(cli, refusing_guard, penguins_onnx, penguins,
                                                                   tmp_path):
    """Without ``--trusted`` each command reaches the check (here refusing everything) in one line; with it,
    none does — compare, convert, compose, stats, functions and fuse had no ``--trusted`` and could not open a
    file the check refused. A command may still refuse the model for its own reason (``stats recover`` of a
    model holding no quantization, ``functions group`` of one without scopes), never for the check's."""
    from onegraph.check import trusting
    from onegraph.federated.deltas import make_delta

    model = tmp_path / "m.onnx"
    model.write_bytes(penguins_onnx.read_bytes())
    data = tmp_path / "rows.csv"
    penguins.head(40).to_csv(data, index=False)
    delta = tmp_path / "d.safetensors"
    with trusting():
        make_delta(model, model, delta, samples=5)
    for i, args in enumerate(_model_reading(str(model), str(data), str(delta), "OUT")):
        args = [a.replace("OUT", str(tmp_path / f"out{i}")) for a in args]
        refused = cli(*args)
        assert refused.returncode == 1 and "refused by the test's guard" in refused.stderr, (args, refused.stderr)
        assert refused.stderr.count("\n") == 1, (args, refused.stderr)
        trusted = cli(*args[:_words(args).count(" ") + 1], "--trusted", *args[_words(args).count(" ") + 1:])
        assert "refused by the test's guard" not in trusted.stderr, (args, trusted.stderr)
        # refusals of the command's own: no quantization to recover, no scopes to group in a built model
        assert trusted.returncode == 0 or args[:2] in (["stats", "recover"], ["functions", "group"]), \
            (args, trusted.stderr)


def test_trusting_block_trusts_reads_of_functions_without_a_trusted_parameter(refusing_guard, penguins_onnx):
    from onegraph.check import load_model, trusting
    from onegraph.verify import compare_runtimes

    with pytest.raises(ModelFileError, match="refused by the test's guard"):
        compare_runtimes(str(penguins_onnx), rows=4)
    with trusting():
        assert compare_runtimes(str(penguins_onnx), rows=4).ok
        load_model(penguins_onnx)
    with pytest.raises(ModelFileError, match="refused by the test's guard"):  # the block ended
        load_model(penguins_onnx)


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_device_or_fifo_given_as_a_model_is_refused_by_every_command(cli, penguins, tmp_path, kind):
    """``onegraph check /dev/zero`` read without end in the calling process (22 GB, then the OOM killer: its
    size is 0, so the size check passed) and a FIFO hung it; the one reader of model files refuses anything but a
    regular file before opening it, for every command, with or without ``--trusted``."""
    import os
    import signal

    if kind == "device":
        model = "/dev/null"  # reads as empty (safe to run before the fix); /dev/zero is the same kind of file
    else:
        model = str(tmp_path / "pipe.onnx")
        os.mkfifo(model)
    penguins.head(5).to_csv(tmp_path / "rows.csv", index=False)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("a command hung on the file")))
    try:
        for args in [["check", model], *_model_reading(model, str(tmp_path / "rows.csv"), model,
                                                       str(tmp_path / "out"))]:
            for extra in ([], ["--trusted"]) if args[0] != "check" else ([],):
                signal.alarm(20)
                result = cli(*args, *extra)
                signal.alarm(0)
                assert result.returncode in (1, 2), (args, result.stdout, result.stderr)
                assert "is not a regular file (a device, FIFO or socket)" in result.stdout + result.stderr, args
                assert "Traceback" not in result.stderr
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def test_a_zipmap_classifier_is_named_with_the_fix_not_sent_to_check(cli, penguins, tmp_path):
    """skl2onnx's default classifier output (ZipMap: a sequence of maps) made compose / compare / fuse fail with a
    protobuf dump and "check it with `onegraph check`", which finds the file clean; the error names the output
    and the skl2onnx option that gives a tensor."""
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression

    x = penguins[["bill_length_mm", "flipper_length_mm"]].dropna()
    rows = x.to_numpy(np.float32)  # ZipMap takes float probabilities: a float32 model, as skl2onnx's docs
    model = LogisticRegression(max_iter=1000).fit(rows, penguins.loc[x.index, "species"])
    path = tmp_path / "zipmap.onnx"
    path.write_bytes(to_onnx(model, rows[:1], target_opset=18).SerializeToString())
    assert cli("check", str(path)).returncode == 0
    for args in (["compare", str(path)], ["fuse", str(path), "-o", str(tmp_path / "f.onnx")]):
        result = cli(*args)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, (args, result.stderr)
        assert "output 'output_probability' is a map or a sequence of maps" in result.stderr, result.stderr
        assert "options={'zipmap': False}" in result.stderr
