"""build: preprocessing + model -> one ONNX graph equal to scikit-learn on real tables."""

from __future__ import annotations

import numpy as np
import onnx
import pandas as pd
import pytest
import sklearn.impute
import sklearn.preprocessing
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import (
    HuberRegressor,
    Lasso,
    LinearRegression,
    LogisticRegression,
    Ridge,
    RidgeClassifier,
    SGDClassifier,
    SGDRegressor,
)
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import onegraph
from onegraph.errors import ExportError, ParityError
from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

PENGUIN_NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
PENGUIN_TEXT = ["island", "sex"]


def penguin_preprocessing():
    return ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), PENGUIN_NUMERIC),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         PENGUIN_TEXT),
    ])


def check_against_sklearn(pipe, frame: pd.DataFrame, rtol: float = 1e-6) -> None:
    """The graph's outputs equal scikit-learn's: labels identical, numbers within ``rtol`` (double inputs)."""
    model = onegraph.build(pipe, None, frame)
    onnx.checker.check_model(model, full_check=True)
    got = onegraph.score(model, frame)
    est = pipe[-1]
    if hasattr(est, "predict_proba"):
        assert (got["label"].to_numpy() == pipe.predict(frame)).all()
        proba = got[[f"probabilities_{c}" for c in est.classes_]].to_numpy(float)
        np.testing.assert_allclose(proba, pipe.predict_proba(frame), rtol=rtol, atol=1e-12)
    else:
        np.testing.assert_allclose(got["prediction"].to_numpy(float), pipe.predict(frame), rtol=rtol, atol=1e-12)


CLASSIFIERS = [
    LogisticRegression(max_iter=2000),
    RandomForestClassifier(n_estimators=30, random_state=0),
    ExtraTreesClassifier(n_estimators=30, random_state=0),
    DecisionTreeClassifier(random_state=0),
    GradientBoostingClassifier(n_estimators=30, random_state=0),
    HistGradientBoostingClassifier(max_iter=30, random_state=0),
]


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=lambda e: type(e).__name__)
def test_penguin_species_classifiers(penguins, estimator):
    frame = penguins.drop(columns="species")
    pipe = make_pipeline(penguin_preprocessing(), estimator).fit(frame, penguins["species"])
    check_against_sklearn(pipe, frame)


@pytest.mark.parametrize("estimator", [LogisticRegression(max_iter=2000), GradientBoostingClassifier(n_estimators=20),
                                       HistGradientBoostingClassifier(max_iter=20), RandomForestClassifier(20)],
                         ids=lambda e: type(e).__name__)
def test_binary_classifiers(penguins, estimator):
    frame = penguins.drop(columns="species").dropna(subset=["sex"])
    y = frame.pop("sex")
    pre = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), PENGUIN_NUMERIC),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["island"]),
    ])
    pipe = make_pipeline(pre, estimator).fit(frame, y)
    check_against_sklearn(pipe, frame)


REGRESSORS = [
    LinearRegression(), Ridge(alpha=0.5), Lasso(alpha=0.01), HuberRegressor(), SGDRegressor(random_state=0),
    RandomForestRegressor(n_estimators=20, random_state=0),
    DecisionTreeRegressor(random_state=0),
    GradientBoostingRegressor(n_estimators=40, random_state=0),
    HistGradientBoostingRegressor(max_iter=40, random_state=0),
]


@pytest.mark.parametrize("estimator", REGRESSORS, ids=lambda e: f"{type(e).__name__}-{getattr(e, 'loss', '')}")
def test_seattle_temperature_regressors(seattle, estimator):
    """vega-datasets' Seattle weather: numeric and category columns, predict the day's maximum temperature."""
    frame = seattle.drop(columns=["date", "temp_max"]).assign(weather=seattle["weather"].astype("category"))
    pre = ColumnTransformer([
        ("num", StandardScaler(), ["precipitation", "temp_min", "wind"]),
        ("cat", OneHotEncoder(), ["weather"]),
    ])
    pipe = make_pipeline(pre, estimator).fit(frame, seattle["temp_max"])
    check_against_sklearn(pipe, frame)


