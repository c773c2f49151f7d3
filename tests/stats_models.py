"""Real models for the onegraph.stats tests, and the independent way to read their activations.

* ``penguins_pipeline``: the onegraph-built Palmer penguins pipeline (imputation, scaling, one-hot, logistic
  regression), fed from the DataFrame;
* ``mlp``: a 2-hidden-layer MLP trained with torch on the penguins' four measurements, exported by
  torch.onnx (``export_mlp`` without torch writes scikit-learn's MLPClassifier with onnx.helper instead);
* ``cnn``: a small CNN (two Conv + ReLU + MaxPool, a Linear) trained with torch on scikit-learn's bundled
  handwritten digits (8x8), exported by torch.onnx.

The two torch models are committed in tests/data (``digits-cnn.onnx``, ``penguins-mlp.onnx``, a few KiB) so
the tests need neither torch nor training time; ``python tests/stats_models.py`` trains and exports them again
(torch 2.13.0, seeded).

``activations`` runs a model in onnxruntime over all the data at once with every float tensor made an output
through onnx.helper (not onegraph's code), so tests compare onegraph's batched statistics with numpy on the
concatenated activations.
"""

from __future__ import annotations

import io
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

DATA = Path(__file__).parent / "data"
FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16}


@lru_cache(maxsize=None)
def penguins_pipeline() -> tuple[bytes, object]:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.datasets import load_penguins
    from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

    frame = load_penguins()
    y = frame.pop("species")
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
    pipe = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), numeric),
            ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
             ["island", "sex"]),
        ]),
        LogisticRegression(max_iter=2000),
    ).fit(frame, y)
    return onegraph.build(pipe, None, frame).SerializeToString(), frame


def _export(module, example, dynamic_axes) -> bytes:
    import torch

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(module.eval(), (example,), buf, dynamo=False, input_names=["x"], output_names=["y"],
                          dynamic_axes=dynamic_axes, opset_version=17)
    return buf.getvalue()


def _penguin_measurements() -> tuple[np.ndarray, np.ndarray]:
    from onegraph.datasets import load_penguins

    frame = load_penguins().dropna(subset=["bill_length_mm", "body_mass_g", "sex"])
    x = frame[["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]].to_numpy(np.float32)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    return x, frame["species"].astype("category").cat.codes.to_numpy(np.int64)


def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.images / 16.0).astype(np.float32)[:, None], digits.target.astype(np.int64)


@lru_cache(maxsize=None)
def mlp() -> tuple[bytes, np.ndarray]:
    """The MLP (committed export, see ``export_mlp``) and its data ``x`` [333, 4] float32 (standardized
    penguin measurements)."""
    return (DATA / "penguins-mlp.onnx").read_bytes(), _penguin_measurements()[0]


@lru_cache(maxsize=None)
def cnn() -> tuple[bytes, np.ndarray]:
    """The CNN (committed export, see ``export_cnn``) and its data ``x`` [1797, 1, 8, 8] float32 (scikit-learn's
    digits, scaled to [0, 1])."""
    return (DATA / "digits-cnn.onnx").read_bytes(), _digits()[0]


def export_mlp() -> bytes:
    """Train the MLP with torch on the penguins and export it with torch.onnx (scikit-learn's MLPClassifier
    written with onnx.helper when torch is absent)."""
    x, y = _penguin_measurements()
    try:
        import torch
    except ImportError:
        return _sklearn_mlp(x, y)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
                              torch.nn.Linear(16, 3))
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(150):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(xt), yt).backward()
        opt.step()
    return _export(net, xt[:2], {"x": {0: "N"}, "y": {0: "N"}})


def _sklearn_mlp(x: np.ndarray, y: np.ndarray) -> bytes:
    from sklearn.neural_network import MLPClassifier

    net = MLPClassifier(hidden_layer_sizes=(16, 16), max_iter=500, random_state=0).fit(x, y)
    h = onnx.helper
    nodes, inits, current = [], [], "x"
    for i, (w, b) in enumerate(zip(net.coefs_, net.intercepts_)):
        inits += [onnx.numpy_helper.from_array(w.astype(np.float32), f"w{i}"),
                  onnx.numpy_helper.from_array(b.astype(np.float32), f"b{i}")]
        out = "y" if i == len(net.coefs_) - 1 else f"gemm{i}"
        nodes.append(h.make_node("Gemm", [current, f"w{i}", f"b{i}"], [out]))
        if out != "y":
            nodes.append(h.make_node("Relu", [out], [f"relu{i}"]))
            current = f"relu{i}"
    graph = h.make_graph(nodes, "mlp", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 4])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 3])], inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8).SerializeToString()


def export_cnn() -> bytes:
    """Train the CNN with torch on the digits and export it with torch.onnx."""
    import torch

    x, y = _digits()

    class CNN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(1, 6, 3, padding=1)
            self.conv2 = torch.nn.Conv2d(6, 8, 3, padding=1)
            self.fc = torch.nn.Linear(8 * 2 * 2, 10)

        def forward(self, t):
            t = torch.nn.functional.max_pool2d(torch.relu(self.conv1(t)), 2)
            t = torch.nn.functional.max_pool2d(torch.relu(self.conv2(t)), 2)
            return self.fc(t.flatten(1))

    torch.manual_seed(0)
    net = CNN()
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(3):
        for i in range(0, len(xt), 128):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(xt[i:i + 128]), yt[i:i + 128]).backward()
            opt.step()
    return _export(net, xt[:2], {"x": {0: "N"}, "y": {0: "N"}})


def activations(model: bytes | onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every float tensor of the main graph (not initializers) over all ``feeds`` at once."""
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load_from_string(model)
    proto = onnx.shape_inference.infer_shapes(proto)
    graph = proto.graph
    initializers = {i.name for i in graph.initializer}
    outputs = {o.name for o in graph.output}
    for vi in graph.value_info:
        if vi.type.tensor_type.elem_type in FLOATS and vi.name not in outputs and vi.name not in initializers:
            graph.output.append(vi)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs() if o.type in ("tensor(float)", "tensor(double)", "tensor(float16)")]
    result = dict(zip(names, session.run(names, feeds)))
    for i in graph.input:
        if i.type.tensor_type.elem_type in FLOATS and i.name in feeds:
            result[i.name] = feeds[i.name]
    return result


if __name__ == "__main__":
    (DATA / "penguins-mlp.onnx").write_bytes(export_mlp())
    (DATA / "digits-cnn.onnx").write_bytes(export_cnn())
