"""compose_models: .onnx files built elsewhere merged into one model, equal to the same files chained."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnx.inliner
import pytest
from compose_helpers import penguins, preprocessing
from conftest import DATA
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
import onegraph.io
from onegraph.errors import ExportError
from onegraph.export.merge import compose_models


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    frame, y, pre, x = penguins()
    folder = tmp_path_factory.mktemp("models")
    onegraph.build(pre, None, frame, path=folder / "pre.onnx")
    lr = LogisticRegression(max_iter=1000).fit(x, y)
    from skl2onnx import to_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (folder / "lr.onnx").write_bytes(to_onnx(lr, np.asarray(x, np.float32)[:1], options={"zipmap": False},
                                                 target_opset=15).SerializeToString())
    rf = make_pipeline(preprocessing(), RandomForestClassifier(n_estimators=15, random_state=0)).fit(frame, y)
    onegraph.build(rf, None, frame, path=folder / "rf.onnx")
    lr2 = make_pipeline(preprocessing(), LogisticRegression(max_iter=1000)).fit(frame, y)
    onegraph.build(lr2, None, frame, path=folder / "lr2.onnx")
    return folder, {"lr": lr, "rf": rf, "lr2": lr2}


def test_preprocessing_file_chained_into_a_model_file(files):
    folder, fitted = files
    frame, y, pre, x = penguins()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    merged = compose_models([folder / "pre.onnx", folder / "lr.onnx"], sample=frame)
    scores = onegraph.score(merged, frame)
    lr = fitted["lr"]
    assert list(scores.columns[:1]) == ["label"]
    assert (scores["label"].to_numpy() == lr.predict(x)).all()
    # the columns are named by the classes skl2onnx's LinearClassifier lists (classlabels_strings); its graph
    # computes in float32 (eps 1.2e-7), to 1e-5 of scikit-learn's double probabilities
    np.testing.assert_allclose(scores[[f"probabilities_{c}" for c in lr.classes_]].to_numpy(), lr.predict_proba(x),
                               atol=1e-5)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # inputs untouched


def _computed_nodes(model: onnx.ModelProto) -> int:
    """Nodes run, with the functions build emits for each step inlined."""
    return len(onnx.inliner.inline_local_functions(model).graph.node)


def test_two_pipelines_merged_with_an_ensemble(files):
    folder, fitted = files
    frame, *_ = penguins()
    merged = compose_models([folder / "rf.onnx", folder / "lr2.onnx"], ensemble="mean", sample=frame)
    scores = onegraph.score(merged, frame)
    rf, lr2 = fitted["rf"], fitted["lr2"]
    mean = (rf.predict_proba(frame) + lr2.predict_proba(frame)) / 2
    np.testing.assert_allclose(scores[[f"probabilities_{c}" for c in rf.classes_]].to_numpy(), mean, atol=1e-12)
    assert (scores["label"].to_numpy() == rf.classes_[mean.argmax(axis=1)]).all()
    assert (scores["rf.label"].to_numpy() == rf.predict(frame)).all()
    assert (scores["lr2.label"].to_numpy() == lr2.predict(frame)).all()
    # the same preprocessing built into both files is computed once: the merged graph runs both files' nodes
    # less one copy of the preprocessing's (its step calls and their Concat), plus the ensemble's own
    files = [onnx.load(folder / f) for f in ("rf.onnx", "lr2.onnx")]
    bodies = {(f.domain, f.name, f.overload): len(f.node) for f in files[1].functions}
    pre_calls = [n for n in files[1].graph.node
                 if n.op_type in ("SimpleImputer", "StandardScaler", "OneHotEncoder") or n.op_type == "Concat"]
    shared = sum(bodies.get((n.domain, n.op_type, n.overload), 1) for n in pre_calls)
    assert shared >= 10
    ensemble = len(merged.graph.node) - (sum(len(f.graph.node) for f in files) - len(pre_calls))
    assert _computed_nodes(merged) == sum(_computed_nodes(f) for f in files) - shared + ensemble


def test_merge_refuses_mismatches_naming_both_models(files, tmp_path):
    folder, _ = files
    frame, y, _, x = penguins()
    with pytest.raises(ExportError, match="model 'lr' takes a feature matrix"):
        compose_models([folder / "lr.onnx"])
    onegraph.build(preprocessing().set_params(cat="drop").fit(frame, y), None, frame, path=tmp_path / "num.onnx")
    with pytest.raises(ExportError, match=r"model 'num' gives 5 columns but model 'lr' takes a float feature "
                                          r"matrix \[N, 10\]"):
        compose_models([tmp_path / "num.onnx", folder / "lr.onnx"])
    clash = frame.assign(year=frame["year"].astype(str))
    from sklearn.compose import ColumnTransformer

    from onegraph.frame import OneHotEncoder

    year_text = make_pipeline(ColumnTransformer([("y", OneHotEncoder(handle_unknown="ignore"), ["year"])]),
                              LogisticRegression()).fit(clash, y)
    onegraph.build(year_text, None, clash, path=tmp_path / "year_text.onnx")
    with pytest.raises(ExportError, match=r"input 'year' is int \(int64\) in model 'rf' but string \(string\) in "
                                          r"model 'year_text'"):
        compose_models([folder / "rf.onnx", tmp_path / "year_text.onnx"])


def test_a_preprocessing_file_alone_keeps_its_feature_roles(files):
    """The user's report: composing a preprocessing-only file (or one with a plain model) failed on
    onegraph's own metadata ("0.role: Input should be 'label', ..."): each output keeps its role."""
    from onegraph.contract import metadata as meta

    folder, _ = files
    frame = penguins()[0]
    proto = compose_models([str(folder / "pre.onnx")], sample=frame)
    fields, invalid = meta.decode({p.key: p.value for p in proto.metadata_props})
    assert not invalid and {o["role"] for o in fields["outputs"]} == {"feature"}
    np.testing.assert_array_equal(onegraph.score(proto, frame).to_numpy(np.float64),
                                  onegraph.score(folder / "pre.onnx", frame).to_numpy(np.float64))


