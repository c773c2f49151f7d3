"""CountVectorizer / TfidfVectorizer / HashingVectorizer tokenized in the graph exactly as scikit-learn does, on a
real text table (tests/data/text/descriptions.csv: scikit-learn's dataset descriptions and CPython's CJK samples).
HashingVectorizer's graph hashes with onnxruntime's contrib com.microsoft.MurmurHash3."""

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
from onegraph.verify.portable import onnxruntime_ops, portability_problems

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


# -- HashingVectorizer ---------------------------------------------------------------------------------------
def _inside(docs):
    return docs[~docs["text"].str.contains(OUTSIDE)]


@pytest.mark.parametrize("params", [
    dict(n_features=2**8),
    dict(n_features=2**7, ngram_range=(1, 2), stop_words="english", norm="l1", alternate_sign=False,
         dtype=np.float32),
    dict(n_features=2**6, binary=True, norm=None, lowercase=False),
], ids=["default-256", "bigrams-stop-l1-unsigned-float32", "binary-signed-cased-64"])  # each build ~10 s: few
def test_hashing_equals_scikit_learn(docs, params):
    """The graph's values equal HashingVectorizer.transform on the corpus (CJK rows and accented Latin
    included), in upper and title case too; the graph declares onnxruntime's contrib domain."""
    rows = _inside(docs)
    ct = ColumnTransformer([("text", HashingVectorizer(**params), "text")]).fit(rows)
    model = onegraph.build(ct, None, rows)
    assert any(o.domain == "com.microsoft" and o.version == 1 for o in model.opset_import)
    assert onnxruntime_ops(model) == ["com.microsoft.MurmurHash3"]
    assert portability_problems(model, runtime="onnxruntime") == []
    assert any("runs on onnxruntime only" in p for p in portability_problems(model))
    for frame in (rows, rows.assign(text=rows["text"].str.upper()), rows.assign(text=rows["text"].str.title())):
        got = onegraph.score(model, frame)
        assert list(got.columns) == [f"hashingvectorizer{i}" for i in range(params["n_features"])]
        expected = _dense(ct.transform(frame))
        assert np.count_nonzero(expected) > 1000
        np.testing.assert_array_equal(got.to_numpy(float), expected)


def test_hashing_non_ascii_tokens_hash_their_utf8_bytes(docs):
    """Rows of CJK text and accented Latin: every token and bigram lands where scikit-learn puts it, with its
    sign (no norm)."""
    text = [t for t in _inside(docs)["text"] if any(ord(c) > 0x2FF for c in t)]
    assert len(text) >= 3
    rows = pd.DataFrame({"text": text + ["ÉTUDE DES DONNÉES: naïve Bayes – “CLASSIFICATION” … Ærø straße ÿ",
                                         "", "a", "été été ÉTÉ x été"]})
    ct = ColumnTransformer([("text", HashingVectorizer(n_features=2**11, norm=None, ngram_range=(1, 2)),
                             "text")]).fit(rows)
    got = onegraph.score(onegraph.build(ct, None, rows), rows).to_numpy(float)
    expected = _dense(ct.transform(rows))
    np.testing.assert_array_equal(got, expected)
    assert (expected < 0).any() and (expected > 1).any()


def test_hashing_index_and_sign_of_every_hash():
    """Hashes of both signs fall in scikit-learn's cells with scikit-learn's signs, for n_features that do
    and do not divide 2**31; the int64 abs the graph takes of murmurhash3 = -2**31 gives scikit-learn's
    (2**31 - 1 - (n - 1)) % n."""
    from sklearn.utils import murmurhash3_32

    words = [f"w{i}" for i in range(4000)]
    signs = np.array([murmurhash3_32(w, seed=0) >= 0 for w in words])
    assert signs.any() and not signs.all()
    for n in (1, 3, 7, 2**10, 2**20 - 1, 2**31 - 1):
        assert 2**31 % n == (2147483647 - (n - 1)) % n
    frame = pd.DataFrame({"text": [" ".join(words[i:i + 40]) for i in range(0, 4000, 40)]})
    for n in (1, 97):
        ct = ColumnTransformer([("text", HashingVectorizer(n_features=n, norm=None), "text")]).fit(frame)
        got = onegraph.score(onegraph.build(ct, None, frame), frame).to_numpy(float)
        np.testing.assert_array_equal(got, _dense(ct.transform(frame)))


@pytest.mark.parametrize("n_features", [2**12])
def test_hashing_then_a_classifier(n_features):
    """Which description a paragraph comes from, from its hashed words and bigrams: one graph, parity checked
    by build, probabilities equal scikit-learn's."""
    frame = _inside(pd.read_csv(DATA))
    y = frame.pop("source")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_pipeline(ColumnTransformer([("text", HashingVectorizer(
            n_features=n_features, ngram_range=(1, 2), stop_words="english"), "text")]), LogisticRegression(max_iter=300))
        pipe.fit(frame, y)
    got = onegraph.score(onegraph.build(pipe, None, frame), frame)
    assert (got["label"].to_numpy() == pipe.predict(frame)).all()
    np.testing.assert_allclose(got[[f"probabilities_{c}" for c in pipe.classes_]].to_numpy(),
                               pipe.predict_proba(frame), rtol=1e-9, atol=1e-12)


