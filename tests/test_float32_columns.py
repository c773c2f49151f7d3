"""Float32 columns into scikit-learn steps (public reports: onnxruntime#4130, sklearn-onnx#479 on scaler
precision). scikit-learn keeps some fitted attributes in the data's dtype (MinMaxScaler's ``scale_``, PCA's
``components_`` from float32 columns) and computes in float32; the graph reads the float32 values exactly and
computes in double. Reported: MinMaxScaler / MaxAbsScaler / RobustScaler failed with an internal ExportError
("B has inconsistent type tensor(float)"), PCA / TruncatedSVD / PowerTransformer were refused at the double
tolerance. Now the constants are double and the parity reference is scikit-learn on the same values as float64
(:func:`onegraph.export.sources.double_reference`)."""

from __future__ import annotations

import numpy as np
import onnx
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes
from sklearn.decomposition import PCA, TruncatedSVD
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, PowerTransformer, RobustScaler

import onegraph
from onegraph.export.sources import double_attributes, double_reference


@pytest.fixture(scope="module")
def diabetes32() -> pd.DataFrame:
    x, _ = load_diabetes(return_X_y=True, as_frame=True)
    return x.astype("float32")


@pytest.mark.parametrize("step", [MinMaxScaler(), MinMaxScaler(clip=True), MaxAbsScaler(), RobustScaler(),
                                  PCA(3), TruncatedSVD(3, random_state=0), PowerTransformer()],
                         ids=lambda s: repr(s))
def test_float32_columns_build_and_compute_in_double(step, diabetes32):
    step.fit(diabetes32)
    proto = onegraph.build(step, None, sample=diabetes32)  # the default tolerance, no guessing
    floats = [t.name for t in proto.graph.initializer if t.data_type == onnx.TensorProto.FLOAT]
    assert floats == [], floats  # every fitted constant is double
    got = onegraph.score(proto, diabetes32).to_numpy(float)
    # the same fitted values applied in double by scikit-learn itself (numpy promotes float32 attributes) at
    # rtol 1e-9 (double rounding in another order). PowerTransformer's ``lambdas_`` stay float32 and scipy's
    # yeojohnson forms ``2 - lmbda`` from that float32 scalar in float32 (NEP 50), where the graph forms it in
    # double: one float32 rounding (6e-8 relative) of the exponent inside the reference itself, so rtol 1e-6
    exact = np.asarray(step.transform(diabetes32.astype("float64")), dtype=float)
    np.testing.assert_allclose(got, exact, rtol=1e-6 if isinstance(step, PowerTransformer) else 1e-9, atol=1e-12)
    # scikit-learn's float32 answer is float32 rounding away (unit roundoff 6e-8, a few terms per value)
    own = np.asarray(step.transform(diabetes32), dtype=float)
    scale = np.abs(exact).max()
    assert np.abs(got - own).max() <= 64 * np.finfo(np.float32).eps * scale


def test_double_reference_widens_every_narrow_float_dtype_and_keeps_the_values():
    import pyarrow as pa

    frame = pd.DataFrame({
        "np32": np.array([0.1, np.nan], np.float32), "np16": np.array([1.5, 2.25], np.float16),
        "nullable": pd.array([0.1, None], dtype="Float32"),
        "arrow": pd.array([0.1, None], dtype=pd.ArrowDtype(pa.float32())),
        "double": [0.1, 0.2], "text": ["a", "b"],
    })
    wide = double_reference(frame)
    assert [str(d) for d in wide.dtypes] == ["float64", "float64", "Float64", "double[pyarrow]", "float64",
                                             str(frame["text"].dtype)]
    for c in frame.columns[:4]:
        assert wide[c].astype("float64").equals(frame[c].astype("float64")), c
    assert double_reference(frame[["double", "text"]]) is not None
    assert frame["np32"].dtype == np.float32  # the caller's frame is not changed


@pytest.mark.parametrize("step", [PCA(), PCA(3, whiten=True)], ids=repr)
def test_pca_fitted_on_float32_builds_from_a_float32_or_a_float64_sample(step, diabetes32):
    """PCA fitted on float32 keeps ``mean_`` and ``components_`` in float32 and computes ``mean_ @ components_.T``
    in float32 even on float64 rows: the build was refused (up to 7e-4 relative on outputs near 0) from either
    sample. The reference reads the fitted attributes as float64 too, in a copy (the caller's step unchanged)."""
    step.fit(diabetes32)
    for sample in (diabetes32, diabetes32.astype("float64")):
        got = onegraph.score(onegraph.build(step, None, sample=sample), sample).to_numpy(float)
        widened = double_attributes(step)
        np.testing.assert_allclose(got, widened.transform(sample.astype("float64")), rtol=1e-9, atol=1e-12)
    assert step.components_.dtype == np.float32 and widened.components_.dtype == np.float64


def test_a_sample_the_pipeline_itself_refuses_is_named_not_raised_raw(diabetes32):
    """scikit-learn raising on the build sample (here an OrdinalEncoder meeting a category it never saw) reached
    the caller as its own ValueError from inside the parity check; it is an ExportError naming the cause."""
    from sklearn.preprocessing import OrdinalEncoder

    from onegraph.errors import ExportError

    frame = pd.DataFrame({"sex": np.where(diabetes32["sex"] > 0, "m", "f")}, dtype=object)
    step = OrdinalEncoder().fit(frame)
    with pytest.raises(ExportError, match="the source pipeline itself fails on the sample .ValueError: Found unknown"):
        onegraph.build(step, None, sample=frame.assign(sex=["x"] + frame["sex"].tolist()[1:]))