def test_an_ensemble_of_skl2onnx_files_reads_the_classes_of_their_classifier_nodes(files, tmp_path):
    """skl2onnx writes no onegraph metadata, so an ensemble of its files was refused ("does not say which class
    each column of its probabilities is"), though its LinearClassifier lists them (``classlabels_strings``, the
    order of the probability columns): they are read from there. A graph whose probabilities' width is not
    declared (the labels may not be its columns: one-vs-rest graphs hold binary classifiers) is still refused,
    naming the model and the way to give them."""
    import onnxruntime as ort

    folder, fitted = files
    frame, *_ = penguins()
    merged = compose_models([str(folder / "pre.onnx"), str(folder / "lr.onnx"), str(folder / "lr.onnx")],
                            names=["pre", "lr", "lr_again"], ensemble="mean", sample=frame)
    scores = onegraph.score(merged, frame)
    lr = fitted["lr"]
    features = onegraph.score(folder / "pre.onnx", frame).to_numpy(np.float32)
    session = ort.InferenceSession(str(folder / "lr.onnx"), providers=["CPUExecutionProvider"])
    label, probabilities = session.run(["label", "probabilities"], {"X": features})
    # the mean of two equal float32 answers, widened to double, is each of them exactly
    np.testing.assert_array_equal(scores[[f"probabilities_{c}" for c in lr.classes_]].to_numpy(),
                                  probabilities.astype(np.float64))
    assert (scores["label"].to_numpy() == lr.classes_[probabilities.argmax(axis=1)]).all()
    assert (scores["lr.label"].to_numpy() == label).all()
    undeclared = onnx.load(folder / "lr.onnx")
    output = next(o for o in undeclared.graph.output if o.name == "probabilities")
    output.type.tensor_type.shape.dim[1].dim_param = "classes"
    onnx.save(undeclared, tmp_path / "lr_undeclared.onnx")
    with pytest.raises(ExportError, match="model 'lr' does not say which class each column of its probabilities"):
        compose_models([str(folder / "pre.onnx"), str(tmp_path / "lr_undeclared.onnx"),
                        str(tmp_path / "lr_undeclared.onnx")],
                       names=["pre", "lr", "lr_again"], ensemble="mean")


