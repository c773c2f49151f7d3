"""Regenerate the malformed-model regression corpus: one small reproducer per public crash class.

Run from the repository root::

    python tests/data/malformed/make_corpus.py

It rewrites the ``.onnx`` / ``.bin`` files of this folder and ``corpus.json`` (file -> crash class, the codes
``onegraph check`` must report, the public report it reproduces). Symbolic and hard links cannot live in git
(git stores no hard links), so :func:`make_links` builds those two cases in a scratch folder at test time.

Every model is built from scratch with ``onnx.helper`` / ``onnx.parser`` (deterministic: no timestamps, a
seeded generator for the random bytes). ``tests/test_check_corpus.py`` checks each file and asserts the
codes while the test process survives.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
WEIGHTS = "weights.bin"  # 2 x 3 float32, the external data of the external-data cases


def _matmul_model(location: str, *, offset: int | None = None, length: int | None = 24) -> onnx.ModelProto:
    """``Y = X @ W`` with ``W`` (2 x 3 float32) stored as external data at ``location``."""
    w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2, 3])
    w.data_location = TensorProto.EXTERNAL
    entries = {"location": location}
    if offset is not None:
        entries["offset"] = str(offset)
    if length is not None:
        entries["length"] = str(length)
    for key, value in entries.items():
        w.external_data.add(key=key, value=value)
    graph = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="matmul")], "external",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 3])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10,
                             producer_name="onegraph-corpus")


def _parsed(text: str) -> onnx.ModelProto:
    model = onnx.parser.parse_model(text)
    model.producer_name = "onegraph-corpus"
    return model


def _valid() -> onnx.ModelProto:
    return _parsed("""<ir_version: 10, opset_import: ["" : 21]>
graph (float[4] x) => (float[4] y) { t = Relu (x)  y = Neg (t) }""")


def _huge_initializer() -> onnx.ModelProto:
    w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 20, 1 << 10])
    graph = helper.make_graph([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], "huge",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10,
                             producer_name="onegraph-corpus")


def _overflow_dims() -> onnx.ModelProto:
    model = _huge_initializer()
    del model.graph.initializer[0].dims[:]
    model.graph.initializer[0].dims.extend([1 << 62, 1 << 62])
    return model


def _huge_constant_of_shape() -> onnx.ModelProto:
    shape = numpy_helper.from_array(np.array([1 << 20, 1 << 20, 1 << 10], dtype=np.int64), "shape")
    graph = helper.make_graph([helper.make_node("ConstantOfShape", ["shape"], ["Y"], name="fill")], "alloc", [],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], [shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10,
                             producer_name="onegraph-corpus")


def _raw_data_length() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones((2, 3), dtype=np.float32), "W")
    w.raw_data = w.raw_data[:10]
    graph = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="matmul")], "raw",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 3])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10,
                             producer_name="onegraph-corpus")


def _folded_constant_of_shape() -> onnx.ModelProto:
    """``ConstantOfShape(Mul(Constant, Constant))``: no stored tensor is large, the shape is [100000, 1000000]
    float (400 GB) once the constants are folded."""
    return _parsed("""<ir_version: 10, opset_import: ["" : 21]>
graph () => (float y) {
   a = Constant <value = int64[1] {1000}> ()
   b = Constant <value = int64[2] {100, 1000}> ()
   shape = Mul (a, b)
   y = ConstantOfShape (shape)
}""")


def _gather_nd_batch_dims() -> onnx.ModelProto:
    """``GatherND`` with ``batch_dims = 1`` over constant data [2, 3] and indices [5, 1]: the batch dims differ."""
    return _parsed("""<ir_version: 10, opset_import: ["" : 21]>
graph (int64[1] unused) => (float y) {
   data = Constant <value = float[2, 3] {1, 2, 3, 4, 5, 6}> ()
   indices = Constant <value = int64[5, 1] {0, 1, 2, 0, 1}> ()
   y = GatherND <batch_dims = 1> (data, indices)
}""")


def _with_metadata(key: str, value: str) -> onnx.ModelProto:
    model = _valid()
    model.metadata_props.add(key=key, value=value)
    return model


def _huge_input_dim() -> onnx.ModelProto:
    return _parsed("""<ir_version: 10, opset_import: ["" : 21]>
