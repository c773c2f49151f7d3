"""scikit-learn's ``CountVectorizer`` / ``TfidfVectorizer`` / ``HashingVectorizer`` -> graph, tokenizing exactly as
scikit-learn does, with standard operators only (no ``StringNormalizer``, no host locale), except
``HashingVectorizer``'s hash, for which the graph needs onnxruntime.

Why here and not in ``frame/transformers/``: these are scikit-learn's own classes, fitted by scikit-learn
(the vocabulary, the idf); onegraph only writes their graph, like its other emitters for scikit-learn's
transformers in ``export/adapters/``. The string building blocks come from ``onegraph.frame.strings``.

scikit-learn 1.9 (``feature_extraction/text.py``, ``analyzer="word"``, the default ``token_pattern``
``(?u)\\b\\w\\w+\\b``) computes for each document: ``doc.lower()`` (``lowercase=True``), the tokens
``re.findall(token_pattern, doc)`` — the maximal runs of word characters (``str.isalnum()`` or ``_``) of at
least two characters —, the stop words removed, then the n-grams of ``ngram_range`` over what remains
(``_word_ngrams``: a dropped one-letter token or stop word joins its neighbours into a bigram), looked up in
``vocabulary_`` and counted; ``TfidfVectorizer`` then applies ``TfidfTransformer`` (``idf_``, the norm).

The graph does the same on a flat tensor of pieces with their row numbers:

1. ``StringSplit`` on every non-word character of :data:`DELIMITER_BLOCKS` (ASCII, Latin-1 and Latin
   Extended, General Punctuation, currency, CJK symbols and punctuation, full-width forms), one after the other in groups that an ``If`` skips when no piece holds any of
   them, empty pieces dropped; a piece still holding a non-word character (one outside those blocks) makes
   its row refused at scoring (``OutOfRangeError`` naming the column), never miscounted;
2. pieces of at least two characters (``RegexFullMatch``: RE2 counts code points as Python does) are the
   tokens;
3. lower-casing per token: ASCII and the Latin-1 / Latin Extended-A capitals by ``StringSplit`` + join with
   the lower-case letter (each under an ``If`` skipped when no token holds it); a row holding another
   character whose ``str.lower()`` differs (Greek, Cyrillic, ``İ``...) is refused. Lower-casing tokens
   instead of documents gives the same tokens for these letters (each maps to one word character);
4. stop words by ``LabelEncoder`` lookup, n-grams by ``StringConcat`` of neighbours of the same row,
   vocabulary indices by ``LabelEncoder``, counts by ``ScatterElements(reduction="add")``.

``HashingVectorizer`` (``FeatureHasher`` in ``sklearn/feature_extraction/_hashing_fast.pyx``) takes the same
n-grams (steps 1-4, ``analyzer="word"`` and the options above only), then:

5. ``h``, the signed murmurhash3 (seed 0) of each n-gram's UTF-8 bytes, by onnxruntime's contrib operator
   ``com.microsoft.MurmurHash3`` (``positive=0``: ``int32``; ``onnxruntime/contrib_ops/cpu/murmur_hash3.cc``
   hashes the bytes of the UTF-8 string as ``sklearn.utils.murmurhash3_32`` does). No standard operator computes
   it, so **such a graph runs on onnxruntime only**: the model imports the ``com.microsoft`` domain (opset 1)
   and ``onegraph.verify.portable.portability_problems`` reports it unless asked for ``runtime="onnxruntime"``;
6. cell ``abs(h) % n_features`` (in int64, which for ``h = -2**31`` gives scikit-learn's special case
   ``(2**31 - 1 - (n_features - 1)) % n_features``), value ``+1`` for ``h >= 0`` and ``-1`` otherwise under
   ``alternate_sign``, summed per row by ``ScatterElements``; ``binary``: 1 in every cell a token reached
   (scikit-learn's ``X.data.fill(1)`` on the stored cells, so also where signs summed to 0); then ``norm``
   (``l2``, ``l1``, None) as ``sklearn.preprocessing.normalize`` does (the sums are integers, so the norms are
   exact in any order); ``dtype=np.float32`` rounds each value to float32 as scikit-learn stores it.

The result is a dense ``[N, n_features]`` double block (8 bytes a cell: the default 2**20 columns are 8 MiB a
row), columns named ``hashingvectorizer<i>`` (scikit-learn names none), like every block onegraph computes: a
model after it reads it inside the graph (the parity check runs few rows per call for a wide block), while a
build without a model, one graph output per column, is refused above ``onegraph.export.build.MAX_FEATURE_OUTPUTS``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import onnx_ir as ir
import sklearn.feature_extraction.text as fet

from onegraph.emit import BOOL, DOUBLE, FLOAT, INT64, STRING, Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError
from onegraph.export.adapters.ops import f64, i64
from onegraph.frame.strings import full_match, replace
from onegraph.frame.tensors import Val

__all__ = ["DELIMITER_BLOCKS", "ORT_DOMAIN", "delimiters", "tokens", "features", "counts", "hashed",
           "emit_count_vectorizer", "emit_hashing_vectorizer"]

#: code-point blocks whose non-word characters the graph splits on
DELIMITER_BLOCKS = ((0x0001, 0x02FF), (0x2000, 0x206F), (0x20A0, 0x20CF), (0x3000, 0x303F), (0xFF00, 0xFF65))
#: delimiters split in one ``If``, skipped when no piece holds any of them
_GROUP = 16
#: capitals the graph lower-cases itself (ASCII, Latin-1 Supplement, Latin Extended-A)
_LOWERED_BLOCKS = ((0x0041, 0x005A), (0x00C0, 0x00DE), (0x0100, 0x017F))
_DEFAULT_PATTERN = r"(?u)\b\w\w+\b"
#: onnxruntime's contrib domain, of ``MurmurHash3`` (``onnxruntime/contrib_ops/cpu/murmur_hash3.cc``), and its opset
ORT_DOMAIN = "com.microsoft"
ORT_OPSET = 1
INT32 = ir.DataType.INT32


def _is_word(c: str) -> bool:
    """Python's ``re`` ``\\w`` in Unicode mode (``_sre``: ``Py_UNICODE_ISALNUM`` or ``_``)."""
    return c.isalnum() or c == "_"


