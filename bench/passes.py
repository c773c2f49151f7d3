"""onegraph.passes at scale, and what fusion and functions cost or save in onnxruntime.

1. **Scaling.** Synthetic graphs of about 10,000 and 100,000 nodes, made of transformer-style blocks as
   PyTorch's exporter writes them (per node: ``pkg.torch.onnx.name_scopes`` / ``class_hierarchy``; per
   block: a decomposed layer norm, a linear layer, a decomposed GELU; two block classes alternating).
   Timed: grouping by metadata (one call per block, two shared bodies), inlining everything back, and
   fusing the flat graph (layer norm + GELU rules). Target: 10x the nodes costs at most 12x the time.
   Wall time and this process's CPU time of the same runs are both printed.
2. **Fused LSTM.** An LSTM cell unrolled over time steps as PyTorch exports an ``nn.LSTMCell`` loop
   (Gemm, Gemm, Add, Split, Sigmoid x3, Tanh x2, Mul x3, Add per step) against the graph ``fuse`` makes
   of it (one ``LSTM``), run in onnxruntime on the same inputs (outputs checked equal first).
3. **Functions at load.** onegraph's penguins pipeline built with functions (one per step, the default)
   and flat: single-row ``onegraph.score`` and bare session runs; onnxruntime inlines functions when it
   loads a model, so the ratio should be 1.

Every figure is measured in this process, candidates interleaved, the best round kept (bench/_timing.py).

Run: ``python bench/passes.py [--rounds 3] [--sizes 10000 100000] [--steps 50]``
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, interleaved  # noqa: E402

from onegraph import passes  # noqa: E402

NODES_PER_BLOCK = 16  # layer norm (9), linear (2), GELU (5)
FLOAT = ir.DataType.FLOAT


# -- synthetic exporter-like graphs ---------------------------------------------------------------
def blocks_model(n_nodes: int, width: int = 16) -> onnx.ModelProto:
    """About ``n_nodes`` nodes: a chain of blocks, each recorded as one module call."""
    rng = np.random.default_rng(0)
    x = ir.Value(name="x", type=ir.TensorType(FLOAT), shape=ir.Shape([2, width]))
    graph = ir.Graph([x], [], nodes=[], opset_imports={"": 20}, name="blocks")

    def const(array, name):
        value = ir.Value(name=name, const_value=ir.tensor(np.asarray(array)), type=ir.TensorType(
            ir.DataType.from_numpy(np.asarray(array).dtype)), shape=ir.Shape(np.asarray(array).shape))
        graph.register_initializer(value)
        return value

    axes, two, eps = const(np.array([-1], np.int64), "axes"), const(np.float32(2), "two"), const(np.float32(1e-5), "eps")
    half, one, root2 = const(np.float32(0.5), "half"), const(np.float32(1), "one"), const(np.float32(np.sqrt(2)), "sqrt2")
    h = x
    for b in range(max(1, n_nodes // NODES_PER_BLOCK)):
        cls = "A" if b % 2 == 0 else "B"
        meta = {"pkg.torch.onnx.name_scopes": repr(["", f"block{b}", "op"]),
                "pkg.torch.onnx.class_hierarchy": repr(["bench.Model", f"bench.Block{cls}", "aten.op"])}
        scale, bias = const(rng.normal(size=width).astype(np.float32), f"scale{b}"), const(np.zeros(width, np.float32), f"bias{b}")
        weight, lin_b = const(rng.normal(size=(width, width)).astype(np.float32) / 4, f"w{b}"), const(np.zeros(width, np.float32), f"b{b}")

        def op(op_type, *inputs, **attrs):
            node = ir.node(op_type, list(inputs), attributes=attrs or None, metadata_props=dict(meta))
            graph.append(node)
            return node.outputs[0]

        mean = op("ReduceMean", h, axes, keepdims=1)
        d = op("Sub", h, mean)
        var = op("ReduceMean", op("Pow", d, two), axes, keepdims=1)
        normed = op("Add", op("Mul", op("Div", d, op("Sqrt", op("Add", var, eps))), scale), bias)
        y = op("Add", op("MatMul", normed, weight), lin_b)
        if cls == "A":
            h = op("Mul", op("Mul", y, half), op("Add", op("Erf", op("Div", y, root2)), one))
        else:  # the other association: (y * (1 + erf)) * 0.5
            h = op("Mul", op("Mul", y, op("Add", op("Erf", op("Div", y, root2)), one)), half)
    h.name = "y"
    graph.outputs.append(h)
    for v in graph:  # types and shapes recorded, as the exporter records them
        for out in v.outputs:
            out.type = ir.TensorType(FLOAT)
            out.shape = ir.Shape([2, 1] if v.op_type == "ReduceMean" else [2, width])
    return ir.to_proto(ir.Model(graph, ir_version=10))


def best_times(protos: dict[int, onnx.ModelProto], rounds: int) -> dict[tuple[str, str, int], float]:
    """Seconds of group / inline / fuse per size, best of ``rounds`` interleaved rounds (setup untimed).

    Keyed ``(clock, pass, size)``: ``wall`` (``perf_counter``) and ``cpu`` (``process_time``, this process
    only: steadier than wall time on a machine others load) of the same runs.
    """
    ops = {
        "group": (lambda p: ir.from_proto(p), lambda m: passes.group_functions(m)),
        "inline": (lambda p: _grouped(p), lambda m: passes.inline(m)),
        "fuse": (lambda p: ir.from_proto(p), lambda m: passes.fuse(m, ["layer_norm", "gelu"])),
    }
    best: dict[tuple[str, str, int], float] = {}
    for _ in range(rounds):
        for name, (setup, run) in ops.items():
            for size, proto in protos.items():
                model = setup(proto)
                gc.collect()
                wall, cpu = time.perf_counter(), time.process_time()
                run(model)
                for clock, elapsed in (("wall", time.perf_counter() - wall), ("cpu", time.process_time() - cpu)):
                    best[(clock, name, size)] = min(best.get((clock, name, size), float("inf")), elapsed)
    return best


def _grouped(proto: onnx.ModelProto) -> ir.Model:
    model = ir.from_proto(proto)
    passes.group_functions(model)
    return model


# -- unrolled LSTM --------------------------------------------------------------------------------
def unrolled_lstm(steps: int, batch: int, features: int, hidden: int) -> onnx.ModelProto:
    """An ``nn.LSTMCell`` loop as PyTorch's dynamo exporter writes it (one Gemm per weight per step)."""
    rng = np.random.default_rng(1)
    x = ir.Value(name="x", type=ir.TensorType(FLOAT), shape=ir.Shape([batch, steps, features]))
    h = ir.Value(name="h0", type=ir.TensorType(FLOAT), shape=ir.Shape([batch, hidden]))
    c = ir.Value(name="c0", type=ir.TensorType(FLOAT), shape=ir.Shape([batch, hidden]))
    graph = ir.Graph([x, h, c], [], nodes=[], opset_imports={"": 20}, name="unrolled")

    def const(array, name):
        value = ir.Value(name=name, const_value=ir.tensor(array), type=ir.TensorType(
            ir.DataType.from_numpy(array.dtype)), shape=ir.Shape(array.shape))
        graph.register_initializer(value)
        return value

    w_ih = const((rng.normal(size=(4 * hidden, features)) / np.sqrt(features)).astype(np.float32), "w_ih")
    w_hh = const((rng.normal(size=(4 * hidden, hidden)) / np.sqrt(hidden)).astype(np.float32), "w_hh")
    b_ih = const(rng.normal(size=4 * hidden).astype(np.float32) / 10, "b_ih")
    b_hh = const(rng.normal(size=4 * hidden).astype(np.float32) / 10, "b_hh")

    def op(op_type, *inputs, outputs=1, **attrs):
        node = ir.node(op_type, list(inputs), attributes=attrs or None, num_outputs=outputs)
        graph.append(node)
        for v in node.outputs:
            v.type = ir.TensorType(FLOAT)
        return node.outputs[0] if outputs == 1 else node.outputs

    for t in range(steps):
        x_t = op("Gather", x, const(np.array(t, np.int64), f"t{t}"), axis=1)
        x_t.shape = ir.Shape([batch, features])
        gates = op("Add", op("Gemm", h, w_hh, b_hh, transB=1), op("Gemm", x_t, w_ih, b_ih, transB=1))
        gates.shape = ir.Shape([batch, 4 * hidden])
        i, f, g, o = op("Split", gates, outputs=4, axis=1, num_outputs=4)
        c = op("Add", op("Mul", op("Sigmoid", f), c), op("Mul", op("Sigmoid", i), op("Tanh", g)))
        h = op("Mul", op("Sigmoid", o), op("Tanh", c))
        c.shape = h.shape = ir.Shape([batch, hidden])
    h.name = "h"
    graph.outputs.append(h)
    return ir.to_proto(ir.Model(graph, ir_version=10))