graph (float[N, 2147483648, 128] x) => (float[N, 2147483648, 128] y) { y = Relu (x) }""")


#: file -> (crash class, model builder, codes that must be reported, public report)
CASES = {
    "traversal-dotdot.onnx": ("path traversal: '..'", lambda: _matmul_model(f"../{WEIGHTS}"), ["C102"],
                              "onnx/onnx#3991, CVE-2022-25882"),
    "traversal-nested.onnx": ("path traversal: nested 'sub/../../'", lambda: _matmul_model(f"sub/../../{WEIGHTS}"),
                              ["C102"], "CVE-2024-27318 (GHSA-whh8-fjgc-qp73)"),
    "traversal-absolute.onnx": ("path traversal: absolute path", lambda: _matmul_model("/etc/passwd"), ["C101"],
                                "onnx/onnx#3991"),
    "traversal-backslash.onnx": ("path traversal: Windows separators", lambda: _matmul_model(f"..\\..\\{WEIGHTS}"),
                                 ["C102"], "CVE-2024-27318"),
    "external-out-of-bounds.onnx": ("external data: offset + length beyond the file",
                                    lambda: _matmul_model(WEIGHTS, offset=16, length=24), ["C107"],
                                    "onnx ExternalDataInfo bounds checks (CWE-400), CVE-2026-34445"),
    "external-length.onnx": ("external data: length not dims x dtype", lambda: _matmul_model(WEIGHTS, length=12),
                             ["C108"], "onnx docs/ExternalData.md"),
    "huge-dims.onnx": ("huge declared dims (gigabytes)", _huge_initializer, ["C204"],
                       "issue 7: huge declared dims allocate gigabytes"),
    "dims-overflow.onnx": ("dims whose product overflows int64", _overflow_dims, ["C203"],
                           "issue 7: products of dims that overflow"),
    "huge-constant-of-shape.onnx": ("huge allocation at load (constant folding)", _huge_constant_of_shape, ["C204"],
                                    "issue 7: huge declared dims allocate gigabytes"),
    "folded-constant-of-shape.onnx": ("huge allocation from folded constants", _folded_constant_of_shape,
                                      ["C204"], "issue 14, kind 10: ConstantOfShape of Mul(Constant, Constant)"),
    "gathernd-batch-dims.onnx": ("GatherND batch_dims against constant shapes", _gather_nd_batch_dims, ["C315"],
                                 "issue 14, kind 10: GatherND whose batch_dims disagrees with its constants"),
    "metadata-nested.onnx": ("metadata JSON nested past the recursion limit", lambda: _with_metadata(
        "org.onegraph.outputs", "[" * 5000 + "]" * 5000), ["C601"],
                             "issue 14, kind 3: RecursionError from nested metadata in score / show"),
    "metadata-wrong-type.onnx": ("metadata of the wrong JSON type", lambda: _with_metadata(
        "org.onegraph.inputs", '{"name": "x"}'), ["C601"], "issue 14, kind 3: a dict where the schema wants a list"),
    "huge-input-dim.onnx": ("input dim of 2^31: no feed fits the memory limit", _huge_input_dim, ["C602"],
                            "issue 14, kind 3: convert / compare generate a 1 TiB random feed"),
    "raw-data-length.onnx": ("raw_data shorter than dims x dtype", _raw_data_length, ["C201"],
                             "out-of-bounds reads of tensor data"),
    "gemm-garbage-attributes.onnx": ("Gemm with garbage attributes", lambda: _parsed(
        """<ir_version: 10, opset_import: ["" : 6]>
graph (double[2,1] in0, double in1, double[2] in2) => (double out0) {
   out0 = Gemm <alpha: float = 1, beta: float = -693.752, broadcast: int = -436, transB: int = 823> (in0, in1, in2)
}"""), ["C311", "C312"], "onnx/onnx#6185"),
    "conv-rank0-weight.onnx": ("Conv with a rank-0 weight", lambda: _parsed(
        """<ir_version: 9, opset_import: ["" : 11]>
graph (float[7,6,1,5] in0, float in1, float[7,2,3,2,1] in2) => (float out0) {
   out0 = Conv <auto_pad = "NOTSET", group = 1> (in0, in1, in2)
}"""), ["C312"], "onnx/onnx#6180"),
    "too-many-inputs.onnx": ("node with more inputs than its schema", lambda: _parsed(
        """<ir_version: 10, opset_import: ["" : 21]>
graph (float[2] x) => (float[2] y) { y = Relu (x, x, x) }"""), ["C301"], "onnx/onnx#5989"),
    "imputer-no-input.onnx": ("Imputer without input", lambda: _parsed(
        """<ir_version: 8, opset_import: ["" : 13, "ai.onnx.ml": 1]>
graph (float[1,2] x) => (float y) {
   y = ai.onnx.ml.Imputer <imputed_value_floats = [1.0], replaced_value_float = 0.0> ()
}"""), ["C301"], "microsoft/onnxruntime#4349"),
    "cycle.onnx": ("nodes in a cycle", lambda: _parsed(
        """<ir_version: 10, opset_import: ["" : 21]>
