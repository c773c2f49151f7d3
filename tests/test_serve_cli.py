"""`onegraph serve` from the command line: one line and a non-zero exit for bad options; a real server
process with two workers answering, then stopping on SIGTERM; the serving modules' lean imports."""

from __future__ import annotations

import ast
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import onegraph
from serve_helpers import assert_predictions, build_penguins, records

SERVE = Path(onegraph.__file__).parent / "serve"


@pytest.fixture(scope="module")
def model(penguins, tmp_path_factory):
    return build_penguins(penguins, tmp_path_factory.mktemp("serve-cli") / "penguins.onnx")


def test_bad_options_print_one_line(cli, model, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = [
            (["serve", str(model), "--port", str(port)], f"127.0.0.1:{port}: Address already in use"),
            (["serve", str(tmp_path / "nope.onnx")], "nope.onnx cannot be read"),
            (["serve", str(model), "--max-batch", "0"], "--max-batch"),
            (["serve", str(model), "--timeout", "0"], "--timeout"),
            (["serve", f"a={model}", f"a={model}"], "two models are named 'a'"),
            (["serve", f"a b={model}"], "URL path segment"),
            (["serve", str(model), "--port", "70000"], "port 70000"),
            (["serve", str(model), "--log-level", "loud"], "--log-level 'loud' is not a log level"),  # was exit 70
        ]
        garbage = tmp_path / "garbage.onnx"
        garbage.write_bytes(b"garbage")
        cases.append((["serve", str(garbage), "--port", "0"], "not a valid ONNX model"))
        # tensor models, refused at start naming the input: a media model (its start failed with "onnxruntime
        # failed: ... Missing Input: image") and a [N, 4] matrix model (it started, then refused every request)
        import numpy as np
        import onnx.helper as oh

        import onegraph.media as media

        images = np.random.default_rng(0).integers(0, 256, (2, 12, 10, 3), dtype=np.uint8)
        media.build(media.ImagePipeline([media.Resize((8, 8), "bilinear", match="pil")], channels=3), None, images,
                    path=tmp_path / "resize.onnx")
        cases.append((["serve", str(tmp_path / "resize.onnx"), "--port", "0"],
                      "input 'image' of shape ['N', 'H', 'W', 3] takes a tensor, not one value per row"))
        matrix = oh.make_model(oh.make_graph([oh.make_node("Relu", ["x"], ["y"])], "g",
                                             [oh.make_tensor_value_info("x", 1, ["N", 4])],
                                             [oh.make_tensor_value_info("y", 1, ["N", 4])]),
                               opset_imports=[oh.make_opsetid("", 21)])
        (tmp_path / "matrix.onnx").write_bytes(matrix.SerializeToString())
        cases.append((["serve", str(tmp_path / "matrix.onnx"), "--port", "0"], "input 'x' of shape ['N', 4] takes a "
                      "tensor"))
        for args, words in cases:
            result = cli(*args)
            assert result.returncode == 1, (args, result.stderr)
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], (args, result.stderr)
            assert "Traceback" not in result.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_process_answers_and_exits_0_on_sigterm(model, penguins, workers):
    """A server process scores as onegraph.score does and a SIGTERM stops it with exit status 0 (one worker
    exited 143: uvicorn re-raised the signal after its graceful shutdown, while two workers and Ctrl-C gave 0)."""
    command = [sys.executable, "-m", "onegraph.cli", "serve", f"p={model}", "--port", "0", "--workers", str(workers)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        lines = []
        for line in process.stderr:
            lines.append(line)
            if line.startswith("serving on "):
                url = line.split()[2]
                break
        assert url, "".join(lines)
        frame = penguins.drop(columns="species").head(5)
        expected = onegraph.score(model, frame)
        for attempt in range(200):  # the workers load the model after the socket is listening
            try:
                r = httpx.post(url + "/v1/models/p:predict", json={"instances": records(frame)}, timeout=60)
                break
            except httpx.TransportError:
                if attempt == 199:
                    raise
                import time

                time.sleep(0.1)
        assert_predictions(r.json()["predictions"], expected)
        assert httpx.get(url + "/v2/models/p").json()["versions"] == ["1"]
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    assert code == 0, process.stderr.read()


FORBIDDEN = {"sklearn", "scipy", "skl2onnx", "torch", "matplotlib", "onnxscript", "onnx_ir"}


def test_serving_modules_import_no_fitting_library():
    """The server's own modules import the web stack, numpy / pandas / pyarrow / onnxruntime and
    onegraph's runtime, errors and io only (scoring needs no fitting library)."""
    files = sorted(SERVE.glob("*.py")) + [SERVE.parent / "cli" / "serve.py"]
    allowed_onegraph = ("onegraph.serve", "onegraph.runtime", "onegraph.errors", "onegraph.io", "onegraph.cli.base",
                        "onegraph._lazy")
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"
                if name.startswith("onegraph") and name != "onegraph":
                    assert name.startswith(allowed_onegraph), f"{path.name} imports {name}"
    assert os.path.exists(SERVE / "app.py")
