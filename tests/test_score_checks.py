"""Every check a model computes is honoured by ``score``: built, composed, merged from files, with or without
the check's metadata entry. In-range rows score like scikit-learn; a refused row raises naming column and row."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.contract import metadata as meta
from onegraph.datasets import load_penguins
from onegraph.errors import OutOfRangeError, UnknownCategoryError
from onegraph.export.merge import compose_models
from onegraph.frame import DateParts, OneHotEncoder, StringCase

DATA = Path(__file__).parent / "data"


def _weather():
    frame = pd.read_csv(DATA / "seattle-weather.csv")
    ts = pd.to_datetime(frame["date"], format="%Y/%m/%d").dt.tz_localize("Europe/Paris")
    return pd.DataFrame({"ts": ts}), (frame["weather"] == "rain").map({True: "rain", False: "dry"}).to_numpy()


def _islands():
    frame = load_penguins()
    return frame[["island"]].astype(object), frame["species"].to_numpy()


CASES = {  # name -> (rows, target, preprocessing, a refused row, the error, the column it names)
    "tz": (_weather, lambda: DateParts(["month", "dayofweek", "hour"], tz="Europe/Paris"),
           pd.Timestamp("1800-07-01 12:00", tz="UTC"), OutOfRangeError, "ts"),
    "case": (_islands, lambda: make_pipeline(StringCase("lower"), OneHotEncoder(handle_unknown="ignore")),
             "ÉCOLE", OutOfRangeError, "island"),
    "unknown": (_islands, lambda: OneHotEncoder(handle_unknown="error"), "Atlantis", UnknownCategoryError, "island"),
}


def _strip_check_roles(proto: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the check outputs' metadata entries removed (as an older compose wrote them)."""
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    fields, _ = meta.decode({p.key: p.value for p in out.metadata_props})
    fields["outputs"] = [o for o in fields["outputs"] if o.get("role") != "check"]
    del out.metadata_props[:]
    for k, v in meta.encode(fields).items():
        out.metadata_props.add(key=k, value=v)
    return out


def _models(how: str, frame: pd.DataFrame, pre, lr, folder: Path) -> onnx.ModelProto:
    if how == "build":
        return onegraph.build(make_pipeline(pre, lr), None, sample=frame)
    if how == "compose":
        return onegraph.compose(pre, {"lr": lr}, sample=frame)
    if how == "compose_two":
        return onegraph.compose(pre, {"lr": lr, "lr2": lr}, sample=frame, ensemble="mean")
    if how == "compose_roles_lost":
        return _strip_check_roles(onegraph.compose(pre, {"lr": lr}, sample=frame))
    if how == "onnx_model":  # a preprocessing-only file chained into a matrix model inside compose
        from skl2onnx import to_onnx

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lr_file = to_onnx(lr, np.asarray(pre.transform(frame), np.float64)[:1], options={"zipmap": False})
        onegraph.build(pre, None, sample=frame, path=folder / "pre.onnx")
        (folder / "lr.onnx").write_bytes(lr_file.SerializeToString())
        return compose_models([folder / "pre.onnx", folder / "lr.onnx"], sample=frame)
    if how == "merge_pipelines":
        onegraph.build(make_pipeline(pre, lr), None, sample=frame, path=folder / "a.onnx")
        onegraph.build(make_pipeline(pre, lr), None, sample=frame, path=folder / "b.onnx")
        return compose_models([folder / "a.onnx", folder / "b.onnx"], sample=frame, ensemble="mean")
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["build", "compose", "compose_two", "compose_roles_lost", "onnx_model",
                                 "merge_pipelines"])
