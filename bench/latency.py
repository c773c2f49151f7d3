"""Latency and throughput of a whole penguins pipeline: scikit-learn vs skl2onnx + onnxruntime vs onegraph.

Pipeline (bundled Palmer penguins): impute + standard-scale the numeric columns, impute + one-hot the text
columns, logistic regression. Measured side by side in one process, interleaved rounds, best round kept:

* a single-row prediction from a one-row DataFrame and from a dict of column values;
* a 1,000,000-row batch.

Candidates: the scikit-learn pipeline (``predict_proba``); the same pipeline converted with skl2onnx and run
in onnxruntime with feeds built from the DataFrame as skl2onnx's documentation shows (float32 numeric
columns, one ``[N, 1]`` input per column); ``onegraph.score``; and the bare onnxruntime ``run`` of
onegraph's graph on prebuilt feeds (the floor). Every onnxruntime session here uses the same options.

Where a single-row target is missed, the script says which floor it hits, from candidates measured in the
same rounds: onnxruntime's run through its binding (what onegraph calls; the public ``run`` adds its own input
validation), the ``os.stat`` by which ``onegraph.score(path)`` notices a rewritten file, the least feeding a dict takes
(one numpy array per value built by hand, no checks), and the Python layer
(feeds and checks: ``Session.run``; the output DataFrame: ``Session.score``), each as the difference of two
candidates, so that what the layer costs next to onnxruntime's call (both slow each other down through the
caches they share) is what is reported.

Run: ``python bench/latency.py [--rounds 7] [--rows 1000000] [--clock wall|cpu]`` (``cpu``: the single-row rounds
count this process's CPU time, steadier on a machine others load; the batch always counts wall time)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, interleaved  # noqa: E402

import onegraph  # noqa: E402
from onegraph.datasets import load_penguins  # noqa: E402
from onegraph.runtime import cached_session  # noqa: E402

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TEXT = ["island", "sex"]


def pipeline(x: pd.DataFrame, y: pd.Series, text_missing=np.nan):
    pre = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMERIC),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent", missing_values=text_missing),
                              OneHotEncoder(handle_unknown="ignore")), TEXT),
    ])
    return make_pipeline(pre, LogisticRegression(max_iter=1000)).fit(x, y)


def skl2onnx_session(x: pd.DataFrame, y: pd.Series, options: ort.SessionOptions):
    """skl2onnx's documented recipe: one [N, 1] input per column, float32 numbers, strings.

    skl2onnx converts a text SimpleImputer only when the missing value is a string, so this pipeline is
    fitted with missing text written as "" (the workaround its issue tracker gives); it computes the same.
    """
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    filled = x.copy()
    for c in TEXT:
        filled[c] = filled[c].fillna("")
    pipe = pipeline(filled, y, text_missing="")
    types = [(c, FloatTensorType([None, 1])) for c in NUMERIC] + [(c, StringTensorType([None, 1])) for c in TEXT]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        proto = convert_sklearn(pipe, initial_types=types, target_opset={"": 21, "ai.onnx.ml": 3},
                                options={LogisticRegression: {"zipmap": False}})
    sess = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def feeds(frame: pd.DataFrame) -> dict:
        inputs = {c: frame[c].to_numpy() for c in NUMERIC + TEXT}
        for c in NUMERIC:
            inputs[c] = inputs[c].astype(np.float32)
        for c in TEXT:  # a string tensor holds no NaN: the docs' recipe fills it first
            inputs[c] = frame[c].fillna("").to_numpy(dtype=object)
        return {k: v.reshape((-1, 1)) for k, v in inputs.items()}

    return sess, feeds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=0.2, help="time per candidate per round")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="single-row rounds in wall time or in this process's CPU time")
    args = ap.parse_args()

    df = load_penguins().dropna(subset=["species"])
    y = df.pop("species")
    pipe = pipeline(df, y)
    model_path = Path("/tmp/onegraph-bench-penguins.onnx")
    onegraph.build(pipe, None, df, path=model_path)
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as onegraph's Session
    s2o, s2o_feeds = skl2onnx_session(df, y, options)
    session = cached_session(model_path)  # the session score() uses
    bare = session._session
    out_names = [o.name for o in bare.get_outputs()]

    row = df.iloc[[3]].copy()
    record = {k: (None if pd.isna(v) else v) for k, v in row.iloc[0].to_dict().items()}
    _, row_feeds = session.feeds(row)
    row_s2o = s2o_feeds(row)
    s2o_names = [o.name for o in s2o.get_outputs()]
    run_options = ort.RunOptions()
    dtypes = {name: feed.dtype for name, feed in row_feeds.items()}

    def hand_feeds(values: dict) -> dict:
        """Feeds of a dict of plain scalars with no checks: missing text and numbers written as the graph
        reads them (the least a feeding layer can do)."""
        return {name: np.array([values[name] if values[name] is not None else
                                (np.nan if dtype.kind == "f" else "\uffff")], dtype=dtype)
                for name, dtype in dtypes.items()}

    single = interleaved({
        "scikit-learn predict_proba (DataFrame)": lambda: pipe.predict_proba(row),
        "skl2onnx + onnxruntime (DataFrame)": lambda: s2o.run(s2o_names, s2o_feeds(row)),
        "onegraph.score (DataFrame)": lambda: onegraph.score(model_path, row),
        "onegraph.score (dict)": lambda: onegraph.score(model_path, record),
        "bare run, onegraph graph": lambda: bare.run(out_names, row_feeds),
        "bare run, skl2onnx graph": lambda: s2o.run(s2o_names, row_s2o),
        # the pieces, for the floors printed below
        "binding run, onegraph graph": lambda: session.run_feeds(row_feeds),
        # the graphs alone: onnxruntime's binding, the same call for both (no Python validation around it)
        "graph alone, onegraph": lambda: bare._sess.run(out_names, row_feeds, run_options),
        "graph alone, skl2onnx": lambda: s2o._sess.run(s2o_names, row_s2o, run_options),
        "Session.score (DataFrame)": lambda: session.score(row),
        "Session.score (dict)": lambda: session.score(record),
        "Session.run (dict): feeds, run, checks": lambda: session.run(record),
        "os.stat of the model file": lambda: os.stat(model_path),
        # the least any layer does to feed a dict: one array per value, built beside the same binding call
        "dict feeds by hand + binding run": lambda: session.run_feeds(hand_feeds(record)),
    }, rounds=args.rounds, seconds=args.seconds, clock=time.perf_counter if args.clock == "wall" else time.process_time)

    big = df.sample(n=args.rows, replace=True, random_state=0).reset_index(drop=True)
    batch = interleaved({
        "scikit-learn predict_proba": lambda: pipe.predict_proba(big),
        "skl2onnx + onnxruntime": lambda: s2o.run(s2o_names, s2o_feeds(big)),
        "onegraph.score": lambda: onegraph.score(model_path, big),
    }, rounds=max(2, args.rounds // 3), seconds=0.0)

    print(f"single row (best of {args.rounds} interleaved rounds, {args.clock} clock):")
    for name, t in single.items():
        print(f"  {name:42s} {fmt(t)}")
    print(f"{len(big):,} rows:")
    for name, t in batch.items():
        print(f"  {name:42s} {fmt(t)}  ({len(big) / t:,.0f} rows/s)")
    sk, df_t, dict_t = (single["scikit-learn predict_proba (DataFrame)"], single["onegraph.score (DataFrame)"],
                        single["onegraph.score (dict)"])
    floor, s2o_floor = single["bare run, onegraph graph"], single["bare run, skl2onnx graph"]
    ratios = [
        ("single row, DataFrame: scikit-learn / onegraph", sk / df_t, ">= 150"),
        ("single row, DataFrame: onegraph / bare run", df_t / floor, "<= 2"),
        ("single row, dict: onegraph / bare run", dict_t / floor, "<= 1.3"),
        ("graph run: onegraph / skl2onnx", floor / s2o_floor, "<= 1"),
        ("graph alone (binding): onegraph / skl2onnx", single["graph alone, onegraph"]
         / single["graph alone, skl2onnx"], "(info)"),
        ("single row: skl2onnx path / onegraph", single["skl2onnx + onnxruntime (DataFrame)"] / df_t, "(info)"),
        (f"{len(big):,} rows: scikit-learn / onegraph", batch["scikit-learn predict_proba"] / batch["onegraph.score"], ">= 3"),
        (f"{len(big):,} rows: skl2onnx path / onegraph", batch["skl2onnx + onnxruntime"] / batch["onegraph.score"], "(info)"),
    ]
    print("ratios:")
    for name, value, target in ratios:
        print(f"  {name:52s} {value:8.2f}x   target {target}{_verdict(value, target)}")
    floors(single)


def _verdict(value: float, target: str) -> str:
    if target.startswith(">="):
        return "  met" if value >= float(target[2:]) else "  MISSED"
    if target.startswith("<="):
        return "  met" if value <= float(target[2:]) else "  MISSED"
    return ""


def floors(single: dict[str, float]) -> None:
    """Print where one row's time goes and the floor each single-row target hits (differences of candidates
    measured in the same rounds)."""
    sk, floor = single["scikit-learn predict_proba (DataFrame)"], single["bare run, onegraph graph"]
    binding = single["binding run, onegraph graph"]
    stat = single["os.stat of the model file"]
    layer = single["Session.run (dict): feeds, run, checks"] - binding
    frame = single["Session.score (dict)"] - single["Session.run (dict): feeds, run, checks"]
    file_check = single["onegraph.score (dict)"] - single["Session.score (dict)"]
    least_feeds = max(0.0, single["dict feeds by hand + binding run"] - binding)
    print("where one row goes (dict of values; differences of the candidates above):")
    print(f"  onnxruntime run through its binding {fmt(binding)}  (the public run: {fmt(floor)}, its input checks "
          f"{fmt(floor - binding).strip()})")
    print(f"  feeds + checks next to the run     {fmt(layer)}")
    print(f"  output DataFrame                   {fmt(frame)}")
    print(f"  file check of score(path)          {fmt(file_check)}  (os.stat alone {fmt(stat).strip()})")
    print(f"  least feeds of a dict (by hand)    {fmt(least_feeds)}  (one array per value, no checks)")
    budget = {"dict <= 1.3x bare run": 1.3 * floor, "DataFrame <= 2x bare run": 2.0 * floor,
              "DataFrame >= 150x scikit-learn": sk / 150}
    got = {"dict <= 1.3x bare run": single["onegraph.score (dict)"],
           "DataFrame <= 2x bare run": single["onegraph.score (DataFrame)"],
           "DataFrame >= 150x scikit-learn": single["onegraph.score (DataFrame)"]}
    for name, allowed in budget.items():
        if got[name] <= allowed:
            continue
        room = allowed - binding
        floor = file_check + frame + least_feeds
        print(f"  {name}: allows {fmt(allowed).strip()} per row, {fmt(room).strip()} beside onnxruntime's own "
              f"call; the file check, the DataFrame and the least feeds alone take {fmt(floor).strip()}"
              + ("  -> below the floor of a file path, feeds and a DataFrame output" if floor > room else ""))


if __name__ == "__main__":
    main()
