"""score: feeds from any table, batching, row identity, missing values and bad input."""

from __future__ import annotations

import os
import re
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.errors import (
    ColumnTypeError,
    DataError,
    ModelFileError,
    UnknownCategoryError,
)
from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TEXT = ["island", "sex"]


@pytest.fixture(scope="module")
def fitted(penguins):
    frame = penguins.drop(columns="species")
    pipe = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMERIC),
            ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), TEXT),
        ]),
        LogisticRegression(max_iter=1000),
    ).fit(frame, penguins["species"])
    return pipe, onegraph.build(pipe, None, frame), frame


def expected(pipe, frame: pd.DataFrame) -> pd.DataFrame:
    proba = pipe.predict_proba(frame)
    out = pd.DataFrame({"label": pipe.predict(frame)}, index=frame.index)
    for j, c in enumerate(pipe.classes_):
        out[f"probabilities_{c}"] = proba[:, j]
    return out


def assert_scores(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.columns) == list(want.columns)
    assert (got["label"].to_numpy() == want["label"].to_numpy()).all()
    np.testing.assert_allclose(got.iloc[:, 1:].to_numpy(float), want.iloc[:, 1:].to_numpy(float), rtol=1e-9, atol=1e-12)


def test_index_is_kept_and_batches_agree(fitted):
    pipe, model, frame = fitted
    shuffled = frame.sample(frac=1.0, random_state=1)
    got = onegraph.score(model, shuffled)
    assert list(got.index) == list(shuffled.index)
    assert_scores(got, expected(pipe, shuffled))
    small = onegraph.Session(model, batch_size=7)
    assert_scores(small.score(shuffled), expected(pipe, shuffled))
    assert_scores(onegraph.Session(model, batch_size=np.int64(7), threads=np.int32(1)).score(shuffled),
                  expected(pipe, shuffled))


@pytest.mark.parametrize("options", [dict(batch_size=0), dict(batch_size=-1), dict(batch_size="a"),
                                     dict(batch_size=None), dict(batch_size=1.5), dict(batch_size=True),
                                     dict(threads=-1), dict(threads=2.5), dict(threads="2")])
def test_a_session_option_that_is_not_a_count_is_refused_naming_it(fitted, options):
    """A new user's case: Session(batch_size="a") raised int()'s ValueError, None int()'s TypeError, and 1.5
    was taken as 1. Every value that is not a whole number in range is refused as a ConfigError naming it."""
    from onegraph.errors import ConfigError

    (name, value), = options.items()
    with pytest.raises(ConfigError, match=rf"^{name}={re.escape(repr(value))} is not a whole number >= "):
        onegraph.Session(fitted[1], **options)


def test_missing_values_of_every_kind_get_the_imputed_answer(fitted):
    """NaN, None, pd.NA in numeric and text columns: scored as scikit-learn scores the imputed row."""
    pipe, model, frame = fitted
    rows = frame.head(6).copy()
    rows.loc[rows.index[0], "bill_length_mm"] = np.nan
    rows.loc[rows.index[1], "island"] = None
    rows.loc[rows.index[2], "sex"] = np.nan
    nullable = rows.astype({"year": "Int64", "body_mass_g": "Float64", "sex": "string[pyarrow]"})
    nullable.loc[nullable.index[3], "year"] = pd.NA
    nullable.loc[nullable.index[4], "body_mass_g"] = pd.NA
    nullable.loc[nullable.index[5], "sex"] = pd.NA
    reference = nullable.astype({"year": "float64", "body_mass_g": "float64", "sex": "object"})
    assert_scores(onegraph.score(model, nullable), expected(pipe, reference))


def test_single_row_from_dict_and_records(fitted):
    pipe, model, frame = fitted
    row = frame.iloc[[3]]  # penguin 4 has no measurements at all
    record = {k: (None if pd.isna(v) else v) for k, v in row.iloc[0].to_dict().items()}
    want = expected(pipe, row).reset_index(drop=True)
    assert_scores(onegraph.score(model, record), want)
    assert_scores(onegraph.score(model, [record]), want)
    assert_scores(onegraph.score(model, {**record, "extra column": "ignored"}), want)


