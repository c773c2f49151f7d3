"""Sequences: rows preprocessed once, shaped into windows of their group; the fraud example's one graph."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from compose_helpers import fraud

import onegraph
from onegraph.errors import MissingColumnError
from onegraph.inspect import describe
from onegraph.meta import MetadataError, SequenceSpec, encode
from onegraph.runtime.windows import window_index

pytest.importorskip("torch")


def test_window_index_matches_a_plain_loop():
    frame = fraud()["frame"].head(3000)
    perm, index = window_index(frame["card_id"].to_numpy(), frame["timestamp"], 5)
    rows = frame.iloc[perm]
    assert (np.diff(pd.factorize(rows["card_id"])[0]) >= 0).all()  # one block per card
    for card, block in rows.groupby("card_id", sort=False):
        assert block["timestamp"].is_monotonic_increasing, card
    positions = {row: i for i, row in enumerate(perm)}
    history: dict[str, list[int]] = {}
    for row in frame.sort_values(["card_id", "timestamp"], kind="stable").index:
        seen = history.setdefault(frame.at[row, "card_id"], [])
        seen.append(positions[frame.index.get_loc(row)])
        expected = ([-1] * 5 + seen[-5:])[-5:]
        assert index[positions[frame.index.get_loc(row)]].tolist() == expected


def test_fraud_graph_equals_its_python_pipeline():
    fitted = fraud()
    module, test = fitted["module"], fitted["test"]
    python = module.predict_python(fitted["preprocessing"], fitted["model"], test)
    scores = onegraph.score(fitted["onnx"], test.drop(columns="label"))
    assert (scores.index == test.index).all()
    assert (scores["label"].to_numpy() == python.argmax(axis=1)).all()
    np.testing.assert_allclose(scores[["probabilities_0", "probabilities_1"]].to_numpy(), python, atol=1e-5)
    # rows in any order, scored the same
    shuffled = test.sample(frac=1.0, random_state=3)
    again = onegraph.score(fitted["onnx"], shuffled.drop(columns="label"))
    np.testing.assert_array_equal(again.loc[test.index].to_numpy(), scores.to_numpy())


def test_window_rule_is_in_the_metadata_and_needed_columns_are_named():
    fitted = fraud()
    info = describe(fitted["onnx"])
    assert info["metadata"]["sequence"] == {"group": "card_id", "order": "timestamp", "window": 8,
                                            "padding": "pre", "pad_value": 0.0, "input": "onegraph.window"}
    assert [i["name"] for i in info["inputs"]] == ["timestamp", "merchant", "category", "amount"]
    with pytest.raises(MissingColumnError, match="'card_id'"):
        onegraph.score(fitted["onnx"], fitted["test"].drop(columns=["label", "card_id"]))


def test_sequence_metadata_is_validated():
    with pytest.raises(MetadataError, match="sequence.*window.*greater than or equal to 1"):
        encode({"sequence": {"group": "card", "order": "t", "window": 0}})
    with pytest.raises(MetadataError, match="sequence.*padding.*'pre'"):
        encode({"sequence": {"group": "card", "order": "t", "window": 4, "padding": "post"}})
    assert SequenceSpec.from_dict({"group": "c", "order": "t", "window": 3}).input == "onegraph.window"


def test_records_and_a_single_row_are_scored_as_windows_too():
    fitted = fraud()
    card = fitted["test"][fitted["test"]["card_id"] == fitted["test"]["card_id"].iloc[0]].drop(columns="label")
    from_frame = onegraph.score(fitted["onnx"], card)
    records = card.assign(timestamp=card["timestamp"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f")).to_dict("records")
    np.testing.assert_allclose(onegraph.score(fitted["onnx"], records)["probabilities_1"].to_numpy(),
                               from_frame["probabilities_1"].to_numpy(), atol=1e-6)
    first = {k: (v.item() if hasattr(v, "item") else v) for k, v in card.iloc[0].to_dict().items()}
    alone = onegraph.score(fitted["onnx"], first)  # one row: its window is itself after padding
    assert alone["probabilities_1"].iloc[0] == pytest.approx(from_frame["probabilities_1"].iloc[0], abs=1e-6)
