"""Federated learning on the Palmer penguins with onegraph.federated: four clients (split by island), three
rounds of FedAvg over the weights of a scikit-learn SGDClassifier exported with onegraph.build.

Run: ``python examples/federated_penguins.py OUT_FOLDER``. Writes ``global-<round>.onnx``, and per round the
clients' models ``round-<r>/local-<client>.onnx`` and deltas ``round-<r>/<client>.safetensors``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph import federated as fed
from onegraph.datasets import load_penguins
from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

out = Path(sys.argv[1] if len(sys.argv) > 1 else "federated")
out.mkdir(parents=True, exist_ok=True)
penguins = load_penguins()
train, test = train_test_split(penguins, test_size=0.25, stratify=penguins["species"], random_state=0)
x_train, x_test = train.drop(columns="species"), test.drop(columns="species")
numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
# agreed by all clients beforehand, and frozen: only the classifier's weights are trained together
pre = ColumnTransformer([
    ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
    ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
     ["island", "sex"]),
]).fit(x_train)
classes = np.unique(penguins["species"])
clients = {"biscoe-a": train[train.island == "Biscoe"].iloc[::2], "biscoe-b": train[train.island == "Biscoe"].iloc[1::2],
           "dream": train[train.island == "Dream"], "torgersen": train[train.island == "Torgersen"]}


def classifier(seed: int) -> SGDClassifier:
    return SGDClassifier(loss="log_loss", alpha=1e-3, learning_rate="constant", eta0=0.02, random_state=seed)


seed_rows = train.groupby("species").head(3)
start = classifier(0).partial_fit(pre.transform(seed_rows.drop(columns="species")), seed_rows.species, classes=classes)
onegraph.build(pre, start, sample=seed_rows.drop(columns="species"), path=out / "initial.onnx")
fed.mark_trainable(out / "initial.onnx", ["coef*", "intercept*"], path=out / "global-0.onnx")


def accuracy(model) -> float:
    return float((onegraph.score(model, x_test)["label"] == test.species).mean())


print(f"round 0: accuracy {accuracy(out / 'global-0.onnx'):.3f} on {len(test)} held-out rows")
for r in range(1, 4):
    base = out / f"global-{r - 1}.onnx"
    weights = fed.get_parameters(base)  # the exchanged parameters: coef (transposed) and intercept
    coef = next(v for k, v in weights.items() if k.startswith("coef"))
    intercept = next(v for k, v in weights.items() if k.startswith("intercept"))
    folder = out / f"round-{r}"
    folder.mkdir(exist_ok=True)
    deltas, local_accuracy = [], []
    for i, (name, rows) in enumerate(clients.items()):
        clf = classifier(100 * r + i)
        clf.coef_, clf.intercept_ = coef.T.copy(), intercept.copy()
        for _ in range(5):  # local epochs, from the global weights
            clf.partial_fit(pre.transform(rows.drop(columns="species")), rows.species, classes=classes)
        local = folder / f"local-{name}.onnx"
        onegraph.build(pre, clf, sample=rows.drop(columns="species"), path=local)
        fed.make_delta(local, base, folder / f"{name}.safetensors", client=name)
        deltas.append(folder / f"{name}.safetensors")
        local_accuracy.append(accuracy(local))
    fed.average(base, deltas, method="fedavg", path=out / f"global-{r}.onnx")
    print(f"round {r}: accuracy {accuracy(out / f'global-{r}.onnx'):.3f}; clients' own models "
          + ", ".join(f"{a:.3f}" for a in local_accuracy) + f" (mean {np.mean(local_accuracy):.3f})")