def test_compose_takes_the_classes_of_models_that_do_not_name_them(files, tmp_path, cli):
    """``compose --ensemble`` of such files had no way to give the classes (Python's ``Ensemble(classes=...)``
    only): ``--classes`` gives them, in the probabilities' column order."""
    folder, fitted = files
    frame, *_ = penguins()
    undeclared = onnx.load(folder / "lr.onnx")
    next(o for o in undeclared.graph.output if o.name == "probabilities").type.tensor_type.shape.dim[1].dim_param = "k"
    onnx.save(undeclared, tmp_path / "a.onnx")
    onnx.save(undeclared, tmp_path / "b.onnx")
    frame.head(20).to_csv(tmp_path / "rows.csv", index=False)
    models = [str(folder / "pre.onnx"), str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx")]
    refused = cli("compose", *models, "--ensemble", "mean", "-o", str(tmp_path / "m.onnx"))
    assert refused.returncode == 1 and "--classes A,B,C" in refused.stderr, refused.stderr
    classes = ",".join(fitted["lr"].classes_)
    done = cli("compose", *models, "--ensemble", "mean", "--classes", classes, "--check", str(tmp_path / "rows.csv"),
               "-o", str(tmp_path / "m.onnx"))
    assert done.returncode == 0, done.stderr
    scores = onegraph.score(tmp_path / "m.onnx", frame.head(20))
    assert scores["label"].tolist() == scores["a.label"].tolist()
    assert [c for c in scores.columns if c.startswith("probabilities_")] == \
        [f"probabilities_{c}" for c in fitted["lr"].classes_]
    for bad in ("--classes", "a,,b"), ("--classes", "a,a,b"):
        result = cli("compose", *models, "--ensemble", "mean", *bad, "-o", str(tmp_path / "n.onnx"))
        assert result.returncode == 1 and "distinct, non-empty" in result.stderr
    result = cli("compose", *models, "--classes", classes, "-o", str(tmp_path / "n.onnx"))
    assert result.returncode == 1 and "--classes is given without --ensemble" in result.stderr


def test_a_model_with_a_fixed_batch_is_refused_naming_its_input(files, tmp_path):
    """torch.onnx.export(dynamo=True) without dynamic_shapes fixes the batch at the traced size: compose --check
    died with "internal error (InvalidArgument: ... Got invalid dimensions for input: x)", exit 70. Refused when
    the model is read, naming the input and how to export it."""
    folder, fitted = files
    frame, _, _, x = penguins()
    from skl2onnx import to_onnx

    fixed = to_onnx(fitted["lr"], np.asarray(x, np.float32)[:2], options={"zipmap": False}, target_opset=15)
    fixed.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2  # as a trace of two rows records it
    (tmp_path / "fixed.onnx").write_bytes(fixed.SerializeToString())
    with pytest.raises(ExportError, match=r"model 'fixed': input 'X' takes a fixed batch of 2 rows \(shape \[2, 10\]\)"):
        compose_models([folder / "pre.onnx", tmp_path / "fixed.onnx"], sample=frame)


def test_a_softmax_output_not_named_probabilities_takes_part_in_an_ensemble(tmp_path, cli):
    """A new user's case: a classifier file ending in Softmax whose output is named ``output`` (as PyTorch's
    exporter names it) was refused by ``compose --ensemble mean --classes`` as giving no probabilities; only the
    literal name ``probabilities`` was read so. A float ``[N, k]`` Softmax output is the probabilities now; the
    ensemble is numpy's mean of the two models' softmax."""
    from onnx import TensorProto, helper, numpy_helper

    from onegraph.frame import StandardScaler

    cars = onegraph.io.read_table(DATA / "cars.csv")[["Horsepower", "Weight_in_lbs", "Acceleration"]].dropna()
    pre = tmp_path / "pre.onnx"
    scaler = StandardScaler().fit(cars)
    onegraph.build(scaler, None, cars, path=pre)
    weights = [np.random.default_rng(seed).standard_normal((3, 3)) for seed in (1, 2)]
    for i, w in enumerate(weights):
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "W"], ["z"]), helper.make_node("Softmax", ["z"], ["output"], axis=-1)],
            "clf", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["N", 3])],
            [helper.make_tensor_value_info("output", TensorProto.DOUBLE, ["N", 3])], [numpy_helper.from_array(w, "W")])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / f"m{i}.onnx")
    done = cli("compose", str(pre), str(tmp_path / "m0.onnx"), str(tmp_path / "m1.onnx"), "--ensemble", "mean",
               "--classes", "USA,Europe,Japan", "-o", str(tmp_path / "mean.onnx"))
    assert done.returncode == 0, done.stderr
    x = scaler.transform(cars).to_numpy(float)

    def softmax(z):
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    expected = (softmax(x @ weights[0]) + softmax(x @ weights[1])) / 2
    got = onegraph.score(tmp_path / "mean.onnx", cars)[[f"probabilities_{c}" for c in ("USA", "Europe", "Japan")]]
    np.testing.assert_allclose(got.to_numpy(float), expected, rtol=1e-12, atol=1e-15)


