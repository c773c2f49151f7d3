"""Load test of ``onegraph serve`` against hand-written endpoints for the same model, on loopback.

Model: the penguins pipeline of ``onegraph quickstart`` (impute + scale numbers, impute + one-hot text,
logistic regression), one ``.onnx`` file. Every server is a separate process on 127.0.0.1 running uvicorn
with the same settings (httptools / uvloop when installed, no access log):

* ``onegraph``: ``onegraph serve`` (records endpoint, micro-batching);
* ``floor``: a minimal hand-written FastAPI + onnxruntime endpoint for the same graph: feeds built from the
  JSON rows by hand, one ``InferenceSession.run`` per request, no validation, no missing values;
* ``scikit-learn``: the fitted scikit-learn pipeline behind the same FastAPI endpoint (``predict_proba`` on a
  one-row DataFrame);
* ``ceiling``: starlette (onegraph serve's own stack) parsing the same JSON body and answering a constant,
  no model at all: the most requests per second the HTTP stack gives on this machine, so the bound any
  batching can reach.

Every request is one row (``{"instances": [{...}]}``, rows of the penguins table in turn), sent by ``hey``
(Go; ``apt-get install hey``) at rising concurrency, each run bounded in time (``--seconds``); without
``hey``, an httpx async client (slower: it competes with the servers for the 2 cores). Rounds are
interleaved, the best throughput of each (server, concurrency) kept with its latencies. Then a burst of
10x onegraph's queue size concurrent requests measures its memory (peak RSS) against a burst of 1x: the
queue bound answers 503 instead of holding every request.

Run: ``python bench/serve.py [--rounds 3] [--seconds 2] [--concurrency 1,8,32,64]``
(``--anchor KIND --port P`` runs one anchor server; the bench starts them itself).
"""

# no `from __future__ import annotations`: FastAPI reads the endpoints' annotations (Request) at definition
import argparse
import asyncio
import csv
import io
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
TEXT = ["island", "sex"]
PREDICT = "/v1/models/penguins:predict"


# -- anchors (each runs in its own process) ---------------------------------------------------------
def floor_app(model: str, classes: list[str]):
    """The hand-written endpoint: FastAPI, JSON rows -> feeds -> one onnxruntime run -> JSON."""
    import onnxruntime as ort
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    # the anchor is the hand-written floor: plain onnxruntime on the file the bench itself just built
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    types = {"tensor(double)": np.float64, "tensor(int64)": np.int64, "tensor(string)": object}
    inputs = [(i.name, types[i.type], len(i.shape)) for i in session.get_inputs()]
    app = FastAPI()

    @app.post(PREDICT)
    async def predict(request: Request):
        rows = (await request.json())["instances"]
        feeds = {}
        for name, dtype, rank in inputs:
            values = np.array([r[name] for r in rows], dtype=dtype)
            feeds[name] = values.reshape(-1, 1) if rank == 2 else values
        labels, probabilities = session.run(None, feeds)
        return JSONResponse({"predictions": [
            {"label": label, **{f"probabilities_{c}": float(p) for c, p in zip(classes, row)}}
            for label, row in zip(labels.tolist(), probabilities)]})

    return app


def sklearn_app(pickled: str):
    """The scikit-learn pipeline behind the same FastAPI endpoint."""
    import pandas as pd
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    with open(pickled, "rb") as f:  # written by this bench a moment ago
        pipeline = pickle.load(f)
    classes = [str(c) for c in pipeline.classes_]
    app = FastAPI()

    @app.post(PREDICT)
    async def predict(request: Request):
        frame = pd.DataFrame((await request.json())["instances"])
        probabilities = pipeline.predict_proba(frame)
        labels = pipeline.classes_[probabilities.argmax(axis=1)]
        return JSONResponse({"predictions": [
            {"label": str(label), **{f"probabilities_{c}": float(p) for c, p in zip(classes, row)}}
            for label, row in zip(labels, probabilities)]})

    return app


def ceiling_app():
    """onegraph serve's stack (starlette) reading and parsing the body, answering a constant."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    answer = json.dumps({"predictions": [{"label": "Adelie", "probabilities_Adelie": 1.0,
                                          "probabilities_Chinstrap": 0.0, "probabilities_Gentoo": 0.0}]}).encode()

    async def predict(request: Request) -> Response:
        json.loads(await request.body())
        return Response(answer, media_type="application/json")

    return Starlette(routes=[Route(PREDICT, predict, methods=["POST"])])


def run_anchor(kind: str, port: int, model: str, pickled: str, classes: str) -> None:
    import uvicorn

    app = {"floor": lambda: floor_app(model, classes.split(",")), "scikit-learn": lambda: sklearn_app(pickled),
           "ceiling": ceiling_app}[kind]()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, server_header=False)


# -- the bench --------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build(folder: Path):
    """The quickstart pipeline fitted on penguins, as model.onnx and pipeline.pkl; and request bodies."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.datasets import load_penguins
    from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

    df = load_penguins()
    y = df.pop("species")
    pipeline = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), NUMERIC),
            ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
             TEXT),
        ]),
        LogisticRegression(max_iter=1000),
    ).fit(df, y)
    onegraph.build(pipeline, None, df, path=folder / "penguins.onnx")
    with open(folder / "pipeline.pkl", "wb") as f:
        pickle.dump(pipeline, f)
    complete = df.dropna()  # the floor takes no missing values
    bodies = []
    for i in range(8):
        row = complete.iloc[i * 37 % len(complete)].to_dict()
        row = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        path = folder / f"body{i}.json"
        path.write_text(json.dumps({"instances": [row]}))
        bodies.append(path)
    return folder / "penguins.onnx", folder / "pipeline.pkl", [str(c) for c in pipeline.classes_], bodies


