"""An IBM-like categorical-encoding pipeline: pandas + scikit-learn vs onegraph, one row and 1M rows.

The table has the shape of the Kaggle "Categorical Feature Encoding Challenge" that IBM's Data Frame
Pipeline benchmarked (``benchmarks/categorical_encoding_1``): binary columns ``bin_0..4`` (two of them
'F'/'T', 'N'/'Y' text), nominal text ``nom_0..9`` (low cardinality, then high-cardinality codes written
``"<prefix>.<suffix>"``), ordinal ``ord_0..5`` (an integer, named levels, letters), ``day`` and ``month``;
a binary target. It is generated (seeded), with missing values in every text column.

The pipeline, as IBM's: value maps (``bin_3``, ``bin_4``, ``ord_1``, ``ord_2``), ``bin_0 - 1``, label
encoding with a complement code for missing / unseen values (``ord_3..5``), standard scaling of the
ordinals, string split (the suffix of ``nom_5..9``), one-hot encoding (``nom_0..9``, ``day``, ``month``),
then logistic regression.

Candidates, measured side by side (interleaved rounds, best round kept; see ``_timing.py``):

* **pandas + scikit-learn**: the steps written with pandas (``map``, ``fillna``, ``str.split``) on a
  copy of the DataFrame, then a fitted scikit-learn ``ColumnTransformer`` (``StandardScaler``,
  ``OneHotEncoder``) and ``LogisticRegression.predict_proba``;
* **IBM's pandas steps**: each step as IBM's ``dfpipeline`` transformers compute it in pandas (a
  DataFrame column assignment per step; one-hot encoding as one ``map({category: 1})`` per category, as
  its ``OneHotEncoder``), then scikit-learn's ``StandardScaler`` and ``LogisticRegression`` — the pipeline
  IBM measured its ~300x against (single row only: it takes minutes per million rows);
* **onegraph transformers in Python**: the same pipeline made of onegraph's transformers, run by
  scikit-learn (``Pipeline.predict_proba``);
* **onegraph.score**: that pipeline built into one ONNX graph, scored from the DataFrame.

All three are checked to give the same probabilities before timing.

Run: ``python bench/frame.py [--rows 1000000] [--rounds 7]``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder as SkOneHot
from sklearn.preprocessing import StandardScaler as SkScaler

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, interleaved  # noqa: E402

import onegraph  # noqa: E402
from onegraph.frame import (  # noqa: E402
    Expression,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
    StringSplit,
    ValueMap,
)
from onegraph.runtime import cached_session  # noqa: E402

ORD_1 = {"Novice": 0, "Contributor": 1, "Expert": 2, "Master": 3, "Grandmaster": 4}
ORD_2 = {"Freezing": 0, "Cold": 1, "Warm": 2, "Hot": 3, "Boiling Hot": 4, "Lava Hot": 5}
NOMINAL = {
    "nom_0": ["Green", "Blue", "Red"],
    "nom_1": ["Triangle", "Polygon", "Trapezoid", "Circle", "Square", "Star"],
    "nom_2": ["Hamster", "Axolotl", "Lion", "Dog", "Cat", "Snake"],
    "nom_3": ["Russia", "Canada", "Finland", "Costa Rica", "China", "India"],
    "nom_4": ["Bassoon", "Theremin", "Oboe", "Piano"],
}
HIGH = ["nom_5", "nom_6", "nom_7", "nom_8", "nom_9"]
ONE_HOT = list(NOMINAL) + HIGH + ["day", "month"]
LABELS = ["ord_3", "ord_4", "ord_5"]
ORDINALS = ["ord_0", "ord_1", "ord_2"] + LABELS


def make_table(n: int, seed: int) -> tuple[pd.DataFrame, pd.Series]:
    """The generated table (``str`` text columns with missing values) and its binary target."""
    rng = np.random.default_rng(seed)

    def text(values, p_missing=0.03):
        out = rng.choice(np.asarray(values, dtype=object), n)
        out[rng.random(n) < p_missing] = None
        return pd.array(out, dtype="str")

    suffixes = [f"{i:02x}" for i in range(40)]
    frame = pd.DataFrame({
        "bin_0": rng.integers(0, 2, n), "bin_1": rng.integers(0, 2, n), "bin_2": rng.integers(0, 2, n),
        "bin_3": text(["F", "T"]), "bin_4": text(["N", "Y"]),
        **{c: text(v) for c, v in NOMINAL.items()},
        **{c: text([f"{rng.integers(0, 16**6):06x}.{s}" for s in suffixes for _ in range(3)]) for c in HIGH},
        "ord_0": rng.integers(1, 4, n),
        "ord_1": text(list(ORD_1)), "ord_2": text(list(ORD_2)),
        "ord_3": text(list("abcdefghijklmno")), "ord_4": text(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ")),
        "ord_5": text([a + b for a in "AaBbCc" for b in "xyzXYZ"]),
        "day": rng.integers(1, 8, n), "month": rng.integers(1, 13, n),
    })
    score = (frame["bin_0"] + (frame["nom_0"] == "Red") + 0.3 * frame["ord_0"] + (frame["bin_3"] == "T")
             + 0.2 * (frame["month"] > 6) + rng.normal(0, 1, n))
    return frame, (score > score.median()).astype(int)


# -- pandas + scikit-learn -------------------------------------------------------------------------
class PandasPipeline:
    """The steps in pandas (IBM's ``transform`` code, idiomatic), then scikit-learn."""

    def fit(self, frame: pd.DataFrame, y: pd.Series) -> PandasPipeline:
        self.labels = {c: {v: i for i, v in enumerate(sorted(frame[c].dropna().unique()))} for c in LABELS}
        x = self._steps(frame)
        self.model = make_pipeline(ColumnTransformer([
            ("ord", SkScaler(), ORDINALS),
            ("hot", SkOneHot(handle_unknown="ignore", sparse_output=False), ONE_HOT),
        ], remainder="passthrough"), LogisticRegression(max_iter=2000, C=0.12)).fit(x, y)
        return self

    def _steps(self, frame: pd.DataFrame) -> pd.DataFrame:
        df = frame.copy()
        df["bin_3"] = df["bin_3"].map({"F": 0, "T": 1}).fillna(-1)
        df["bin_4"] = df["bin_4"].map({"N": 0, "Y": 1}).fillna(-1)
        df["bin_0"] = df["bin_0"] - 1
        df["ord_1"] = df["ord_1"].map(ORD_1).fillna(-1)
        df["ord_2"] = df["ord_2"].map(ORD_2).fillna(-1)
        for c in LABELS:
            df[c] = df[c].map(self.labels[c]).fillna(-1)
        for c in HIGH:
            df[c] = df[c].str.split(".", regex=False).str[-1]
        for c in ONE_HOT:
            df[c] = df[c].astype(object).where(df[c].notna(), "(missing)").astype(str)
        return df

    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray:
        return self.model.predict_proba(self._steps(frame))


class IbmPandasPipeline:
    """The steps as IBM's dfpipeline transformers run them in pandas (``dfpipeline/*.py``: MapTransformer
    ``replace``, FunctionTransformer by element, ComplementLabelEncoder, Scaler, StringSplitter,
    OneHotEncoder's map per category, ColumnSelector), then logistic regression."""

    def fit(self, frame: pd.DataFrame, y: pd.Series) -> IbmPandasPipeline:
        self.labels = {}
        for c in LABELS:  # ComplementLabelEncoder: sorted labels, "extra_category_" for missing / unseen
            classes = sorted(set(frame[c].fillna("extra_category_").astype(str)) | {"extra_category_"})
            self.labels[c] = ({v: i for i, v in enumerate(classes)}, classes.index("extra_category_"))
        split = self._split(frame.copy())
        self.categories = {c: list(pd.get_dummies(split[c]).columns) for c in ONE_HOT}
        x = self._encode(self._scaled(split, fit=True))
        self.model = LogisticRegression(max_iter=2000, C=0.12).fit(x, y)
        return self

    def _split(self, df: pd.DataFrame) -> pd.DataFrame:
        df["bin_3"] = df["bin_3"].replace({"F": 0, "T": 1})
        df["bin_4"] = df["bin_4"].replace({"N": 0, "Y": 1})
        df["bin_0"] = df["bin_0"].map(lambda x: x - 1)
        df["ord_1"] = df["ord_1"].replace(ORD_1)
        df["ord_2"] = df["ord_2"].replace(ORD_2)
        for c in LABELS:
            m, extra = self.labels[c]
            df[c] = df[c].fillna("extra_category_").map(m).fillna(extra).astype("int32")
        for c in HIGH:
            df[c] = df[c].map(lambda x: str(x).split(".")[-1])
        for c in ("bin_3", "bin_4", "ord_1", "ord_2"):
            df[c] = pd.to_numeric(df[c], errors="coerce").fillna(-1)
        return df

    def _scaled(self, df: pd.DataFrame, fit: bool = False) -> pd.DataFrame:
        if fit:
            self.scaler = SkScaler().fit(df[ORDINALS])
        df[ORDINALS] = self.scaler.transform(df[ORDINALS])
        return df

    def _encode(self, df: pd.DataFrame) -> pd.DataFrame:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas warns that the frame becomes fragmented: it does
            for c, cats in self.categories.items():
                for cat in cats:
                    df[c + "__" + str(cat)] = df[c].map({cat: 1}).fillna(0)
        return df.drop(columns=ONE_HOT)

    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray:
        return self.model.predict_proba(self._encode(self._scaled(self._split(frame.copy()))))


# -- the same pipeline with onegraph's transformers ------------------------------------------------
def onegraph_pipeline() -> Pipeline:
    def mapped(mapping):
        return ValueMap(mapping, unmatched=-1.0)

    def hot():
        return OneHotEncoder(handle_unknown="ignore")

    return make_pipeline(ColumnTransformer([
        ("bin_0", Expression("bin_0 - 1", name="bin_0"), ["bin_0"]),
        ("bin_3", mapped({"F": 0, "T": 1}), ["bin_3"]),
        ("bin_4", mapped({"N": 0, "Y": 1}), ["bin_4"]),
        ("ord", make_pipeline(ColumnTransformer([
            ("ord_0", "passthrough", ["ord_0"]),
            ("ord_1", mapped(ORD_1), ["ord_1"]),
            ("ord_2", mapped(ORD_2), ["ord_2"]),
            ("labels", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1,
                                      encoded_missing_value=-1), LABELS),
        ]), StandardScaler()), ORDINALS),
        ("low", hot(), list(NOMINAL) + ["day", "month"]),
        ("high", make_pipeline(StringSplit(".", index=-1), hot()), HIGH),
        ("bin_12", "passthrough", ["bin_1", "bin_2"]),
    ]), LogisticRegression(max_iter=2000, C=0.12))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--train", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=0.2, help="time per candidate per round (single row)")
    args = ap.parse_args()

    train, y = make_table(args.train, seed=0)
    reference = PandasPipeline().fit(train, y)
    ibm = IbmPandasPipeline().fit(train, y)
    ours = onegraph_pipeline().fit(train, y)
    path = Path("/tmp/onegraph-bench-frame.onnx")
    onegraph.build(ours, None, train.head(2000), path=path)
    session = cached_session(path)

    rows, _ = make_table(args.rows, seed=1)
    check = rows.head(5000)
    got = onegraph.score(path, check)[["probabilities_0", "probabilities_1"]].to_numpy()
    np.testing.assert_allclose(got, ours.predict_proba(check), rtol=1e-9, atol=1e-12)
    agree = np.abs(got - reference.predict_proba(check)).max()
    agree_ibm = np.abs(got - ibm.predict_proba(check)).max()
    print(f"pipeline: {len(ours[0].get_feature_names_out())} features into the model; graph "
          f"{path.stat().st_size / 1024:.0f} KiB, {len(session._session.get_inputs())} inputs; "
          f"max |onegraph - pandas+scikit-learn| probability {agree:.1e}, |onegraph - IBM's steps| {agree_ibm:.1e}")

    one = rows.iloc[[7]]
    _, one_feeds = session.feeds(one)
    bare, names = session._session, [o.name for o in session._session.get_outputs()]
    single = interleaved({
        "pandas + scikit-learn": lambda: reference.predict_proba(one),
        "IBM's pandas steps + scikit-learn": lambda: ibm.predict_proba(one),
        "onegraph transformers in Python": lambda: ours.predict_proba(one),
        "onegraph.score": lambda: onegraph.score(path, one),
        "onnxruntime run alone (prebuilt feeds)": lambda: bare.run(names, one_feeds),
    }, rounds=args.rounds, seconds=args.seconds)
    batch = interleaved({  # IBM's steps take minutes per million rows: single row only
        "pandas + scikit-learn": lambda: reference.predict_proba(rows),
        "onegraph.score": lambda: onegraph.score(path, rows),
    }, rounds=max(2, args.rounds // 3), seconds=0.0)

    print(f"single row from a one-row DataFrame (best of {args.rounds} interleaved rounds):")
    for name, t in single.items():
        print(f"  {name:42s} {fmt(t)}")
    print(f"{len(rows):,} rows:")
    for name, t in batch.items():
        print(f"  {name:42s} {fmt(t)}  ({len(rows) / t:,.0f} rows/s)")
    ratios = [
        ("single row: pandas + scikit-learn / onegraph", single["pandas + scikit-learn"] / single["onegraph.score"], ">= 300"),
        ("single row: IBM's pandas steps / onegraph", single["IBM's pandas steps + scikit-learn"] / single["onegraph.score"], ">= 300"),
        ("single row: onegraph Python path / onegraph", single["onegraph transformers in Python"] / single["onegraph.score"], "(info)"),
        ("single row: onegraph.score / onnxruntime alone", single["onegraph.score"] / single["onnxruntime run alone (prebuilt feeds)"], "(info)"),
        (f"{len(rows):,} rows: pandas + scikit-learn / onegraph", batch["pandas + scikit-learn"] / batch["onegraph.score"], ">= 1"),
    ]
    print("ratios:")
    for name, value, target in ratios:
        print(f"  {name:52s} {value:8.1f}x   target {target}")


if __name__ == "__main__":
    main()
