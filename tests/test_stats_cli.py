"""`onegraph stats MODEL --data DATA -o OUT.onnx [--report DIR]`, `onegraph stats show|recover|strip`."""

from __future__ import annotations

import json

import numpy as np
import onnx
from stats_models import cnn, penguins_pipeline
from typer.testing import CliRunner

from onegraph.cli import app
from onegraph.datasets import penguins_path
from onegraph.stats import read_qparams, read_stats

runner = CliRunner()


def test_default_action_writes_model_report_and_tables(tmp_path):
    model, frame = penguins_pipeline()
    (tmp_path / "p.onnx").write_bytes(model)
    out = tmp_path / "p.stats.onnx"
    result = runner.invoke(app, ["stats", str(tmp_path / "p.onnx"), "--data", str(penguins_path()), "-o", str(out),
                                 "--report", str(tmp_path / "report"), "--batch-size", "100"])
    assert result.exit_code == 0, result.output
    assert "widest ranges" in result.output and "NaN / inf" in result.output and "outlier-heavy" in result.output
    assert f"over {len(frame):,} samples" in result.output
    stats = read_stats(out)
    assert stats["body_mass_g"].nan == frame["body_mass_g"].isna().sum()
    assert stats["body_mass_g"].max == frame["body_mass_g"].max()
    assert set(read_qparams(out)) == {n for n, s in stats.items() if s.min is not None}
    index = (tmp_path / "report" / "index.html").read_text()
    pngs = sorted((tmp_path / "report" / "hist").glob("*.png"))
    assert len(pngs) == len(stats) and "body_mass_g" in index
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f'src="hist/{p.name}"' in index for p in pngs)


