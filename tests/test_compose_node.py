"""Without Python: built models run in ONNX Runtime for Node.js give onnxruntime-in-Python's outputs.

tests/node/run.mjs takes the feeds in onegraph's documented representation (missing text "\\uFFFF", int64 as
BigInt64Array, datetimes as int64 nanoseconds) and, for a sequence model, computes the windows itself.
``.ci/run`` installs onnxruntime-node (``npm install --ignore-scripts``: its bundled CPU binaries).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest
from compose_helpers import ROOT, fraud, penguins
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

import onegraph
from onegraph.runtime.session import Session

NODE_DIR = ROOT / "tests" / "node"


def _node_ready() -> None:
    missing = shutil.which("node") is None or not (NODE_DIR / "node_modules" / "onnxruntime-node").is_dir()
    if missing and os.environ.get("CI"):
        pytest.fail("node or tests/node/node_modules is missing: .ci/run installs them")
    if missing:
        pytest.skip("run `npm install --ignore-scripts` in tests/node first")


def _json_values(arr: np.ndarray) -> tuple[str, list]:
    if arr.dtype == object:
        return "string", [str(v) for v in arr.ravel()]
    if arr.dtype == np.int64:
        return "int64", [str(v) for v in arr.ravel()]
    if arr.dtype == np.bool_:
        return "bool", arr.ravel().tolist()
    kind = "float64" if arr.dtype == np.float64 else "float32"
    return kind, [None if np.isnan(v) else float(v) for v in arr.ravel()]


def _run_node(tmp_path, proto, feeds: dict[str, np.ndarray], sequence: dict | None = None) -> dict[str, np.ndarray]:
    model = tmp_path / "model.onnx"
    model.write_bytes(proto.SerializeToString())
    spec = {"inputs": {}}
    for name, arr in feeds.items():
        kind, data = _json_values(arr)
        spec["inputs"][name] = {"type": kind, "dims": list(arr.shape), "data": data}
    if sequence:
        spec["sequence"] = sequence
    (tmp_path / "feeds.json").write_text(json.dumps(spec))
    subprocess.run(["node", str(NODE_DIR / "run.mjs"), str(model), str(tmp_path / "feeds.json"),
                    str(tmp_path / "out.json")], check=True, cwd=NODE_DIR, timeout=120)
    out = {}
    for name, value in json.loads((tmp_path / "out.json").read_text()).items():
        data = value["data"]
        if value["type"] == "int64":
            arr = np.asarray([int(v) for v in data], np.int64)
        elif value["type"] == "string":
            arr = np.asarray(data, dtype=object)
        else:
            arr = np.asarray([np.nan if v is None else v for v in data], np.float64)
        out[name] = arr.reshape(value["dims"])
    return out


def _same(node: dict[str, np.ndarray], python: dict[str, np.ndarray]) -> None:
    assert set(node) == set(python)
    for name, expected in python.items():
        got = node[name]
        assert got.shape == expected.shape, name
        if expected.dtype.kind in "OUib":
            assert (got == expected).all(), name
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=name)


def test_composed_ensemble_in_node(tmp_path):
    _node_ready()
    frame, y, pre, x = penguins()
    models = {"lr": LogisticRegression(max_iter=1000).fit(x, y),
              "rf": RandomForestClassifier(n_estimators=10, random_state=0).fit(x, y)}
    proto = onegraph.compose(pre, models, frame, ensemble="mean")
    session = Session(proto)
    _, feeds = session.feeds(frame)
    assert (feeds["sex"] == "\uffff").any()  # missing text travels as the marker
    _same(_run_node(tmp_path, proto, feeds), session.run(frame))


def test_fraud_sequence_model_in_node(tmp_path):
    _node_ready()
    fitted = fraud()
    rows = fitted["test"].drop(columns="label")
    session = Session(fitted["onnx"])
    _, feeds = session.feeds(rows)
    spec = session.sequence
    sequence = {"group": rows[spec.group].astype(str).tolist(), "order": spec.order, "window": spec.window,
                "input": spec.input}
    _same(_run_node(tmp_path, fitted["onnx"], feeds, sequence), session.run(rows))