def test_empty_frame_gives_empty_scores(fitted):
    _, model, frame = fitted
    got = onegraph.score(model, frame.head(0))
    assert len(got) == 0
    assert list(got.columns) == ["label", "probabilities_Adelie", "probabilities_Chinstrap", "probabilities_Gentoo"]


def test_unseen_category_with_ignore_scores_like_scikit_learn(fitted):
    pipe, model, frame = fitted
    rows = frame.head(3).assign(island=["Atlantis", "Dream", "Biscoe"])
    assert_scores(onegraph.score(model, rows), expected(pipe, rows))


def test_unseen_category_with_error_is_refused(penguins):
    frame = penguins.drop(columns="species")
    pipe = make_pipeline(
        ColumnTransformer([("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder()), TEXT),
                           ("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMERIC)]),
        LogisticRegression(max_iter=1000),
    ).fit(frame, penguins["species"])
    model = onegraph.build(pipe, None, frame)
    assert any(o.name.startswith("onegraph.check:unknown:") for o in model.graph.output)
    rows = frame.head(4).assign(sex=["male", "unknown", "female", None])
    with pytest.raises(UnknownCategoryError, match="'sex'.*'unknown'.*row 1"):
        onegraph.score(model, rows)
    got = onegraph.score(model, frame.head(4))  # known values (and a missing one, imputed) pass
    assert "onegraph.check:unknown:sex" not in got.columns


def test_wrong_types_are_named(fitted):
    _, model, frame = fitted
    with pytest.raises(ColumnTypeError, match="'island'.*int64 values in a text column"):
        onegraph.score(model, frame.head(2).assign(island=[1, 2]))
    with pytest.raises(ColumnTypeError, match="'year'"):
        onegraph.score(model, frame.head(2).assign(year=["2007", "later"]))
    with pytest.raises(DataError, match="different lengths|where the other columns have"):
        onegraph.score(model, {"island": ["Dream", "Biscoe"], "sex": ["male"], **{c: [1.0, 2.0] for c in NUMERIC}})


def test_bad_model_inputs_are_named(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        onegraph.score(tmp_path / "nope.onnx", {"a": 1})
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00\x01garbage" * 10)
    with pytest.raises(ModelFileError):
        onegraph.score(junk, {"a": 1})


def test_models_not_built_by_onegraph_are_fed_by_input_names(tmp_path):
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "g",
                              [helper.make_tensor_value_info("a", TensorProto.DOUBLE, [None]),
                               helper.make_tensor_value_info("b", TensorProto.DOUBLE, [None])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    got = onegraph.score(model, pd.DataFrame({"a": [1.0, 2.0], "b": [10.0, np.nan]}))
    np.testing.assert_array_equal(got["y"].to_numpy(), [11.0, np.nan])


def test_cached_session_follows_the_file(fitted, tmp_path, penguins):
    pipe, model, frame = fitted
    path = tmp_path / "m.onnx"
    onegraph.save_model(model, path)
    first = onegraph.score(path, frame.head(2))
    scaler = StandardScaler().fit(frame[NUMERIC])
    onegraph.build(scaler, None, frame, path=path)  # rewritten in place: a new session is opened
    second = onegraph.score(path, frame.head(2))
    assert "label" in first.columns and list(second.columns) == NUMERIC
    loaded = onnx.load(path)
    assert loaded.graph.output[0].name in ("bill_length_mm", "bill_length_mm.out")


def test_one_row_given_as_a_series_keeps_its_label(penguins_onnx, penguins):
    """A new user's case: score(model, df.loc[5]) (one row as a Series) answered with index [0]; the row's
    label is its name, as df.loc[[5]] gives it."""
    rows = penguins.drop(columns="species").set_index(pd.Index(range(100, 100 + len(penguins))))
    one = onegraph.score(penguins_onnx, rows.loc[105])
    framed = onegraph.score(penguins_onnx, rows.loc[[105]])
    pd.testing.assert_frame_equal(one, framed)
    assert list(one.index) == [105]


def test_a_file_is_looked_at_again_after_the_window_or_a_write(fitted, tmp_path, penguins, monkeypatch):
    """score(path) trusts the file it looked at for RECHECK_NS (10 ms) without an os.stat; a file written by
    onegraph in this process, or after the window by anyone, is seen on the next call."""
    import importlib
    import time

    score_module = importlib.import_module("onegraph.runtime.score")  # the module (the package exports the function)

    pipe, model, frame = fitted
    path = tmp_path / "m.onnx"
    onegraph.save_model(model, path)
    rows = frame.head(2)
    assert "label" in onegraph.score(path, rows).columns
    looks = []
    real_stat = os.stat
    monkeypatch.setattr(score_module.os, "stat", lambda p, *a, **k: (looks.append(p), real_stat(p, *a, **k))[1])
    monkeypatch.setattr(score_module, "RECHECK_NS", 10**12)  # a slow machine stays within the window
    onegraph.score(path, rows)
    assert looks == []  # within the window: no system call
    # rewritten by onegraph itself (build's atomic write): seen at once, window or not
    onegraph.build(StandardScaler().fit(frame[NUMERIC]), None, frame, path=path)
    looks.clear()
    assert list(onegraph.score(path, rows).columns) == NUMERIC and path in looks
    # rewritten by another program (onnx.save, as another process would): seen once the window has passed
    onnx.save(model, path)
    monkeypatch.setattr(score_module, "RECHECK_NS", 10_000_000)
    time.sleep(0.02)
    assert "label" in onegraph.score(path, rows).columns


def test_a_missing_file_is_looked_at_on_every_call(tmp_path, fitted):
    _, model, frame = fitted
    path = tmp_path / "gone.onnx"
    for _ in range(2):
        with pytest.raises(ModelFileError):
            onegraph.score(path, frame.head(1))
    onegraph.save_model(model, path)
    assert "label" in onegraph.score(path, frame.head(1)).columns


def test_rows_taken_from_one_frame_share_where_its_columns_are(fitted):
    """A loop of ``score(model, df.iloc[[i]])``: each row is a new DataFrame with an Index of its own, over the
    same labels; where each input sits (and their blocks) is worked out once, and a frame of the same labels in another order
    is read by its own order."""
    pipe, model, frame = fitted
    session = onegraph.Session(model)
    for i in (3, 10, 200):
        assert_scores(session.score(frame.iloc[[i]]), expected(pipe, frame.iloc[[i]]))
    assert len(session._rows._positions) == 1
    reordered = frame[frame.columns[::-1]]
    assert_scores(session.score(reordered.iloc[[5]]), expected(pipe, frame.iloc[[5]]))
    assert len(session._rows._positions) == 2


def test_one_row_frame_changed_between_calls_is_read_as_it_is_now(fitted):
    """The single-row path remembers where each input sits in a frame's blocks: the same frame scored again
    after a value is set in place, a column is replaced by one of another dtype, or a column is inserted
    and the columns reordered, answers for what the frame holds at each call."""
    pipe, model, frame = fitted
    session = onegraph.Session(model)
    row = frame.iloc[[7]].copy()
    assert_scores(session.score(row), expected(pipe, row))
    assert len(session._rows._slot_plans) == 1  # the fast path read it
    row.loc[row.index[0], "bill_length_mm"] = 59.0  # in place: same blocks
    assert_scores(session.score(row), expected(pipe, row))
    row["island"] = row["island"].astype(object)  # a text column of another array type
    row["bill_depth_mm"] = row["bill_depth_mm"].astype(np.float32)  # another dtype: converted by the general path
    assert_scores(session.score(row), expected(pipe, row))
    row.insert(0, "extra", [1.5])
    row = row[row.columns[::-1]]
    assert_scores(session.score(row), expected(pipe, row.drop(columns="extra")))
    row.loc[row.index[0], "bill_length_mm"] = np.nan
    assert_scores(session.score(row), expected(pipe, row.drop(columns="extra")))


def _score_module():
    import importlib

    return importlib.import_module("onegraph.runtime.score")  # the module (the package exports the function)


def test_a_copy_with_text_as_object_takes_the_fast_path_too(fitted):
    """A copy shares its frame's block placements; with its text columns turned into object arrays (2-D blocks,
    not 1-D Arrow strings) the same placements hold the values on another axis: both frames are read by the
    single-row path, each as it is, alternately."""
    pipe, model, frame = fitted
    session = onegraph.Session(model)
    row = frame.iloc[[7]].copy()
    as_object = row.copy()
    for column in ("island", "sex"):
        as_object[column] = as_object[column].astype(object)
    for _ in range(2):
        for one in (row, as_object):
            assert session._rows.frame(one) is not None
            assert_scores(session.score(one), expected(pipe, one))


def test_a_relative_path_is_the_file_of_the_working_folder(fitted, frame_models, tmp_path, monkeypatch):
    """Two folders, a model.onnx in each: a relative path names the current folder's, whatever the window (the
    10 ms shortcut is for absolute paths only; a new user's loop got the other folder's model 87 times in 200)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = frame_models
    onegraph.save_model(first, tmp_path / "a" / "model.onnx")
    onegraph.save_model(second, tmp_path / "b" / "model.onnx")
    monkeypatch.setattr(_score_module(), "RECHECK_NS", 10**12)
    rows = fitted[2].head(3)
    want = {f: onegraph.score(tmp_path / f / "model.onnx", rows).columns.tolist() for f in "ab"}
    assert want["a"] != want["b"]
    for folder in "abab":
        monkeypatch.chdir(tmp_path / folder)
        assert onegraph.score("model.onnx", rows).columns.tolist() == want[folder]
        # absolute, but through the process's own working folder
        assert onegraph.score("/proc/self/cwd/model.onnx", rows).columns.tolist() == want[folder]


@pytest.fixture
def frame_models(fitted):
    """The penguins classifier and a scaler of its numbers: two models of other outputs."""
    _, model, frame = fitted
    return model, onegraph.build(StandardScaler().fit(frame[NUMERIC]), None, frame)


def test_a_copy_keeping_the_time_and_size_is_seen(fitted, tmp_path, monkeypatch):
    """``shutil.copy2`` of a model of the same size over the scored file keeps its inode, size and modification
    time; the inode's change time tells it apart (the old key never did: the old model was scored for good)."""
    pipe, model, frame = fitted
    other = make_pipeline(clone(pipe[0]), LogisticRegression(C=2.0, max_iter=1000)).fit(frame, pipe.predict(frame))
    live, spare = tmp_path / "live.onnx", tmp_path / "spare.onnx"
    onegraph.save_model(model, live)
    onegraph.build(other, None, frame, path=spare)
    assert live.stat().st_size == spare.stat().st_size
    rows = frame.head(5)
    before = onegraph.score(live, rows)
    monkeypatch.setattr(_score_module(), "RECHECK_NS", 0)
    stamp = live.stat().st_mtime_ns
    live.write_bytes(spare.read_bytes())  # in place, as copy2 writes
    os.utime(live, ns=(stamp, stamp))
    after = onegraph.score(live, rows)
    np.testing.assert_array_equal(after.iloc[:, 1:].to_numpy(),
                                  onegraph.Session(spare).score(rows).iloc[:, 1:].to_numpy())
    assert not np.array_equal(after.iloc[:, 1:].to_numpy(), before.iloc[:, 1:].to_numpy())


def test_a_session_of_a_file_that_changed_while_it_was_read_is_not_cached(fitted, tmp_path, monkeypatch):
    """The file's version is looked at before it is read: a file replaced (or created) in between gives a session
    that may be of another version than the key says; it serves that call and is not kept (a file deleted
    for good had been scored with such a session)."""
    _, model, frame = fitted
    score_module = _score_module()
    path = tmp_path / "m.onnx"
    onegraph.save_model(model, path)
    real = score_module.Session

    def touched(*args, **kwargs):
        session = real(*args, **kwargs)
        os.utime(path, ns=(1, 1))  # another process rewrote it meanwhile
        return session

    monkeypatch.setattr(score_module, "Session", touched)
    assert "label" in onegraph.score(path, frame.head(1)).columns
    assert not any(s._owner == path for s in score_module._CACHE.values() if hasattr(s, "_owner"))
    monkeypatch.setattr(score_module, "RECHECK_NS", 0)
    path.unlink()
    with pytest.raises(ModelFileError, match="does not exist"):
        onegraph.score(path, frame.head(1))


def test_a_model_path_holding_a_nul_is_a_missing_file():
    with pytest.raises(ModelFileError, match="does not exist: its path holds a NUL"):
        onegraph.score("models/a\x00b.onnx", {"bill_length_mm": 1.0})


def test_threads_scoring_two_models_each_get_their_own(fitted, frame_models, tmp_path):
    """The last call's path, session and time are one tuple read and replaced whole: a thread switch between
    two of them had given one thread the other's model (a new user's probe: 64 of 40,000 calls)."""
    import sys
    import threading

    first, second = frame_models
    paths = [tmp_path / "first.onnx", tmp_path / "second.onnx"]
    onegraph.save_model(first, paths[0])
    onegraph.save_model(second, paths[1])
    row = fitted[2].head(1)
    want = [onegraph.score(p, row).columns.tolist() for p in paths]
    wrong = []

    def loop(i: int) -> None:
        for _ in range(1500):
            if onegraph.score(paths[i], row).columns.tolist() != want[i]:
                wrong.append(i)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads as often as the interpreter allows
    try:
        threads = [threading.Thread(target=loop, args=(i,)) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []


def test_a_wide_one_hot_model_is_scored_in_batches_its_widest_value_bounds(airports):
    """One-hot of the airports' names and cities: ~6,000 doubles a row. build records the width (row_width);
    a Session scores in batches that keep that value near BATCH_BYTES (a new user's 200,000 rows in 65,536-row
    batches were OOM-killed at 23 GB; scikit-learn's sparse one-hot took 0.5 GB)."""
    from onegraph.runtime.session import BATCH_BYTES

    table = airports[["name", "city", "latitude"]]
    y = np.where(airports["longitude"] < -95, "west", "east")
    pipe = make_pipeline(ColumnTransformer([
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         ["name", "city"]), ("num", StandardScaler(), ["latitude"])]), LogisticRegression(max_iter=1000)).fit(table, y)
    model = onegraph.build(pipe, None, table)
    width = int({p.key: p.value for p in model.metadata_props}["org.onegraph.row_width"])
    assert 5000 < width <= pipe[0].transform(table.head(1)).shape[1]  # the one-hot block (+ the number)
    session = onegraph.Session(model)
    assert session.batch_size == BATCH_BYTES // (8 * width) < 2000
    rows = pd.concat([table] * 2, ignore_index=True)
    seen = []
    call = session._call
    session._call = lambda feeds, first_row=0: (seen.append(len(next(iter(feeds.values())))), call(feeds, first_row))[1]
    got = session.score(rows)
    assert max(seen) <= session.batch_size and sum(seen) == len(rows)
    assert (got["label"].to_numpy() == pipe.predict(rows)).all()
    # each row's logit sums two one-hot weights and one scaled number: double rounding of a few terms
    np.testing.assert_allclose(got.iloc[:, 1:].to_numpy(float), pipe.predict_proba(rows), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("field", ["row_width", "inputs", "outputs", "sequence", "media"])
def test_a_metadata_field_written_as_null_is_read_as_absent(fitted, field):
    """``onegraph meta set MODEL row_width=null`` is valid metadata; scoring failed on it with a TypeError
    (exit 70 from the command line). A null field says nothing: the model scores as without it."""
    pipe, model, frame = fitted
    edited = onnx.ModelProto()
    edited.CopyFrom(model)
    for prop in edited.metadata_props:
        if prop.key == f"org.onegraph.{field}":
            prop.value = "null"
            break
    else:
        edited.metadata_props.add(key=f"org.onegraph.{field}", value="null")
    got, want = onegraph.Session(edited).score(frame.head(20)), expected(pipe, frame.head(20))
    if field == "outputs":  # read from the graph: no class names, probabilities_0, _1, _2
        got.columns = want.columns
    assert_scores(got, want)


def test_naming_one_results_axes_leaves_the_others_alone(fitted):
    """Results share their axes' labels, not the Index objects: ``result.index.name = ...`` (a pandas idiom) on
    one result renames nothing else, for a dict (a RangeIndex) and for a frame (the template's columns)."""
    _, model, frame = fitted
    session = onegraph.Session(model)
    record = {k: (None if pd.isna(v) else v) for k, v in frame.iloc[0].to_dict().items()}
    first, second = session.score(record), session.score(frame.iloc[[5]])
    first.index.name, first.columns.name, second.columns.name = "request", "output", "out"
    later, later_frame = session.score(record), session.score(frame.iloc[[5]])
    assert later.index.name is None and later.columns.name is None and later_frame.columns.name is None
    assert second.columns.name == "out" and list(later.columns) == list(first.columns)


def test_live_results_never_share_an_axis_and_a_dropped_results_axes_are_given_again(fitted):
    """A result's axes are given to the next result only once nothing holds them (the loop of single-row calls
    that drops each result): results kept, axes kept without their frame and renamed axes are never shared,
    from one thread or four."""
    _, model, frame = fitted
    session = onegraph.Session(model)
    record = {k: (None if pd.isna(v) else v) for k, v in frame.iloc[0].to_dict().items()}
    first = session.score(frame.iloc[[1]])
    dropped = id(first.columns)
    del first
    assert id(session.score(frame.iloc[[2]]).columns) == dropped  # given again: nothing held it (still kept)
    one = session.score(record)
    rows = id(one.index)
    del one
    assert id(session.score(record).index) == rows
    # an axis a weak reference (weakref.finalize too) reaches, or carrying an attribute, is never given again
    freed: list = []
    watches = {"ref": weakref.ref, "finalize": lambda axis: weakref.finalize(axis, freed.append, "finalize"),
               "proxy": lambda axis: weakref.proxy(axis, lambda _: freed.append("proxy")),
               "values": lambda axis: weakref.WeakValueDictionary({"axis": axis})}
    for kind, watch in watches.items():
        marked = session.score(record)
        marked.index.origin = "the first result"
        watched = session.score(frame.iloc[[3]])  # the last result: its columns are the ones kept
        seen = watch(watched.columns)
        del watched, marked
        later = session.score(frame.iloc[[4]]), session.score(record)
        assert not hasattr(later[1].index, "origin")
        if kind == "ref":  # pandas' own plain weak reference, handed out again: dead, not the new result's
            assert seen() is None
        elif kind == "values":
            assert len(seen) == 0
        else:
            assert freed[-1] == kind
        del seen
    # the labels every result's columns read are not writable through numpy (pandas' own frames each have theirs)
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(later[0].columns)[0] = "changed"
    assert later[0].columns[0] == session.score(record).columns[0] != "changed"

    def calls(start: int) -> list:
        held = []
        for k in range(start, start + 60):
            out = session.score(record if k % 2 else frame.iloc[[k % len(frame)]])
            if k % 3 == 0:
                held.append(out)
            elif k % 3 == 1:
                held.append(out.columns)  # an axis kept without its frame
                held.append(out.index if k % 2 else None)
            else:
                out.columns.name = "renamed"  # renamed, then dropped: never given again
        return held

    with ThreadPoolExecutor(4) as pool:
        held = [x for part in pool.map(calls, range(0, 240, 60)) for x in part] + calls(300)
    live = [a for x in held if x is not None for a in ((x.columns, x.index) if isinstance(x, pd.DataFrame) else (x,))]
    assert len({id(a) for a in live}) == len(live) > 200
    assert all(a.name is None for a in live)


def test_a_frame_read_back_from_a_pickle_takes_the_single_row_path(fitted, tmp_path):
    """Unpickled arrays carry dtype objects equal to numpy's own, not the same objects: the fast path compares
    dtypes by value."""
    pipe, model, frame = fitted
    frame.to_pickle(tmp_path / "rows.pkl")
    back = pd.read_pickle(tmp_path / "rows.pkl").iloc[[7]]
    session = onegraph.Session(model)
    assert session._rows.frame(back) is not None
    assert_scores(session.score(back), expected(pipe, back))
