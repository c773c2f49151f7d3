"""Real models for the conversion and comparison tests, built once per test session (functools.cache).

torch 2.13.0 CPU exports (the TorchScript exporter: a fraction of a second each) of an MLP, a CNN with an
upsampling Resize, a GRU and a transformer encoder block (exported with its modules as model-local
functions); ONNX-ML models from skl2onnx; the main job's penguins pipeline built with onegraph.build.
Each builder returns (model bytes, inputs, reference outputs computed by the source library).
"""

from __future__ import annotations

import functools
import io
import warnings

import numpy as np
import onnx
import pandas as pd

from onegraph.datasets import load_penguins

PENGUIN_NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]


def _torch_export(module, example, opset: int, **kwargs) -> bytes:
    import torch

    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (example,), f, dynamo=False, opset_version=opset, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "batch"}}, **kwargs)
    return f.getvalue()


@functools.cache
def torch_model(name: str) -> tuple[bytes, dict[str, np.ndarray], np.ndarray]:
    import torch

    torch.manual_seed(0)
    if name == "mlp":
        module = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
        x = torch.tensor(load_penguins()[PENGUIN_NUMERIC].dropna().to_numpy()[:32], dtype=torch.float32)
        x = (x - x.mean(0)) / x.std(0)
        opset, extra = 13, {}
    elif name == "cnn":
        module = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
                                     torch.nn.Upsample(scale_factor=2, mode="nearest"),
                                     torch.nn.Conv2d(4, 2, 3, padding=1))
        x = torch.randn(2, 1, 8, 8)
        opset, extra = 13, {}
    elif name == "gru":
        class GRU(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.gru = torch.nn.GRU(4, 8, batch_first=True)
                self.head = torch.nn.Linear(8, 2)

            def forward(self, x):
                y, _ = self.gru(x)
                return self.head(y[:, -1])

        module = GRU()
        x = torch.randn(3, 5, 4)
        opset, extra = 13, {}
    elif name == "transformer":
        class Block(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)

            def forward(self, x):
                return self.layer(x)

        module = Block()
        x = torch.randn(2, 6, 16)
        opset, extra = 17, {"export_modules_as_functions": True}
    else:
        raise ValueError(name)
    module.eval()
    with torch.no_grad():
        expected = module(x).numpy()
    return _torch_export(module, x, opset, **extra), {"x": x.numpy()}, expected


@functools.cache
def sklearn_model(name: str) -> tuple[bytes, dict[str, np.ndarray], np.ndarray]:
    """skl2onnx models (ONNX-ML operators) on the penguins' numeric columns; expected = predict_proba."""
    from skl2onnx import to_onnx
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    df = load_penguins().dropna(subset=PENGUIN_NUMERIC + ["species"])
    x = df[PENGUIN_NUMERIC].to_numpy(np.float32)
    y = df["species"].to_numpy()
    est = (make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)) if name == "logistic"
           else RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0))
    est.fit(x, y)
    proto = to_onnx(est, x[:1], target_opset={"": 17, "ai.onnx.ml": 3}, options={"zipmap": False})
    return proto.SerializeToString(), {"X": x[:40]}, est.predict_proba(x[:40])


@functools.cache
def penguins_pipeline() -> tuple[bytes, pd.DataFrame, np.ndarray]:
    """The main job's penguins pipeline (impute + one-hot + scale + logistic regression), onegraph.build."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

    df = load_penguins()
    y = df.pop("species")
    numeric = PENGUIN_NUMERIC + ["year"]
    pipe = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
            ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
             ["island", "sex"]),
        ]),
        LogisticRegression(max_iter=1000),
    ).fit(df, y)
    proto = onegraph.build(pipe, None, df)
    rows = df.head(40)
    return proto.SerializeToString(), rows, pipe.predict_proba(rows)


def opset_of(model: bytes | onnx.ModelProto) -> int:
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load_from_string(model)
    return next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))


@functools.cache
def torch_layers(exporter: str) -> tuple[bytes, dict[str, np.ndarray], list[np.ndarray]]:
    """The operators whose inputs became attributes, as torch 2.13 exports them: mean (ReduceMean, with
    ``noop_with_empty_axes`` from the dynamo exporter), sum, clamp (Clip), pad (Pad), split, squeeze /
    unsqueeze and nearest interpolation (Resize with an empty ``roi``). ``exporter``: ``torchscript``
    (opset 13) or ``dynamo`` (its default opset). Returns (model, inputs, torch's outputs)."""
    import torch

    class Layers(torch.nn.Module):
        def forward(self, x):
            m = x.mean(dim=-1, keepdim=True)
            s = x.sum(dim=(1, 2))
            c = torch.clamp(x, -0.5, 0.5)
            p = torch.nn.functional.pad(x, (1, 2))
            a, b = torch.split(x, [1, 3], dim=-1)
            u = torch.nn.functional.interpolate(x.unsqueeze(1), scale_factor=2.0, mode="nearest").squeeze(1)
            return m, s, c, p, a + 1, b, u

    torch.manual_seed(0)
    x = torch.randn(2, 3, 4)
    with torch.no_grad():
        expected = [t.numpy() for t in Layers()(x)]
    if exporter == "torchscript":
        return _torch_export(Layers(), x, 13), {"x": x.numpy()}, expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(Layers(), (x,), dynamo=True, verbose=False, input_names=["x"])
    return program.model_proto.SerializeToString(), {"x": x.numpy()}, expected