@functools.lru_cache(maxsize=None)
def delimiters() -> tuple[str, ...]:
    """The non-word characters the graph splits on (:data:`DELIMITER_BLOCKS`)."""
    return tuple(chr(cp) for a, b in DELIMITER_BLOCKS for cp in range(a, b + 1)
                 if not (0xD800 <= cp <= 0xDFFF) and not _is_word(chr(cp)))


@functools.lru_cache(maxsize=None)
def _lowered() -> tuple[tuple[str, str], ...]:
    """(capital, lower case) pairs the graph maps: one character to one other word character."""
    out = []
    for a, b in _LOWERED_BLOCKS:
        for cp in range(a, b + 1):
            c = chr(cp)
            low = c.lower()
            if low != c and len(low) == 1 and _is_word(low) and _is_word(c):
                out.append((c, low))
    return tuple(out)


def _re_class(cps: list[int]) -> str:
    spans, first, last = [], None, None
    for cp in cps:
        if first is not None and cp == last + 1:
            last = cp
            continue
        if first is not None:
            spans.append((first, last))
        first = last = cp
    if first is not None:
        spans.append((first, last))
    return "[" + "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in spans) + "]"


@functools.lru_cache(maxsize=None)
def _word_class() -> str:
    """RE2 class of Python's ``\\w`` (every code point)."""
    return _re_class([cp for cp in range(0x110000) if not (0xD800 <= cp <= 0xDFFF) and _is_word(chr(cp))])


@functools.lru_cache(maxsize=None)
def _case_class() -> str:
    """RE2 class of the characters whose ``str.lower()`` differs and that the graph does not lower-case."""
    mapped = {ord(c) for c, _ in _lowered()}
    return _re_class([cp for cp in range(0x110000) if not (0xD800 <= cp <= 0xDFFF) and cp not in mapped
                      and chr(cp).lower() != chr(cp)])


