"""Peak memory of building a one-hot encoded high-cardinality column (issue 14, kind 5).

A text column with K distinct values (``c0000000`` ...; every value twice, a 3-class target), one-hot encoded
by scikit-learn's ``OneHotEncoder(handle_unknown="ignore")`` (sparse, as scikit-learn makes it) into a
``LogisticRegression``; ``onegraph.build`` of the fitted pipeline with a 200-row sample (the parity check).

Each K runs in its own process, which reads its peak resident memory (``VmHWM`` of ``/proc/self/status``) at
three points: after the imports, after scikit-learn's fit (the anchor: what scikit-learn itself needed), and
during the build alone (the peak is reset with ``/proc/self/clear_refs`` before it). The export must cost
memory linear in K: before the fix the encoder was probed on a dense ``(K + 1) x K`` float64 matrix
(56,007 categories: 23.4 GiB).

Run: ``python bench/onehot_memory.py [--categories 8000 56007 200000]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

MIB = 1 << 20


def _peak() -> int:
    """Peak resident set of this process in bytes (VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _current() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:  # "5": reset the peak resident set (Linux >= 4.0)
        f.write("5")


def measure(categories: int, sample_rows: int = 200) -> dict:
    """In this process: the peaks (bytes) after imports, over the fit, and over the build alone."""
    import time

    import numpy as np
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    import onegraph

    imports = _peak()
    codes = np.array([f"c{i:07d}" for i in range(categories)], dtype=object)
    frame = pd.DataFrame({"code": np.concatenate([codes, codes]), "size": np.arange(2 * categories) % 97 / 9.0})
    y = np.arange(2 * categories) % 3
    pipeline = Pipeline([
        ("prep", ColumnTransformer([("hot", OneHotEncoder(handle_unknown="ignore"), ["code"])],
                                   remainder="passthrough")),
        ("model", LogisticRegression(max_iter=50)),
    ])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs stops at max_iter: the coefficients' values do not matter here
        pipeline.fit(frame, y)
    fit = _peak()
    sample = frame.iloc[::max(1, len(frame) // sample_rows)].head(sample_rows)
    before = _current()
    _reset_peak()
    start = time.perf_counter()
    model = onegraph.build(pipeline, None, sample)
    seconds = time.perf_counter() - start
    build = _peak()
    return {"categories": categories, "imports": imports, "fit": fit, "rss_before_build": before, "build": build,
            "seconds": seconds, "model_bytes": model.ByteSize()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--categories", type=int, nargs="+", default=[8000, 56007, 200000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    print("one-hot encoded column -> LogisticRegression, onegraph.build with a 200-row sample; peak resident memory")
    print(f"{'categories':>10}  {'imports':>9}  {'sklearn fit':>11}  {'build peak':>10}  {'build - rss':>11}  "
          f"{'per category':>12}  {'build / fit':>11}  {'build time':>10}")
    for k in args.categories:
        done = subprocess.run([sys.executable, __file__, "--child", str(k)], capture_output=True, text=True)
        if done.returncode:
            print(f"{k:>10}  failed: {done.stderr.strip().splitlines()[-1] if done.stderr else done.returncode}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        extra = r["build"] - r["rss_before_build"]
        print(f"{k:>10,}  {r['imports'] / MIB:>7.0f} M  {r['fit'] / MIB:>9.0f} M  {r['build'] / MIB:>8.0f} M  "
              f"{extra / MIB:>9.0f} M  {extra / k:>10.0f} B  {r['build'] / r['fit']:>10.2f}x  {r['seconds']:>8.1f} s")


if __name__ == "__main__":
    main()
