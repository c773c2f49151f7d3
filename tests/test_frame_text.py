"""Text transformers: the graph in onnxruntime equals pandas' str accessor and Python's str methods."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from conftest import DATA, assert_same_values, graph_matches_transform
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.errors import ColumnTypeError, OutOfRangeError
from onegraph.frame import (
    HashEncoder,
    OneHotEncoder,
    RegexMatch,
    StringCase,
    StringConcat,
    StringSplit,
    StringStrip,
    ValueMap,
)
from onegraph.frame.transformers.textmap import stated_hash

# text a string tensor can carry (no lone surrogates: they are not UTF-8)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)


def test_concat_equals_str_cat(airports):
    frame = airports[["city", "state", "country"]]
    concat = StringConcat(", ").fit(frame)
    graph_matches_transform(concat, frame)
    expected = airports["city"].str.cat([airports["state"], airports["country"]], sep=", ")
    assert_same_values(concat.transform(frame)["city_state_country"], expected)
    assert concat.transform(frame)["city_state_country"].isna().sum() == expected.isna().sum() > 0
    filled = StringConcat("/", na_rep="?", name="where").fit(frame)
    graph_matches_transform(filled, frame)
    assert_same_values(filled.transform(frame)["where"],
                       airports["city"].str.cat([airports["state"], airports["country"]], sep="/", na_rep="?"))


def test_concat_of_integer_and_text_columns(penguins):
    frame = penguins[["island", "year"]].astype({"year": "Int64"})
    frame.loc[3, "year"] = pd.NA
    concat = StringConcat("-").fit(frame)
    graph_matches_transform(concat, frame)
    with pytest.raises(ColumnTypeError, match="bill_length_mm"):
        StringConcat().fit(penguins[["island", "bill_length_mm"]])


@pytest.mark.parametrize("params", [dict(), dict(n_parts=2), dict(n_parts=1), dict(index=0), dict(index=1),
                                    dict(index=-1), dict(index=-3)])
def test_split_equals_str_split(airports, params):
    frame = airports[["name", "city"]]
    split = StringSplit(" ", **params).fit(frame)
    graph_matches_transform(split, frame)
    out = split.transform(frame)
    if "index" in params:
        expected = airports["name"].str.split(" ", regex=False).str[params["index"]]
        assert_same_values(out[f"name_{params['index']}"], expected)
    elif params.get("n_parts", 0) != 1:
        k = split.n_parts_["name"]
        expected = airports["name"].str.split(" ", n=k - 1, regex=False, expand=True)
        for i in range(k):
            assert_same_values(out[f"name_{i}"], expected[i])


def test_split_of_empty_missing_and_unicode_text():
    frame = pd.DataFrame({"t": ["", "a", None, "a--b", "--", "é--日本--", "----x"]})
    for params in (dict(), dict(index=-2), dict(index=2), dict(n_parts=2)):
        graph_matches_transform(StringSplit("--", **params).fit(frame), frame)


def test_value_map_replace_and_map_semantics(airports):
    frame = airports[["country", "state"]]
    keep = ValueMap({"USA": "United States", "TX": "Texas"}).fit(frame)
    graph_matches_transform(keep, frame)
    assert_same_values(keep.transform(frame)["state"], airports["state"].replace({"USA": "United States", "TX": "Texas"}))
    codes = {"TX": 1, "CA": 2, None: -1}
    mapped = ValueMap(codes, unmatched=0).fit(frame[["state"]])
    graph_matches_transform(mapped, frame[["state"]])
    expected = airports["state"].map({"TX": 1, "CA": 2}).where(airports["state"].isin(["TX", "CA"]), 0)
    expected[airports["state"].isna()] = -1
    assert_same_values(mapped.transform(frame[["state"]])["state"], expected)
    nan_default = ValueMap({"TX": 1.5}, unmatched=np.nan).fit(frame[["state"]])
    graph_matches_transform(nan_default, frame[["state"]])
    assert_same_values(nan_default.transform(frame[["state"]])["state"], airports["state"].map({"TX": 1.5}))
    with pytest.raises(ColumnTypeError, match="'state'"):
        ValueMap({"TX": 1}).fit(frame[["state"]])  # numbers among kept text


def test_value_map_on_numbers(cars):
    frame = cars[["Cylinders", "Horsepower"]]
    m = ValueMap({4: 40.0, 8: 80.0, np.nan: -1.0}).fit(frame)
    graph_matches_transform(m, frame)
    assert_same_values(m.transform(frame)["Horsepower"], cars["Horsepower"].fillna(-1.0).replace({4: 40.0, 8: 80.0}))


@pytest.mark.parametrize("pattern,how,case", [("[A-Z]{2}", "fullmatch", True), ("air", "contains", False),
                                              ("(Mun|Reg)[a-z]+", "match", True), ("[0-9]", "contains", True),
                                              ("[^aeiou]*", "fullmatch", False)])
def test_regex_flags_equal_python_re(airports, pattern, how, case):
    frame = airports[["name", "iata"]]
    rx = RegexMatch(pattern, how=how, case=case).fit(frame)
    graph_matches_transform(rx, frame)
    flags = 0 if case else re.IGNORECASE
    run = {"fullmatch": re.fullmatch, "match": re.match, "contains": re.search}[how]
    expected = [float(run(pattern, v, flags) is not None) if isinstance(v, str) else np.nan for v in airports["name"]]
    assert_same_values(rx.transform(frame)[f"name_{how}"], expected)


@pytest.mark.parametrize("na", [None, True, False])
@pytest.mark.parametrize("how", ["contains", "match", "fullmatch"])
def test_regex_missing_text_follows_pandas_na(penguins, na, how):
    frame = penguins[["sex"]]
    assert frame["sex"].isna().any()
    rx = RegexMatch("male", how=how, na=na).fit(frame)
    graph_matches_transform(rx, frame)
    # pandas' nullable "string" dtype (and object) give NA for missing text; its NaN-backed "str" dtype gives False
    method = getattr(frame["sex"].astype("string").str, how)
    pandas = method("male") if na is None else method("male", na=na)
    got = rx.transform(frame)[f"sex_{how}"]
    if na is None:  # pandas gives NA for missing text; onegraph NaN in a float column (its nullable boolean)
        assert got.dtype == np.float64
        assert_same_values(got, pandas.astype("Float64").to_numpy(np.float64, na_value=np.nan))
    else:
        assert got.dtype == bool
        assert_same_values(got, pandas.astype(bool))


@pytest.mark.parametrize("pattern", [r"\d+", r"\bx", "a$", "(?=a)b", r"(a)\1"])
def test_regex_constructs_read_differently_by_re2_are_refused(airports, pattern):
    with pytest.raises(ValueError, match="RE2"):
        RegexMatch(pattern).fit(airports[["name"]])


@pytest.mark.parametrize("case", ["lower", "upper", "casefold"])
def test_case_mapping_equals_python(airports, case):
    frame = airports[["name", "city"]]
    mapped = StringCase(case).fit(frame)
    unseen = pd.DataFrame({"name": ["NEW AIRPORT Zz", "", None, "x", "MUNICIPAL"], "city": ["  a B  ", "Q", "", None, "q"]})
    graph_matches_transform(mapped, frame, pd.concat([frame.head(100), unseen]))
    expected = [getattr(v, case)() if isinstance(v, str) else None for v in airports["city"]]
    assert_same_values(mapped.transform(frame)["city"], expected)


def test_case_mapping_of_seen_unicode_and_refusal_of_unseen_unicode():
    seen = pd.DataFrame({"t": ["Straße", "ÉTÉ", "ΣΑΣ ΟΔΟΣ", "İstanbul", "ǅemal"]})
    for case in ("lower", "upper", "casefold"):
        mapped = StringCase(case).fit(seen)
        model = graph_matches_transform(mapped, seen)  # final sigma, ß, dotted I: exactly Python's
        unseen = "àb" if case == "upper" else "ÀB"
        with pytest.raises(OutOfRangeError, match=f"'t'.*ASCII letters.*{unseen}"):
            onegraph.score(model, pd.DataFrame({"t": ["ab", unseen]}))


def test_strip_equals_python(airports):
    frame = airports[["city"]]
    strip = StringStrip().fit(frame)
    rows = pd.DataFrame({"city": ["  Dallas\t", "\n\x0bx y \r", "", None, " ", "Zz", "\x1c\x1f a \x1e"]})
    graph_matches_transform(strip, frame, rows)
    assert_same_values(strip.transform(rows)["city"], rows["city"].str.strip())
    with pytest.raises(OutOfRangeError, match="'city'"):
        onegraph.score(onegraph.build(strip, None, frame), pd.DataFrame({"city": ["\u3000ideographic space"]}))


def test_hash_buckets_follow_the_stated_hash(airports):
    frame = airports[["city", "state"]]
    hashed = HashEncoder(128).fit(frame)
    unseen = pd.DataFrame({"city": ["Zürich", "東京", "😀 emoji", "", None, "a" * 30, "ab", "ba"],
                           "state": ["ZZ", "Ω", "é", "è", "e", None, "", "x"]})
    graph_matches_transform(hashed, frame, pd.concat([frame.head(200), unseen]))
    expected = [stated_hash(v, 128) if isinstance(v, str) else np.nan for v in unseen["city"]]
    assert_same_values(hashed.transform(unseen)["city"], expected)
    buckets = hashed.transform(frame)["city"]
    assert buckets.nunique() > 100  # ~2,700 cities spread over the 128 buckets


_MODELS: list = []


def _fitted_on_other_text() -> list:
    """Text transformers fitted (and built) once on a few values, so hypothesis's values are unseen."""
    if not _MODELS:
        sample = pd.DataFrame({"t": ["Alpha", "beta", "", None, "a--b", " x "]})
        for t in (StringSplit("--"), StringSplit("a", index=-1), StringConcat("|", na_rep="-"),
                  RegexMatch("[a-z]+", how="contains", case=False), ValueMap({"": "empty", "beta": "B"}),
                  StringCase("lower"), StringStrip(), HashEncoder(64, prefix=6)):
            _MODELS.append((t.fit(sample), onegraph.build(t, None, sample)))
    return _MODELS


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.none(), TEXT), min_size=1, max_size=25))
def test_hypothesis_text_frames(values):
    """Unseen unicode, empty and missing text through the in-graph paths."""
    frame = pd.DataFrame({"t": pd.Series(values, dtype=object)})
    for transformer, model in _fitted_on_other_text():
        try:
            got = onegraph.score(model, frame)
        except OutOfRangeError:
            # only case mapping and stripping refuse, and only for a non-ASCII case change or space
            assert isinstance(transformer, (StringCase, StringStrip))
            continue
        expected = transformer.transform(frame)
        for name in expected.columns:
            assert_same_values(got[name].to_numpy(), expected[name].to_numpy(), name=name)


def test_text_steps_in_a_pipeline_with_a_model():
    riots = pd.read_csv(DATA / "la-riots.csv")
    frame = riots[["neighborhood", "race", "gender", "address"]]
    pipe = make_pipeline(
        ColumnTransformer([
            ("hood", make_pipeline(StringCase("lower"), OneHotEncoder(handle_unknown="ignore")), ["neighborhood"]),
            ("who", make_pipeline(StringConcat("/"), HashEncoder(16)), ["race", "gender"]),
            ("street", make_pipeline(StringSplit(" ", index=-1), OneHotEncoder(handle_unknown="ignore")), ["address"]),
        ]),
        LogisticRegression(max_iter=1000),
    ).fit(frame, riots["type"])
    onegraph.build(pipe, None, frame)
