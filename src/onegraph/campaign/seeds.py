"""The valid models a campaign mutates, and the data files its targets read.

``check.fuzz``'s small seeds (one per message kind), plus what users' files look like: the penguins pipeline
onegraph builds (step functions, the metadata schema, text inputs, a label guard), the same model with tensor
statistics, a quantized (QDQ) model, and the PyTorch exports shipped in ``tests/data`` when present (an MLP
and a CNN, for the fusion and function passes).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

__all__ = ["Seeds", "make_seeds", "penguins_model"]


@dataclasses.dataclass
class Seeds:
    """Seed models by name, and for each the data file its targets read (``.csv`` or ``.npz``)."""

    models: dict[str, bytes]
    data: dict[str, Path]
    csv: Path
    deltas: dict[str, Path]


def make_seeds(folder: Path, *, extra: dict[str, bytes] | None = None) -> Seeds:
    """Build the seeds and their data files in ``folder`` (written once per campaign)."""
    import onnx

    from onegraph.check import fuzz
    from onegraph.datasets import penguins_path

    folder.mkdir(parents=True, exist_ok=True)
    models = dict(fuzz.seed_models())
    penguins = penguins_model()
    models["penguins"] = penguins
    models["penguins-stats"] = _with_stats(penguins, penguins_path())
    models["qdq"] = _quantized()
    tests_data = Path(__file__).resolve().parents[3] / "tests" / "data"
    for name in ("penguins-mlp.onnx", "digits-cnn.onnx"):
        if (tests_data / name).exists():
            models[name.removesuffix(".onnx")] = (tests_data / name).read_bytes()
    models.update(extra or {})
    csv = folder / "penguins.csv"
    csv.write_bytes(Path(penguins_path()).read_bytes())
    data, deltas = {}, {}
    for name, blob in models.items():
        model = onnx.ModelProto.FromString(blob)
        is_onegraph = any(p.key == "org.onegraph.inputs" for p in model.metadata_props)
        if is_onegraph:
            data[name] = csv
        else:
            data[name] = folder / f"{name}.npz"
            np.savez(data[name], **_feeds(blob))
        deltas[name] = _zero_delta(blob, folder / f"{name}.onnx", folder / f"{name}.safetensors")
    return Seeds(models, data, csv, deltas)


def penguins_model(handle_unknown: str = "error") -> bytes:
    """The penguins pipeline (impute + scale three numbers, impute + one-hot two text columns, logistic
    regression) built by onegraph, serialized; ``handle_unknown`` is its OneHotEncoder's."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.datasets import load_penguins
    from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

    df = load_penguins().dropna(subset=["species"])
    y = df.pop("species")
    pipe = make_pipeline(ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["bill_length_mm", "body_mass_g", "year"]),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown=handle_unknown)),
         ["island", "sex"]),
    ]), LogisticRegression(max_iter=500)).fit(df, y)
    return onegraph.build(pipe, None, df).SerializeToString()


def _with_stats(model: bytes, csv: Path) -> bytes:
    import onnx
    import onnx_ir as ir
    import pandas as pd

    from onegraph.passes import inline
    from onegraph.stats import annotate, calibrate, quant_params

    flat = ir.from_proto(onnx.ModelProto.FromString(model))
    inline(flat)  # every tensor a graph value, so each gets its statistics
    proto = ir.to_proto(flat)
    stats = calibrate(proto, pd.read_csv(csv), progress=False).stats()
    qparams = {name: quant_params(s, "uint8") for name, s in stats.items() if s.count}
    return annotate(proto, stats, qparams).SerializeToString()


def _quantized() -> bytes:
    """A QuantizeLinear / DequantizeLinear chain around a MatMul (the shape onnxruntime's quantizer writes)."""
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.arange(-6, 6, dtype=np.int8).reshape(4, 3), "w_q")
    g = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
         helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
         helper.make_node("DequantizeLinear", ["w_q", "ws", "wz"], ["wd"]),
         helper.make_node("MatMul", ["xd", "wd"], ["y"])],
        "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [w, numpy_helper.from_array(np.float32(0.05), "xs"), numpy_helper.from_array(np.uint8(128), "xz"),
         numpy_helper.from_array(np.float32(0.1), "ws"), numpy_helper.from_array(np.int8(0), "wz")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


def _feeds(model: bytes) -> dict[str, np.ndarray]:
    """Generated inputs of a seed (our own valid bytes): what ``--data`` gives the targets for it."""
    import onnx

    from onegraph.verify.feeds import generated_feeds

    return generated_feeds(onnx.ModelProto.FromString(model), rows=4, seed=0)


def _zero_delta(model: bytes, path: Path, delta: Path) -> Path:
    """A delta of the seed against itself (what `fed average MUTANT DELTA` reads)."""
    from onegraph import federated

    path.write_bytes(model)
    try:
        federated.make_delta(path, path, delta, samples=1)
    except Exception:  # noqa: BLE001 - a seed without exchangeable parameters: an empty file stands in
        delta.write_bytes(b"")
    return delta
