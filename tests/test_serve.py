"""onegraph serve: both protocols on penguins and cars models, the same values as onegraph.score, bad
requests answered 4xx with one line (the server runs on a free loopback port, in this process)."""

from __future__ import annotations

import gzip
import io
import json
import math
import os
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from serve_helpers import (
    assert_predictions,
    build_penguins,
    one_line_error,
    post_all,
    records,
    v2_inputs,
)

import onegraph
from onegraph.io import read_table
from onegraph.runtime import Session
from onegraph.serve import ServeOptions, Server
from onegraph.serve.lanes import json_value

DATA = Path(__file__).parent / "data"
PREDICT = "/v1/models/{}:predict"
LIMIT = 256 * 1024


@pytest.fixture(scope="module")
def models(penguins, tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve")
    from onegraph.cli.core import build

    build(DATA / "cars.csv", target="Origin", output=folder / "cars.onnx", model=["random_forest"], ensemble=None,
          weights=None, task="auto", test_size=0.2, seed=0)
    return {"penguins": build_penguins(penguins, folder / "penguins.onnx"),
            "strict": build_penguins(penguins, folder / "strict.onnx", unknown="error"),
            "cars": folder / "cars.onnx"}


@pytest.fixture(scope="module")
def server(models):
    with Server(models, ServeOptions(max_body_bytes=LIMIT), port=0) as running:
        yield running


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


def test_records_are_scored_as_onegraph_score_scores_them(client, models, penguins):
    """Every penguins row (missing values as null), in requests of 1, 7 and 344 rows: the rows
    onegraph.score gives on the same rows, and the probabilities scikit-learn gives."""
    from serve_helpers import penguins_pipeline

    frame = penguins.drop(columns="species")
    expected = onegraph.score(models["penguins"], frame)
    pipe, _ = penguins_pipeline(penguins)
    np.testing.assert_allclose(expected.iloc[:, 1:].to_numpy(float), pipe.predict_proba(frame), rtol=1e-9, atol=1e-12)
    assert frame.isna().any(axis=1).sum() > 0  # the table has rows with missing values
    for size in (1, 7, len(frame)):
        for start in range(0, min(len(frame), 3 * size), size):
            part = frame.iloc[start:start + size]
            r = client.post(PREDICT.format("penguins"), json={"instances": records(part)})
            assert r.status_code == 200, r.text
            assert r.headers["onegraph-model-version"] == "1"
            assert_predictions(r.json()["predictions"], expected.iloc[start:start + size])
    # no rows: an empty answer (was 400, "columns ... are required (columns given: )")
    r = client.post(PREDICT.format("penguins"), json={"instances": []})
    assert r.status_code == 200 and r.json()["predictions"] == [], r.text


def test_cars_rows_as_json_csv_and_arrow(client, models):
    """The cars table (text, integers, ISO date text): a CSV body read as `onegraph score` reads the file,
    an Arrow IPC stream, JSON records; answered in CSV, Arrow or JSON."""
    specs = Session(models["cars"]).inputs
    table = read_table(DATA / "cars.csv", specs=specs)
    expected = onegraph.score(models["cars"], table)

    r = client.post(PREDICT.format("cars"), content=(DATA / "cars.csv").read_bytes(), headers={"content-type": "text/csv"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    got = pd.read_csv(io.BytesIO(r.content))
    assert list(got.columns) == list(expected.columns)
    assert (got["label"] == expected["label"]).all()
    np.testing.assert_allclose(got.iloc[:, 1:].to_numpy(float), expected.iloc[:, 1:].to_numpy(float), rtol=1e-12)

    sink = io.BytesIO()
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    with pa.ipc.new_stream(sink, arrow.schema) as writer:
        writer.write_table(arrow)
    r = client.post(PREDICT.format("cars"), content=sink.getvalue(),
                    headers={"content-type": "application/vnd.apache.arrow.stream"})
    assert r.status_code == 200, r.text
    got = pa.ipc.open_stream(r.content).read_all().to_pandas()
    assert list(got.columns) == list(expected.columns) and got["label"].tolist() == expected["label"].tolist()
    np.testing.assert_allclose(got.iloc[:, 1:].to_numpy(float), expected.iloc[:, 1:].to_numpy(float), rtol=1e-12)

    r = client.post(PREDICT.format("cars"), json={"instances": records(table.head(50))},
                    headers={"accept": "text/csv"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    r = client.post(PREDICT.format("cars"), json={"instances": records(table.head(50))})
    assert_predictions(r.json()["predictions"], expected.head(50))


def test_v2_with_the_triton_client(server, models, penguins):
    """The Open Inference Protocol v2 as Triton's own HTTP client speaks it (binary tensors by default):
    health, server and model metadata, inference on every penguins and cars row, errors, repository."""
    tritonclient = pytest.importorskip("tritonclient.http")
    from tritonclient.utils import InferenceServerException

    client = tritonclient.InferenceServerClient(server.url.removeprefix("http://"), network_timeout=60)
    assert client.is_server_live() and client.is_server_ready() and client.is_model_ready("penguins")
    assert "binary_tensor_data" in client.get_server_metadata()["extensions"]
    for name, rows in (("penguins", penguins.drop(columns="species").dropna()),
                       ("cars", read_table(DATA / "cars.csv", specs=Session(models["cars"]).inputs))):
        metadata = client.get_model_metadata(name)
        assert [i["name"] for i in metadata["inputs"]] == [s.name for s in Session(models[name]).inputs]
        assert [(o["name"], o["datatype"], o["shape"]) for o in metadata["outputs"]] == \
            [("label", "BYTES", [-1]), ("probabilities", "FP64", [-1, 3])]
        expected = onegraph.score(models[name], rows)
        inputs = []
        for spec in metadata["inputs"]:
            dtype = {"BYTES": object, "FP64": np.float64, "INT64": np.int64}[spec["datatype"]]
            tensor = tritonclient.InferInput(spec["name"], [len(rows)], spec["datatype"])
            tensor.set_data_from_numpy(rows[spec["name"]].to_numpy(dtype=dtype))
            inputs.append(tensor)
        for binary in (True, False):
            outputs = [tritonclient.InferRequestedOutput(n, binary_data=binary) for n in ("label", "probabilities")]
            result = client.infer(name, inputs, outputs=outputs, request_id="r1")
            assert result.get_response()["id"] == "r1"
            assert [v.decode() if binary else v for v in result.as_numpy("label")] == expected["label"].tolist()
            np.testing.assert_allclose(result.as_numpy("probabilities"), expected.iloc[:, 1:].to_numpy(float),
                                       rtol=1e-12)
        with pytest.raises(InferenceServerException) as bad:
            client.infer(name, inputs[1:])
        assert bad.value.status() == "400" and repr(metadata["inputs"][0]["name"]) in bad.value.message()
    with pytest.raises(InferenceServerException) as unknown:
        client.get_model_metadata("nope")
    assert unknown.value.status() == "404"
    client.load_model("cars")  # the file unchanged: still version 1
    assert {m["name"]: m["version"] for m in client.get_model_repository_index()}["cars"] == "1"
    path = Path(models["cars"])
    copy = path.with_suffix(".copy")
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)  # rewritten as a deploy writes it: a new file, loaded as version 2
    client.load_model("cars")
    assert {m["name"]: m["version"] for m in client.get_model_repository_index()}["cars"] == "2"
    assert client.get_model_metadata("cars", model_version="2")["versions"] == ["2"]


def test_v2_json_missing_values_and_rows(client, models, penguins):
    """JSON v2 tensors with null for missing values score as onegraph.score scores NaN / None."""
    frame = penguins.drop(columns="species").head(40)
    expected = onegraph.score(models["penguins"], frame)
    body = {"inputs": v2_inputs(frame, Session(models["penguins"]))}
    r = client.post("/v2/models/penguins/infer", json=body)
    assert r.status_code == 200, r.text
    out = {o["name"]: o for o in r.json()["outputs"]}
    assert out["label"]["data"] == expected["label"].tolist()
    assert out["probabilities"]["shape"] == [40, 3]
    np.testing.assert_allclose(np.reshape(out["probabilities"]["data"], (40, 3)), expected.iloc[:, 1:].to_numpy(float),
                               rtol=1e-12)
    # [N, 1] tensors and nested data are one value per row too
    for tensor in body["inputs"]:
        tensor["shape"] = [40, 1]
        tensor["data"] = [[v] for v in tensor["data"]]
    assert client.post("/v2/models/penguins/infer", json=body).json()["outputs"] == r.json()["outputs"]


def test_concurrent_requests_of_both_protocols_get_their_own_rows(server, models, penguins):
    """200 single-row requests per protocol (rows with missing values among them), 32 in flight, merged
    into batches: each answer holds its own row's values (compared with onegraph.score on that row)."""
    frame = penguins.drop(columns="species").iloc[::-1].head(200).reset_index(drop=True)
    assert frame.isna().any(axis=1).any()
    expected = onegraph.score(models["penguins"], frame)
    session = Session(models["penguins"])
    rows = [frame.iloc[[i]] for i in range(len(frame))]
    asked = [(PREDICT.format("penguins"), {"instances": records(row)}) for row in rows]
    asked += [("/v2/models/penguins/infer", {"inputs": v2_inputs(row, session)}) for row in rows]
    responses = post_all(server.url, asked, concurrency=32)
    for i, r in enumerate(responses):
        assert r.status_code == 200, r.text
        row = expected.iloc[[i % len(frame)]]
        if i < len(frame):
            assert_predictions(r.json()["predictions"], row)
        else:
            out = {o["name"]: o["data"] for o in r.json()["outputs"]}
            assert out["label"] == row["label"].tolist()
            np.testing.assert_allclose(out["probabilities"], row.iloc[0, 1:].to_numpy(float), rtol=1e-12)


def test_a_refused_row_fails_its_request_alone(server, models, penguins):
    """A category never seen in fit, refused by the model's check, in one of 40 concurrent requests: that
    request gets 400 naming the column, the value and its row; the 39 others their rows."""
    frame = penguins.drop(columns="species").dropna().head(40).reset_index(drop=True)
    expected = onegraph.score(models["strict"], frame)
    asked = [(PREDICT.format("strict"), {"instances": records(frame.iloc[[i]])}) for i in range(len(frame))]
    bad = records(frame.iloc[[0, 1]])
    bad[1]["island"] = "Atlantis"
    asked.insert(17, (PREDICT.format("strict"), {"instances": bad}))
    responses = post_all(server.url, asked, concurrency=16)
    one_line_error(responses.pop(17), 400, "'island'", "Atlantis", "row 1")
    for i, r in enumerate(responses):
        assert r.status_code == 200, r.text
        assert_predictions(r.json()["predictions"], expected.iloc[[i]])


ROW = {"island": "Biscoe", "bill_length_mm": 45.0, "bill_depth_mm": 15.0, "flipper_length_mm": 210.0,
       "body_mass_g": 5000.0, "sex": "male", "year": 2008}
TYPES = {"island": "BYTES", "sex": "BYTES", "year": "INT64"}


def _v2(**changes) -> dict:
    tensors = [{"name": k, "shape": [1], "datatype": TYPES.get(k, "FP64"), "data": [v]} for k, v in ROW.items()]
    for tensor in tensors:
        tensor.update(changes.get(tensor["name"], {}))
    return {"inputs": tensors}


BAD = [  # (method, path, body, headers, status, words the one-line error holds)
    ("POST", PREDICT.format("penguins"), b"{not json", {}, 400, ["not JSON"]),
    ("POST", PREDICT.format("penguins"), json.dumps({"rows": []}).encode(), {}, 400, ["'instances'"]),
    ("POST", PREDICT.format("penguins"), json.dumps({"instances": [1, 2]}).encode(), {}, 400, ["instance 0"]),
    ("POST", PREDICT.format("penguins"), json.dumps({"instances": [ROW, dict(ROW, bill_depth_mm="deep")]}).encode(),
     {}, 400, ["'bill_depth_mm'", "row 1"]),
    ("POST", PREDICT.format("penguins"), json.dumps({"instances": [ROW, ROW, dict(ROW, year=2008.5)]}).encode(),
     {}, 400, ["'year'", "row 2"]),
    ("POST", PREDICT.format("penguins"), json.dumps({"instances": [{k: v for k, v in ROW.items() if k != "sex"}]}
                                                    ).encode(), {}, 400, ["'sex'", "missing"]),
    ("POST", PREDICT.format("nope"), json.dumps({"instances": [ROW]}).encode(), {}, 404, ["'nope'", "penguins"]),
    # an instance of no keys was scored as no rows (200, no prediction); a key absent from one instance only (a
    # misspelt 'islnd') as a missing value
    ("POST", PREDICT.format("penguins"), b'{"instances": [{}]}', {}, 400, ["'island'", "missing", "no columns"]),
    ("POST", PREDICT.format("penguins"), json.dumps({"instances": [ROW, {"islnd": "Dream", **{k: v for k, v in ROW.items()
     if k != "island"}}]}).encode(), {}, 400, ["'island'", "record 1", "'islnd'", "null"]),
    ("POST", PREDICT.format("penguins"), b"a,b\n1,2\n", {"content-type": "text/csv"}, 400, ["'island'"]),
    ("POST", PREDICT.format("penguins"), b'island,"x\n1', {"content-type": "text/csv"}, 400,
     ["cannot read the CSV body: ", "EOF inside string", "valid CSV"]),  # was "cannot read data file the CSV body"
    ("POST", PREDICT.format("penguins"), b"\x00\x01", {"content-type": "application/vnd.apache.arrow.stream"}, 400,
     ["Arrow"]),
    ("POST", PREDICT.format("penguins"), b"<rows/>", {"content-type": "application/xml"}, 415, ["application/xml"]),
    # an answer of a type not written was 415 (which is about the request's body)
    ("POST", PREDICT.format("penguins"), json.dumps({"instances": [ROW]}).encode(), {"accept": "application/xml"}, 406,
     ["application/xml", "not written"]),
    # were "has no 'inputs' list" (it had one, empty), "has no name" (it had one, not text), "2 elements" (null)
    ("POST", "/v2/models/penguins/infer", b'{"inputs": []}', {}, 400, ["'inputs' list is empty"]),
    ("POST", "/v2/models/penguins/infer", json.dumps({"inputs": [{**_v2()["inputs"][0], "name": 5}]}).encode(), {},
     400, ["input tensor 0 has name 5", "not text"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(sex={"data": None})).encode(), {}, 400,
     ["'sex'", "neither data"]),
    ("POST", PREDICT.format("penguins"), b"x" * (LIMIT + 1), {}, 413, [f"{LIMIT:,} bytes"]),
    ("POST", PREDICT.format("penguins"), gzip.compress(b" " * (LIMIT + 1)), {"content-encoding": "gzip"}, 413,
     [f"{LIMIT:,} bytes"]),
    ("POST", PREDICT.format("penguins"), b"xx", {"content-encoding": "br"}, 415, ["'br'"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(year={"data": [2008.5]})).encode(), {}, 400,
     ["'year'", "element 0"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(island={"datatype": "TEXT"})).encode(), {}, 400,
     ["'island'", "'TEXT'"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(sex={"shape": [1, 2], "data": ["a", "b"]})).encode(), {},
     400, ["'sex'", "[1, 2]"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(sex={"shape": [2], "data": ["male", "male"]})).encode(), {},
     400, ["'sex'", "2 rows"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(bill_length_mm={"data": ["long"]})).encode(), {}, 400,
     ["'bill_length_mm'", "not a number"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(island={"datatype": "FP64", "data": [1.0]})).encode(), {},
     400, ["'island'"]),
    ("POST", "/v2/models/penguins/infer", json.dumps({**_v2(), "outputs": [{"name": "logits"}]}).encode(), {}, 400,
     ["'logits'"]),
    ("POST", "/v2/models/penguins/infer", json.dumps({"inputs": _v2()["inputs"] + [{"name": "extra", "shape": [1],
     "datatype": "FP64", "data": [1]}]}).encode(), {}, 400, ["'extra'"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(sex={"parameters": {"binary_data_size": 99}})).encode(),
     {}, 400, ["'sex'", "binary_data_size"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2()).encode(), {"inference-header-content-length": "x"},
     400, ["Inference-Header-Content-Length"]),
    ("POST", "/v2/models/penguins/versions/7/infer", json.dumps(_v2()).encode(), {}, 404, ["version '7'"]),
    ("POST", "/v2/repository/models/penguins/load", json.dumps({"parameters": {"config": "{}"}}).encode(), {}, 400,
     ["not supported"]),
    # nested past Python's recursion limit: was 500 "internal error (RecursionError)" with a logged traceback
    ("POST", PREDICT.format("penguins"), b'{"instances": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", {}, 400,
     ["not JSON", "recursion"]),
    ("POST", "/v2/models/penguins/infer", b'{"inputs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", {}, 400,
     ["not JSON", "recursion"]),
    # a datatype other than the model's was converted: FP32 48.2 scored as 48.200000762939453, BOOL true as year 1,
    # BYTES "45.0" parsed; Triton refuses a datatype other than the model's
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(bill_length_mm={"datatype": "FP32"})).encode(), {}, 400,
     ["'bill_length_mm'", "datatype FP32", "FP64"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(year={"datatype": "BOOL", "data": [True]})).encode(), {},
     400, ["'year'", "datatype BOOL", "INT64"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(bill_length_mm={"datatype": "BYTES", "data": ["45.0"]})
                                                     ).encode(), {}, 400, ["'bill_length_mm'", "datatype BYTES"]),
    ("POST", "/v2/models/penguins/infer", json.dumps(_v2(bill_length_mm={"datatype": "INT64", "data": [2**60]})
                                                     ).encode(), {}, 400, ["'bill_length_mm'", "2**53"]),
    ("GET", "/v2/models/penguins/infer", b"", {}, 405, ["method not allowed"]),
    # was 404 "unknown model 'penguins:predict'" (the GET route of /v1/models/{name} took it)
    ("GET", PREDICT.format("penguins"), b"", {}, 405, ["method not allowed"]),
    ("PUT", PREDICT.format("penguins"), b"", {}, 405, ["method not allowed"]),
    ("GET", "/v3/nothing", b"", {}, 404, ["no route"]),
]


@pytest.mark.parametrize("method,path,body,headers,status,words", BAD,
                         ids=[f"{i}-{b[4]}" for i, b in enumerate(BAD)])
def test_bad_requests_get_one_line_4xx(client, method, path, body, headers, status, words):
    response = client.request(method, path, content=body, headers=headers)
    one_line_error(response, status, *words)


def test_good_v2_request_for_the_bad_cases(client, models):
    """The request the bad cases above alter is itself good (so each case fails for its own reason)."""
    r = client.post("/v2/models/penguins/infer", json=_v2())
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == onegraph.score(models["penguins"], ROW)["label"].tolist()
    r = client.post("/v2/models/penguins/infer", content=gzip.compress(json.dumps(_v2()).encode()),
                    headers={"content-encoding": "gzip"})
    assert r.status_code == 200, r.text


def test_integer_tensors_for_double_inputs_are_exact(client, models):
    """INT64 / INT32 data for an FP64 input (a JSON client's whole numbers) is taken: every such value up to
    2**53 is exact as a double."""
    expected = onegraph.score(models["penguins"], ROW)["probabilities_Adelie"].tolist()
    for datatype in ("INT64", "INT32"):
        r = client.post("/v2/models/penguins/infer", json=_v2(bill_length_mm={"datatype": datatype, "data": [45]}))
        assert r.status_code == 200, r.text
        probabilities = next(o for o in r.json()["outputs"] if o["name"] == "probabilities")
        assert probabilities["data"][0] == expected[0]


def test_metrics(client):
    client.post(PREDICT.format("penguins"), json={"instances": [ROW]})
    client.post(PREDICT.format("penguins"), json={"instances": [dict(ROW, year="x")]})
    text = client.get("/metrics").text
    assert 'onegraph_serve_requests_total{code="200",endpoint="predict",model="penguins"}' in text
    assert 'onegraph_serve_requests_total{code="400",endpoint="predict",model="penguins"}' in text
    assert 'onegraph_serve_request_seconds_bucket{endpoint="predict",le="0.1",model="penguins"}' in text
    assert 'onegraph_serve_batch_rows_count{model="penguins"}' in text
    assert 'onegraph_serve_queue_requests{model="penguins"} 0.0' in text
    assert 'onegraph_serve_model_loads_total{model="penguins",outcome="ok"} 1.0' in text


def test_records_of_every_output_kind():
    """Scored columns of every kind a model outputs (Int64 with missing values, naive and tz-aware datetimes,
    timedeltas, text, bool) as JSON records, missing values as null."""
    from onegraph.serve.lanes import split_frame

    frame = pd.DataFrame({
        "i": pd.array([1, None], dtype="Int64"), "t": pd.to_datetime(["2020-01-01", None]),
        "z": pd.to_datetime(["2020-01-01", None]).tz_localize("UTC").tz_convert("Europe/Paris"),
        "d": pd.to_timedelta([1, None], unit="s"), "s": ["x", None], "b": [True, False], "f": [1.5, np.nan]})
    assert split_frame(frame, [(0, 1), (1, 2)])[1].records() == [dict.fromkeys(frame.columns) | {"b": False}]
    assert split_frame(frame, [(0, 2)])[0].records()[0] == {
        "i": 1, "t": "2020-01-01T00:00:00", "z": "2020-01-01T01:00:00+01:00", "d": "P0DT0H0M1S", "s": "x",
        "b": True, "f": 1.5}


def test_json_values_of_every_missing_kind():
    assert [json_value(v) for v in (np.nan, None, pd.NA, pd.NaT, np.float32(1.5), np.int64(3), "a", True)] == \
        [None, None, None, None, 1.5, 3, "a", True]
    assert json_value(pd.Timestamp("2020-01-02T03:04:05", tz="UTC")) == "2020-01-02T03:04:05+00:00"
    assert math.isinf(json_value(float("inf")))


def test_v2_dates_as_iso_text_or_int64_nanoseconds(tmp_path):
    """A datetime input (int64 nanoseconds in the graph) takes BYTES ISO 8601 text or INT64 nanoseconds over v2,
    and no other datatype (FP64 would be read as a number of nanoseconds)."""
    from onegraph.frame import DateParts

    weather = pd.read_csv(DATA / "seattle-weather.csv", parse_dates=["date"]).head(50)
    fit = weather[["date"]]
    onegraph.build(DateParts(["month", "dayofweek"]).fit(fit), None, fit, path=tmp_path / "dates.onnx")
    expected = onegraph.score(tmp_path / "dates.onnx", weather.head(3)[["date"]])
    dates = weather["date"].head(3)
    with Server({"dates": tmp_path / "dates.onnx"}, ServeOptions(), port=0) as running, \
            httpx.Client(base_url=running.url, timeout=60) as client:
        for tensor in ({"datatype": "BYTES", "data": dates.dt.strftime("%Y-%m-%d").tolist()},
                       {"datatype": "INT64", "data": dates.astype("datetime64[ns]").astype("int64").tolist()}):
            r = client.post("/v2/models/dates/infer", json={"inputs": [{"name": "date", "shape": [3], **tensor}]})
            assert r.status_code == 200, r.text
            got = {o["name"]: o["data"] for o in r.json()["outputs"]}
            assert got and all(got[c] == expected[c].tolist() for c in expected.columns), (got, expected)
        r = client.post("/v2/models/dates/infer", json={"inputs": [{"name": "date", "shape": [3], "datatype": "FP64",
                                                                    "data": [1.0, 2.0, 3.0]}]})
        one_line_error(r, 400, "'date'", "datatype FP64")


def test_a_body_shorter_than_its_length_times_out_and_a_client_gone_is_not_a_fault(models, caplog):
    """A body shorter than its Content-Length (or a slow client) held the connection for ever: now 408 after the
    per-request timeout. A client that closes the connection mid-body was counted as a 500 with a traceback in
    the log: now 499, counted and not logged as a failure."""
    import socket
    import time
    from urllib.parse import urlsplit

    head = (f"POST {PREDICT.format('penguins')} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: {}\r\n\r\n")
    body = json.dumps({"instances": [ROW]}).encode()
    with Server({"penguins": models["penguins"]}, ServeOptions(timeout_s=1.0), port=0) as running:
        url = urlsplit(running.url)
        with socket.create_connection((url.hostname, url.port), timeout=20) as s:
            start = time.perf_counter()
            s.sendall(head.format(len(body) + 100).encode() + body)
            answer = s.recv(65536).decode()
            assert time.perf_counter() - start < 15
        assert answer.startswith("HTTP/1.1 408"), answer
        assert "did not arrive within 1 s" in answer
        with socket.create_connection((url.hostname, url.port), timeout=20) as s:
            s.sendall(head.format(len(body) + 100).encode() + body[:10])
            time.sleep(0.2)
        time.sleep(0.5)
        with httpx.Client(base_url=running.url, timeout=20) as c:
            metrics = c.get("/metrics").text
    assert 'code="408",endpoint="predict",model="penguins"} 1.0' in metrics
    assert 'code="499",endpoint="predict",model="penguins"} 1.0' in metrics and 'code="500"' not in metrics
    assert "Traceback" not in caplog.text and "ClientDisconnect" not in caplog.text
