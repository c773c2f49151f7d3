"""PyTorch modules exported with torch.onnx (torch 2.13 CPU) for the tests of onegraph.passes.

Each export is made once per test session (``export``) and run on windows of real daily weather
(tests/data/seattle-weather.csv: precipitation, temp_max, temp_min, wind, standardized), so every test
compares graphs computing on the same real sequences. Weights are PyTorch's seeded initialization: the
tests check that graph transformations keep values, not what a model learned.
"""

from __future__ import annotations

import functools
import io
import math
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

DATA = Path(__file__).parent / "data"
BATCH, STEPS, FEATURES, HIDDEN = 4, 4, 4, 8


def weather_windows() -> np.ndarray:
    """``[BATCH, STEPS, FEATURES]`` float32: consecutive days of Seattle weather, standardized."""
    frame = pd.read_csv(DATA / "seattle-weather.csv")
    values = frame[["precipitation", "temp_max", "temp_min", "wind"]].to_numpy(np.float64)
    values = (values - values.mean(0)) / values.std(0)
    starts = [0, 100, 200, 300]
    return np.stack([values[s:s + STEPS] for s in starts]).astype(np.float32)


# -- modules written with nn layers ---------------------------------------------------------------
class LstmClassifier(nn.Module):
    """2-layer ``nn.LSTM`` over the sequence, a linear head on the last step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(FEATURES, HIDDEN, num_layers=2, batch_first=True)
        self.head = nn.Linear(HIDDEN, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y[:, -1])


class LstmCellClassifier(nn.Module):
    """The same 2-layer LSTM written as two ``nn.LSTMCell`` called in a loop over time."""

    def __init__(self):
        super().__init__()
        self.cell1 = nn.LSTMCell(FEATURES, HIDDEN)
        self.cell2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, 3)

    def forward(self, x):
        h1 = c1 = h2 = c2 = torch.zeros(x.shape[0], HIDDEN)
        for t in range(x.shape[1]):
            h1, c1 = self.cell1(x[:, t], (h1, c1))
            h2, c2 = self.cell2(h1, (h2, c2))
        return self.head(h2)


class Classifiers(nn.Module):
    """Both classifiers side by side (one export): ``lstm`` (nn.LSTM) and ``cells`` (nn.LSTMCell loop)."""

    def __init__(self):
        super().__init__()
        self.lstm = LstmClassifier()
        self.cells = LstmCellClassifier()

    def forward(self, x):
        return self.lstm(x), self.cells(x)


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, -1)
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1)
        return self.out(weights @ v)


class Block(nn.Module):
    """A small pre-norm transformer block with ``nn.LayerNorm`` and ``nn.GELU``."""

    def __init__(self, d=FEATURES):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


# -- modules written with primitive ops -----------------------------------------------------------
class PrimLayerNorm(nn.Module):
    def __init__(self, d=FEATURES, affine=True):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, d)) if affine else None
        self.bias = nn.Parameter(torch.linspace(-0.2, 0.2, d)) if affine else None

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        y = (x - mean) / torch.sqrt(var + 1e-5)
        return y * self.weight + self.bias if self.weight is not None else y


def gelu_erf(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


class PrimBlock(nn.Module):
    """The block with layer norms and GELUs written out in primitive ops (erf form, then tanh form)."""

    def __init__(self, d=FEATURES):
        super().__init__()
        self.ln1 = PrimLayerNorm(d)
        self.attn = Attention(d)
        self.ln2 = PrimLayerNorm(d, affine=False)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.fc3 = nn.Linear(d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.fc2(gelu_erf(self.fc1(self.ln2(x))))
        return gelu_tanh(self.fc3(x))


class Encoder(nn.Module):
    """Two nn-layer blocks (one class, two instances), a primitive-op block, a final ``nn.LayerNorm``."""

    def __init__(self):
        super().__init__()
        self.block0 = Block()
        self.block1 = Block()
        self.prim = PrimBlock()
        self.norm = nn.LayerNorm(FEATURES)

    def forward(self, x):
        return self.norm(self.prim(self.block1(self.block0(x))))


class HandGru(nn.Module):
    """A GRU cell in primitive ops, the ``(1 - z) * n + z * h`` way."""

    def __init__(self, i=FEATURES, h=6):
        super().__init__()
        self.ih, self.hh = nn.Linear(i, 3 * h), nn.Linear(h, 3 * h)

    def forward(self, x, h):
        x_r, x_z, x_n = self.ih(x).chunk(3, 1)
        h_r, h_z, h_n = self.hh(h).chunk(3, 1)
        r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        return (1 - z) * n + z * h


class HandLstm(nn.Module):
    """An LSTM cell in primitive ops: one linear layer over ``cat([x, h])``, gates chunked i, f, o, g."""

    def __init__(self, i=FEATURES, h=5):
        super().__init__()
        self.gates = nn.Linear(i + h, 4 * h)

    def forward(self, x, h, c):
        i, f, o, g = self.gates(torch.cat([x, h], 1)).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


class RecurrentTagger(nn.Module):
    """Three recurrences over the same sequence: an ``nn.GRUCell``, a hand-written GRU, a hand-written LSTM."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRUCell(FEATURES, 6)
        self.hand_gru = HandGru()
        self.hand_lstm = HandLstm()
        self.head = nn.Linear(6 + 6 + 5, 3)

    def forward(self, x, h0):
        g, k = h0, torch.zeros(x.shape[0], 6)
        h, c = torch.zeros(x.shape[0], 5), torch.zeros(x.shape[0], 5)
        for t in range(x.shape[1]):
            g = self.gru(x[:, t], g)
            k = self.hand_gru(x[:, t], k)
            h, c = self.hand_lstm(x[:, t], h, c)
        return self.head(torch.cat([g, k, h], 1))


