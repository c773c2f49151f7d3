"""Merging client deltas of a 100 MB model: time and peak memory for 10 vs 100 clients.

Model: six 2048 x 2048 float32 layers (MatMul + Add + Relu), 100.7 MB; every layer's weight and bias exchanged.
Deltas: client 0's is written by ``onegraph.federated.make_delta``; the others carry the same header (own
sample counts) and their own random tensors, written with safetensors (100.7 MB each, 10 GB for 100).

Each measurement runs in its own process (``python bench/federated.py --child ...``), so its peak resident
memory is the merge's alone: ``VmHWM`` of ``/proc/self/status``, the high-water mark of this process image
(``getrusage``'s ``ru_maxrss`` would not do: Linux carries it over from the parent through fork and exec). The
time is taken inside the process around the call, after the imports. Because every measurement needs a process
of its own, ``_timing.interleaved`` (calls in one process) does not fit; the same scheme is kept by hand:
candidates run in interleaved rounds (every candidate once per round, in turn; the best time and the highest peak
over the rounds are kept):

* ``fedavg`` / ``median`` / ``trimmed-mean``: ``onegraph.federated.average(base, deltas, method=...)``,
  writing the merged model (the safe loader's pre-check of the base model runs in a process of its own: its
  time is counted, its memory is not);
* ``read floor`` (anchor): reading every tensor of every delta once with safetensors and dropping it, the
  I/O and decoding no merge can avoid;
* ``numpy in memory`` (anchor, 10 clients only): loading the deltas whole and ``numpy.average`` over the
  stack, what streaming avoids (100 clients would need ~20 GB).

Run: ``python bench/federated.py [--rounds 1] [--methods fedavg,median,trimmed-mean] [--clients 10,100]
[--workdir DIR]`` (the deltas need ~10 GB, checked before anything is written; without ``--workdir`` they go to
a new temporary folder, which is deleted at the end unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt  # noqa: E402

LAYERS, WIDTH = 6, 2048


def build_model(path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(LAYERS):
        inits += [numpy_helper.from_array(rng.normal(0, WIDTH ** -0.5, (WIDTH, WIDTH)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(np.zeros(WIDTH, np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"h{i}"])]
        prev = f"h{i}"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", WIDTH])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", WIDTH])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), path)


def make_deltas(base: Path, folder: Path, n: int) -> list[Path]:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import save_file

    from onegraph import federated as fed

    paths = [folder / f"client{i:03d}.safetensors" for i in range(n)]
    if not paths[0].exists():
        values = fed.get_parameters(base)
        rng = np.random.default_rng(1)
        local = fed.set_parameters(base, {k: v + rng.normal(0, 1e-3, v.shape).astype(v.dtype)
                                          for k, v in values.items()})
        fed.make_delta(local, base, paths[0], samples=50)
        del local, values
    with safe_open(paths[0], framework="numpy") as f:
        header = dict(f.metadata())
        shapes = {k: f.get_slice(k).get_shape() for k in f.keys()}
    for i, path in enumerate(paths[1:], start=1):
        if path.exists():
            continue
        rng = np.random.default_rng(1000 + i)
        tensors = {k: rng.standard_normal(s, dtype=np.float32) * np.float32(1e-3) for k, s in shapes.items()}
        save_file(tensors, path, metadata={**header, "samples": str(50 + i % 100)})
    return paths


def child(args: argparse.Namespace) -> None:
    """One measurement, in this process: print JSON with the seconds and the peak resident memory."""
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file

    import onegraph.io  # noqa: F401  (imported lazily by the merge: its import time is not the merge's)
    from onegraph import federated as fed

    deltas = [Path(p) for p in sorted(Path(args.workdir).glob("client*.safetensors"))[:args.clients]]
    before = _peak_kib()
    start = time.perf_counter()
    if args.child == "read floor":
        for d in deltas:
            with safe_open(d, framework="numpy") as f:
                for k in f.keys():
                    f.get_tensor(k)
    elif args.child == "numpy in memory":
        loaded = [load_file(d) for d in deltas]
        weights = [int(50 + i % 100) for i in range(len(deltas))]
        for k in loaded[0]:
            np.average(np.stack([d[k] for d in loaded]), axis=0, weights=weights)
    else:
        fed.average(Path(args.workdir) / "base.onnx", deltas, method=args.child, path=Path(args.workdir) / "out.onnx")
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_kib": _peak_kib(), "start_kib": before}))


def _peak_kib() -> int:
    """Peak resident memory of this process image, KiB (Linux ``VmHWM``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise SystemExit("no VmHWM in /proc/self/status: this benchmark measures memory on Linux only")


def run(name: str, clients: int, workdir: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", name, "--clients", str(clients), "--workdir",
                           str(workdir)], capture_output=True, text=True, env={**os.environ})
    if done.returncode != 0:
        raise SystemExit(f"{name} x{clients} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--methods", default="fedavg,median,trimmed-mean")
    ap.add_argument("--clients", default="10,100")
    ap.add_argument("--workdir", help="folder for the model and the deltas (default: a new temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the model and delta files")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.clients = int(args.clients)
        child(args)
        return
    counts = [int(c) for c in args.clients.split(",")]
    own = args.workdir is None  # a folder of our own is removed at the end; a given one only loses our files
    workdir = Path(tempfile.mkdtemp(prefix="onegraph-bench-federated-") if own else args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    needed = (max(counts) + 3) * 4 * LAYERS * WIDTH * (WIDTH + 1)
    free = shutil.disk_usage(workdir).free
    if free < 1.2 * needed:
        raise SystemExit(f"{workdir} has {free / 1e9:.1f} GB free; the model and deltas need {needed / 1e9:.1f} GB")
    base = workdir / "base.onnx"
    best: dict[tuple[str, int], dict] = {}
    try:
        if not base.exists():
            build_model(base)
        start = time.perf_counter()
        make_deltas(base, workdir, max(counts))
        size = (workdir / "client000.safetensors").stat().st_size
        print(f"model {base.stat().st_size / 1e6:.1f} MB, {max(counts)} deltas of {size / 1e6:.1f} MB "
              f"({max(counts) * size / 1e9:.1f} GB in {workdir}) ready in {time.perf_counter() - start:.0f} s",
              flush=True)
        candidates = [(m, n) for m in args.methods.split(",") for n in counts]
        candidates += [("read floor", n) for n in counts] + [("numpy in memory", min(counts))]
        for i in range(args.rounds):
            for name, n in candidates:
                r = run(name, n, workdir)
                print(f"round {i + 1}: {name} x{n}: {r['seconds']:.2f} s, peak {r['peak_kib'] / 1024:.0f} MiB",
                      flush=True)
                old = best.get((name, n))
                best[(name, n)] = {"seconds": min(r["seconds"], old["seconds"]) if old else r["seconds"],
                                   "peak_kib": max(r["peak_kib"], old["peak_kib"]) if old else r["peak_kib"],
                                   "start_kib": r["start_kib"]}
    finally:
        if not args.keep:
            for p in [*workdir.glob("client*.safetensors"), base, workdir / "out.onnx"]:
                p.unlink(missing_ok=True)
            if own:
                shutil.rmtree(workdir, ignore_errors=True)
    model_mb = 4 * LAYERS * WIDTH * (WIDTH + 1) / 2 ** 20
    small, large = min(counts), max(counts)
    print(f"best time / highest peak RSS over {args.rounds} interleaved rounds; model {model_mb:.1f} MiB")
    print(f"{'candidate':18s} {'clients':>7s} {'time':>12s} {'peak RSS':>10s} {'x model':>8s}  {'after imports':>13s}")
    for (name, n), r in best.items():
        peak = r["peak_kib"] / 1024
        print(f"{name:18s} {n:7d} {fmt(r['seconds']):>12s} {peak:8.0f} MiB {peak / model_mb:7.2f}x  "
              f"{r['start_kib'] / 1024:10.0f} MiB")
    for name in args.methods.split(",") + ["read floor"]:
        a, b = best[(name, small)], best[(name, large)]
        above = (b["peak_kib"] - b["start_kib"]) / (a["peak_kib"] - a["start_kib"])
        print(f"{name}: {large} vs {small} clients: time {b['seconds'] / a['seconds']:.2f}x, "
              f"peak memory {b['peak_kib'] / a['peak_kib']:.3f}x ({above:.3f}x above imports); time / read floor: "
              f"{a['seconds'] / best[('read floor', small)]['seconds']:.2f}x ({small}), "
              f"{b['seconds'] / best[('read floor', large)]['seconds']:.2f}x ({large})")


if __name__ == "__main__":
    main()