def _flat_split(g: GraphBuilder, pieces: ir.Value, rows: ir.Value, delimiter: str) -> tuple[ir.Value, ir.Value]:
    """Every piece split at ``delimiter``: the non-empty parts, flat, with their rows."""
    parts, _ = g.op("StringSplit", pieces, delimiter=delimiter, outputs=2)
    parts.dtype = STRING
    flat = g.op("Reshape", parts, i64(g, [-1], "flat"), dtype=STRING)
    rep = g.op("Expand", g.op("Unsqueeze", rows, i64(g, [1], "axis1"), dtype=INT64), g.op("Shape", parts, dtype=INT64),
               dtype=INT64)
    rep = g.op("Reshape", rep, i64(g, [-1], "flat"), dtype=INT64)
    keep = g.op("Not", g.op("Equal", flat, g.const(np.array("", dtype=object), "empty"), dtype=BOOL), dtype=BOOL)
    return g.op("Compress", flat, keep, axis=0, dtype=STRING), g.op("Compress", rep, keep, axis=0, dtype=INT64)


def _split_group(g: GraphBuilder, pieces: ir.Value, rows: ir.Value, chars: tuple[str, ...]) -> tuple[ir.Value, ir.Value]:
    """:func:`_flat_split` at each of ``chars`` in turn, under an ``If`` skipped when no piece holds any."""
    has = _any(g, full_match(Val(g, pieces, STRING), f"(?s).*{_re_class([ord(c) for c in chars])}.*").value)
    with g.subgraph("split", []) as then_branch:
        p, r = pieces, rows
        for c in chars:
            p, r = _flat_split(g, p, r, c)
        then_branch.outputs.extend([g.op("Identity", p, dtype=STRING), g.op("Identity", r, dtype=INT64)])
    with g.subgraph("keep", []) as else_branch:
        else_branch.outputs.extend([g.op("Identity", pieces, dtype=STRING), g.op("Identity", rows, dtype=INT64)])
    p, r = g.op("If", has, then_branch=then_branch, else_branch=else_branch, outputs=2)
    p.dtype, r.dtype = STRING, INT64
    return p, r


def _any(g: GraphBuilder, flags: ir.Value) -> ir.Value:
    n = g.op("ReduceMax", g.op("Cast", flags, to=INT64, dtype=INT64), keepdims=0, dtype=INT64)
    zero = i64(g, 0, "zero_i")
    return g.op("Greater", g.op("Max", n, zero, dtype=INT64), zero, dtype=BOOL)  # False for no element


def _rows_flagged(g: GraphBuilder, flags: ir.Value, rows: ir.Value, doc: ir.Value) -> ir.Value:
    """Per document: does any of its pieces hold a flag (bool ``[N]``)."""
    zeros = g.op("Mul", g.op("Cast", g.op("Equal", doc, doc, dtype=BOOL), to=INT64, dtype=INT64), i64(g, 0, "zero_i"),
                 dtype=INT64)
    hit = g.op("ScatterElements", zeros, rows, g.op("Cast", flags, to=INT64, dtype=INT64), axis=0, reduction="max",
               dtype=INT64)
    return g.op("Cast", hit, to=BOOL, dtype=BOOL)


def _lower(g: GraphBuilder, toks: ir.Value) -> ir.Value:
    for upper, lower in _lowered():
        has = _any(g, full_match(Val(g, toks, STRING), f"(?s).*\\x{{{ord(upper):X}}}.*").value)
        toks = g.branch(has, lambda t=toks, u=upper, lo=lower: replace(Val(g, t, STRING), u, lo).value,
                        lambda t=toks: t, STRING)
    return toks


