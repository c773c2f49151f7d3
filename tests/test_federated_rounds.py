"""Three federated rounds on the Palmer penguins, split by island across four clients (non-IID: one client
only ever sees Adelie penguins). Each client trains scikit-learn's SGDClassifier (partial_fit) from the global
model's weights, exports its pipeline with onegraph.build and sends a delta; the server merges them with
FedAvg. The merged parameters are compared with numpy's weighted mean of what scikit-learn learnt, read
straight from the estimators (not through onegraph), and the merged model, run in onnxruntime, with the clients'
own models on held-out rows."""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from safetensors import safe_open
from scipy.stats import trim_mean
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph import federated as fed
from onegraph.errors import FederatedError
from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler
from onegraph.meta import model_hash, read_metadata

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
ROUNDS, EPOCHS = 3, 5


def _sgd(seed: int) -> SGDClassifier:
    return SGDClassifier(loss="log_loss", alpha=1e-3, learning_rate="constant", eta0=0.02, random_state=seed)


def _weights(path) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def rounds(penguins, tmp_path_factory):
    """Run the rounds once; return what every test checks."""
    folder = tmp_path_factory.mktemp("federated")
    train, test = train_test_split(penguins, test_size=0.25, stratify=penguins["species"], random_state=0)
    features = lambda d: d.drop(columns="species")  # noqa: E731
    # the preprocessing is agreed beforehand and frozen; only the classifier's weights are federated
    pre = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), NUMERIC),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         ["island", "sex"]),
    ]).fit(features(train))
    classes = np.array(sorted(penguins["species"].unique()))
    biscoe = train[train.island == "Biscoe"]
    clients = {"biscoe-a": biscoe.iloc[::2], "biscoe-b": biscoe.iloc[1::2], "dream": train[train.island == "Dream"],
               "torgersen": train[train.island == "Torgersen"]}
    seed_rows = train.groupby("species").head(3)  # the server's initial model: 9 labelled rows
    init = _sgd(0)
    init.partial_fit(pre.transform(features(seed_rows)), seed_rows.species, classes=classes)
    onegraph.build(pre, init, sample=features(seed_rows), path=folder / "built.onnx")
    fed.mark_trainable(folder / "built.onnx", ["coef*", "intercept*"], path=folder / "global-0.onnx")
    x_test = pre.transform(features(test))
    history = []
    for r in range(1, ROUNDS + 1):
        base = folder / f"global-{r - 1}.onnx"
        base_sha = _sha(base)
        weights = _weights(base)
        coef_name = next(n for n in weights if n.startswith("coef"))
        intercept_name = next(n for n in weights if n.startswith("intercept"))
        coef, intercept = weights[coef_name], weights[intercept_name]
        local_models, deltas, samples = [], [], []
        for i, (name, rows) in enumerate(clients.items()):
            clf = _sgd(100 * r + i)
            clf.coef_, clf.intercept_ = coef.T.copy(), intercept.copy()  # start from the global weights
            x = pre.transform(features(rows))
            for _ in range(EPOCHS):
                clf.partial_fit(x, rows.species, classes=classes)
            local = onegraph.build(pre, clf, sample=features(rows))
            path = folder / f"round-{r}-{name}.safetensors"
            fed.make_delta(local, base, path, client=name)  # samples: the rows build recorded
            local_models.append(clf)
            deltas.append(path)
            samples.append(len(rows))
        out = folder / f"global-{r}.onnx"
        fed.average(base, deltas, path=out)
        history.append({"base": base, "base_sha": base_sha, "out": out, "coef": coef, "intercept": intercept,
                        "names": (coef_name, intercept_name), "clients": local_models, "deltas": deltas,
                        "samples": samples})
    return {"history": history, "x_test": x_test, "test": test, "features": features, "folder": folder}


def test_each_round_is_numpys_weighted_mean_of_what_the_clients_learnt(rounds):
    for r in rounds["history"]:
        merged = _weights(r["out"])
        coef_name, intercept_name = r["names"]
        for name, base, learnt in ((coef_name, r["coef"], [c.coef_.T for c in r["clients"]]),
                                   (intercept_name, r["intercept"], [c.intercept_ for c in r["clients"]])):
            updates = np.stack([w - base for w in learnt])
            np.testing.assert_array_equal(merged[name], base + np.average(updates, axis=0, weights=r["samples"]))
            np.testing.assert_allclose(merged[name], np.average(np.stack(learnt), axis=0, weights=r["samples"]),
                                       rtol=1e-13, atol=1e-13)
        untouched = {k: v for k, v in _weights(r["base"]).items() if k not in r["names"]}
        assert all(np.array_equal(merged[k], v) for k, v in untouched.items() if v.dtype != object)


