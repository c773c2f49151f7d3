"""Fuzzing the checker: mutate valid models, check every mutant, prove the calling process survives.

A mutant is a valid seed model changed by one to three mutations, chosen by a seeded ``random.Random`` (so
case ``i`` of seed ``s`` is the same file on every machine, and a crash names its reproducer):

* bytes: bit flips, truncation, deleted / duplicated / inserted chunks, "interesting" bytes written over;
* fields of the parsed seed (our own valid message, so parsing it here is safe): dims set to extremes
  (-1, 0, 2**31, 2**62, 2**63-1), unknown data types, raw_data cut or grown, attribute values at extremes or
  of the wrong type, inputs added / dropped / emptied / pointed at later nodes (cycles), operators swapped,
  opset and IR versions at extremes, external-data locations (traversal, absolute, missing, NUL), outputs
  dropped or invented.

:func:`campaign` checks the mutants with :func:`onegraph.check.run.check_many` (two checking processes,
each reused from mutant to mutant) and tallies what the checker reported. ``tests/test_check_fuzz.py`` runs a
bounded budget on every CI run; ``bench/fuzz.py`` runs long campaigns.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
from onnx import TensorProto, helper, numpy_helper

from onegraph.check.findings import CheckReport
from onegraph.check.limits import Limits
from onegraph.check.run import Source, check_many

__all__ = ["INTERESTING_INTS", "INTERESTING_DIMS", "INTERESTING_FLOATS", "INTERESTING_BYTES", "LOCATIONS",
           "OPERATORS", "seed_models", "Mutator", "cases", "CONTAINED", "CampaignResult", "campaign"]

INTERESTING_INTS = [0, 1, -1, 2, 3, 255, 65535, 2**31 - 1, -(2**31), 2**32, 2**40, 2**62, 2**63 - 1, -(2**63)]
INTERESTING_DIMS = [-1, 0, 1, 2**31, 2**40, 2**62, 2**63 - 1]
INTERESTING_FLOATS = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e308, 5e-324, -693.752]
INTERESTING_BYTES = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\x08",
                     b"\x12\xff\xff\xff\xff\x0f"]
LOCATIONS = ["../weights.bin", "sub/../../weights.bin", "/etc/passwd", "..\\weights.bin", "", "missing.bin",
             "weights.bin", "a\x00b", "./weights.bin", "x" * 300]
OPERATORS = ["Relu", "Gemm", "Conv", "MatMul", "Add", "Reshape", "ConstantOfShape", "Expand", "Tile", "Concat",
             "Split", "Einsum", "TopK", "Resize", "Gather", "Slice", "If", "Loop", "Scan", "Cast", "Identity",
             "Imputer", "LabelEncoder", "TreeEnsemble", "Unknown"]


# -- seeds ----------------------------------------------------------------------------------------
def seed_models() -> dict[str, bytes]:
    """Small valid models covering the message kinds the mutations target (each opens in onnxruntime)."""
    rng = np.random.default_rng(0)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    models = {}
    mlp = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm"), helper.make_node("Add", ["h", "b1"], ["hb"]),
         helper.make_node("Relu", ["hb"], ["r"]),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="gemm", transB=1, alpha=1.0)],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(f32(4, 8), "w1"), numpy_helper.from_array(f32(8), "b1"),
         numpy_helper.from_array(f32(2, 8), "w2"), numpy_helper.from_array(f32(2), "b2")])
    models["mlp"] = _model(mlp)
    conv = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Reshape", ["p", "shape"], ["y"])],
        "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12])],
        [numpy_helper.from_array(f32(3, 2, 3, 3), "w"), numpy_helper.from_array(f32(3), "b"),
         numpy_helper.from_array(np.array([1, 12], dtype=np.int64), "shape")])
    models["conv"] = _model(conv)
    ml = helper.make_graph(
        [helper.make_node("Imputer", ["x"], ["i"], domain="ai.onnx.ml", imputed_value_floats=[0.0, 1.0],
                          replaced_value_float=float("nan")),
         helper.make_node("Scaler", ["i"], ["s"], domain="ai.onnx.ml", offset=[0.5, 0.5], scale=[2.0, 2.0]),
         helper.make_node("LinearClassifier", ["s"], ["label", "scores"], domain="ai.onnx.ml",
                          classlabels_ints=[0, 1], coefficients=[1.0, -1.0, -1.0, 1.0], intercepts=[0.1, -0.1])],
        "ml", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", 2])])
    models["ml"] = _model(ml, ml_opset=3)
    models["control"] = _parsed("""<ir_version: 10, opset_import: ["" : 21]>