def test_show_recover_strip_and_the_explicit_command(tmp_path):
    model, x = cnn()
    (tmp_path / "cnn.onnx").write_bytes(model)
    np.savez(tmp_path / "digits.npz", x=x[:200])
    annotated = tmp_path / "cnn.stats.onnx"
    result = runner.invoke(app, ["stats", "calibrate", str(tmp_path / "cnn.onnx"), "--data",
                                 str(tmp_path / "digits.npz"), "-o", str(annotated), "--quant-type", "int8",
                                 "--symmetric", "--per-channel"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["stats", "show", str(annotated)])
    assert result.exit_code == 0, result.output
    assert "/conv1/Conv_output_0" in result.output and "int8 x6" in result.output
    result = runner.invoke(app, ["stats", "show", str(annotated), "--json"])
    documents = json.loads(result.output)
    assert documents["x"]["count"] == x[:200].size and documents["x"]["max"] == float(x[:200].max())
    lean = tmp_path / "lean.onnx"
    result = runner.invoke(app, ["stats", "strip", str(annotated), "-o", str(lean)])
    assert result.exit_code == 0 and read_stats(lean) == {}
    result = runner.invoke(app, ["stats", "show", str(lean)])
    assert "carries no tensor statistics" in result.output
    # a QDQ model: the recovered ranges are the ones its DequantizeLinear nodes represent
    _quantize_qdq(tmp_path / "cnn.onnx", tmp_path / "qdq.onnx", x[:100])
    result = runner.invoke(app, ["stats", "recover", str(tmp_path / "qdq.onnx"), "-o", str(tmp_path / "rec.onnx")])
    assert result.exit_code == 0, result.output
    recovered = read_stats(tmp_path / "rec.onnx")
    dq = [n for n in onnx.load(tmp_path / "qdq.onnx").graph.node if n.op_type == "DequantizeLinear"]
    assert dq and all(recovered[n.output[0]].source == "recovered" for n in dq)


def _quantize_qdq(model, out, x) -> None:
    """onnxruntime's static QDQ quantization of ``model`` (input ``x``) calibrated on one batch, written to ``out``."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"x": x}])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(str(model), str(out), Reader(), quant_format=QuantFormat.QDQ)


def test_errors_print_one_line(tmp_path):
    model, _ = cnn()
    (tmp_path / "cnn.onnx").write_bytes(model)
    np.savez(tmp_path / "bad.npz", image=np.zeros((2, 1, 8, 8), np.float32))
    from cli_run import run

    result = run("stats", tmp_path / "cnn.onnx", "--data", tmp_path / "bad.npz", "-o", tmp_path / "o.onnx")
    assert result.returncode == 1
    assert result.stderr.strip().startswith("error: column 'x' is required") and "Traceback" not in result.stderr
    assert not (tmp_path / "o.onnx").exists()


def test_bad_options_are_refused_before_the_calibration_runs(tmp_path, cli):
    """The user's report: --tensor 'zzz*' wrote "statistics of 0 tensors" and exited 0. Each bad option is
    refused by name; the data is wrong too, so an option error proves nothing ran before the check."""
    model, x = cnn()
    path = tmp_path / "cnn.onnx"
    path.write_bytes(model)
    good, bad = tmp_path / "good.npz", tmp_path / "bad.npz"
    np.savez(good, x=x[:8])
    np.savez(bad, image=x[:8])
    (tmp_path / "folder").mkdir()
    for data, args, message in [
        (good, ["--tensor", "zzz*"], "tensor pattern 'zzz*' matches no float tensor"),
        (good, ["--op-type", "LSTM"], "op type 'LSTM' produces no float tensor"),
        (bad, ["-o", str(tmp_path / "folder")], "is a folder"),
        (bad, ["--quant-type", "int3"], "unknown quantization type 'int3'"),
        (bad, ["--method", "median"], "unknown calibration method 'median'"),
        # was an internal error (range() arg 3 must not be zero) and "the calibration data holds no sample"
        (bad, ["--batch-size", "0"], "batch_size=0 is not a whole number >= 1"),
        (bad, ["--batch-size", "-3"], "batch_size=-3 is not a whole number >= 1"),
        # no tensor has an axis 5: per-tensor scales were written, exit 0, without a word
        (good, ["--per-channel", "--channel-axis", "5"], "no observed tensor has a fixed-size axis 5"),
    ]:
        argv = ["stats", "calibrate", str(path), "--data", str(data), *args]
        if "-o" not in args:
            argv += ["-o", str(tmp_path / "o.onnx")]
        result = cli(*argv)
        assert result.returncode == 1 and message in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "o.onnx").exists()
    # a pattern that matches observes exactly the tensors it names (names read from the model itself)
    names = [o for n in onnx.load_from_string(model).graph.node for o in n.output][:2]
    result = cli("stats", "calibrate", str(path), "--data", str(good), "-o", str(tmp_path / "o.onnx"),
                 *sum((["--tensor", n] for n in names), []), "--quant-type", "none")
    assert result.returncode == 0 and set(read_stats(tmp_path / "o.onnx")) == set(names)


def test_strip_of_a_model_without_statistics_writes_it_unchanged(tmp_path):
    """``stats strip`` of a model that carries no statistics rewrote it through onnx-ir, which added the value
    infos it inferred (a QDQ model grew from 5.1 to 6.2 KiB): OUT is now the model as it was, and the output says
    there was nothing to strip."""
    model, x = cnn()
    (tmp_path / "cnn.onnx").write_bytes(model)
    _quantize_qdq(tmp_path / "cnn.onnx", tmp_path / "qdq.onnx", x[:50])
    for name in ("cnn.onnx", "qdq.onnx"):
        source, lean = tmp_path / name, tmp_path / f"lean-{name}"
        result = runner.invoke(app, ["stats", "strip", str(source), "-o", str(lean)])
        assert result.exit_code == 0, result.output
        assert "carries no statistics" in result.output and "unchanged" in result.output
        assert onnx.load(lean) == onnx.load(source)
        assert len(onnx.load(lean).graph.value_info) == len(onnx.load(source).graph.value_info)


def test_data_without_a_finite_value_is_warned_about_and_top_is_a_count(tmp_path, cli):
    """The user's report: all-NaN calibration data wrote no scale for any tensor, exit 0 and no word; --top -1
    printed "top -1 of 5 tensors" and dropped a row."""
    model, x = cnn()
    path, data = tmp_path / "cnn.onnx", tmp_path / "nan.npz"
    path.write_bytes(model)
    np.savez(data, x=np.full_like(x[:8], np.nan))
    result = cli("stats", "calibrate", str(path), "--data", str(data), "-o", str(tmp_path / "o.onnx"))
    assert result.returncode == 0
    n = len(read_stats(tmp_path / "o.onnx"))
    assert f"warning: {n} of {n} tensor(s) hold no finite value on the data" in result.stderr
    assert not read_qparams(tmp_path / "o.onnx")
    result = cli("stats", "calibrate", str(path), "--data", str(data), "-o", str(tmp_path / "p.onnx"), "--top", "-1")
    assert result.returncode == 2 and "--top" in result.stderr and not (tmp_path / "p.onnx").exists()