@pytest.mark.parametrize("case", list(CASES))
def test_every_check_is_honoured(case, how, tmp_path):
    rows, make, bad, error, column = CASES[case]
    frame, y = rows()
    pre = make().fit(frame)
    x = np.asarray(pre.transform(frame), np.float64)
    lr = LogisticRegression(max_iter=1000).fit(x, y)
    proto = _models(how, frame, pre, lr, tmp_path)

    got = onegraph.score(proto, frame)
    probabilities = got.filter(regex="^probabilities_").to_numpy()  # the skl2onnx file names classes 0, 1
    np.testing.assert_allclose(probabilities, lr.predict_proba(x), atol=1e-5 if how == "onnx_model" else 1e-9)

    refused = frame.iloc[:3].copy()
    refused.index = [10, 11, 12]
    refused[column] = pd.Series([refused[column].iloc[0], bad, refused[column].iloc[2]], index=refused.index,
                                dtype=frame[column].dtype if case != "tz" else None)
    with pytest.raises(error) as info:
        onegraph.score(proto, refused)
    assert column in str(info.value) and "row 1" in str(info.value)


def test_sequence_model_honours_checks():
    torch = pytest.importorskip("torch")
    from onegraph.export import TorchModule
    from onegraph.meta import SequenceSpec
    from onegraph.runtime.windows import window_index

    frame, _ = _weather()
    frame = frame.iloc[:120].assign(station=np.where(np.arange(120) % 2, "north", "south"))
    pre = DateParts(["month", "dayofweek"], tz="Europe/Paris").fit(frame[["ts"]])
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 2, 2), torch.nn.Softmax(dim=1))
    seq = SequenceSpec(group="station", order="ts", window=3, padding="pre")
    from sklearn.compose import ColumnTransformer

    ct = ColumnTransformer([("d", pre, ["ts"])]).fit(frame)
    proto = onegraph.compose(ct, {"net": TorchModule(net, classes=["a", "b"], width=2, steps=3, output="probabilities")},
                             frame, sequence=seq)
    got = onegraph.score(proto, frame)
    perm, index = window_index(frame["station"].to_numpy(), frame["ts"], 3)  # the windows, by hand, in torch
    rows = np.asarray(ct.transform(frame), np.float64)[perm]
    windows = np.vstack([rows, np.zeros((1, 2))])[index]
    with torch.no_grad():
        expected = np.empty((len(frame), 2))
        expected[perm] = net(torch.from_numpy(windows.astype(np.float32))).numpy()
    np.testing.assert_allclose(got[["probabilities_a", "probabilities_b"]].to_numpy(), expected, atol=1e-6)
    refused = frame.copy()
    refused.loc[refused.index[5], "ts"] = pd.Timestamp("1800-07-01", tz="Europe/Paris")
    with pytest.raises(OutOfRangeError, match="'ts'"):
        onegraph.score(proto, refused)


@pytest.mark.parametrize("encoder, advice", [
    ("OneHotEncoder", {"handle_unknown": "ignore"}),
    ("OrdinalEncoder", {"handle_unknown": "use_encoded_value", "unknown_value": -1}),
])
@pytest.mark.parametrize("library", ["sklearn", "onegraph"])
def test_an_unseen_category_error_gives_advice_the_encoder_takes(encoder, advice, library):
    """sklearn-onnx#1132 / #1197 territory: an OrdinalEncoder refusing an unseen island said "set
    handle_unknown='ignore' or 'infrequent_if_exist'", values OrdinalEncoder refuses. Each encoder's check carries
    its own advice; following it, scikit-learn fits and onegraph scores the unseen row."""
    import sklearn.preprocessing

    from onegraph import frame as og_frame

    cls = getattr(sklearn.preprocessing if library == "sklearn" else og_frame, encoder)
    x, y = _islands()
    pipe = make_pipeline(cls(), LogisticRegression(max_iter=500)).fit(x, y)
    proto = onegraph.build(pipe, None, sample=x)
    unseen = pd.DataFrame({"island": ["Atlantis", "Dream"]}, dtype=object)
    with pytest.raises(UnknownCategoryError, match="Atlantis") as caught:
        onegraph.score(proto, unseen)
    said = caught.value.hint
    assert all(f"{k}={v!r}" in said for k, v in advice.items()), said
    fixed = make_pipeline(cls(**advice), LogisticRegression(max_iter=500)).fit(x, y)
    got = onegraph.score(onegraph.build(fixed, None, sample=x), unseen)
    np.testing.assert_allclose(got.filter(like="probabilities_").to_numpy(float), fixed.predict_proba(unseen),
                               rtol=1e-9, atol=1e-12)