def test_poisson_loss_goes_through_its_link(seattle):
    frame = seattle[["temp_max", "temp_min", "wind"]]
    pipe = make_pipeline(StandardScaler(), HistGradientBoostingRegressor(max_iter=20, loss="poisson"))
    check_against_sklearn(pipe.fit(frame, seattle["precipitation"]), frame)


@pytest.mark.parametrize("estimator", [RandomForestClassifier(n_estimators=25, random_state=0),
                                       HistGradientBoostingClassifier(max_iter=25)], ids=lambda e: type(e).__name__)
def test_cars_with_missing_values_and_text(cars, estimator):
    """Auto MPG: missing horsepower and MPG, text origin and name; scikit-learn's own transformers inside."""
    frame = cars.drop(columns=["Origin", "Year"])
    pre = ColumnTransformer([
        ("num", make_pipeline(sklearn.impute.SimpleImputer(strategy="median", add_indicator=True),
                              sklearn.preprocessing.StandardScaler()),
         ["Miles_per_Gallon", "Cylinders", "Displacement", "Horsepower", "Weight_in_lbs", "Acceleration"]),
        ("name", make_pipeline(SimpleImputer(strategy="constant", fill_value="?"),
                               OneHotEncoder(handle_unknown="infrequent_if_exist", min_frequency=3)), ["Name"]),
    ])
    pipe = make_pipeline(pre, estimator).fit(frame, cars["Origin"])
    check_against_sklearn(pipe, frame)


@pytest.mark.parametrize("estimator", [SGDClassifier(loss="log_loss", random_state=0),
                                       SGDClassifier(loss="modified_huber", random_state=0)],
                         ids=lambda e: e.loss)
@pytest.mark.parametrize("target", ["species", "sex"])
def test_sgd_one_vs_rest_probabilities(penguins, estimator, target):
    frame = penguins.dropna(subset=[target])
    y = frame.pop(target)
    pre = ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()), PENGUIN_NUMERIC)])
    check_against_sklearn(make_pipeline(pre, estimator).fit(frame, y), frame, rtol=1e-9)


@pytest.mark.parametrize("estimator", [LinearSVC(), RidgeClassifier()], ids=lambda e: type(e).__name__)
def test_classifiers_without_probabilities_give_labels(penguins, estimator):
    frame = penguins.drop(columns="species")
    pipe = make_pipeline(penguin_preprocessing(), estimator).fit(frame, penguins["species"])
    model = onegraph.build(pipe, None, frame)
    assert [o.name for o in model.graph.output] == ["label"]
    assert (onegraph.score(model, frame)["label"].to_numpy() == pipe.predict(frame)).all()


def test_multi_output_regressor(cars):
    frame = cars[["Cylinders", "Displacement", "Weight_in_lbs"]]
    y = cars[["Acceleration", "Weight_in_lbs"]]
    pipe = make_pipeline(StandardScaler(), RandomForestRegressor(n_estimators=10, random_state=0)).fit(frame, y)
    model = onegraph.build(pipe, None, frame)
    got = onegraph.score(model, frame)
    np.testing.assert_allclose(got[["prediction_0", "prediction_1"]].to_numpy(), pipe.predict(frame), rtol=1e-9)


