"""Shared fitted objects for the compose / adapter tests (cached: fitted once per test session)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline

from onegraph.datasets import load_penguins
from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

ROOT = Path(__file__).resolve().parents[1]
NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TEXT = ["island", "sex"]


def preprocessing() -> ColumnTransformer:
    return ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMERIC),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), TEXT),
    ])


@functools.cache
def penguins() -> tuple[pd.DataFrame, pd.Series, ColumnTransformer, pd.DataFrame]:
    """Rows (without the target), species, the fitted preprocessing and its output."""
    frame = load_penguins()
    y = frame.pop("species")
    pre = preprocessing().fit(frame, y)
    return frame, y, pre, pre.transform(frame)


def species_codes(y: pd.Series) -> tuple[np.ndarray, dict]:
    classes = sorted(y.unique())
    return y.map({c: i for i, c in enumerate(classes)}).to_numpy(), dict(enumerate(classes))


@functools.cache
def fraud() -> dict:
    """The fraud example fitted small (150 cards, 2 epochs) and built into one graph."""
    sys.path.insert(0, str(ROOT / "examples" / "fraud_lstm"))
    import pipeline

    fitted = pipeline.fit(cards=150, epochs=2, seed=1)
    fitted["onnx"] = pipeline.build(fitted["preprocessing"], fitted["model"], fitted["train"].head(1500))
    fitted["module"] = pipeline
    return fitted