def tokens(g: GraphBuilder, doc: ir.Value, lowercase: bool, column: str) -> tuple[ir.Value, ir.Value]:
    """scikit-learn's default word tokens of each document ``doc`` ``[N]``: (tokens ``[T]``, rows ``[T]``), in
    document order. Declares the refusal flag of rows the graph cannot tokenize exactly."""
    n = g.op("Shape", doc, dtype=INT64)
    rows = g.op("Range", i64(g, 0, "zero_i"), g.op("Squeeze", n, i64(g, [0], "axis0"), dtype=INT64), i64(g, 1, "one_i"),
                dtype=INT64)
    pieces = doc
    chars = delimiters()
    for start in range(0, len(chars), _GROUP):
        pieces, rows = _split_group(g, pieces, rows, chars[start:start + _GROUP])
    bad = g.op("Not", full_match(Val(g, pieces, STRING), f"{_word_class()}*").value, dtype=BOOL)
    if lowercase:
        bad = g.op("Or", bad, full_match(Val(g, pieces, STRING), f"(?s).*{_case_class()}.*").value, dtype=BOOL)
    g.flag(_rows_flagged(g, bad, rows, doc), "out_of_range", column,
           covers="text whose non-word characters are in onegraph.export.adapters.text.DELIMITER_BLOCKS and "
                  "whose capitals are ASCII, Latin-1 or Latin Extended-A",
           hint="such text is refused rather than tokenized differently from scikit-learn")
    long = full_match(Val(g, pieces, STRING), "(?s)..+").value
    toks = g.op("Compress", pieces, long, axis=0, dtype=STRING)
    rows = g.op("Compress", rows, long, axis=0, dtype=INT64)
    if lowercase:
        toks = _lower(g, toks)
    return toks, rows


def _check_supported(est: Any) -> None:
    what = type(est).__name__
    for name, default in (("input", "content"), ("analyzer", "word"), ("tokenizer", None), ("preprocessor", None),
                          ("strip_accents", None), ("token_pattern", _DEFAULT_PATTERN)):
        if getattr(est, name) != default:
            raise ExportError(f"{what}({name}={getattr(est, name)!r}) cannot be exported yet",
                              hint="use scikit-learn's default word tokenizer (input='content', analyzer='word', the "
                                   "default token_pattern, no tokenizer / preprocessor / strip_accents)")


def _drop(g: GraphBuilder, toks: ir.Value, rows: ir.Value, words: Any) -> tuple[ir.Value, ir.Value]:
    """The tokens not in ``words`` (stop words)."""
    words = sorted(words)
    if not words:
        return toks, rows
    found = g.op("LabelEncoder", toks, domain="ai.onnx.ml", keys_strings=words, values_int64s=[1] * len(words),
                 default_int64=0, dtype=INT64)
    keep = g.op("Equal", found, i64(g, 0, "zero_i"), dtype=BOOL)
    return g.op("Compress", toks, keep, axis=0, dtype=STRING), g.op("Compress", rows, keep, axis=0, dtype=INT64)


def _ngrams(g: GraphBuilder, toks: ir.Value, rows: ir.Value, n: int) -> tuple[ir.Value, ir.Value]:
    """The ``n``-grams of consecutive tokens of the same row, joined by one space."""
    total = g.op("Shape", toks, dtype=INT64)
    stop = g.op("Max", g.op("Sub", total, i64(g, [n - 1], "n_minus_1"), dtype=INT64), i64(g, [0], "zero"), dtype=INT64)
    gram = None
    same = None
    first_rows = g.op("Slice", rows, i64(g, [0], "zero"), stop, dtype=INT64)
    for k in range(n):
        start = i64(g, [k], "k")
        part = g.op("Slice", toks, start, g.op("Add", stop, start, dtype=INT64), dtype=STRING)
        part_rows = g.op("Slice", rows, start, g.op("Add", stop, start, dtype=INT64), dtype=INT64)
        gram = part if gram is None else g.op("StringConcat", g.op(
            "StringConcat", gram, g.const(np.array(" ", dtype=object), "space"), dtype=STRING), part, dtype=STRING)
        eq = g.op("Equal", part_rows, first_rows, dtype=BOOL)
        same = eq if same is None else g.op("And", same, eq, dtype=BOOL)
    return g.op("Compress", gram, same, axis=0, dtype=STRING), g.op("Compress", first_rows, same, axis=0, dtype=INT64)


