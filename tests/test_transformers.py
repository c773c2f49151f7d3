"""onegraph's first transformers: equal to scikit-learn in Python, and their graphs equal to their transform."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
import sklearn.impute
import sklearn.preprocessing
from conftest import assert_same_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.pandas import column, data_frames
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.errors import ColumnTypeError, UnknownCategoryError
from onegraph.frame import (
    Clip,
    ColumnSelector,
    LogTransformer,
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PowerTransformer,
    RobustScaler,
    SimpleImputer,
    StandardScaler,
)

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TEXT = ["island", "sex"]


def graph_equals_transform(transformer, frame: pd.DataFrame, rows: pd.DataFrame | None = None, rtol=1e-12):
    """Build the transformer alone; the graph's outputs equal ``transform`` column by column."""
    model = onegraph.build(transformer, None, frame)
    rows = frame if rows is None else rows
    expected = transformer.transform(rows)
    got = onegraph.score(model, rows)
    names = list(transformer.get_feature_names_out())
    assert list(got.columns) == names
    for name in names:
        assert_same_values(got[name].to_numpy(), pd.Series(expected[name]).to_numpy(), rtol=rtol, name=name)
    return model


SCALERS = [
    (StandardScaler(), sklearn.preprocessing.StandardScaler()),
    (StandardScaler(with_mean=False), sklearn.preprocessing.StandardScaler(with_mean=False)),
    (MinMaxScaler(), sklearn.preprocessing.MinMaxScaler()),
    (MinMaxScaler(feature_range=(-1, 2), clip=True), sklearn.preprocessing.MinMaxScaler(feature_range=(-1, 2), clip=True)),
    (RobustScaler(), sklearn.preprocessing.RobustScaler()),
    (RobustScaler(quantile_range=(10, 90), unit_variance=True),
     sklearn.preprocessing.RobustScaler(quantile_range=(10, 90), unit_variance=True)),
    (MaxAbsScaler(), sklearn.preprocessing.MaxAbsScaler()),
]


@pytest.mark.parametrize("ours,theirs", SCALERS, ids=lambda t: repr(t))
def test_scalers_equal_scikit_learn_and_their_graph(penguins, ours, theirs):
    frame = penguins[NUMERIC]
    ours.fit(frame)
    theirs.fit(frame.to_numpy(float))
    mine = ours.transform(frame)
    ref = theirs.transform(frame.to_numpy(float))
    np.testing.assert_allclose(mine.to_numpy(float), ref, rtol=1e-12, atol=1e-12, equal_nan=True)
    graph_equals_transform(ours, frame)


# -- power transforms: the graph computes scipy's formulas; the libm ulps are the only difference -------------
#: unit roundoff of float64 (2**-53): a correctly rounded + - * / errs by at most U relative
U = 2.0 ** -53
#: numpy's float64 log1p / expm1 / log / exp (and the C library's, which scipy's boxcox calls): 1 ulp, the bound
#: numpy's own accuracy test declares for them (numpy/_core/tests/data/umath-validation-set-{log1p,expm1,log,exp}
#: .csv, column ulperrortol); 1 ulp <= 2U relative
REFERENCE_FN = 2 * U
#: onnxruntime's double Exp / Log: Eigen's pexp_double / plog_double, ports of Cephes exp / log, whose
#: documentation gives peak relative errors of 2.0e-16 (exp, +-708) and below for log, i.e. under 1 ulp; onnxruntime
#: documents no bound of its own, so 2 ulps (4U) are allowed
GRAPH_FN = 4 * U
#: onegraph.frame.tensors.log1p: x * (Log(u) / (u - 1)) with u = 1 + x (Goldberg 1991, theorem 4): Log's error and
#: three roundings (u - 1 is exact, Sterbenz; the division, the product and the rounding of u that the ratio
#: corrects to first order)
GRAPH_LOG1P = GRAPH_FN + 3 * U
#: onegraph.frame.tensors.expm1: (e - 1) * (t / Log(e)) with e = Exp(t): the relative error is
#: d_exp * (e^t / expm1(t) - 1 / t) + d_log + roundings, and the factor in parentheses is in [0, 1] for every t
GRAPH_EXPM1 = 2 * GRAPH_FN + 3 * U


