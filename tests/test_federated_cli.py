"""``onegraph fed params|delta|apply|average``: the commands, run in-process through ``main()``; results checked
against numpy on the files they write, errors as one line with a non-zero exit code."""

from __future__ import annotations

import hashlib
import json

import federated_models as fm
import numpy as np
import onnx
from onnx import numpy_helper

from onegraph.meta import model_hash, read_metadata


def _values(path) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def _client(seed: int) -> dict[str, np.ndarray]:
    values = fm.parameters()
    values["bias"] = (values["bias"] + np.random.default_rng(seed).normal(size=3)).astype(np.float32)
    return values


def test_params_lists_and_marks(cli, tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(fm.model(), model)
    shown = cli("fed", "params", str(model))
    assert shown.returncode == 0, shown.stderr
    assert "w_q" in shown.stdout and "quantized" in shown.stdout
    assert "2 of 6 initializers exchanged (6 values); fingerprint sha256:" in shown.stdout
    listed = json.loads(cli("fed", "params", str(model), "--json", "--select", "w_*").stdout)
    assert listed["hash"] == model_hash(model)
    assert [p["name"] for p in listed["parameters"] if p["exchanged"]] == ["w_q", "w_scale", "w_zp"]
    assert {p["name"]: p["kind"] for p in listed["parameters"]}["shape"] == "integer"
    marked = cli("fed", "params", str(model), "--select", "bias", "-o", str(tmp_path / "marked.onnx"))
    assert "wrote" in marked.stdout and "transfer_learning.trainable = bias" in marked.stdout
    assert read_metadata(tmp_path / "marked.onnx").fields["transfer_learning"]["trainable"] == ["bias"]


def test_delta_average_apply(cli, tmp_path):
    base = tmp_path / "base.onnx"
    onnx.save(fm.model(), base)
    digest = hashlib.sha256(base.read_bytes()).hexdigest()
    deltas, samples, biases = [], [3, 5, 8, 13], []
    for i, n in enumerate(samples):
        local = tmp_path / f"local{i}.onnx"
        onnx.save(fm.model(_client(i)), local)
        biases.append(_client(i)["bias"])
        deltas.append(str(tmp_path / f"d{i}.safetensors"))
        done = cli("fed", "delta", str(local), str(base), "-o", deltas[-1], "--samples", str(n), "--select", "bias",
                   "--client", f"c{i}")
        assert done.returncode == 0, done.stderr
        assert f"1 parameter, round 1, {n} samples" in done.stdout
    b = fm.parameters()["bias"]
    updates = np.stack([x - b for x in biases])
    expected = {"fedavg": np.average(updates, axis=0, weights=samples), "median": np.median(updates, axis=0)}
    for method in ("fedavg", "median"):
        out = tmp_path / f"{method}.onnx"
        done = cli("fed", "average", str(base), *deltas, "--method", method, "-o", str(out))
        assert done.returncode == 0, done.stderr
        assert f"{method} of 4 deltas, round 1, 29 samples" in done.stdout
        np.testing.assert_array_equal(_values(out)["bias"], (b.astype(np.float64) + expected[method]).astype(np.float32))
    done = cli("fed", "apply", str(base), deltas[1], "-o", str(tmp_path / "applied.onnx"))
    assert done.returncode == 0 and "apply of 1 delta, round 1, 5 samples" in done.stdout
    np.testing.assert_array_equal(_values(tmp_path / "applied.onnx")["bias"],
                                  (b.astype(np.float64) + updates[1]).astype(np.float32))
    assert hashlib.sha256(base.read_bytes()).hexdigest() == digest


def test_errors_are_one_line(cli, tmp_path):
    base = tmp_path / "base.onnx"
    onnx.save(fm.model(), base)
    local = tmp_path / "local.onnx"
    onnx.save(fm.model(_client(1)), local)
    no_samples = cli("fed", "delta", str(local), str(base), "-o", str(tmp_path / "d.safetensors"))
    assert no_samples.returncode == 1 and "give the sample count (--samples N)" in no_samples.stderr
    assert len(no_samples.stderr.strip().splitlines()) == 1
    cli("fed", "delta", str(local), str(base), "-o", str(tmp_path / "d.safetensors"), "--samples", "2")
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes((tmp_path / "d.safetensors").read_bytes()[:-4])
    failed = cli("fed", "average", str(base), str(cut), "-o", str(tmp_path / "out.onnx"))
    assert failed.returncode == 1 and failed.stderr.startswith("error: delta ")
    assert "is truncated: the data of parameter 'gamma'" in failed.stderr and str(cut) in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1 and not (tmp_path / "out.onnx").exists()
    unknown = cli("fed", "average", str(base), str(tmp_path / "d.safetensors"), "--method", "mean", "-o",
                  str(tmp_path / "out.onnx"))
    assert unknown.returncode == 1 and "unknown method 'mean'" in unknown.stderr