def test_the_python_api_never_writes_over_a_member_models_file(files):
    """The user's report: ``compose(pre, {"lr": OnnxModel("lr.onnx")}, sample, path="lr.onnx")`` returned and
    replaced lr.onnx with the composed model (the CLI refused it). Both Python entries refuse, before the work."""
    from onegraph.export import OnnxModel

    folder, _ = files
    frame, y, pre, x = penguins()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    target = folder / "lr.onnx"
    said = f"cannot write {target}: it is the input {target}, which would be replaced"
    with pytest.raises(onegraph.errors.OnegraphError, match=said):
        onegraph.compose(pre, {"lr": OnnxModel(target)}, frame, path=target)
    with pytest.raises(onegraph.errors.OnegraphError, match=said):
        onegraph.compose(pre, {"lr": target}, frame, path=target)
    with pytest.raises(onegraph.errors.OnegraphError, match=said):
        compose_models([folder / "pre.onnx", target], sample=frame, path=target)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_model_file_with_a_fixed_batch_is_refused_naming_its_input(tmp_path):
    """torch.onnx.export without dynamic axes writes ``x: [2, 4]``: compose reached onnxruntime with the
    sample's rows and raised its InvalidArgument ("Got invalid dimensions for input: x"), not an onegraph error."""
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    from onegraph.export import OnnxModel

    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["logits"]),
                               helper.make_node("Softmax", ["logits"], ["y"], axis=-1)], "fixed",
                              [helper.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])], [w])
    path = tmp_path / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(ExportError, match=r"input 'x' takes a fixed batch of 2 row\(s\).*dynamic batch axis"):
        OnnxModel(path, classes=[0, 1, 2])


def test_a_first_model_taking_a_matrix_is_named_as_first(files):
    """A skl2onnx model taking a feature matrix, given first: the error advised putting a preprocessing-only
    model before it, which the user had done (a skl2onnx scaler is one, and takes a matrix too)."""
    folder, _ = files
    with pytest.raises(ExportError, match=r"model 'lr' takes a feature matrix .* and comes first") as info:
        compose_models([folder / "lr.onnx", folder / "rf.onnx"])
    assert "the table's columns" in str(info.value)