def power_bound(x: np.ndarray, lmbda: float, method: str) -> np.ndarray:
    """Largest |graph - scipy| of one column of the power transform (before standardization), to first order,
    from the error bounds above, through each operation of scipy's formula in its order:
    ``L = log1p(s)`` (Box-Cox: ``log(s)``), ``t = lam * L`` (one rounding on each side), ``E = expm1(t)``
    (an error dt in t gives e^t dt), ``y = E / lam`` (one rounding on each side)."""
    from scipy import special, stats

    if method == "box-cox":
        s, lam, sign, log_side = x, np.full_like(x, lmbda), 1.0, (GRAPH_FN, REFERENCE_FN)
        zero = abs(lmbda) < 1e-19
        y = special.boxcox(x, lmbda)
        L = np.log(x)
    else:
        pos = x >= 0
        lam = np.where(pos, lmbda, 2 - lmbda)
        s, sign, log_side = np.abs(x), np.where(pos, 1.0, -1.0), (GRAPH_LOG1P, REFERENCE_FN)
        zero = np.where(pos, abs(lmbda) < np.finfo(float).eps, abs(lmbda - 2) <= np.finfo(float).eps)
        y = stats.yeojohnson(x, lmbda)
        L = np.log1p(s)
    dL = np.abs(L) * sum(log_side)
    t = lam * L
    dt = np.abs(lam) * dL + 2 * U * np.abs(t)
    with np.errstate(over="ignore", invalid="ignore"):
        dE = np.exp(t) * dt + np.abs(np.expm1(t)) * (GRAPH_EXPM1 + REFERENCE_FN)
        dy = dE / np.abs(lam) + 2 * U * np.abs(y)
    assert np.all(np.nan_to_num(t) < 709.78), "the bound covers scipy's expm1 branch only"
    return np.where(zero, dL, dy) * np.abs(sign)


def assert_power_transform_within_bound(pt, frame: pd.DataFrame) -> None:
    """The graph of ``pt`` gives ``pt.transform(frame)`` within the propagated ulp bounds: |graph - scipy| <=
    power_bound / scale + 4U |z| after standardization (``(y - mean) / scale``: one rounding each, on each side);
    NaN exactly where NaN. A tolerance derived from the operations' error bounds, not tuned to a machine."""
    model = onegraph.build(pt, None, frame)
    got = onegraph.score(model, frame)
    expected = pt.transform(frame)
    for j, name in enumerate(pt.get_feature_names_out()):
        x = frame[name].to_numpy(float)
        want = np.asarray(expected[name], float)
        bound = power_bound(x, pt.lambdas_[j], pt.method)
        if pt.standardize:
            bound = bound / pt.estimator_._scaler.scale_[j] + 4 * U * np.abs(want)
        have = got[name].to_numpy(float)
        assert np.array_equal(np.isnan(have), np.isnan(want)), name
        ok = ~np.isnan(want)
        excess = np.abs(have[ok] - want[ok]) / np.maximum(bound[ok], np.finfo(float).tiny)
        assert excess.max() <= 1.0, f"{name}: |graph - transform| is {excess.max():.2f} times the ulp bound"


@pytest.mark.parametrize("standardize", [True, False])
def test_power_transform_graph_is_scipys_formula_within_ulp_bounds(penguins, standardize):
    """Kind 8 of issue 14: on a fresh machine the graph differed from ``transform`` by 4.8e-11 relative on ``year``
    (lambda 31.8: ``t = lambda * log1p(x)`` is ~242, so one ulp of log1p is ~242 ulps of the power, and the
    standardization of years 2007-2009 cancels most digits), against an rtol of 1e-12. The graph now follows
    scipy's operation order (log1p, product, expm1, division) and the tolerance is the propagated bound."""
    frame = penguins[NUMERIC]
    ours = PowerTransformer(standardize=standardize).fit(frame)
    theirs = sklearn.preprocessing.PowerTransformer(standardize=standardize).fit(frame.to_numpy(float))
    # the lambdas come from an optimizer whose last digits depend on memory layout
    np.testing.assert_allclose(ours.transform(frame).to_numpy(float), theirs.transform(frame.to_numpy(float)),
                               rtol=1e-6, atol=1e-12, equal_nan=True)
    assert_power_transform_within_bound(ours, frame)


