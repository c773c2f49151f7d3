"""None in object columns, which scikit-learn's SimpleImputer keeps as a value (it imputes NaN only, ``X != X``)
while the graph reads None and NaN as one missing value: exported where the two agree, refused with the cause
where they do not. Rows: the Palmer penguins (tests/data), with None put where pandas reads NaN."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import onegraph
from onegraph.errors import DataError, ParityError


def _with_none(penguins: pd.DataFrame, share: float) -> pd.DataFrame:
    """The penguins, ``sex`` an object column where a ``share`` of the rows hold None (NaN kept where read)."""
    frame = penguins[["sex", "bill_length_mm", "flipper_length_mm"]].dropna(subset=["bill_length_mm"]).copy()
    sex = frame["sex"].astype(object)
    rows = np.random.default_rng(0).random(len(frame)) < share
    sex[rows] = None
    frame["sex"] = sex
    return frame.reset_index(drop=True)


def test_none_most_frequent_is_kept_as_scikit_learn_keeps_it(penguins):
    """None the most frequent value: SimpleImputer's statistic is None, the column is kept (not an empty column)
    and its NaN become None, one-hot encoded as the category None — the graph's missing value."""
    frame = _with_none(penguins, 0.6)
    pipe = make_pipeline(
        ColumnTransformer([("sex", make_pipeline(SimpleImputer(strategy="most_frequent"),
                                                 OneHotEncoder(handle_unknown="ignore")), ["sex"])],
                          remainder="passthrough"),
        LogisticRegression(max_iter=1000)).fit(frame, penguins.loc[frame.index, "species"])
    assert pipe[0].named_transformers_["sex"][0].statistics_[0] is None
    got = onegraph.score(onegraph.build(pipe, None, frame), frame)
    assert (got["label"].to_numpy() == pipe.predict(frame)).all()
    np.testing.assert_allclose(got[[f"probabilities_{c}" for c in pipe.classes_]].to_numpy(),
                               pipe.predict_proba(frame), rtol=1e-9, atol=1e-12)


def test_none_statistic_of_a_numeric_object_column(penguins):
    """An object column of numbers whose most frequent value is None: kept, its missing values stay missing."""
    frame = pd.DataFrame({"bill": pd.Series([*penguins["bill_length_mm"].head(6), None, None], dtype=object)})
    imputer = SimpleImputer(strategy="most_frequent").fit(frame)
    assert imputer.statistics_[0] is None
    got = onegraph.score(onegraph.build(imputer, None, frame), frame)
    expected = pd.to_numeric(pd.Series(imputer.transform(frame)[:, 0]), errors="coerce")
    np.testing.assert_array_equal(got.iloc[:, 0].to_numpy(np.float64), expected.to_numpy(np.float64))


def test_none_as_a_value_is_refused_naming_the_column(penguins):
    """None not the most frequent value: scikit-learn one-hot encodes it as its own category, the graph imputes
    it; the refusal names the column and what to do, not 'report this'."""
    frame = _with_none(penguins, 0.1)
    pipe = make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder()).fit(frame[["sex"]])
    with pytest.raises(ParityError, match="column 'sex' holds None") as caught:
        onegraph.build(pipe, None, frame[["sex"]])
    assert "report this" not in str(caught.value)
    assert "max rel diff 4" not in str(caught.value)  # a difference from an expected 0 is infinitely relative
    # as the hint says: fitted on fillna(np.nan), it exports
    filled = frame[["sex"]].fillna(np.nan)
    pipe = make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder()).fit(filled)
    onegraph.build(pipe, None, filled)


def test_a_sample_naming_a_column_twice_is_refused():
    """As score refuses it: one graph input per name."""
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(20, 3)), columns=["a", "a", "b"])
    model = LogisticRegression().fit(frame.to_numpy(), [0, 1] * 10)
    with pytest.raises(DataError, match="column 'a' appears more than once"):
        onegraph.build(None, model, frame)


