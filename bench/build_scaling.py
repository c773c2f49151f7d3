"""Build time against the number of text columns: onegraph.build of a one-hot + logistic regression pipeline.

Issue 15's target: build time linear in the number of columns (500 columns <= 2.2x the time of 250). The table
is real: each of the K text columns is one of the penguins table's text columns (species, island, sex) with its
rows permuted (seeded), so every column has the categories and the missing values the real column has. Anchor,
measured in the same run: scikit-learn's ``fit`` of the same pipeline (its cost also grows with the columns).

    python bench/build_scaling.py            # --columns 125 250 500 --rows 344 --rounds 3
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd


def table(columns: int, rows: int, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    from onegraph.datasets import load_penguins

    penguins = load_penguins()
    rng = np.random.default_rng(seed)
    sources = ["species", "island", "sex"]
    data = {}
    for k in range(columns):
        column = penguins[sources[k % 3]].to_numpy(dtype=object)
        data[f"c{k}"] = column[rng.permutation(len(column))][:rows]
    y = penguins["body_mass_g"].fillna(penguins["body_mass_g"].median()).to_numpy()[:rows] > 4000
    return pd.DataFrame(data), pd.Series(y, name="heavy")


def pipeline():
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    return make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), lambda x: list(x.columns))),
                         LogisticRegression(max_iter=200))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--columns", type=int, nargs="+", default=[125, 250, 500])
    parser.add_argument("--rows", type=int, default=344)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import onegraph

    best: dict[int, tuple[float, float]] = {}
    for _ in range(args.rounds):
        for k in args.columns:  # interleaved: every size once per round
            x, y = table(k, args.rows)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                model = pipeline().fit(x, y)
                fit = time.perf_counter() - start
                start = time.perf_counter()
                onegraph.build(model, None, x)
                build = time.perf_counter() - start
            old = best.get(k, (float("inf"), float("inf")))
            best[k] = (min(old[0], fit), min(old[1], build))
    print(f"best of {args.rounds} interleaved rounds, {args.rows} rows:")
    first = args.columns[0]
    for k in args.columns:
        fit, build = best[k]
        print(f"  {k:4d} text columns: scikit-learn fit {fit:7.3f} s   onegraph.build {build:7.3f} s   "
              f"build / fit {build / fit:5.1f}x   build vs {first} columns {build / best[first][1]:5.2f}x "
              f"(columns {k / first:.0f}x)")
    if 250 in best and 500 in best:
        ratio = best[500][1] / best[250][1]
        verdict = "met" if ratio <= 2.2 else "MISSED"
        print(f"target: 500 columns <= 2.2x the build time of 250: {ratio:.2f}x — {verdict} "
              f"(scikit-learn's fit, the anchor: {best[500][0] / best[250][0]:.2f}x)")


if __name__ == "__main__":
    main()
