"""CountVectorizer / TfidfVectorizer tokenized in the graph exactly as scikit-learn does, on a real text table
(tests/data/text/descriptions.csv: scikit-learn's dataset descriptions and CPython's CJK samples)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.errors import ExportError, OutOfRangeError

DATA = Path(__file__).parent / "data" / "text" / "descriptions.csv"
#: the two Korean paragraphs hold symbols (☆, ◎) outside the blocks the graph splits on
OUTSIDE = "[☆◎]"


@pytest.fixture(scope="module")
def docs() -> pd.DataFrame:
    return pd.read_csv(DATA)[["text"]]


def _dense(x):
    return x.toarray() if hasattr(x, "toarray") else np.asarray(x)


@pytest.fixture(scope="module")
def bigrams(docs):
    """Counts of unigrams and bigrams, English stop words removed, fitted on every row; its graph."""
    ct = ColumnTransformer([("text", CountVectorizer(ngram_range=(1, 2), stop_words="english", min_df=2),
                             "text")]).fit(docs)
    inside = docs[~docs["text"].str.contains(OUTSIDE)]
    return ct, onegraph.build(ct, None, inside), inside


def test_counts_equal_scikit_learn_with_bigrams_and_stop_words(bigrams):
    ct, model, rows = bigrams
    for frame in (rows, rows.assign(text=rows["text"].str.upper()), rows.assign(text=rows["text"].str.title())):
        got = onegraph.score(model, frame).to_numpy(float)
        np.testing.assert_array_equal(got, _dense(ct.transform(frame)))


def test_a_dropped_one_letter_token_joins_its_neighbours(bigrams):
    """skl2onnx's public bug: 'x a y' has the bigram 'x y' in scikit-learn (the one-letter token is never a
    token); the graph counts it too."""
    ct, model, rows = bigrams
    vocab = ct.named_transformers_["text"].vocabulary_
    analyzer = ct.named_transformers_["text"].build_analyzer()
    hits = 0
    for i, text in enumerate(rows["text"]):
        words = re.findall(r"(?u)\b\w+\b", text.lower())
        for a, b, c in zip(words, words[1:], words[2:]):
            gram = f"{a} {c}"
            if len(b) == 1 and gram in vocab and gram in analyzer(text):
                got = onegraph.score(model, rows.iloc[[i]])[f"text__{gram}"].iloc[0]
                assert got == _dense(ct.transform(rows.iloc[[i]]))[0, ct.get_feature_names_out().tolist().index(
                    f"text__{gram}")] > 0
                hits += 1
    assert hits >= 3


def test_accented_capitals_lowercased_and_others_refused(bigrams):
    ct, model, _ = bigrams
    frame = pd.DataFrame({"text": ["ÉTUDE DES DONNÉES: the DATASET contains Iris données",
                                   "naïve Bayes – “CLASSIFICATION” … of HANDWRITTEN digits"]})
    np.testing.assert_array_equal(onegraph.score(model, frame).to_numpy(float), _dense(ct.transform(frame)))
    for text in ("ΟΔΟΣ and data", "İstanbul housing data", "☆ a star"):
        with pytest.raises(OutOfRangeError, match="text"):
            onegraph.score(model, pd.DataFrame({"text": [text]}))


def test_refused_rows_are_named(docs, bigrams):
    _, model, _ = bigrams
    with pytest.raises(OutOfRangeError, match="column 'text': 2 row"):
        onegraph.score(model, docs)


@pytest.mark.parametrize("vectorizer", [TfidfVectorizer(), TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True,
                                                                           max_features=500, norm="l1")],
                         ids=["default", "bigrams-sublinear-l1"])
def test_tfidf_then_a_classifier(docs, vectorizer):
    """Which description a paragraph comes from, from its tf-idf: one graph, parity checked by build."""
    frame = pd.read_csv(DATA)
    frame = frame[~frame["text"].str.contains(OUTSIDE)]
    y = frame.pop("source")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_pipeline(ColumnTransformer([("text", vectorizer, "text")]), LogisticRegression(max_iter=300))
        pipe.fit(frame, y)
    got = onegraph.score(onegraph.build(pipe, None, frame), frame)
    assert (got["label"].to_numpy() == pipe.predict(frame)).all()
    np.testing.assert_allclose(got[[f"probabilities_{c}" for c in pipe.classes_]].to_numpy(),
                               pipe.predict_proba(frame), rtol=1e-9, atol=1e-12)


def test_hashing_vectorizer_is_refused_with_its_reason(docs):
    ct = ColumnTransformer([("text", HashingVectorizer(n_features=64), "text")]).fit(docs)
    with pytest.raises(ExportError, match="murmurhash3"):
        onegraph.build(ct, None, docs)