graph (bool c, float[3] x) => (float[3] y) {
    y = If (c) <then_branch = g1 () => (float[3] t) { t = Relu (x) },
                else_branch = g2 () => (float[3] e) { e = Neg (x) }>
}""")
    models["shapes"] = _parsed("""<ir_version: 10, opset_import: ["" : 21]>
graph (float[2,3] x) => (float[4,3] y, float[2,6] z, float[2,3] f) {
    s = Constant <value = int64[2] {4, 3}> ()
    st = Constant <value = int64[1] {0}> ()
    en = Constant <value = int64[1] {1}> ()
    x0 = Slice (x, st, en)
    y = Expand (x0, s)
    r = Constant <value = int64[2] {1, 2}> ()
    z = Tile (x, r)
    sh = Constant <value = int64[2] {2, 3}> ()
    f = ConstantOfShape <value = float[1] {1.5}> (sh)
}""")
    models["function"] = _parsed("""<ir_version: 10, opset_import: ["" : 21, "local" : 1]>
graph (float[3] x) => (float[3] y) { y = local.Scale (x) }
<domain: "local", opset_import: ["" : 21]>
Scale (a) => (b) { two = Constant <value = float {2.0}> ()  b = Mul (a, two) }""")
    models["strings"] = _parsed("""<ir_version: 10, opset_import: ["" : 21, "ai.onnx.ml" : 4]>