def wait_ready(url: str, process: subprocess.Popen, body: Path, seconds: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server {url} exited with {process.returncode}: {process.stderr.read()[-2000:]}")
        try:
            if httpx.post(url + PREDICT, content=body.read_bytes(), headers={"content-type": "application/json"},
                          timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server {url} did not answer within {seconds} s")


def rss_mib(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of process ``pid``, MiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` and its threads so far, seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(url: str, bodies: list[Path], concurrency: int, seconds: float, count: int | None = None,
         pid: int | None = None) -> dict:
    """One load run: ``concurrency`` clients sending single-row requests for ``seconds`` (or ``count``
    requests in all). Returns requests/s, p50 and p99 latency (s), the count of each status code and, given
    the server's ``pid``, its CPU time per answered request (s; steadier than throughput on a shared machine)."""
    before = cpu_seconds(pid) if pid else 0.0
    if shutil.which("hey"):
        result = _hey(url, bodies[0], concurrency, seconds, count)
    else:
        result = asyncio.run(_httpx(url, bodies, concurrency, seconds, count))
    answered = sum(result["codes"].values())
    result["cpu"] = (cpu_seconds(pid) - before) / answered if pid and answered else float("nan")
    return result


def _hey(url: str, body: Path, concurrency: int, seconds: float, count: int | None) -> dict:
    bound = ["-n", str(count)] if count else ["-z", f"{seconds}s"]
    out = subprocess.run(["hey", *bound, "-c", str(concurrency), "-t", "30", "-m", "POST", "-T",
                          "application/json", "-D", str(body), "-o", "csv", url + PREDICT],
                         capture_output=True, text=True, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    latencies = np.array([float(r["response-time"]) for r in rows])
    ends = np.array([float(r["offset"]) for r in rows]) + latencies
    codes: dict[str, int] = {}
    for r in rows:
        codes[r["status-code"]] = codes.get(r["status-code"], 0) + 1
    return _summary(latencies, float(ends.max()) if len(ends) else seconds, codes)


async def _httpx(url: str, bodies: list[Path], concurrency: int, seconds: float, count: int | None) -> dict:
    import httpx

    contents = [b.read_bytes() for b in bodies]
    latencies: list[float] = []
    codes: dict[str, int] = {}
    budget = [count if count else 10**9]
    deadline = time.perf_counter() + (seconds if not count else 600)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        async def one_client(k: int) -> None:
            i = k
            while budget[0] > 0 and time.perf_counter() < deadline:
                budget[0] -= 1
                start = time.perf_counter()
                try:
                    r = await client.post(PREDICT, content=contents[i % len(contents)],
                                          headers={"content-type": "application/json"})
                    code = str(r.status_code)
                except httpx.HTTPError:
                    code = "error"
                latencies.append(time.perf_counter() - start)
                codes[code] = codes.get(code, 0) + 1
                i += 1

        start = time.perf_counter()
        await asyncio.gather(*(one_client(k) for k in range(concurrency)))
        elapsed = time.perf_counter() - start
    return _summary(np.array(latencies), elapsed, codes)


def _summary(latencies: np.ndarray, elapsed: float, codes: dict[str, int]) -> dict:
    ok = codes.get("200", 0)
    return {"rps": ok / elapsed if elapsed else 0.0, "p50": float(np.percentile(latencies, 50)),
            "p99": float(np.percentile(latencies, 99)), "codes": codes}


def us(seconds: float) -> str:
    return f"{seconds * 1e6:7.0f} us"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"


def verdict(ok: bool) -> str:
    return "met" if ok else "missed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each load run")
    parser.add_argument("--concurrency", default="1,8,32,64")
    parser.add_argument("--max-queue", type=int, default=64, help="onegraph serve's --max-queue for the burst")
    parser.add_argument("--anchor", choices=["floor", "scikit-learn", "ceiling"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--pickled", help=argparse.SUPPRESS)
    parser.add_argument("--classes", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.anchor:
        run_anchor(args.anchor, args.port, args.model, args.pickled, args.classes)
        return
    levels = [int(c) for c in args.concurrency.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="onegraph-bench-serve-"))
    model, pickled, classes, bodies = build(folder)
    onegraph_cli = str(Path(sys.executable).with_name("onegraph"))
    commands = {
        "onegraph": [onegraph_cli, "serve", f"penguins={model}", "--max-queue", str(args.max_queue)],
        "floor": [sys.executable, __file__, "--anchor", "floor", "--model", str(model), "--classes", ",".join(classes)],
        "scikit-learn": [sys.executable, __file__, "--anchor", "scikit-learn", "--pickled", str(pickled)],
        "ceiling": [sys.executable, __file__, "--anchor", "ceiling"],
    }
    servers: dict[str, tuple[str, subprocess.Popen]] = {}
    load_generator = "hey" if shutil.which("hey") else "httpx (async; hey not installed)"
    print(f"single-row requests over loopback, load generator: {load_generator}; {args.rounds} interleaved "
          f"rounds of {args.seconds:g} s per (server, concurrency), best round kept; {os.cpu_count()} cores")
    try:
        for name, command in commands.items():
            port = free_port()
            process = subprocess.Popen([*command, "--port", str(port)], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True)
            servers[name] = (f"http://127.0.0.1:{port}", process)
        for name, (url, process) in servers.items():
            wait_ready(url, process, bodies[0])
            load(url, bodies, 8, 0.5)  # warm-up: connections, caches, first batches
        best: dict[tuple[str, int], dict] = {}
        for _ in range(args.rounds):
            for c in levels:
                for name, (url, process) in servers.items():
                    seconds = args.seconds * (2 if name == "scikit-learn" else 1)
                    result = load(url, bodies, c, seconds, pid=process.pid)
                    if (name, c) not in best or result["rps"] > best[name, c]["rps"]:
                        best[name, c] = result
        print(f"{'server':14s} {'clients':>7s} {'requests/s':>11s} {'p50':>11s} {'p99':>11s} {'server CPU':>14s}  "
              "statuses")
        for c in levels:
            for name in servers:
                r = best[name, c]
                print(f"{name:14s} {c:7d} {r['rps']:11.0f} {ms(r['p50'])} {ms(r['p99'])} {us(r['cpu'])}/req  "
                      f"{r['codes']}")
        target = 32 if 32 in levels else max(levels)
        og, fl, sk, ce = (best[n, target] for n in ("onegraph", "floor", "scikit-learn", "ceiling"))
        print(f"at {target} concurrent clients:")
        print(f"  throughput onegraph / floor        {og['rps'] / fl['rps']:6.2f}x   target >= 3x: "
              f"{verdict(og['rps'] >= 3 * fl['rps'])}")
        print(f"  p99 onegraph / floor               {og['p99'] / fl['p99']:6.2f}x   target <= 2x: "
              f"{verdict(og['p99'] <= 2 * fl['p99'])}")
        print(f"  throughput onegraph / scikit-learn {og['rps'] / sk['rps']:6.1f}x   target >= 50x: "
              f"{verdict(og['rps'] >= 50 * sk['rps'])}")
        print(f"  HTTP stack ceiling / floor         {ce['rps'] / fl['rps']:6.2f}x   (no model: the most any "
              f"batching can give here; onegraph reaches {og['rps'] / ce['rps']:.0%} of it)")
        print(f"  server CPU per request: floor / onegraph {fl['cpu'] / og['cpu']:5.2f}x, ceiling {us(ce['cpu'])}, "
              f"floor {us(fl['cpu'])}, onegraph {us(og['cpu'])} (so onegraph's own work: "
              f"{us(og['cpu'] - ce['cpu'])}, the floor's {us(fl['cpu'] - ce['cpu'])} per request)")
        burst(servers["onegraph"], servers["floor"], bodies, args.max_queue)
    finally:
        for _, process in servers.values():
            process.terminate()
        for name, (_, process) in servers.items():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(folder, ignore_errors=True)


def burst(onegraph_server, floor_server, bodies: list[Path], queue: int) -> None:
    """Peak memory of the servers under bursts of 1x and 10x onegraph's queue size concurrent requests."""
    print(f"bursts (onegraph serve --max-queue {queue}): each client sends one request at once; peak RSS")
    peaks = {}
    for name, (url, process) in (("onegraph", onegraph_server), ("floor", floor_server)):
        base = rss_mib(process.pid)[0]
        for times in (1, 10):
            clients = queue * times
            result = load(url, bodies, clients, 0, count=clients * 4)
            now, peak = rss_mib(process.pid)
            peaks[name, times] = peak
            print(f"  {name:9s} {clients:5d} clients x 4 requests: peak RSS {peak:7.1f} MiB (+{peak - base:5.1f} "
                  f"over idle), p99 {ms(result['p99'])}, statuses {result['codes']}")
    grown = peaks["onegraph", 10] - peaks["onegraph", 1]
    print(f"  onegraph's peak grew {grown:.1f} MiB from the 1x to the 10x burst; target: bounded (<= 64 MiB "
          f"more for 9x the clients, the excess answered 503): {verdict(grown <= 64)}")


if __name__ == "__main__":
    main()