def test_the_merged_model_beats_the_average_client_on_held_out_rows(rounds):
    test, last = rounds["test"], rounds["history"][-1]
    truth = test.species.to_numpy()
    scored = onegraph.score(last["out"], rounds["features"](test))
    merged_accuracy = float((scored["label"].to_numpy() == truth).mean())
    client_accuracy = [float((c.predict(rounds["x_test"]) == truth).mean()) for c in last["clients"]]
    assert merged_accuracy >= np.mean(client_accuracy), (merged_accuracy, client_accuracy)
    assert merged_accuracy >= 0.9
    # the graph's labels are scikit-learn's for the averaged weights
    reference = _sgd(0)
    coef = _weights(last["out"])[last["names"][0]]
    reference.coef_, reference.intercept_ = coef.T, _weights(last["out"])[last["names"][1]]
    reference.classes_ = last["clients"][0].classes_
    np.testing.assert_array_equal(scored["label"].to_numpy(), reference.predict(rounds["x_test"]))


def test_lineage_and_bases_untouched(rounds):
    history = rounds["history"]
    for i, r in enumerate(history, start=1):
        assert _sha(r["base"]) == r["base_sha"]  # the base model file is never modified
        md = read_metadata(r["out"])
        assert md.ok, md.errors
        assert md.fields["lineage"] == {"parent": model_hash(r["base"]), "parent_name": r["base"].name,
                                        "relation": "federated fedavg"}
        rounds_meta = md.fields["federated"]["rounds"]
        assert [x["round"] for x in rounds_meta] == list(range(1, i + 1))
        assert rounds_meta[-1] == {"round": i, "base_model": model_hash(r["base"]), "method": "fedavg",
                                   "clients": 4, "samples": sum(r["samples"])}
        assert md.fields["transfer_learning"]["trainable"] == list(r["names"])
        assert md.fields["federated"]["fingerprint"] == fed.fingerprint(fed.load(r["out"]).model)


@pytest.mark.parametrize("method", ["median", "trimmed-mean"])
def test_robust_methods_are_numpys_and_scipys_per_coordinate_even_in_tiny_chunks(rounds, method, tmp_path):
    r = rounds["history"][1]
    for memory in (fed.aggregate.MEMORY, 200):  # 200 bytes: one coordinate per chunk
        out = tmp_path / f"{method}-{memory}.onnx"
        fed.average(r["base"], r["deltas"], method=method, trim=0.25 if method == "trimmed-mean" else None,
                    memory=memory, path=out)
        merged = _weights(out)
        for name, base, learnt in ((r["names"][0], r["coef"], [c.coef_.T for c in r["clients"]]),
                                   (r["names"][1], r["intercept"], [c.intercept_ for c in r["clients"]])):
            updates = np.stack([w - base for w in learnt])
            center = np.median(updates, axis=0) if method == "median" else trim_mean(updates, 0.25, axis=0)
            np.testing.assert_array_equal(merged[name], base + center)
    last = read_metadata(out).fields["federated"]["rounds"][-1]
    assert last["method"] == method and (last.get("trim") == 0.25) == (method == "trimmed-mean")


def test_apply_gives_the_local_model_back(rounds, tmp_path):
    r = rounds["history"][0]
    out = tmp_path / "applied.onnx"
    fed.apply_deltas(r["base"], [r["deltas"][2]], path=out)
    clf = r["clients"][2]
    merged = _weights(out)
    np.testing.assert_array_equal(merged[r["names"][0]], r["coef"] + (clf.coef_.T - r["coef"]))
    np.testing.assert_allclose(merged[r["names"][0]], clf.coef_.T, rtol=1e-15, atol=1e-15)
    labels = onegraph.score(out, rounds["features"](rounds["test"]))["label"].to_numpy()
    np.testing.assert_array_equal(labels, clf.predict(rounds["x_test"]))


def test_a_delta_whose_weighted_sum_overflows_is_refused_without_numpy_warnings(rounds, tmp_path):
    """A double coordinate of 1e308 is finite, but times its client's sample count it overflows: the refusal was
    preceded by numpy's raw "RuntimeWarning: overflow encountered in multiply" naming onegraph's source line."""
    import warnings

    from test_federated_bad_input import _forge

    r = rounds["history"][0]
    name = r["names"][0]
    with safe_open(r["deltas"][1], framework="numpy") as f:
        values = f.get_tensor(name).copy()
    assert values.dtype == np.float64
    values.flat[0] = 1e308
    bad = _forge(r["deltas"][1], tmp_path / "huge.safetensors", tensors={name: values})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FederatedError, match="huge.safetensors"):
            fed.average(r["base"], [r["deltas"][0], bad], path=tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()