def features(g: GraphBuilder, est: Any, doc: ir.Value, column: str) -> tuple[ir.Value, ir.Value]:
    """What ``est.build_analyzer()`` gives for each document ``doc`` ``[N]``, flat: (the n-grams of
    ``ngram_range`` of its tokens, stop words removed, ``[F]``; their rows ``[F]``), shorter n-grams first."""
    _check_supported(est)
    toks, rows = tokens(g, doc, bool(est.lowercase), column)
    stop = est.get_stop_words()
    if stop:
        toks, rows = _drop(g, toks, rows, stop)
    lo, hi = est.ngram_range
    found, found_rows = [], []
    for n in range(lo, hi + 1):
        t, r = (toks, rows) if n == 1 else _ngrams(g, toks, rows, n)
        found.append(t)
        found_rows.append(r)
    feats = found[0] if len(found) == 1 else g.op("Concat", *found, axis=0, dtype=STRING)
    frows = found_rows[0] if len(found_rows) == 1 else g.op("Concat", *found_rows, axis=0, dtype=INT64)
    return feats, frows


def _scatter(g: GraphBuilder, doc: ir.Value, frows: ir.Value, index: ir.Value, values: ir.Value | None,
             size: int) -> ir.Value:
    """The dense ``[N, size]`` double matrix whose cell (row, index) sums the ``values`` (None: ones) put
    there."""
    flat_index = g.op("Add", g.op("Mul", frows, i64(g, size, "width"), dtype=INT64), index, dtype=INT64)
    n_docs = g.op("Shape", doc, dtype=INT64)
    cells = g.op("Mul", n_docs, i64(g, [size], "width"), dtype=INT64)
    zeros = g.op("ConstantOfShape", cells, value=ir.tensor(np.zeros(1, np.float64)), dtype=DOUBLE)
    if values is None:
        values = g.op("ConstantOfShape", g.op("Shape", index, dtype=INT64), value=ir.tensor(np.ones(1, np.float64)),
                      dtype=DOUBLE)
    c = g.op("ScatterElements", zeros, flat_index, values, axis=0, reduction="add", dtype=DOUBLE)
    return g.op("Reshape", c, g.op("Concat", n_docs, i64(g, [size], "width"), axis=0, dtype=INT64), dtype=DOUBLE)


def counts(g: GraphBuilder, est: Any, doc: ir.Value, column: str) -> ir.Value:
    """``CountVectorizer.transform`` as a dense ``[N, len(vocabulary_)]`` double matrix."""
    feats, frows = features(g, est, doc, column)
    vocab = sorted(est.vocabulary_.items(), key=lambda kv: kv[1])
    size = len(vocab)
    index = g.op("LabelEncoder", feats, domain="ai.onnx.ml", keys_strings=[k for k, _ in vocab],
                 values_int64s=[int(v) for _, v in vocab], default_int64=-1, dtype=INT64)
    known = g.op("GreaterOrEqual", index, i64(g, 0, "zero_i"), dtype=BOOL)
    index = g.op("Compress", index, known, axis=0, dtype=INT64)
    frows = g.op("Compress", frows, known, axis=0, dtype=INT64)
    c = _scatter(g, doc, frows, index, None, size)
    if est.binary:
        c = g.op("Min", c, f64(g, 1.0, "one"), dtype=DOUBLE)
    return c