def test_model_without_preprocessing_and_unused_columns_pruned(penguins):
    frame = penguins.dropna()
    x = frame[["bill_length_mm", "flipper_length_mm"]]
    clf = LogisticRegression(max_iter=1000).fit(x, frame["species"])
    model = onegraph.build(None, clf, frame)  # the sample has more columns than the model uses
    assert [i.name for i in model.graph.input] == ["bill_length_mm", "flipper_length_mm"]
    ct = ColumnTransformer([("num", StandardScaler(), ["body_mass_g"])], remainder="drop").fit(penguins)
    model = onegraph.build(ct, None, penguins)
    assert [i.name for i in model.graph.input] == ["body_mass_g"]
    # a transformer (or pipeline of them) fitted on some of the sample's columns: scikit-learn's transform
    # refuses the others, so the parity reference is given the fitted ones (was a raw ValueError)
    from sklearn.preprocessing import OneHotEncoder as SkOneHot
    from sklearn.preprocessing import StandardScaler as SkScaler

    for est in (SkOneHot().fit(penguins[["island"]]),
                make_pipeline(SkScaler()).fit(penguins[["bill_length_mm", "body_mass_g"]])):
        model = onegraph.build(est, None, penguins)
        assert [i.name for i in model.graph.input] == list(est.feature_names_in_)
        got = onegraph.score(model, penguins).to_numpy(np.float64)
        expected = est.transform(penguins[est.feature_names_in_])
        expected = expected.toarray() if hasattr(expected, "toarray") else expected
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_outputs_and_opsets(penguins):
    frame = penguins.drop(columns="species")
    pipe = make_pipeline(penguin_preprocessing(), LogisticRegression(max_iter=1000)).fit(frame, penguins["species"])
    model = onegraph.build(pipe, None, frame)
    assert [o.name for o in model.graph.output] == ["label", "probabilities"]
    # standard operators only: every other imported domain is that of a model-local function (a step)
    local = {f.domain for f in model.functions}
    assert {o.domain or "": o.version for o in model.opset_import if o.domain not in local} == {"": 21, "ai.onnx.ml": 5}
    assert all(n.domain in ("", "ai.onnx.ml") for f in model.functions for n in f.node)
    assert not any(n.op_type == "ZipMap" for n in model.graph.node)
    assert model.graph.input[1].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE


def test_preprocessing_only_outputs_are_the_feature_names(penguins):
    pre = penguin_preprocessing().fit(penguins)
    model = onegraph.build(pre, None, penguins)
    assert [o.name for o in model.graph.output] == list(pre.get_feature_names_out())
    scaler = StandardScaler().fit(penguins[PENGUIN_NUMERIC])
    model = onegraph.build(scaler, None, penguins)
    got = onegraph.score(model, penguins)
    assert list(got.columns) == PENGUIN_NUMERIC  # transformed in place: columns keep their names


def test_build_refuses_a_divergent_graph(penguins, monkeypatch):
    """A wrong emitter makes build fail with the output named, and nothing is written."""
    frame = penguins.drop(columns="species")
    pipe = make_pipeline(penguin_preprocessing(), LogisticRegression(max_iter=1000)).fit(frame, penguins["species"])

    from onegraph.frame.transformers import numeric

    original = numeric.StandardScaler.emit

    def wrong(self, g, cols):
        out = original(self, g, cols)
        doubled = g.op("Mul", g.matrix(out), g.const(np.float64(1.001), "oops"))
        return g.block(doubled, [c.name for c in out], "float", out[0].dtype)

    monkeypatch.setattr(numeric.StandardScaler, "emit", wrong)
    with pytest.raises(ParityError, match="probabilities"):
        onegraph.build(pipe, None, frame, path="/tmp/should-not-exist.onnx")
    import os

    assert not os.path.exists("/tmp/should-not-exist.onnx")


def test_unsupported_objects_are_named(penguins):
    from sklearn.preprocessing import FunctionTransformer

    frame = penguins[PENGUIN_NUMERIC]
    ft = FunctionTransformer(lambda x: x * 2).fit(frame)
    with pytest.raises(ExportError, match="arbitrary Python"):
        onegraph.build(ft, None, frame)
    with pytest.raises(ExportError, match="sample"):
        onegraph.build(StandardScaler().fit(frame), None, None)


def test_skl2onnx_fallback_for_other_transformers(penguins):
    from sklearn.decomposition import PCA

    frame = penguins[PENGUIN_NUMERIC].dropna()
    pipe = make_pipeline(StandardScaler(), PCA(n_components=3)).fit(frame)
    model = onegraph.build(pipe, None, frame, rtol=1e-9)
    got = onegraph.score(model, frame)
    np.testing.assert_allclose(got.to_numpy(float), pipe.transform(frame), rtol=1e-9, atol=1e-9)


def test_build_writes_atomically_and_scores_from_path(penguins, tmp_path):
    frame = penguins.drop(columns="species")
    pipe = make_pipeline(penguin_preprocessing(), LogisticRegression(max_iter=1000)).fit(frame, penguins["species"])
    path = tmp_path / "m.onnx"
    onegraph.build(pipe, None, frame, path=path)
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]
    got = onegraph.score(str(path), frame.head(5))
    assert list(got.index) == list(frame.head(5).index)


