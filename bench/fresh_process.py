"""A fresh Python process that scores one row: onegraph vs skl2onnx + onnxruntime (issue 15).

What a script, a batch job or a serverless function pays when it starts, scores one penguin and exits. Each
candidate runs in its own fresh interpreter, in interleaved rounds; the figures are the process's wall time
from its start to its exit, its CPU time (user + system) and its peak resident set (``VmHWM``):

* ``onegraph``: ``import onegraph; onegraph.score("penguins.onnx", {...one row...})`` (the model's check
  remembered in the cache folder, as after its first use on a machine);
* ``skl2onnx + onnxruntime``: ``import onnxruntime, numpy``, a session of skl2onnx's graph of the same
  pipeline, feeds built by hand from the row (float32 ``[1, 1]`` arrays and strings), ``run``: no DataFrame
  in or out;
* ``onnxruntime + pandas`` (the floor of a DataFrame answer): ``import onnxruntime, numpy, pandas``, a session
  of onegraph's graph, feeds by hand, the answer as a ``pandas.DataFrame``.

    python bench/fresh_process.py            # --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROW = {"island": "Biscoe", "bill_length_mm": 45.1, "bill_depth_mm": 14.5, "flipper_length_mm": 215.0,
       "body_mass_g": 5000.0, "sex": "female", "year": 2007}

_REPORT = """
status = open("/proc/self/status").read().split("\\n")
print(json.dumps({"peak_kb": next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")),
                  "answer": str(ANSWER)}))
"""

CHILDREN = {
    "onegraph": """
import onegraph
ANSWER = onegraph.score(MODEL, ROW).iloc[0, 0]
""",
    "skl2onnx + onnxruntime": """
import numpy as np, onnxruntime as ort
session = ort.InferenceSession(S2O, providers=["CPUExecutionProvider"])
feeds = {k: (np.array([[v]], dtype=object) if isinstance(v, str) else np.array([[v]], dtype=np.float32))
         for k, v in ROW.items()}
ANSWER = session.run(None, feeds)[0][0]
""",
    "onnxruntime + pandas": """
import numpy as np, onnxruntime as ort, pandas as pd
session = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
feeds = {k: np.array([v], dtype=object if isinstance(v, str) else np.int64 if isinstance(v, int) else np.float64)
         for k, v in ROW.items()}
label, proba = session.run(None, feeds)
ANSWER = pd.DataFrame({"label": label, **{f"p{j}": proba[:, j] for j in range(proba.shape[1])}}).iloc[0, 0]
""",
}


def child_source(body: str, model: Path, s2o: Path) -> str:
    return f"import json\nMODEL, S2O, ROW = {str(model)!r}, {str(s2o)!r}, {ROW!r}\n" + body + _REPORT


def run_child(source: str, env: dict[str, str]) -> dict:
    """Wall time of the whole process (start to exit), its CPU time (user + system) and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", source], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"failed: {done.stderr[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": seconds, "cpu": cpu, **json.loads(done.stdout.strip().splitlines()[-1])}


def build(folder: Path) -> tuple[Path, Path]:
    """The penguins pipeline of bench/latency.py, as onegraph's graph and as skl2onnx's."""
    sys.path.insert(0, str(Path(__file__).parent))
    from latency import NUMERIC, TEXT, pipeline
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    import onegraph
    from onegraph.datasets import load_penguins

    df = load_penguins().dropna(subset=["species"])
    y = df.pop("species")
    model = folder / "penguins.onnx"
    onegraph.build(pipeline(df, y), None, df, path=model)
    filled = df.copy()
    for c in TEXT:
        filled[c] = filled[c].fillna("")
    types = [(c, FloatTensorType([None, 1])) for c in NUMERIC] + [(c, StringTensorType([None, 1])) for c in TEXT]
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        proto = convert_sklearn(pipeline(filled, y, text_missing=""), initial_types=types,
                                target_opset={"": 21, "ai.onnx.ml": 3}, options={LogisticRegression: {"zipmap": False}})
    s2o = folder / "penguins-skl2onnx.onnx"
    s2o.write_bytes(proto.SerializeToString())
    return model, s2o


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = dict(os.environ, ONEGRAPH_CACHE_DIR=str(folder / "cache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package comes compiled
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        model, s2o = build(folder)
        sources = {name: child_source(body, model, s2o) for name, body in CHILDREN.items()}
        runs: dict[str, list[dict]] = {name: [] for name in sources}
        for r in range(args.rounds + 1):  # round 0: checks the model once, compiles the bytecode; not counted
            for name, source in sources.items():
                figures = run_child(source, env)
                if r:
                    runs[name].append(figures)
    print(f"a fresh process scoring one row, best of {args.rounds} interleaved rounds "
          "(wall time of the whole process / its CPU time / median peak resident set; ratios to skl2onnx + "
          "onnxruntime):")
    anchor = "skl2onnx + onnxruntime"
    best = {n: (min(x["seconds"] for x in v), min(x["cpu"] for x in v),
                statistics.median(x["peak_kb"] for x in v) / 1024) for n, v in runs.items()}
    for name, (seconds, cpu, peak) in best.items():
        a_seconds, a_cpu, a_peak = best[anchor]
        print(f"  {name:24s} {seconds:6.3f} s ({seconds / a_seconds:5.2f}x)   cpu {cpu:6.3f} s ({cpu / a_cpu:5.2f}x)"
              f"   {peak:6.1f} MiB ({peak / a_peak:5.2f}x)   answer {runs[name][0]['answer']}")


if __name__ == "__main__":
    main()