def test_hashing_refusals(docs):
    rows = _inside(docs)
    # (64 columns: a preprocessing-only graph of the default 2**20 is refused for its width first)
    for hv, reason in ((HashingVectorizer(n_features=64, analyzer="char"), "analyzer='char'"),
                       (HashingVectorizer(n_features=64, token_pattern=r"\w+"), "token_pattern"),
                       (HashingVectorizer(n_features=64, strip_accents="unicode"), "strip_accents"),
                       (HashingVectorizer(n_features=64, dtype=np.int64), "dtype=int64")):
        ct = ColumnTransformer([("text", hv, "text")]).fit(rows)
        with pytest.raises(ExportError, match=re.escape(reason)):
            onegraph.build(ct, None, rows)
    # the default 2**20 columns without a model: one graph output each is refused, naming the width, before
    # the graph's nodes are emitted (that took 12 s)
    ct = ColumnTransformer([("text", HashingVectorizer(), "text")]).fit(rows)
    with pytest.raises(ExportError, match="1048576 columns"):
        onegraph.build(ct, None, rows)
    # rows the tokenizer cannot split exactly are refused at scoring, as for CountVectorizer
    ct = ColumnTransformer([("text", HashingVectorizer(n_features=64), "text")]).fit(rows)
    with pytest.raises(OutOfRangeError, match="column 'text': 2 row"):
        onegraph.score(onegraph.build(ct, None, rows), docs)


@pytest.mark.parametrize("vectorizer", [CountVectorizer(), TfidfVectorizer(), HashingVectorizer(n_features=64)],
                         ids=lambda v: type(v).__name__)
def test_a_missing_document_is_refused_as_scikit_learn_refuses_it(docs, vectorizer):
    """sklearn-onnx#196/#197 territory: scikit-learn refuses a missing document ("np.nan is an invalid
    document"); the graph read it as the empty text and gave a confident label (and NaN features would have
    been routed to a confident label by a forest). The graph refuses it too, naming the column and the row (None,
    NaN and pd.NA alike); written as an empty text it scores as scikit-learn scores the empty text."""
    from sklearn.ensemble import RandomForestClassifier

    from onegraph.errors import OutOfRangeError

    inside = docs[~docs["text"].str.contains(OUTSIDE)].reset_index(drop=True).head(40)
    labels = np.where(inside["text"].str.contains("data set|dataset", case=False), "data", "other")
    pipe = make_pipeline(ColumnTransformer([("t", vectorizer, "text")]),
                         RandomForestClassifier(n_estimators=5, random_state=0))
    pipe.fit(inside, labels)
    model = onegraph.build(pipe, None, inside)
    for missing in (None, np.nan, pd.NA):
        rows = pd.DataFrame({"text": [inside["text"][0], missing, inside["text"][1]]}, dtype=object)
        with pytest.raises(Exception):  # noqa: B017 - scikit-learn's own refusal (AttributeError or ValueError)
            pipe.predict(rows)
        with pytest.raises(OutOfRangeError, match=r"column 'text': 1 row\(s\).*first row 1") as caught:
            onegraph.score(model, rows)
        assert "fillna('')" in caught.value.hint
    rows = pd.DataFrame({"text": [inside["text"][0], "", inside["text"][1]]}, dtype=object)
    got = onegraph.score(model, rows)
    np.testing.assert_array_equal(got["label"].to_numpy(object), pipe.predict(rows))
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float), pipe.predict_proba(rows),
                               rtol=1e-9, atol=1e-12)


def test_nodes_inside_loop_and_if_bodies_carry_no_scope_metadata():
    """A CountVectorizer graph was 4.1 MB for a 1,000-word vocabulary: each of its 144 lowercasing If bodies
    repeated the scope metadata (namespace, class, scope path) and long names on its 19 nodes. The node holding
    a body carries its scope; the body's nodes carry none (1.4 MB; the values are unchanged)."""
    import onnx

    cars = pd.read_csv(Path(__file__).parent / "data" / "cars.csv").dropna(subset=["Origin"])
    x = cars[["Name"]]
    model = make_pipeline(ColumnTransformer([("words", CountVectorizer(), "Name")]),
                          LogisticRegression(max_iter=1000)).fit(x, cars["Origin"])
    proto = onegraph.build(model, None, x)

    def bodies(nodes):
        for node in nodes:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    yield node, attr.g

    holders = [(n, b) for f in proto.functions for n, b in bodies(f.node)]
    assert len(holders) > 100
    stack = [b for _, b in holders]
    while stack:
        body = stack.pop()
        assert all(not n.metadata_props for n in body.node), body.name
        stack += [b for _, b in bodies(body.node)]
    assert all(any(p.key == "namespace" for p in n.metadata_props) for n, _ in holders)
    assert proto.ByteSize() < 2_000_000
    np.testing.assert_allclose(onegraph.score(proto, x).filter(like="probabilities_").to_numpy(float),
                               model.predict_proba(x), rtol=1e-9, atol=1e-12)