class NotFusable(nn.Module):
    """Decompositions a fusion must leave alone: each computes something the fused operator does not."""

    def __init__(self, d=FEATURES, h=5):
        super().__init__()
        self.scale_2d = nn.Parameter(torch.linspace(0.5, 1.5, STEPS * d).reshape(STEPS, d))  # broadcasts over batch
        self.gates = nn.Linear(d + h, 4 * h)
        self.peephole = nn.Parameter(torch.linspace(-0.5, 0.5, h))
        self.ih, self.hh = nn.Linear(d, 3 * h), nn.Linear(h, 3 * h)
        self.hn = nn.Linear(h, h)
        self.state = nn.Linear(d, h)

    def forward(self, x):
        outs = []
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        outs.append((x - mean) / torch.sqrt(var + 1e-5) * self.scale_2d)              # scale broadcast
        sq = x[0, :FEATURES, :]                                                         # [d, d]
        m = sq.mean(-1)                                                                 # keepdims=0
        outs.append((sq - m) / torch.sqrt(((sq - m) ** 2).mean(-1) + 1e-5))
        outs.append((x - mean) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5))            # unbiased variance
        outs.append((x - mean) / (torch.sqrt(var) + 1e-5))                               # eps outside the root
        outs.append(x * torch.sigmoid(1.702 * x))                                        # sigmoid GELU variant
        outs.append(0.5 * x * (1 + torch.tanh(0.7978 * (x + 0.0447 * x ** 3))))          # other constants
        outs.append(0.5 * x * (1 + torch.erf(x / 1.41)))                                 # sqrt(2) approximated
        # one recurrent step from a state computed from the first day (a real, non-zero state)
        xt, h, c = x[:, 1], torch.tanh(self.state(x[:, 0])), torch.sigmoid(self.state(x[:, 0]))
        i, f, o, gg = self.gates(torch.cat([xt, h], 1)).chunk(4, 1)
        cp = torch.sigmoid(f + self.peephole * c) * c + torch.sigmoid(i + self.peephole * c) * torch.tanh(gg)
        hp = torch.sigmoid(o) * torch.tanh(cp)                                           # peephole LSTM
        cc = torch.clamp(torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg), -0.5, 0.5)
        hc = torch.sigmoid(o) * torch.tanh(cc)                                           # clipped cell state
        cr = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.relu(gg)
        hr = torch.sigmoid(o) * torch.relu(cr)                                           # ReLU activations
        x_r, x_z, x_n = self.ih(xt).chunk(3, 1)
        h_r, h_z, _ = self.hh(h).chunk(3, 1)
        r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + self.hn(r * h))                                             # reset before the layer
        g = (1 - z) * n + z * h
        return (*outs, hp, hc, hr, g)