@pytest.mark.parametrize("func", [np.log1p, np.expm1], ids=lambda f: f.__name__)
def test_log1p_expm1_graphs_follow_numpy_at_the_edges(func):
    """onegraph.frame.tensors.log1p / expm1 (ONNX has neither; FunctionTransformer(np.log1p / np.expm1) and the
    power transforms use them) give numpy's values within their error bounds, and numpy's special values
    exactly: -1 -> -inf, below -1 / NaN -> NaN, +inf -> +inf, expm1 of 710 or more -> +inf (it gave NaN:
    (inf - 1) * x / inf), -inf -> -1, tiny x -> x."""
    from sklearn.preprocessing import FunctionTransformer

    x = np.array([0.0, 1e-300, -1e-300, 1e-20, -1e-10, 1e-5, 0.5, -0.5, -0.999, -1.0, -2.0, 1.0, 30.0, 300.0,
                  709.0, 710.0, 1000.0, -40.0, -1000.0, 1e300, np.inf, -np.inf, np.nan])
    frame = pd.DataFrame({"x": x})
    ft = FunctionTransformer(func, feature_names_out="one-to-one").fit(frame)
    got = onegraph.score(onegraph.build(ft, None, frame), frame)["x"].to_numpy(float)
    with np.errstate(all="ignore"):
        want = func(x)
    special = ~np.isfinite(want)
    assert np.array_equal(got[special], want[special], equal_nan=True)
    bound = (GRAPH_LOG1P if func is np.log1p else GRAPH_EXPM1) + REFERENCE_FN
    np.testing.assert_allclose(got[~special], want[~special], rtol=bound, atol=0)


@pytest.mark.parametrize("x, lmbda", [(100.0, 155.0), (0.01, -155.0)])
def test_box_cox_graph_takes_scipys_branch_where_the_power_overflows(penguins, x, lmbda):
    """scipy's boxcox computes ``sign(l) * exp(l log x - log|l|) - 1 / l`` where ``l log x >= 709.78``, so a power
    beyond the double range divided back into it stays finite (scipy's test_boxcox_premature_overflow cases);
    the graph computed ``(x ** l - 1) / l`` and gave inf. scikit-learn's own fitted object, lambda set to the
    case's."""
    pt = sklearn.preprocessing.PowerTransformer(method="box-cox", standardize=False)
    pt.fit(penguins[["body_mass_g"]].dropna().to_numpy(float))
    pt.lambdas_ = np.array([lmbda])
    frame = pd.DataFrame({"x0": [x, x * 0.999, x * 1.001]})
    want = pt.transform(frame.to_numpy(float))[:, 0]
    assert np.isfinite(want).all()
    got = onegraph.score(onegraph.build(pt, None, frame), frame)["x0"].to_numpy(float)
    # t = l log x ~ 714 is 1 ulp of log times 714 after exp: the bound of power_bound's branch, with GRAPH_FN
    # for Exp and the subtraction of log|l| (one rounding each side)
    t = lmbda * np.log(frame["x0"].to_numpy())
    bound = (np.abs(t) * (GRAPH_FN + REFERENCE_FN + 4 * U) + GRAPH_FN + REFERENCE_FN + 4 * U) * np.abs(want)
    assert np.all(np.abs(got - want) <= bound)


def test_box_cox_on_positive_columns(cars):
    frame = cars[["Displacement", "Weight_in_lbs", "Acceleration"]]
    pt = PowerTransformer(method="box-cox").fit(frame)
    assert_power_transform_within_bound(pt, frame)


@pytest.mark.parametrize("strategy", ["mean", "median", "most_frequent", "constant"])
@pytest.mark.parametrize("add_indicator", [False, True])
def test_numeric_imputer_equals_scikit_learn(cars, strategy, add_indicator):
    frame = cars[["Miles_per_Gallon", "Horsepower", "Cylinders", "Acceleration"]]
    ours = SimpleImputer(strategy=strategy, add_indicator=add_indicator).fit(frame)
    theirs = sklearn.impute.SimpleImputer(strategy=strategy, add_indicator=add_indicator).fit(frame)
    assert list(ours.get_feature_names_out()) == list(theirs.get_feature_names_out())
    np.testing.assert_allclose(ours.transform(frame).to_numpy(float), theirs.transform(frame), rtol=1e-12)
    graph_equals_transform(ours, frame)


