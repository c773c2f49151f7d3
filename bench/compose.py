"""One composed artifact vs the same models as separate onnxruntime sessions chained in Python, vs Python.

Pipeline (bundled Palmer penguins): impute + scale numbers, impute + one-hot text (onegraph preprocessing),
three models on the preprocessed features — logistic regression and a random forest (converted by
skl2onnx, float32) and XGBoost (converted by onnxmltools) — and the mean of their probabilities.

Candidates, measured side by side in one process (interleaved rounds, best round kept):

* composed: one onegraph artifact holding all of it (``onegraph.compose`` with the three converted ``.onnx``
  graphs spliced in through ``OnnxModel``, the mean in the graph): feeds built from the DataFrame by
  onegraph's ``Session``, one ``run`` asking for the ensemble's probabilities — the same answer the chained
  candidates compute (``onegraph.score``, which also returns every model's label and probabilities as a
  DataFrame, is timed too, for information);
* chained: the same four graphs as four onnxruntime sessions, glued in Python the way one would without
  onegraph — ``onegraph.score`` of the preprocessing graph, its columns stacked into a float32 matrix, one
  ``run`` per model, the mean in numpy (``onegraph.export.merge.run_chained`` does the same). The model
  graphs are the ones inside the artifact (ai.onnx.ml 5: ``TreeEnsemble``), so the ratio is the cost or
  gain of composing;
* chained, converters' files: the same, with the files as skl2onnx / onnxmltools wrote them (the deprecated
  ``TreeEnsembleClassifier``, which onnxruntime runs faster for forests whose leaves vote for every class);
* Python: the scikit-learn preprocessing ``transform``, each model's ``predict_proba``, the mean in numpy.

Every onnxruntime session uses the same options (onegraph's ``Session``). The composed and chained results
are checked equal before timing. ``--clock cpu`` measures this process's CPU time instead of wall time: on a
shared machine whose load moves wall times by 2-5x between rounds, CPU time is the steadier figure (the
work each candidate does), wall time adds what waiting on the other processes costs.

Run: ``python bench/compose.py [--rounds 7] [--rows 100000] [--clock wall|cpu]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xgboost
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, interleaved  # noqa: E402

import onegraph  # noqa: E402
from onegraph.datasets import load_penguins  # noqa: E402
from onegraph.export import OnnxModel  # noqa: E402
from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler  # noqa: E402
from onegraph.runtime import Session  # noqa: E402

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TEXT = ["island", "sex"]


def fit(df: pd.DataFrame, y: np.ndarray):
    pre = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMERIC),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), TEXT),
    ]).fit(df)
    x = pre.transform(df)
    models = {"lr": LogisticRegression(max_iter=1000).fit(x, y),
              "rf": RandomForestClassifier(n_estimators=50, max_depth=8, random_state=0).fit(x, y),
              "xgb": xgboost.XGBClassifier(n_estimators=50, max_depth=4).fit(x, y)}
    return pre, x, models


def convert(models: dict, width: int, folder: Path) -> dict[str, Path]:
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType
    from skl2onnx import to_onnx

    paths = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, model in models.items():
            if name == "xgb":
                proto = convert_xgboost(model, initial_types=[("X", FloatTensorType([None, width]))], target_opset=15)
            else:
                proto = to_onnx(model, np.zeros((1, width), np.float32), options={"zipmap": False}, target_opset=15)
            paths[name] = folder / f"{name}.onnx"
            paths[name].write_bytes(proto.SerializeToString())
    return paths


def upgraded(path: Path) -> bytes:
    """The model graph as the composed artifact holds it (old tree operators rewritten, ai.onnx.ml 5)."""
    import onnx_ir as ir

    from onegraph.export.adapters.legacy_trees import upgrade_tree_ensembles

    model = ir.from_proto(onegraph.load_model(path))
    upgrade_tree_ensembles(model)
    return ir.to_proto(model).SerializeToString()


class Chained:
    """Four sessions glued in Python: preprocessing -> float32 matrix -> each model -> numpy mean."""

    def __init__(self, pre_path: Path, models: dict[str, bytes | Path]) -> None:
        self.pre = Session(pre_path)
        self.models = {n: Session(p)._session for n, p in models.items()}
        self.names = {n: [o.name for o in s.get_outputs()] for n, s in self.models.items()}

    def __call__(self, frame: pd.DataFrame) -> np.ndarray:
        features = self.pre.run(frame)
        x = np.column_stack(list(features.values())).astype(np.float32)
        probas = []
        for name, sess in self.models.items():
            out = dict(zip(self.names[name], sess.run(self.names[name], {"X": x})))
            probas.append(out["probabilities"].astype(np.float64))
        return np.mean(probas, axis=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=0.2, help="time per candidate per round")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = ap.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    df = load_penguins()
    species = df.pop("species")
    y = species.map({c: i for i, c in enumerate(sorted(species.unique()))}).to_numpy()
    pre, x, models = fit(df, y)
    folder = Path(tempfile.mkdtemp(prefix="onegraph-bench-compose-"))
    paths = convert(models, x.shape[1], folder)
    onegraph.build(pre, None, df, path=folder / "pre.onnx")
    composed = folder / "composed.onnx"
    onegraph.compose(pre, {n: OnnxModel(p, classes=[0, 1, 2]) for n, p in paths.items()}, df, ensemble="mean",
                     path=composed)
    chained = Chained(folder / "pre.onnx", {n: upgraded(p) for n, p in paths.items()})
    original = Chained(folder / "pre.onnx", paths)
    session = onegraph.runtime.cached_session(composed)

    def python(frame: pd.DataFrame) -> np.ndarray:
        xt = pre.transform(frame)
        return np.mean([m.predict_proba(xt) for m in models.values()], axis=0)

    columns = [f"probabilities_{c}" for c in range(3)]
    got = onegraph.score(composed, df)[columns].to_numpy()
    assert np.abs(got - chained(df)).max() < 1e-6, "composed and chained differ"
    assert np.abs(got - original(df)).max() < 1e-6, "composed and the converters' files differ"
    assert np.abs(got - python(df)).max() < 1e-5, "composed and Python differ"

    row = df.iloc[[3]]
    def composed_run(frame: pd.DataFrame) -> np.ndarray:
        return session._session.run(["probabilities"], session.feeds(frame)[1])[0]

    assert np.abs(composed_run(df) - got).max() == 0
    single = interleaved({
        "composed: one artifact, one run": lambda: composed_run(row),
        "chained: 4 sessions glued in Python": lambda: chained(row),
        "chained, converters' files": lambda: original(row),
        "Python: scikit-learn + xgboost": lambda: python(row),
        "composed: onegraph.score (all outputs, DataFrame)": lambda: session.score(row),
    }, rounds=args.rounds, seconds=args.seconds, clock=clock)
    big = df.sample(n=args.rows, replace=True, random_state=0).reset_index(drop=True)
    batch = interleaved({
        "composed": lambda: composed_run(big),
        "chained": lambda: chained(big),
        "chained, converters' files": lambda: original(big),
        "Python": lambda: python(big),
        "composed: onegraph.score (all outputs)": lambda: session.score(big),
    }, rounds=max(3, args.rounds // 2), seconds=0.0, clock=clock)

    n_nodes = {"composed": len(onegraph.load_model(composed).graph.node)}
    print(f"composed artifact: {composed.stat().st_size / 1024:.0f} KiB, {n_nodes['composed']} nodes; "
          f"chained: {sum(p.stat().st_size for p in paths.values()) / 1024 + (folder / 'pre.onnx').stat().st_size / 1024:.0f} KiB in 4 files")
    print(f"clock: {args.clock}; single row (best of {args.rounds} interleaved rounds):")
    for name, t in single.items():
        print(f"  {name:50s} {fmt(t)}")
    print(f"{len(big):,} rows:")
    for name, t in batch.items():
        print(f"  {name:50s} {fmt(t)}  ({len(big) / t:,.0f} rows/s)")
    c1, h1, o1, p1, _ = single.values()
    cb, hb, ob, pb, _ = batch.values()
    for label, value, target in [
        ("single row: chained / composed", h1 / c1, ">= 1 (composed <= chained)"),
        ("single row: converters' files / composed", o1 / c1, "(info)"),
        ("single row: Python / composed", p1 / c1, "(info)"),
        (f"{len(big):,} rows: chained / composed", hb / cb, ">= 1 (composed <= chained)"),
        (f"{len(big):,} rows: converters' files / composed", ob / cb, "(info)"),
        (f"{len(big):,} rows: Python / composed", pb / cb, "(info)"),
    ]:
        print(f"  {label:46s} {value:6.2f}x   target {target}")


if __name__ == "__main__":
    main()