graph (float[2] x) => (float[2] y) { a = Add (x, b)  b = Relu (a)  y = Neg (b) }"""), ["C304"],
                   "issue 7: undefined inputs and cycles"),
    "undefined-input.onnx": ("node input nothing defines", lambda: _parsed(
        """<ir_version: 10, opset_import: ["" : 21]>
graph (float[2] x) => (float[2] y) { y = Add (x, ghost) }"""), ["C303"], "issue 7: undefined inputs"),
    "opset-too-new.onnx": ("opset onnxruntime cannot run", lambda: _with_opset(_valid(), 99), ["C401"],
                           "issue 7: opsets onnxruntime cannot run"),
    "unknown-operator.onnx": ("operator nothing defines", lambda: _parsed(
        """<ir_version: 10, opset_import: ["" : 21, "com.example": 1]>
graph (float[2] x) => (float[2] y) { y = com.example.Mystery (x) }"""), ["C403"],
                              "issue 7: operators onnxruntime cannot run"),
    "checker-segfault-labelencoder.onnx": ("onnx.checker segfault found by onegraph's fuzzer", lambda: _parsed(
        """<ir_version: 10, opset_import: ["" : 21, "ai.onnx.ml" : 4]>
graph (float[N] x) => (int64[N] y) {
   n = Resize (x)
   y = ai.onnx.ml.LabelEncoder <keys_floats = [1.0], values_int64s = [1]> (n)
}"""), ["C003"], "bench/fuzz.py case 237 of seed 20240617: onnx 1.23.2 full_check segfaults in LabelEncoder "
                 "shape inference when its input has no type (Resize without scales or sizes)"),
}
#: the onnx release the crash cases above crash (a later one may report C501 / C502 instead)
CRASHES_WITH_ONNX = "1.23.2"
#: file -> (crash class, how it is made, codes, public report) for cases made from bytes, not models
BYTE_CASES = {
    "truncated.onnx": ("truncated file", "the first half of valid.onnx", ["C001"], "fuzzing of onnx loading"),
    "random-bytes.onnx": ("random bytes", "512 bytes of random.Random(7)", ["C001"], "fuzzing of onnx loading"),
}
#: made at test time by make_links(): (crash class, codes, public report)
LINK_CASES = {
    "symlink": ("external data through a symbolic link", ["C103"], "CVE-2026-27489, onnx/onnx#7616"),
    "hardlink": ("external data file with two hard links", ["C104"], "onnx/onnx#7686, CVE-2026-34446"),
}


def _with_opset(model: onnx.ModelProto, version: int) -> onnx.ModelProto:
    model.opset_import[0].version = version
    return model


def make_links(folder: Path) -> dict[str, Path]:
    """Build the symbolic-link and hard-link cases in ``folder``; returns case name -> model path."""
    folder = Path(folder)
    paths = {}
    for case in LINK_CASES:
        sub = folder / case
        sub.mkdir(parents=True, exist_ok=True)
        target = sub / "real.bin"
        target.write_bytes(np.arange(6, dtype=np.float32).tobytes())
        link = sub / WEIGHTS
        if case == "symlink":
            link.symlink_to(target.name)
        else:
            os.link(target, link)
        model = sub / f"{case}.onnx"
        model.write_bytes(_matmul_model(WEIGHTS).SerializeToString())
        paths[case] = model
    return paths


def main(folder: Path = HERE) -> None:
    (folder / WEIGHTS).write_bytes(np.arange(6, dtype=np.float32).tobytes())
    manifest = {}
    for name, (what, build, codes, source) in CASES.items():
        (folder / name).write_bytes(build().SerializeToString())
        manifest[name] = {"class": what, "codes": codes, "source": source}
        if "C003" in codes:
            manifest[name]["onnx"] = CRASHES_WITH_ONNX
    valid = _valid().SerializeToString()
    (folder / "valid.onnx").write_bytes(valid)
    (folder / "truncated.onnx").write_bytes(valid[: len(valid) // 2])
    (folder / "random-bytes.onnx").write_bytes(bytes(random.Random(7).randrange(256) for _ in range(512)))
    for name, (what, _, codes, source) in BYTE_CASES.items():
        manifest[name] = {"class": what, "codes": codes, "source": source}
    for name, (what, codes, source) in LINK_CASES.items():
        manifest[name] = {"class": what, "codes": codes, "source": source, "made_by": "make_links()"}
    (folder / "corpus.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {len(manifest) - len(LINK_CASES)} files and corpus.json to {folder}", file=sys.stderr)


if __name__ == "__main__":
    main()