@pytest.mark.parametrize("strategy", ["most_frequent", "constant"])
def test_mixed_imputer_fills_text_and_numbers(penguins, strategy):
    frame = penguins[NUMERIC + TEXT]
    imp = SimpleImputer(strategy=strategy, add_indicator=True).fit(frame)
    out = imp.transform(frame)
    assert out["sex"].isna().sum() == 0 and out["bill_length_mm"].isna().sum() == 0
    if strategy == "constant":
        assert (out.loc[penguins["sex"].isna(), "sex"] == "missing_value").all()
    graph_equals_transform(imp, frame)


def test_imputer_refuses_mean_of_text(penguins):
    with pytest.raises(ColumnTypeError, match="'island'"):
        SimpleImputer(strategy="mean").fit(penguins[["island", "year"]])


def test_empty_feature_is_dropped_like_scikit_learn():
    frame = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": [np.nan, np.nan, np.nan]})
    ours = SimpleImputer().fit(frame)
    assert list(ours.get_feature_names_out()) == ["a"]
    graph_equals_transform(ours, frame)


@pytest.mark.parametrize("params", [
    dict(),
    dict(handle_unknown="ignore"),
    dict(drop="first"),
    dict(drop="if_binary", handle_unknown="ignore"),
    dict(min_frequency=30, handle_unknown="infrequent_if_exist"),
    dict(max_categories=3, handle_unknown="infrequent_if_exist"),
])
def test_one_hot_equals_scikit_learn(airports, params):
    frame = airports[["state", "country"]]
    ours = OneHotEncoder(**params).fit(frame)
    theirs = sklearn.preprocessing.OneHotEncoder(sparse_output=False, **params).fit(frame.astype(object))
    assert list(ours.get_feature_names_out()) == list(theirs.get_feature_names_out())
    np.testing.assert_array_equal(ours.transform(frame).to_numpy(float), theirs.transform(frame.astype(object)))
    graph_equals_transform(ours, frame)


def test_high_cardinality_one_hot_into_a_model_equals_scikit_learn(airports):
    """scikit-learn's own sparse OneHotEncoder on a real high-cardinality column (2,600+ cities), infrequent
    cities grouped, unseen ones counted as infrequent, into a logistic regression: the graph's probabilities
    are scikit-learn's on the fit rows (build's parity check) and on unseen rows; the caller's encoder keeps its
    settings (the probe works on a copy)."""
    frame = airports[["city", "state"]]
    y = (airports["latitude"] > 38).astype(int)
    encoder = sklearn.preprocessing.OneHotEncoder(handle_unknown="infrequent_if_exist", min_frequency=2)
    pipe = make_pipeline(ColumnTransformer([("hot", encoder, ["city", "state"])]),
                         LogisticRegression(max_iter=500)).fit(frame, y)
    model = onegraph.build(pipe, None, frame)
    rows = pd.DataFrame({"city": ["Chicago", "Atlantis", "Bay Springs", None], "state": ["IL", "ZZ", "MS", "TX"]})
    got = onegraph.score(model, rows)[["probabilities_0", "probabilities_1"]].to_numpy()
    np.testing.assert_allclose(got, pipe.predict_proba(rows.astype(object)), rtol=1e-6, atol=1e-12)
    fitted = pipe[0].named_transformers_["hot"]
    assert fitted.sparse_output is True and getattr(fitted, "_sklearn_output_config", {}).get("transform") != "default"


#: builds a one-hot pipeline of K categories in a fresh process and prints the peak memory (bytes) the build
#: alone adds, from VmHWM (peak reset through /proc/self/clear_refs before the build)
ONE_HOT_MEMORY = """
import sys, warnings
import numpy as np, pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
import onegraph

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

k = int(sys.argv[1])
codes = np.array([f"c{i:07d}" for i in range(k)], dtype=object)
frame = pd.DataFrame({"code": np.concatenate([codes, codes])})
pipe = Pipeline([("prep", ColumnTransformer([("hot", OneHotEncoder(handle_unknown="ignore"), ["code"])])),
                 ("model", LogisticRegression(max_iter=20))])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pipe.fit(frame, np.arange(2 * k) % 3)
before = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
onegraph.build(pipe, None, frame.head(200))
print(status("VmHWM:") - before)
"""


