"""PyTorch modules through torch.onnx.export (torch 2.13.0, CPU) composed with onegraph preprocessing."""

from __future__ import annotations

import numpy as np
import pytest
from compose_helpers import penguins

import onegraph
from onegraph.export import TorchModule
from onegraph.inspect import describe

torch = pytest.importorskip("torch")


def _mlp(x: np.ndarray, y: np.ndarray, n_out: int):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 16), torch.nn.ReLU(), torch.nn.Linear(16, n_out))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    xt = torch.from_numpy(x.astype(np.float32))
    yt = torch.from_numpy(y)
    loss_fn = torch.nn.CrossEntropyLoss() if n_out > 1 and y.dtype == np.int64 else torch.nn.MSELoss()
    for _ in range(60):
        optimizer.zero_grad()
        out = model(xt)
        loss_fn(out if n_out > 1 else out[:, 0], yt).backward()
        optimizer.step()
    return model.eval()


def test_mlp_classifier_as_one_graph():
    frame, y, pre, x = penguins()
    classes = sorted(y.unique())
    codes = y.map({c: i for i, c in enumerate(classes)}).to_numpy().astype(np.int64)
    xs = np.asarray(x, np.float64)
    mlp = _mlp(xs, codes, len(classes))
    proto = onegraph.compose(pre, {"mlp": TorchModule(mlp, classes=classes)}, frame)
    scores = onegraph.score(proto, frame)
    with torch.no_grad():
        expected = torch.softmax(mlp(torch.from_numpy(xs.astype(np.float32))).double(), dim=1).numpy()
    assert (scores["label"].to_numpy() == np.asarray(classes, dtype=object)[expected.argmax(axis=1)]).all()
    np.testing.assert_allclose(scores[[f"probabilities_{c}" for c in classes]].to_numpy(), expected, atol=1e-5)
    meta = describe(proto)["metadata"]
    assert meta["training_algorithm"] == "torch.nn.modules.container.Sequential"
    assert meta["models"][0]["consumes"] == "a float32 feature matrix [N, 10]"
