"""onegraph serve under load: micro-batches, back-pressure (503), timeouts (504), a model swapped under
load without losing a request, the file watch, graceful shutdown. No timing assertions: waits are for
conditions (a queue holding N requests, a version number), each bounded."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

import onegraph
from onegraph.runtime import Session
from onegraph.serve import ServeOptions, Server
from serve_helpers import assert_predictions, build_penguins, one_line_error, post_all, records, v2_inputs

PREDICT = "/v1/models/p:predict"


@pytest.fixture(scope="module")
def versions(penguins, tmp_path_factory):
    """Two penguins models computing different probabilities (C=1 and C=0.01), and the table."""
    folder = tmp_path_factory.mktemp("serve-load")
    return (build_penguins(penguins, folder / "a.onnx"), build_penguins(penguins, folder / "b.onnx", c=0.01),
            penguins.drop(columns="species"))


def until(condition, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def replace(source: Path, target: Path) -> None:
    """Write ``source``'s bytes over ``target`` atomically (as onegraph build writes a model)."""
    tmp = target.with_suffix(".tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def post_json(url: str, body: dict) -> httpx.Response:
    return httpx.post(url, json=body, timeout=60)


def in_background(fn, *args):
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", fn(*args)), daemon=True)
    thread.start()
    return thread, result


def test_concurrent_requests_are_merged_into_batches(versions):
    a, _, frame = versions
    with Server({"p": a}, ServeOptions(max_wait_ms=20), port=0) as server:
        responses = post_all(server.url, [(PREDICT, {"instances": records(frame.iloc[[i]])}) for i in range(96)], 32)
        expected = onegraph.score(a, frame.head(96))
        for i, r in enumerate(responses):
            assert_predictions(r.json()["predictions"], expected.iloc[[i]])
        metrics = httpx.get(server.url + "/metrics").text
    merged = [line for line in metrics.splitlines() if line.startswith("onegraph_serve_batch_requests_")]
    total = {line.split("{")[0]: float(line.split()[-1]) for line in merged if "_sum" in line or "_count" in line}
    assert total["onegraph_serve_batch_requests_sum"] == 96
    assert total["onegraph_serve_batch_requests_count"] < 96  # some batch held several requests


def test_full_queue_answers_503_and_a_late_request_504(versions):
    """max_queue 2: a third waiting request is refused at once (503, Retry-After); requests that wait past
    the timeout get 504 and leave the queue; a request filling a batch then runs."""
    a, _, frame = versions
    options = ServeOptions(max_queue=2, max_wait_ms=10_000, timeout_s=1.0, max_batch=4)
    with Server({"p": a}, options, port=0) as server:
        bound = server.repository.models["p"].bound
        body = {"instances": records(frame.iloc[[0]])}
        waiting = [in_background(post_json, server.url + PREDICT, body) for _ in range(2)]
        until(lambda: bound.waiting == 2, "two waiting requests")
        full = httpx.post(server.url + PREDICT, json=body)
        one_line_error(full, 503, "queue limit")
        assert full.headers["retry-after"] == "1"
        for thread, result in waiting:
            thread.join()
            one_line_error(result["value"], 504, "1 s")
        assert bound.waiting == 0
        r = httpx.post(server.url + PREDICT, json={"instances": records(frame.head(4))}, timeout=60)
        assert_predictions(r.json()["predictions"], onegraph.score(a, frame.head(4)))


def test_model_swap_under_load_loses_no_request(versions, tmp_path):
    """480 single-row requests (records and v2), 16 in flight, while the model file is replaced and loaded
    3 times: every request is answered 200 with the values of the version it names."""
    a, b, frame = versions
    live = tmp_path / "live.onnx"
    replace(a, live)
    rows = frame.dropna().reset_index(drop=True)
    scored = {a: onegraph.score(a, rows), b: onegraph.score(b, rows)}
    session = Session(a)
    asked = []
    for i in range(480):
        row = rows.iloc[[i % len(rows)]]
        asked.append((PREDICT, {"instances": records(row)}) if i % 2 else
                     ("/v2/models/p/infer", {"inputs": v2_inputs(row, session)}))
    with Server({"p": live}, port=0) as server:
        served = server.repository.models["p"]
        thread, result = in_background(post_all, server.url, asked, 16)
        for k, source in enumerate([b, a, b], start=2):
            rows_before = served.current.number
            until(lambda: "value" in result or _answered(server) >= 100 * (k - 1), "requests between swaps")
            replace(source, live)
            r = httpx.post(server.url + "/v2/repository/models/p/load", timeout=60)
            assert r.status_code == 200 and r.json()["version"] == str(rows_before + 1), r.text
        thread.join()
    seen = set()
    for i, r in enumerate(result["value"]):
        assert r.status_code == 200, r.text
        version = int(r.headers["onegraph-model-version"])
        seen.add(version)
        expected = scored[a if version % 2 else b].iloc[[i % len(rows)]]
        if i % 2:
            assert_predictions(r.json()["predictions"], expected)
        else:
            out = {o["name"]: o["data"] for o in r.json()["outputs"]}
            assert r.json()["model_version"] == str(version) and out["label"] == expected["label"].tolist()
            np.testing.assert_allclose(out["probabilities"], expected.iloc[0, 1:].to_numpy(float), rtol=1e-12)
    assert len(seen) >= 2  # the requests saw more than one version


def _answered(server) -> float:
    """Requests of model p answered so far (read from the server's registry, not over HTTP)."""
    return sum(sample.value for metric in server.repository.metrics.registry.collect()
               if metric.name == "onegraph_serve_requests" for sample in metric.samples
               if sample.name.endswith("_total") and sample.labels["model"] == "p")


def test_file_watch_loads_a_new_file_and_keeps_serving_through_a_bad_one(versions, tmp_path):
    a, b, frame = versions
    live = tmp_path / "live.onnx"
    replace(a, live)
    body = {"instances": records(frame.head(3))}
    with Server({"p": live}, ServeOptions(watch_s=0.05), port=0) as server:
        served = server.repository.models["p"]
        replace(b, live)
        until(lambda: served.current.version == "2", "the watch to load version 2")
        r = httpx.post(server.url + PREDICT, json=body)
        assert r.headers["onegraph-model-version"] == "2"
        assert_predictions(r.json()["predictions"], onegraph.score(b, frame.head(3)))
        garbage = tmp_path / "garbage.onnx"
        garbage.write_bytes(b"not a model")
        replace(garbage, live)
        until(lambda: served.failed_identity is not None, "the watch to try the bad file")
        assert served.current.version == "2"
        one_line_error(httpx.post(server.url + "/v2/repository/models/p/load"), 400, "not a valid ONNX model")
        r = httpx.post(server.url + PREDICT, json=body)
        assert r.status_code == 200 and r.headers["onegraph-model-version"] == "2"
        assert 'onegraph_serve_model_loads_total{model="p",outcome="failed"}' in httpx.get(server.url + "/metrics").text


def test_a_load_of_an_unchanged_file_keeps_its_version(versions, tmp_path):
    """A load request repeated (a deploy script's retry) made a new version of the same file; versions count
    changes of the file, so a client pinning version 1 was refused for nothing. A changed file still loads."""
    a, b, frame = versions
    live = tmp_path / "live.onnx"
    replace(a, live)
    with Server({"p": live}, port=0) as server:
        for _ in range(2):
            r = httpx.post(server.url + "/v2/repository/models/p/load", timeout=60)
            assert r.status_code == 200 and r.json()["version"] == "1"
        assert httpx.get(server.url + "/v2/models/p/versions/1/ready").status_code == 200
        replace(b, live)
        assert httpx.post(server.url + "/v2/repository/models/p/load", timeout=60).json()["version"] == "2"


def test_shutdown_answers_the_requests_in_flight(versions):
    """Stopping the server while 8 requests wait for their batch: all 8 are answered 200, then it stops."""
    a, _, frame = versions
    server = Server({"p": a}, ServeOptions(max_wait_ms=1000), port=0).start()
    bound = server.repository.models["p"].bound
    waiting = [in_background(post_json, server.url + PREDICT, {"instances": records(frame.iloc[[i]])})
               for i in range(8)]
    until(lambda: bound.waiting == 8, "eight waiting requests")
    server.stop()
    expected = onegraph.score(a, frame.head(8))
    for i, (thread, result) in enumerate(waiting):
        thread.join()
        assert_predictions(result["value"].json()["predictions"], expected.iloc[[i]])
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/v2/health/live")


def test_a_fault_is_500_with_one_line_and_no_traceback(versions, monkeypatch):
    a, _, frame = versions
    with Server({"p": a}, port=0) as server:
        version = server.repository.get("p")

        def broken(payloads):
            raise RuntimeError("boom")

        monkeypatch.setattr(version.records, "_run", broken)
        r = httpx.post(server.url + PREDICT, json={"instances": records(frame.head(1))})
        message = one_line_error(r, 500, "internal error (RuntimeError)")
        assert "boom" not in message


def test_a_copy_keeping_time_and_size_loads_as_a_new_version(penguins, tmp_path):
    """``cp -p`` / ``shutil.copy2`` of a model of the same size over the served file keeps its inode, size and
    modification time (reproducible artifacts carry a fixed one): the file's change time tells the load it
    changed (a new user's deploy kept answering with the old model at version 1)."""
    a = build_penguins(penguins, tmp_path / "a.onnx", c=1.0)
    b = build_penguins(penguins, tmp_path / "b.onnx", c=2.0)
    assert a.stat().st_size == b.stat().st_size
    live = tmp_path / "live.onnx"
    shutil.copy2(a, live)
    frame = penguins.drop(columns="species").head(3)
    with Server({"p": live}, port=0) as server:
        stamp = live.stat().st_mtime_ns
        live.write_bytes(b.read_bytes())  # in place, as copy2 writes, then its time set back
        os.utime(live, ns=(stamp, stamp))
        assert httpx.post(server.url + "/v2/repository/models/p/load", timeout=60).json()["version"] == "2"
        r = httpx.post(server.url + PREDICT, json={"instances": records(frame)}, timeout=60)
        assert_predictions(r.json()["predictions"], onegraph.score(b, frame))