def test_one_hot_export_memory_is_linear_in_the_categories(tmp_path):
    """Kind 5 of issue 14: the export probed the encoder on a dense (categories + 1) x categories float64 matrix
    (12,000 categories: 1.1 GiB; 56,007: 23.4 GiB). The probe is now sparse and the parity check runs the
    dense one-hot graph in batches of bounded size: 12,000 categories cost ~130 MiB (bench/onehot_memory.py:
    200,000 build under 1 GiB)."""
    import subprocess
    import sys

    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("needs Linux's /proc/self/clear_refs to measure a peak")
    done = subprocess.run([sys.executable, "-c", ONE_HOT_MEMORY, "12000"], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    extra = int(done.stdout.split()[-1])
    assert extra < 400 << 20, f"the build took {extra / 2**20:.0f} MiB more"


def test_one_hot_of_integer_and_bool_columns(penguins):
    frame = penguins[["year"]].assign(heavy=penguins["body_mass_g"] > 4000)
    enc = OneHotEncoder().fit(frame)
    assert "year_2007" in enc.get_feature_names_out()
    graph_equals_transform(enc, frame)


def test_unknown_category_is_refused_by_name(penguins):
    enc = OneHotEncoder().fit(penguins[TEXT])
    model = onegraph.build(enc, None, penguins[TEXT])
    rows = pd.DataFrame({"island": ["Dream", "Atlantis"], "sex": ["male", "female"]})
    with pytest.raises(UnknownCategoryError, match="'island'.*'Atlantis'") as info:
        onegraph.score(model, rows)
    assert info.value.rows == [1]


def test_unknown_category_ignored_gives_zeros(penguins):
    enc = OneHotEncoder(handle_unknown="ignore").fit(penguins[TEXT])
    rows = pd.DataFrame({"island": ["Dream", "Atlantis", None], "sex": ["male", None, "female"]})
    graph_equals_transform(enc, penguins[TEXT], rows)


@pytest.mark.parametrize("params", [
    dict(),
    dict(handle_unknown="use_encoded_value", unknown_value=-1),
    dict(encoded_missing_value=-2),
    dict(min_frequency=50, handle_unknown="use_encoded_value", unknown_value=-1),
])
def test_ordinal_equals_scikit_learn(penguins_raw, params):
    frame = penguins_raw[["Species", "Island", "Sex", "Clutch Completion"]]
    ours = OrdinalEncoder(**params).fit(frame)
    theirs = sklearn.preprocessing.OrdinalEncoder(**params).fit(frame.astype(object))
    np.testing.assert_array_equal(ours.transform(frame).to_numpy(float), theirs.transform(frame.astype(object)))
    rows = frame.copy()
    if params.get("handle_unknown") == "use_encoded_value":
        rows.iloc[0, 0] = "unseen species"
    graph_equals_transform(ours, frame, rows)


def test_clip_and_log(cars):
    frame = cars[["Horsepower", "Acceleration"]]
    clip = Clip(quantile_range=(5, 95)).fit(frame)
    expected = frame.clip(frame.quantile(0.05), frame.quantile(0.95), axis=1)
    np.testing.assert_allclose(clip.transform(frame).to_numpy(float), expected.to_numpy(float), equal_nan=True)
    graph_equals_transform(clip, frame)
    graph_equals_transform(Clip(lower=10).fit(frame), frame)
    log = LogTransformer().fit(frame)
    np.testing.assert_allclose(log.transform(frame).to_numpy(float), np.log1p(frame.to_numpy(float)), equal_nan=True)
    graph_equals_transform(log, frame)


def test_column_selector_by_kind(penguins):
    sel = ColumnSelector(kinds=["number"]).fit(penguins)
    assert list(sel.get_feature_names_out()) == NUMERIC
    sel = ColumnSelector(pattern="_mm$").fit(penguins)
    assert list(sel.get_feature_names_out()) == ["bill_length_mm", "bill_depth_mm", "flipper_length_mm"]
    graph_equals_transform(sel, penguins)


def test_inside_column_transformer_with_scikit_learn_steps(penguins):
    """Ours and scikit-learn's transformers mixed; scikit-learn's double imputer exports (skl2onnx's does not load)."""
    ct = ColumnTransformer([
        ("num", make_pipeline(sklearn.impute.SimpleImputer(), StandardScaler()), NUMERIC),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"),
                              sklearn.preprocessing.OneHotEncoder(handle_unknown="ignore")), TEXT),
    ]).fit(penguins)
    model = onegraph.build(ct, None, penguins)
    got = onegraph.score(model, penguins)
    expected = ct.transform(penguins)
    np.testing.assert_allclose(got.to_numpy(float), expected, rtol=1e-12, atol=1e-12)
    assert list(got.columns) == list(ct.get_feature_names_out())


