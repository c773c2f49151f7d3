"""A PyTorch client: an MLP exported once with torch.onnx (its parameters become float32 initializers named as
in its ``state_dict``), trained locally by three clients on parts of the cars table, their weights set into the
global ONNX model, sent as deltas and averaged; compared with numpy's weighted mean of the state dicts, and
the merged model run in onnxruntime with the torch module holding the averaged weights."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from onegraph import federated as fed

torch = pytest.importorskip("torch")
COLUMNS = ["Cylinders", "Displacement", "Horsepower", "Weight_in_lbs", "Acceleration"]


def test_torch_clients_average_to_numpys_weighted_mean(cars, tmp_path):
    data = cars.dropna(subset=COLUMNS + ["Miles_per_Gallon"])
    x = data[COLUMNS].to_numpy(np.float32)
    x = (x - x.mean(0)) / x.std(0)
    y = data["Miles_per_Gallon"].to_numpy(np.float32)[:, None]
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(len(COLUMNS), 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.from_numpy(x[:2]),), buffer, dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}})
    base = tmp_path / "global.onnx"
    base.write_bytes(buffer.getvalue())
    names = {p.name for p in fed.list_parameters(base, trusted=True) if p.exchanged}
    assert names == set(net.state_dict())  # every trainable tensor is an initializer, named as in torch

    start = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    origin = data["Origin"].to_numpy()
    learnt, samples, deltas = [], [], []
    for i, region in enumerate(["USA", "Europe", "Japan"]):
        rows = origin == region
        client = torch.nn.Sequential(torch.nn.Linear(len(COLUMNS), 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        client.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in start.items()})
        optimizer = torch.optim.SGD(client.parameters(), lr=0.01)
        xs, ys = torch.from_numpy(x[rows]), torch.from_numpy(y[rows])
        for _ in range(30):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(client(xs), ys).backward()
            optimizer.step()
        state = {k: v.detach().numpy().copy() for k, v in client.state_dict().items()}
        local = fed.set_parameters(base, state, trusted=True)
        deltas.append(tmp_path / f"{region}.safetensors")
        fed.make_delta(local, base, deltas[-1], samples=int(rows.sum()), trusted=True)
        learnt.append(state)
        samples.append(int(rows.sum()))

    merged = fed.average(base, deltas, path=tmp_path / "next.onnx", trusted=True)
    got = {t.name: numpy_helper.to_array(t) for t in merged.graph.initializer}
    averaged = {}
    for name, value in start.items():
        updates = np.stack([s[name] - value for s in learnt])  # float32, as the delta file holds them
        averaged[name] = (value.astype(np.float64) + np.average(updates, axis=0, weights=samples)).astype(np.float32)
        np.testing.assert_array_equal(got[name], averaged[name], err_msg=name)
        np.testing.assert_allclose(got[name], np.average(np.stack([s[name] for s in learnt]), axis=0,
                                                         weights=samples), rtol=1e-5, atol=1e-6)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in averaged.items()})
    with torch.no_grad():
        expected = net(torch.from_numpy(x)).numpy()
    predicted = ort.InferenceSession(onnx.load(tmp_path / "next.onnx").SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(predicted, expected, rtol=1e-5, atol=1e-5)