def test_bool_labels_stay_bool_through_skl2onnx(penguins):
    from sklearn.naive_bayes import GaussianNB

    frame = penguins[PENGUIN_NUMERIC].dropna()
    y = frame["body_mass_g"] > 4000
    pipe = make_pipeline(StandardScaler(), GaussianNB()).fit(frame.drop(columns="body_mass_g"), y)
    x = frame.drop(columns="body_mass_g")
    got = onegraph.score(onegraph.build(pipe, None, x), x)
    assert got["label"].dtype == bool and (got["label"].to_numpy() == pipe.predict(x)).all()


def test_helpful_refusals(penguins):
    frame = penguins.drop(columns="species")
    unfitted = penguin_preprocessing()
    with pytest.raises(ExportError, match="not fitted"):
        onegraph.build(make_pipeline(unfitted), None, frame)
    with pytest.raises(ExportError, match="must be a fitted"):
        onegraph.build("StandardScaler", None, frame)
    with pytest.raises(ExportError, match="takes numbers.*string column.*'year'"):
        onegraph.build(None, LogisticRegression().fit(frame[["year"]], penguins["species"]).set_params(),
                       frame.assign(year=frame["island"]))
    odd = pd.DataFrame({"": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 4.0]})
    with pytest.raises(ExportError, match="empty name"):
        onegraph.build(StandardScaler().fit(odd), None, odd)
    cat = frame[["island"]].astype("category")
    native = HistGradientBoostingClassifier(max_iter=5, categorical_features="from_dtype").fit(cat, penguins["species"])
    proto = onegraph.build(None, native, cat)  # its own encoder and categorical splits (tests/test_hgb_categories.py)
    np.testing.assert_allclose(onegraph.score(proto, cat).filter(like="probabilities_").to_numpy(),
                               native.predict_proba(cat), rtol=1e-12, atol=1e-15)


def test_function_transformer_weights_and_skl2onnx_float_fallback(penguins):
    from sklearn.pipeline import FeatureUnion
    from sklearn.preprocessing import (
        FunctionTransformer,
        KBinsDiscretizer,
        PolynomialFeatures,
    )

    frame = penguins[PENGUIN_NUMERIC].dropna()
    pipe = make_pipeline(FunctionTransformer(np.log1p), StandardScaler()).fit(frame)  # no feature_names_out
    got = onegraph.score(onegraph.build(pipe, None, frame), frame)
    # log(year) varies by 4e-4: scaling it magnifies the last-ulp differences of log1p ~2500x
    np.testing.assert_allclose(got.to_numpy(float), pipe.transform(frame), rtol=1e-12, atol=1e-10)
    union = FeatureUnion([("a", StandardScaler()), ("b", sklearn.preprocessing.MinMaxScaler())],
                         transformer_weights={"a": 2.0, "b": 0.5}).fit(frame)
    got = onegraph.score(onegraph.build(union, None, frame), frame)
    np.testing.assert_allclose(got.to_numpy(float), union.transform(frame), rtol=1e-12)
    for step in (PolynomialFeatures(2), KBinsDiscretizer(n_bins=4, encode="ordinal")):
        fitted = step.fit(frame)
        got = onegraph.score(onegraph.build(fitted, None, frame), frame)
        np.testing.assert_allclose(got.to_numpy(float), fitted.transform(frame), rtol=1e-6)


@pytest.mark.parametrize("func", [np.square, np.log10, np.log2, np.exp2, np.floor, np.ceil, np.rint, np.round,
                                  np.sign, np.reciprocal, np.fabs, np.positive],
                         ids=lambda f: f.__name__)