def test_a_polars_sample_is_compared_with_scikit_learn_on_what_it_reads_from_polars(penguins):
    """A pipeline fitted on a polars frame (scikit-learn reads its nulls as None) and built with that frame as
    the sample: the parity reference got the converted frame's ``pd.NA`` and scikit-learn raised a raw
    TypeError ("boolean value of NA is ambiguous"). It gets the text as object with None, as from polars: the
    divergence of the null rows is a ParityError naming the column and the fix; the fix builds and matches."""
    import polars as pl

    frame = penguins[["island", "sex"]]
    y = penguins["species"].to_numpy()

    def pipeline(imputer):
        return make_pipeline(ColumnTransformer([("c", make_pipeline(imputer, OneHotEncoder(handle_unknown="ignore")),
                                                 ["island", "sex"])]), LogisticRegression(max_iter=2000))

    polars = pl.from_pandas(frame)
    fitted = pipeline(SimpleImputer(strategy="most_frequent")).fit(polars, y)
    with pytest.raises(ParityError) as caught:
        onegraph.build(fitted, None, sample=polars)
    assert "column 'sex' holds nulls (polars / Arrow)" in str(caught.value)
    assert "onegraph.frame.SimpleImputer" in str(caught.value)
    from onegraph.frame import SimpleImputer as OurImputer

    ours = pipeline(OurImputer(strategy="most_frequent")).fit(frame, y)
    got = onegraph.score(onegraph.build(ours, None, sample=polars), polars)
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float), ours.predict_proba(frame),
                               rtol=1e-9, atol=1e-12)
    complete = polars.drop_nulls()  # no nulls: scikit-learn's and the graph's answers agree on polars
    fitted = pipeline(SimpleImputer(strategy="most_frequent")).fit(complete, y[~frame.isna().any(axis=1).to_numpy()])
    got = onegraph.score(onegraph.build(fitted, None, sample=complete), complete)
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float), fitted.predict_proba(complete),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("encoder", ["onehot", "ordinal"])
def test_an_encoder_that_learned_none_and_nan_apart_is_refused_naming_the_column(penguins, encoder):
    """A OneHotEncoder / OrdinalEncoder (no imputer) fitted on an object column holding both None and NaN learns
    them as two categories; the graph has one missing value. The ParityError asked to "report this"; it names
    the column and the fix, and onegraph.frame's encoder, which the hint offers, exports the same frame."""
    from sklearn.preprocessing import OrdinalEncoder

    from onegraph.frame import OneHotEncoder as FrameOneHotEncoder

    frame = _with_none(penguins, 0.1)
    assert frame["sex"].isna().sum() > frame["sex"].map(lambda v: v is None).sum() > 0  # NaN rows stay too
    y = penguins.loc[frame.index, "species"]
    step = (OneHotEncoder(handle_unknown="ignore") if encoder == "onehot"
            else OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-2))
    pipe = make_pipeline(ColumnTransformer([("sex", step, ["sex"])], remainder="passthrough"),
                         LogisticRegression(max_iter=1000)).fit(frame, y)
    assert sum(v is None for v in pipe[0].named_transformers_["sex"].categories_[0]) == 1
    with pytest.raises(ParityError, match="column 'sex' holds None: in scikit-learn, its OneHotEncoder / "
                                          "OrdinalEncoder learn None and NaN as two categories") as caught:
        onegraph.build(pipe, None, frame)
    assert "report this" not in str(caught.value)
    ours = make_pipeline(ColumnTransformer([("sex", FrameOneHotEncoder(handle_unknown="ignore"), ["sex"])],
                                           remainder="passthrough"), LogisticRegression(max_iter=1000)).fit(frame, y)
    got = onegraph.score(onegraph.build(ours, None, frame), frame)
    np.testing.assert_allclose(got[[f"probabilities_{c}" for c in ours.classes_]].to_numpy(),
                               ours.predict_proba(frame), rtol=1e-9, atol=1e-12)


def test_a_text_imputer_of_another_missing_value_refuses_a_missing_one_as_scikit_learn_does(penguins):
    """``SimpleImputer(missing_values="")`` on a text column (skl2onnx's documented workaround for text
    imputation): scikit-learn refuses a NaN there ("Input contains NaN"), onegraph scored it as an unknown
    category with a confident label. It is refused naming the column and the row; "" is imputed as before."""
    from onegraph.errors import OutOfRangeError

    df = penguins.copy()
    y = df.pop("species")
    num = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    df["isl"] = np.where(np.arange(len(df)) % 5 == 0, "", df["island"]).astype(object)
    pipe = make_pipeline(ColumnTransformer([
        ("text", make_pipeline(SimpleImputer(missing_values="", strategy="most_frequent"),
                               OneHotEncoder(handle_unknown="ignore")), ["isl"]),
        ("num", SimpleImputer(), num)]), LogisticRegression(max_iter=3000)).fit(df, y)
    model = onegraph.build(pipe, None, sample=df)
    np.testing.assert_allclose(onegraph.score(model, df).filter(like="probabilities_").to_numpy(),
                               pipe.predict_proba(df), rtol=1e-9, atol=1e-12)
    rows = df.head(3).copy()
    rows["isl"] = np.array(["Dream", np.nan, ""], dtype=object)
    with pytest.raises(ValueError, match="NaN"):
        pipe.predict_proba(rows)
    with pytest.raises(OutOfRangeError, match=r"column 'isl': 1 row\(s\).*missing_values=''.*first row 1") as info:
        onegraph.score(model, rows)
    assert "fillna('')" in str(info.value)