graph (string[N] x) => (int64[N] y) {
    n = Identity (x)
    y = ai.onnx.ml.LabelEncoder <keys_strings = ["a", "b"], values_int64s = [1, 2], default_int64 = 0> (n)
}""")
    return {name: m.SerializeToString() for name, m in models.items()}


def _model(graph: onnx.GraphProto, ml_opset: int | None = None) -> onnx.ModelProto:
    opsets = [helper.make_opsetid("", 21)] + ([helper.make_opsetid("ai.onnx.ml", ml_opset)] if ml_opset else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=10, producer_name="onegraph-fuzz")


def _parsed(text: str) -> onnx.ModelProto:
    model = onnx.parser.parse_model(text)
    model.producer_name = "onegraph-fuzz"
    return model


# -- mutations ------------------------------------------------------------------------------------
class Mutator:
    """Mutations of a model's bytes or fields, driven by ``rng`` (a ``random.Random``)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        #: where external-data mutations point
        self.locations = list(LOCATIONS)
        self._field: list[tuple[str, Callable[[onnx.ModelProto], None]]] = [
            ("dims", self.dims), ("dtype", self.dtype), ("raw_data", self.raw_data), ("attribute", self.attribute),
            ("inputs", self.inputs), ("cycle", self.cycle), ("op_type", self.op_type), ("opset", self.opset),
            ("external", self.external), ("outputs", self.outputs), ("value_shape", self.value_shape),
        ]
        self._bytes: list[tuple[str, Callable[[bytes], bytes]]] = [
            ("bitflip", self.bitflip), ("truncate", self.truncate), ("chunk", self.chunk),
            ("interesting", self.interesting),
        ]

    def mutate(self, data: bytes) -> tuple[bytes, str]:
        """A mutant of ``data`` (a valid model's bytes) and the names of the mutations applied."""
        rng = self.rng
        names = []
        if rng.random() < 0.65:
            model = onnx.ModelProto()
            model.ParseFromString(data)  # a seed: our own valid bytes, never a mutant
            for _ in range(rng.choice((1, 1, 2, 3))):
                name, fn = rng.choice(self._field)
                fn(model)
                names.append(name)
            data = model.SerializeToString()
        if not names or rng.random() < 0.25:
            name, fn = rng.choice(self._bytes)
            data = fn(data)
            names.append(name)
        return data, "+".join(names)

    # bytes
    def bitflip(self, data: bytes) -> bytes:
        buf = bytearray(data)
        for _ in range(self.rng.choice((1, 1, 2, 4, 16))):
            if buf:
                i = self.rng.randrange(len(buf))
                buf[i] ^= 1 << self.rng.randrange(8)
        return bytes(buf)

    def truncate(self, data: bytes) -> bytes:
        return data[: self.rng.randrange(len(data) + 1)]

    def chunk(self, data: bytes) -> bytes:
        if not data:
            return data
        i = self.rng.randrange(len(data))
        j = min(len(data), i + self.rng.randrange(1, 64))
        kind = self.rng.randrange(3)
        if kind == 0:
            return data[:i] + data[j:]
        if kind == 1:
            return data[:j] + data[i:j] + data[j:]
        return data[:i] + self.rng.randbytes(j - i) + data[i:]

    def interesting(self, data: bytes) -> bytes:
        value = self.rng.choice(INTERESTING_BYTES)
        i = self.rng.randrange(len(data) + 1)
        return data[:i] + value + data[i + len(value):]

    # fields
    def _tensors(self, model: onnx.ModelProto) -> list[onnx.TensorProto]:
        found = list(model.graph.initializer)
        for nodes in _node_lists(model):
            for node in nodes:
                found += [a.t for a in node.attribute if a.HasField("t")]
        return found

    def _node(self, model: onnx.ModelProto) -> onnx.NodeProto | None:
        nodes = [n for nodes in _node_lists(model) for n in nodes]
        return self.rng.choice(nodes) if nodes else None

    def dims(self, model: onnx.ModelProto) -> None:
        tensors = self._tensors(model)
        if not tensors:
            return
        t = self.rng.choice(tensors)
        if t.dims and self.rng.random() < 0.8:
            t.dims[self.rng.randrange(len(t.dims))] = self.rng.choice(INTERESTING_DIMS)
        else:
            t.dims.append(self.rng.choice(INTERESTING_DIMS))

    def dtype(self, model: onnx.ModelProto) -> None:
        tensors = self._tensors(model)
        if tensors:
            self.rng.choice(tensors).data_type = self.rng.randrange(0, 30)

    def raw_data(self, model: onnx.ModelProto) -> None:
        tensors = self._tensors(model)
        if not tensors:
            return
        t = self.rng.choice(tensors)
        if t.HasField("raw_data") and self.rng.random() < 0.5:
            t.raw_data = t.raw_data[: self.rng.randrange(len(t.raw_data) + 1)]
        else:
            t.raw_data = self.rng.randbytes(self.rng.choice((0, 1, 7, 64, 4096)))

    def attribute(self, model: onnx.ModelProto) -> None:
        node = self._node(model)
        if node is None:
            return
        rng = self.rng
        if not node.attribute or rng.random() < 0.2:
            node.attribute.append(helper.make_attribute(rng.choice(["transB", "axis", "group", "junk", "to"]),
                                                        rng.choice(INTERESTING_INTS)))
            return
        a = rng.choice(node.attribute)
        kind = rng.randrange(4)
        if kind == 0:
            a.type = rng.choice(list(onnx.AttributeProto.AttributeType.values()))
        elif kind == 1 and a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.FLOAT):
            a.i = rng.choice(INTERESTING_INTS)
            a.f = rng.choice(INTERESTING_FLOATS)
        elif kind == 2:
            del a.ints[:]
            a.ints.extend(rng.choice(INTERESTING_INTS) for _ in range(rng.choice((0, 1, 3, 1000))))
            a.type = onnx.AttributeProto.INTS
        else:
            node.attribute.remove(a)

    def inputs(self, model: onnx.ModelProto) -> None:
        node = self._node(model)
        if node is None:
            return
        rng = self.rng
        kind = rng.randrange(4)
        if kind == 0:
            node.input.extend([rng.choice(list(node.input) or ["ghost"])] * rng.choice((1, 2, 50)))
        elif kind == 1 and node.input:
            del node.input[rng.randrange(len(node.input))]
        elif kind == 2 and node.input:
            node.input[rng.randrange(len(node.input))] = ""
        else:
            node.input.append("ghost")

    def cycle(self, model: onnx.ModelProto) -> None:
        nodes = model.graph.node
        if len(nodes) >= 2:
            i = self.rng.randrange(len(nodes) - 1)
            j = self.rng.randrange(i + 1, len(nodes))
            if nodes[i].input and nodes[j].output:
                nodes[i].input[0] = nodes[j].output[0]

    def op_type(self, model: onnx.ModelProto) -> None:
        node = self._node(model)
        if node is not None:
            node.op_type = self.rng.choice(OPERATORS)
            if self.rng.random() < 0.3:
                node.domain = self.rng.choice(["", "ai.onnx.ml", "com.microsoft", "nowhere"])

    def opset(self, model: onnx.ModelProto) -> None:
        rng = self.rng
        kind = rng.randrange(3)
        if kind == 0 and model.opset_import:
            rng.choice(model.opset_import).version = rng.choice([0, 1, 6, 99, 2**31 - 1, -1])
        elif kind == 1:
            model.ir_version = rng.choice([0, 1, 3, 99, -1])
        elif model.opset_import:
            del model.opset_import[rng.randrange(len(model.opset_import))]

    def external(self, model: onnx.ModelProto) -> None:
        if not model.graph.initializer:
            return
        rng = self.rng
        t = rng.choice(model.graph.initializer)
        t.ClearField("raw_data")
        for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data"):
            t.ClearField(field)
        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        t.external_data.add(key="location", value=rng.choice(self.locations))
        if rng.random() < 0.5:
            t.external_data.add(key="offset", value=str(rng.choice([0, 4, 2**40, -1])))
        if rng.random() < 0.5:
            t.external_data.add(key="length", value=rng.choice(["0", "24", "4096", "-3", "x"]))

    def outputs(self, model: onnx.ModelProto) -> None:
        g = model.graph
        if g.output and self.rng.random() < 0.5:
            del g.output[self.rng.randrange(len(g.output))]
        else:
            g.output.append(helper.make_tensor_value_info("invented", TensorProto.FLOAT, None))

    def value_shape(self, model: onnx.ModelProto) -> None:
        values = [v for v in list(model.graph.input) + list(model.graph.output) if v.type.HasField("tensor_type")]
        if not values:
            return
        shape = self.rng.choice(values).type.tensor_type.shape
        if shape.dim and self.rng.random() < 0.7:
            shape.dim[self.rng.randrange(len(shape.dim))].dim_value = self.rng.choice(INTERESTING_DIMS[1:])
        else:
            shape.dim.add().dim_value = self.rng.choice(INTERESTING_DIMS[1:])