def test_set_output_polars_and_default_pandas(penguins):
    scaler = StandardScaler().fit(penguins[NUMERIC])
    assert isinstance(scaler.transform(penguins[NUMERIC]), pd.DataFrame)
    out = scaler.set_output(transform="polars").transform(penguins[NUMERIC])
    assert isinstance(out, pl.DataFrame) and out.columns == NUMERIC
    fitted_on_polars = StandardScaler().fit(pl.from_pandas(penguins[NUMERIC]))
    np.testing.assert_allclose(fitted_on_polars.mean_, scaler.mean_)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_frames([
    column("x", elements=st.one_of(st.none(), st.floats(-1e6, 1e6)), dtype=object),
    column("y", elements=st.one_of(st.just(float("nan")), st.floats(-1e3, 1e3))),
    column("t", elements=st.one_of(st.none(), st.sampled_from(["", "a", "b", "é", "日本", " a "])), dtype=object),
]).filter(lambda d: len(d) >= 2 and d["x"].notna().any() and d["y"].notna().any()))
def test_hypothesis_impute_scale_encode(frame):
    frame = frame.assign(x=pd.to_numeric(frame["x"]))
    numeric = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
    ct = ColumnTransformer([
        ("num", numeric, ["x", "y"]),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["t"]),
    ]).fit(frame)
    model = onegraph.build(ct, None, frame)
    got = onegraph.score(model, frame)
    np.testing.assert_allclose(got.to_numpy(float), ct.transform(frame), rtol=1e-9, atol=1e-9)


# scikit-learn reads a nullable Int64 column as float64, so its ids beyond 2**53 merge before fit: missing
# ids only for onegraph's encoders
@pytest.mark.parametrize("encoder, missing", [
    ("sklearn.OneHotEncoder", False), ("sklearn.OrdinalEncoder", False), ("onegraph.OneHotEncoder", False),
    ("onegraph.OrdinalEncoder", False), ("onegraph.OneHotEncoder", True), ("onegraph.OrdinalEncoder", True)])
def test_integer_ids_beyond_2_53_stay_distinct_categories(encoder, missing):
    """Integer ids 2**53 and 2**53 + 1 merged through float64: onegraph's encoders fitted 2 categories where
    scikit-learn's fit 3, and the graph of either refused its own sample (ParityError, or UnknownCategoryError
    for a value in the sample). Integer categories are fitted, probed and looked up as int64."""
    import sklearn.preprocessing

    from onegraph import frame as og_frame

    library, name = encoder.split(".")
    cls = getattr(sklearn.preprocessing if library == "sklearn" else og_frame, name)
    from onegraph.datasets import load_penguins

    species = load_penguins()["species"]
    ids = np.array([2**53, 2**53 + 1, 2**53 + 3], dtype=np.int64)[species.map({"Adelie": 0, "Chinstrap": 1,
                                                                                 "Gentoo": 2}).to_numpy()]
    column = pd.array(ids, dtype="Int64")
    if missing:
        column[::7] = pd.NA
    frame = pd.DataFrame({"id": column if library == "onegraph" else ids})
    step = cls().fit(frame)
    assert sum(len(c) for c in step.categories_) == 3 + missing
    proto = onegraph.build(step, None, frame)
    got = onegraph.score(proto, frame).to_numpy(float)
    np.testing.assert_array_equal(got, np.asarray(step.transform(frame).toarray() if hasattr(step.transform(frame),
                                  "toarray") else step.transform(frame), dtype=float))