def _text_column(est: Any, g: GraphBuilder, cols: list[Col]) -> ir.Value:
    """The one text column a vectorizer takes, ``[N]``. A missing document is refused at scoring (a check output
    naming the column and rows): scikit-learn refuses it ("np.nan is an invalid document"), and no feature row
    would mean "no answer" to every model after it (a forest routes an all-NaN row to a confident label)."""
    from onegraph.contract.columns import MISSING_STRING

    if len(cols) != 1 or cols[0].kind != "string":
        raise ExportError(f"{type(est).__name__} takes one text column",
                          hint="give it the column by name in a ColumnTransformer (('text', vectorizer, 'col'))")
    doc = g.vector(cols[0])
    missing = g.op("Equal", doc, g.const(np.array(MISSING_STRING, dtype=object), "missing"), dtype=BOOL)
    g.flag(missing, "out_of_range", cols[0].name, covers="documents (scikit-learn's vectorizers refuse a missing one)",
           hint="give an empty string for an empty document (fillna('')), or drop the row")
    return g.op("Where", missing, g.const(np.array("", dtype=object), "empty"), doc, dtype=STRING)


@register_emitter(fet.CountVectorizer)
def emit_count_vectorizer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """``CountVectorizer`` / ``TfidfVectorizer`` on one text column."""
    from onegraph.export.adapters.preprocessing import tfidf_weights

    doc = _text_column(est, g, cols)
    x = counts(g, est, doc, cols[0].name)
    if isinstance(est, fet.TfidfVectorizer):
        x = tfidf_weights(g, est._tfidf, x)
    names = [str(n) for n in est.get_feature_names_out()]
    return g.block(x, names, "float", DOUBLE)


def hashed(g: GraphBuilder, est: Any, doc: ir.Value, column: str) -> ir.Value:
    """``HashingVectorizer.transform`` as a dense ``[N, n_features]`` double matrix (``FeatureHasher`` of
    ``sklearn/feature_extraction/_hashing_fast.pyx``, then ``binary``, then ``normalize``)."""
    from onegraph.export.adapters.preprocessing import row_normalize

    size = int(est.n_features)
    feats, frows = features(g, est, doc, column)
    g.graph.opset_imports[ORT_DOMAIN] = ORT_OPSET
    h = g.op("MurmurHash3", feats, domain=ORT_DOMAIN, seed=0, positive=0, dtype=INT32)  # murmurhash3_bytes_s32
    h = g.op("Cast", h, to=INT64, dtype=INT64)
    # abs(h) % n_features; for h == -2**31 scikit-learn's (2**31 - 1 - (n_features - 1)) % n_features, which is
    # 2**31 % n_features: the int64 abs of h gives it
    index = g.op("Mod", g.op("Abs", h, dtype=INT64), i64(g, size, "n_features"), dtype=INT64)
    values = None
    if est.alternate_sign and not est.binary:  # binary sets every stored value to 1, whatever its sign
        values = g.op("Where", g.op("GreaterOrEqual", h, i64(g, 0, "zero_i"), dtype=BOOL), f64(g, 1.0, "one"),
                      f64(g, -1.0, "minus_one"), dtype=DOUBLE)
    x = _scatter(g, doc, frows, index, values, size)
    if est.binary:  # X.data.fill(1): a cell some token reached is 1, even where alternate signs summed to 0
        x = g.op("Min", x, f64(g, 1.0, "one"), dtype=DOUBLE)
    if est.norm is not None:
        x = row_normalize(g, x, est.norm)
    if np.dtype(est.dtype) == np.float32:  # scikit-learn stores each value, divided in double, as float32
        x = g.op("Cast", g.op("Cast", x, to=FLOAT, dtype=FLOAT), to=DOUBLE, dtype=DOUBLE)
    return x


@register_emitter(fet.HashingVectorizer)
def emit_hashing_vectorizer(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    """``HashingVectorizer`` on one text column: ``n_features`` columns named ``hashingvectorizer<i>``
    (scikit-learn names none). Needs onnxruntime (its ``com.microsoft.MurmurHash3``)."""
    if np.dtype(est.dtype) not in (np.float64, np.float32):
        raise ExportError(f"HashingVectorizer(dtype={np.dtype(est.dtype).name}) cannot be exported",
                          hint="use dtype=np.float64 (the default) or np.float32")
    doc = _text_column(est, g, cols)
    x = hashed(g, est, doc, cols[0].name)
    return g.block(x, [f"hashingvectorizer{i}" for i in range(int(est.n_features))], "float", DOUBLE)
