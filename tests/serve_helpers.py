"""Models, servers and clients shared by the serving tests (tests/test_serve*.py)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onegraph
from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TEXT = ["island", "sex"]


def penguins_pipeline(penguins: pd.DataFrame, *, c: float = 1.0, unknown: str = "ignore"):
    """The quickstart pipeline on the penguins table (``unknown="error"``: the encoders refuse categories
    never seen in fit, a check of the graph); returns (pipeline, features)."""
    frame = penguins.drop(columns="species")
    pipe = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), NUMERIC),
            ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown=unknown)),
             TEXT),
        ]),
        LogisticRegression(max_iter=1000, C=c),
    ).fit(frame, penguins["species"])
    return pipe, frame


def build_penguins(penguins: pd.DataFrame, path: Path, **kwargs) -> Path:
    pipe, frame = penguins_pipeline(penguins, **kwargs)
    onegraph.build(pipe, None, frame, path=path)
    return path


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as JSON records, missing values (NaN) as null."""
    return [{k: (None if isinstance(v, float) and math.isnan(v) else (v.item() if isinstance(v, np.generic) else v))
             for k, v in row.items()} for row in frame.to_dict("records")]


def assert_predictions(got: list[dict], expected: pd.DataFrame, *, rtol: float = 1e-12) -> None:
    """JSON predictions equal ``expected`` (an ``onegraph.score`` frame): same columns in order, labels
    equal, numbers within ``rtol``, missing values (NaN / None) as null."""
    assert len(got) == len(expected)
    for rec, (_, row) in zip(got, expected.iterrows()):
        assert list(rec) == [str(c) for c in expected.columns]
        for name, want in row.items():
            value = rec[str(name)]
            if want is None or (isinstance(want, float) and math.isnan(want)) or want is pd.NA:
                assert value is None, (name, value)
            elif isinstance(want, (float, np.floating)):
                assert math.isclose(value, float(want), rel_tol=rtol, abs_tol=1e-15), (name, value, want)
            else:
                assert value == (want.item() if isinstance(want, np.generic) else want), (name, value, want)


def v2_inputs(frame: pd.DataFrame, session) -> list[dict]:
    """JSON v2 input tensors for ``frame``'s rows, typed by the model's metadata (nulls for missing)."""
    from onegraph.serve.protocol import ONNX_DATATYPES

    tensors = []
    for spec in session.inputs:
        values = [None if isinstance(v, float) and math.isnan(v) else v for v in frame[spec.name].tolist()]
        tensors.append({"name": spec.name, "datatype": ONNX_DATATYPES[spec.onnx_type], "shape": [len(frame)],
                        "data": values})
    return tensors


def post_all(url: str, requests: list[tuple[str, dict]], concurrency: int = 32,
             headers: dict | None = None) -> list[httpx.Response]:
    """POST every (path, JSON body) with ``concurrency`` requests in flight; responses in request order."""

    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=concurrency)
        out: list[httpx.Response | None] = [None] * len(requests)
        queue: asyncio.Queue = asyncio.Queue()
        for item in enumerate(requests):
            queue.put_nowait(item)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
            async def worker() -> None:
                while not queue.empty():
                    i, (path, body) = queue.get_nowait()
                    out[i] = await client.post(path, content=json.dumps(body), headers=headers)

            await asyncio.gather(*(worker() for _ in range(concurrency)))
        return out  # type: ignore[return-value]

    return asyncio.run(run())


def one_line_error(response: httpx.Response, status: int, *words: str) -> str:
    """The response is ``status`` with a one-line JSON error holding every word (no traceback)."""
    assert response.status_code == status, (response.status_code, response.text)
    message = response.json()["error"]
    assert "\n" not in message and "Traceback" not in message, message
    for word in words:
        assert word in message, (word, message)
    return message