def test_function_transformer_numpy_functions_equal_numpy(penguins, func):
    """Each numpy function of one array the graph has an operator for gives numpy's values on the penguins'
    measures (negative, zero, halves, NaN rows added); was refused as "arbitrary Python" but for nine."""
    from sklearn.preprocessing import FunctionTransformer

    frame = penguins[PENGUIN_NUMERIC].iloc[:40] / (100.0 if func is np.exp2 else 1.0)
    frame = pd.concat([frame, -frame.iloc[:5] * 0.37, frame.iloc[:3] * 0, frame.iloc[:3].round() + 0.5],
                      ignore_index=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        ft = FunctionTransformer(func).fit(frame)
        expected = ft.transform(frame).to_numpy(np.float64)
        got = onegraph.score(onegraph.build(ft, None, frame), frame).to_numpy(np.float64)
    # log10 / log2 are ln(x) / ln(b): within 2 ulps of numpy's (the rest are exact)
    np.testing.assert_allclose(got, expected, rtol=4.5e-16, atol=0, equal_nan=True)


def test_function_transformer_refusals_name_what_can_be_exported(penguins):
    from sklearn.preprocessing import FunctionTransformer

    frame = penguins[PENGUIN_NUMERIC].dropna()
    for ft, said in ((FunctionTransformer(np.cbrt), "uses np.cbrt, which onegraph has no graph for"),
                     (FunctionTransformer(lambda x: x + 1), "runs arbitrary Python"),
                     (FunctionTransformer(np.round, kw_args={"decimals": 2}), "with kw_args cannot be exported")):
        with pytest.raises(ExportError, match=said) as caught:
            onegraph.build(ft.fit(frame), None, frame)
        assert "np.log10" in str(caught.value) and "np.square" in str(caught.value)


@pytest.mark.parametrize("pipeline", [False, True], ids=["bare estimator", "pipeline"])
def test_an_estimator_fitted_on_columns_named_by_ints_builds_and_scores(penguins, pipeline):
    """pd.DataFrame(array) names its columns 0, 1, ...: a bare estimator fitted on one failed build's parity
    reference with "None of [Index(['0', '1', ...])] are in the [columns]". The graph's inputs are "0", "1", ...;
    the frame itself, its columns as text, a dict of columns and records keyed by the ints all score as
    scikit-learn predicts."""
    rows = penguins.dropna()
    x = pd.DataFrame(rows[["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]].to_numpy())
    y = rows["species"].to_numpy()
    estimator = LogisticRegression(max_iter=5000)
    fitted = (make_pipeline(sklearn.preprocessing.StandardScaler(), estimator) if pipeline else estimator).fit(x, y)
    model = onegraph.build(fitted, None, sample=x)
    assert [i.name for i in model.graph.input] == ["0", "1", "2", "3", "4"]
    expected = fitted.predict_proba(x)
    for name, data in {"frame": x, "text names": x.rename(columns=str), "dict": x.to_dict("list"),
                       "records": x.to_dict("records")}.items():
        got = onegraph.score(model, data)
        np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float), expected, rtol=1e-9,
                                   atol=1e-12, err_msg=name)
        assert (got["label"].to_numpy() == fitted.predict(x)).all(), name


def test_multiindex_columns_are_refused_in_one_line_saying_how_to_flatten(penguins):
    """Columns of two levels (groupby().agg of several functions, pivot_table) became graph inputs named
    "('bill', 'length')" at build, and scoring listed tuples as the columns given. Build, score and parity say
    in one line that the columns are a MultiIndex and how to flatten them; the frame flattened so builds and
    scores as scikit-learn predicts."""
    from onegraph.errors import DataError

    rows = penguins.dropna()
    x = rows[["bill_length_mm", "bill_depth_mm"]].copy()
    x.columns = pd.MultiIndex.from_tuples([("bill", "length"), ("bill", "depth")])
    y = rows["species"]
    fitted = LogisticRegression(max_iter=5000).fit(x.to_numpy(), y)
    flat = x.copy()
    flat.columns = ["_".join(map(str, c)) for c in flat.columns]
    model = onegraph.build(fitted, None, sample=flat)
    for what, call in {"build": lambda: onegraph.build(fitted, None, sample=x),
                       "score": lambda: onegraph.score(model, x),
                       "parity": lambda: onegraph.parity(fitted, None, x)}.items():
        with pytest.raises(DataError, match=r"MultiIndex of 2 levels .*'_'\.join\(map\(str, c\)\)") as info:
            call()
        assert "\n" not in str(info.value), what
    got = onegraph.score(model, flat)
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float), fitted.predict_proba(flat.to_numpy()),
                               rtol=1e-9, atol=1e-12)