def session(proto: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])


def lstm_figures(steps: int, rounds: int) -> list[tuple[str, float, float, float]]:
    rows = []
    for batch in (1, 64):
        unrolled = unrolled_lstm(steps, batch, 32, 64)
        model = ir.from_proto(unrolled)
        counts = passes.fuse(model, ["lstm"])
        assert counts["lstm_sequence"] == 1 and counts["lstm_steps_merged"] == steps, counts
        fused = ir.to_proto(model)
        rng = np.random.default_rng(2)
        feeds = {"x": rng.normal(size=(batch, steps, 32)).astype(np.float32),
                 "h0": np.zeros((batch, 64), np.float32), "c0": np.zeros((batch, 64), np.float32)}
        a, b = session(unrolled), session(fused)
        np.testing.assert_allclose(a.run(None, feeds)[0], b.run(None, feeds)[0], rtol=1e-5, atol=1e-5)
        times = interleaved({"unrolled": lambda: a.run(None, feeds), "fused": lambda: b.run(None, feeds)},
                            rounds=rounds)
        rows.append((f"batch {batch}", times["unrolled"], times["fused"], times["unrolled"] / times["fused"]))
    return rows


# -- functions in a built pipeline ----------------------------------------------------------------
def pipeline_figures(rounds: int) -> dict[str, float]:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.datasets import load_penguins
    from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler
    from onegraph.runtime import cached_session

    df = load_penguins().dropna(subset=["species"])
    y = df.pop("species")
    pipe = make_pipeline(ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()),
         ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         ["island", "sex"])]), LogisticRegression(max_iter=1000)).fit(df, y)
    paths = {}
    for functions in (True, False):
        paths[functions] = Path(f"/tmp/onegraph-bench-passes-{'functions' if functions else 'flat'}.onnx")
        onegraph.build(pipe, None, df, path=paths[functions], functions=functions)
    row = df.iloc[[3]]
    sessions = {k: cached_session(p) for k, p in paths.items()}
    feeds = {k: s.feeds(row)[1] for k, s in sessions.items()}
    names = {k: [o.name for o in s._session.get_outputs()] for k, s in sessions.items()}
    return interleaved({
        "score, functions": lambda: onegraph.score(paths[True], row),
        "score, flat": lambda: onegraph.score(paths[False], row),
        "bare run, functions": lambda: sessions[True]._session.run(names[True], feeds[True]),
        "bare run, flat": lambda: sessions[False]._session.run(names[False], feeds[False]),
    }, rounds=rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs=2, default=[10_000, 100_000])
    ap.add_argument("--steps", type=int, default=50, help="time steps of the unrolled LSTM")
    args = ap.parse_args()

    protos = {n: blocks_model(n) for n in args.sizes}
    small, large = args.sizes
    times = best_times(protos, args.rounds)
    print(f"scaling (best of {args.rounds} interleaved rounds):")
    n_small, n_large = len(protos[small].graph.node), len(protos[large].graph.node)
    for clock in ("wall", "cpu"):
        for name in ("group", "inline", "fuse"):
            a, b = times[(clock, name, small)], times[(clock, name, large)]
            print(f"  {name:7s}{clock:5s} {n_small:>7,} nodes {fmt(a)}   {n_large:>7,} nodes {fmt(b)}   "
                  f"ratio {b / a:5.2f}x for {n_large / n_small:.0f}x nodes   target <= 12x")
    print(f"LSTM over {args.steps} steps (input 32, hidden 64), onnxruntime, one thread:")
    for label, unrolled, fused, ratio in lstm_figures(args.steps, args.rounds):
        print(f"  {label:9s} unrolled {fmt(unrolled)}   fused {fmt(fused)}   fused is {ratio:.2f}x faster")
    figures = pipeline_figures(max(3, args.rounds))
    print("penguins pipeline, one row:")
    for name, t in figures.items():
        print(f"  {name:22s} {fmt(t)}")
    print(f"  functions / flat: score {figures['score, functions'] / figures['score, flat']:.2f}x, "
          f"bare run {figures['bare run, functions'] / figures['bare run, flat']:.2f}x   target ~1")


if __name__ == "__main__":
    main()