def _node_lists(model: onnx.ModelProto) -> list:
    lists = [model.graph.node] + [f.node for f in model.functions]
    for node in model.graph.node:
        lists += [a.g.node for a in node.attribute if a.HasField("g")]
    return lists


# -- campaigns ------------------------------------------------------------------------------------
def cases(n: int, *, seed: int = 0, seeds: dict[str, bytes] | None = None) -> Iterator[tuple[str, bytes]]:
    """``n`` mutants: (``label``, bytes); the label names the case number, the seed model and the mutations."""
    seeds = seeds or seed_models()
    names = sorted(seeds)
    for i in range(n):
        rng = random.Random(f"{seed}:{i}")
        name = names[i % len(names)]
        data, what = Mutator(rng).mutate(seeds[name])
        yield f"case {i} (seed {seed}, {name}: {what})", data


#: codes meaning the checking process died or hit a limit (each contained; the caller survived)
CONTAINED = ("C003", "C004", "C005", "C006")


@dataclasses.dataclass
class CampaignResult:
    """Tallies of a campaign."""

    cases: int
    seconds: float
    codes: collections.Counter
    contained: list[tuple[str, str]]  # (case label, finding) for every crash / limit the checker contained
    clean: int
    reports: list[CheckReport] = dataclasses.field(default_factory=list, repr=False)

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds else math.inf


def campaign(n: int, *, seed: int = 0, workers: int = 2, limits: Limits | None = None, folder: Path | None = None,
             seeds: dict[str, bytes] | None = None, keep_reports: bool = False) -> CampaignResult:
    """Check ``n`` mutants with ``workers`` checking processes and tally the findings.

    ``folder`` holds a ``weights.bin`` the external-data mutations point at (a scratch folder is best: the
    checks only read it). Each mutant's report says what was found; a crash of a checking process is a
    ``C003`` finding of its mutant, listed in ``contained``. The calling process parses nothing.
    """
    limits = limits or Limits(memory=1 << 30, cpu=20, wall=60)
    base = None if folder is None else str(folder)

    def sources() -> Iterator[Source]:
        for label, data in cases(n, seed=seed, seeds=seeds):
            yield Source(data, base, label)

    start = time.perf_counter()
    codes: collections.Counter = collections.Counter()
    contained, clean, reports = [], 0, []
    for report in check_many(sources(), limits=limits, workers=workers):
        codes.update(set(report.codes()))
        clean += report.ok
        contained += [(report.model, str(f)) for f in report.findings if f.code in CONTAINED]
        if keep_reports:
            reports.append(report)
    return CampaignResult(n, time.perf_counter() - start, codes, contained, clean, reports)