MODELS = {
    "classifiers": (Classifiers, ("x",)),
    "lstm_cell_classifier": (LstmCellClassifier, ("x",)),
    "encoder": (Encoder, ("x",)),
    "recurrent_tagger": (RecurrentTagger, ("x", "h0")),
    "not_fusable": (NotFusable, ("x",)),
}


def inputs(name: str) -> dict[str, np.ndarray]:
    x = weather_windows()
    feeds = {"x": x}
    if "h0" in MODELS[name][1]:
        feeds["h0"] = np.tanh(x[:, 0, :].repeat(2, axis=1)[:, :6]).astype(np.float32)
    return feeds


@functools.lru_cache(maxsize=None)
def module(name: str):
    torch.manual_seed(0)
    return MODELS[name][0]().eval()


@functools.lru_cache(maxsize=None)
def export(name: str, dynamo: bool = True, opset: int | None = None) -> bytes:
    """The serialized ONNX model ``torch.onnx.export`` makes of module ``name`` (cached per session)."""
    feeds = inputs(name)
    args = tuple(torch.from_numpy(feeds[k]) for k in MODELS[name][1])
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if dynamo:
            program = torch.onnx.export(module(name), args, dynamo=True, verbose=False, opset_version=opset)
            return program.model_proto.SerializeToString()
        buffer = io.BytesIO()
        torch.onnx.export(module(name), args, buffer, dynamo=False, opset_version=opset or 17,
                          input_names=list(MODELS[name][1]))
        return buffer.getvalue()


@functools.lru_cache(maxsize=None)
def torch_outputs(name: str) -> list[np.ndarray]:
    feeds = inputs(name)
    with torch.no_grad():
        out = module(name)(*(torch.from_numpy(feeds[k]) for k in MODELS[name][1]))
    out = out if isinstance(out, tuple) else (out,)
    return [o.numpy() for o in out]


def run(model, feeds: dict[str, np.ndarray], optimize: bool = True) -> list[np.ndarray]:
    """Run ``model`` (ModelProto, onnx_ir.Model or bytes) in onnxruntime.

    ``optimize=False`` turns off onnxruntime's graph optimizations: its own fusions are not under test
    (and one of them, GeluFusion, breaks a graph where two GELUs share ``0.5 * x``).
    """
    import onnx_ir as ir

    if isinstance(model, ir.Model):
        model = ir.to_proto(model)
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, {n: feeds[n] for n in names})


def load(name: str, dynamo: bool = True, opset: int | None = None):
    """A fresh ``onnx_ir.Model`` of the export (each test transforms its own copy)."""
    import onnx_ir as ir

    return ir.from_proto(onnx.load_from_string(export(name, dynamo, opset)))


def assert_close(got: list[np.ndarray], expected: list[np.ndarray], tol: float = 1e-5) -> None:
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected)):
        assert a.shape == b.shape, f"output {i}: shape {a.shape} != {b.shape}"
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"output {i}")


def checked(model) -> onnx.ModelProto:
    """The model as a proto, after ``onnx.checker.check_model(full_check=True)`` and an onnxruntime load."""
    import onnx_ir as ir

    proto = ir.to_proto(model) if isinstance(model, ir.Model) else model
    onnx.checker.check_model(proto, full_check=True)
    ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return proto


def op_counts(model) -> dict[str, int]:
    """Operators of the main graph (``domain:op`` for other domains)."""
    import collections

    import onnx_ir as ir

    graph = model.graph
    nodes = graph if isinstance(model, ir.Model) else graph.node
    return dict(collections.Counter(f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in nodes))
