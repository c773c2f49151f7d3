"""Constant folding in the static checks (issue 14, kind 10): allocations and shapes that constants decide are
found before onnxruntime folds or runs them, and no bomb is ever allocated to find it. Run in-process on
models these tests construct."""

from __future__ import annotations

import resource

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import TensorProto, helper, numpy_helper

from onegraph.check import findings
from onegraph.check.static import static_findings

GIB = 1 << 30


def model(body: str, inputs: str = "", opset: int = 21) -> onnx.ModelProto:
    return onnx.parser.parse_model(f"""<ir_version: 10, opset_import: ["" : {opset}]>
g ({inputs}) => (float y) {{ {body} }}""")


def found(m: onnx.ModelProto, memory: int = 4 * GIB) -> list[findings.Finding]:
    return static_findings(m, memory=memory)


def codes(m: onnx.ModelProto, memory: int = 4 * GIB) -> list[str]:
    return [f.code for f in found(m, memory)]


def test_constant_of_shape_of_folded_constants_is_a_400_gb_allocation():
    """The issue's case: the shape is Mul(Constant, Constant); no stored tensor is large."""
    bomb = model("""a = Constant <value = int64[1] {1000}> ()  b = Constant <value = int64[2] {100, 1000}> ()
                    s = Mul (a, b)  y = ConstantOfShape (s)""")
    [f] = found(bomb)
    assert (f.code, f.node, f.tensor, f.field) == ("C204", "#3 ConstantOfShape", "y", "graph.node[3].input[0]")
    assert "[100000, 1000000]" in f.message and "400,000,000,000 bytes" in f.message
    assert codes(bomb, memory=1 << 40) == []  # a limit it fits in


@pytest.mark.parametrize("body, inputs, op", [
    # Expand / Tile / Range / Pad / OneHot / Resize / Upsample / RandomNormal: sizes from (folded) constants
    ("k = Constant <value = int64[2] {1000000, 1000000}> ()  y = Expand (x, k)", "float[1, 1] x", "Expand"),
    ("k = Constant <value = int64[1] {1000000}> ()  r = Concat <axis = 0> (k, k)  y = Tile (x, r)", "float[N, 3] x",
     "Tile"),
    ("a = Constant <value_int = 0> ()  b = Constant <value_float = 1e12> ()  c = Constant <value_int = 1> ()"
     "  y = Range (a, b, c)", "", "Range"),
    ("p = Constant <value = int64[4] {0, 0, 100000, 100000}> ()  y = Pad (x, p)", "float[2, 3] x", "Pad"),
    ("d = Constant <value = int64[1] {1000000000}> ()  v = Constant <value = float[2] {0, 1}> ()"
     "  y = OneHot (x, d, v)", "int64[3] x", "OneHot"),
    ("s = Constant <value = float[4] {1, 1, 100000, 100000}> ()  y = Resize (x, , s)", "float[1, 3, 4, 4] x",
     "Resize"),
    ("s = Constant <value = float[4] {1, 1, 100000, 100000}> ()  y = Upsample (x, s)", "float[1, 3, 4, 4] x",
     "Upsample"),
    ("y = RandomNormal <shape = [1000000, 1000000]> ()", "", "RandomNormal"),
    ("a = Constant <value = float[100000, 1] {}> ()  y = Add (x, x)", "float[100000, 1] x, float[1, 100000] z",
     None),
])
def test_every_size_from_constants_is_bounded(body, inputs, op):
    if op is None:  # broadcasting two declared inputs: [100000, 1] + [1, 100000] is 40 GB
        m = model("y = Add (x, z)", "float[100000, 1] x, float[1, 100000] z")
        op = "Add"
    else:
        m = model(body, inputs, opset=9 if op == "Upsample" else 21)
    got = [f for f in found(m) if f.code in ("C203", "C204")]
    assert [f.code for f in got] == ["C204"] and got[0].node.endswith(op), [str(f) for f in found(m)]


def test_sparse_tensors_are_bounded_as_the_dense_tensors_they_become():
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(1, np.float32), "W"),
                                       numpy_helper.from_array(np.zeros(1, np.int64), "i"), [1 << 20, 1 << 20])
    graph = helper.make_graph([helper.make_node("Identity", ["W"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], sparse_initializer=[sparse])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    [f] = found(m)
    assert (f.code, f.tensor, f.field) == ("C204", "W", "graph.sparse_initializer[0].dims")


def test_a_bomb_is_reported_without_being_allocated():
    """The folding computes sizes before it evaluates: a 4 TiB ConstantOfShape of folded constants is found
    under an address-space limit far below it (the process would die if it allocated)."""
    bomb = model("""a = Constant <value = int64[1] {1048576}> ()  b = Constant <value = int64[2] {1, 1048576}> ()
                    s = Mul (a, b)  t = ConstantOfShape (s)  u = Add (t, t)  y = Relu (u)""")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + (512 << 20), hard))
    try:
        got = found(bomb)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert [f.code for f in got] == ["C204"]  # once, at the ConstantOfShape: not again at Add / Relu


# -- shapes constants make invalid ----------------------------------------------------------------
def test_gather_nd_batch_dims_against_constant_shapes():
    data = "d = Constant <value = float[2, 3] {1, 2, 3, 4, 5, 6}> ()"
    bad_batch = model(f"{data}  i = Constant <value = int64[5, 1] {{0, 1, 2, 0, 1}}> ()  "
                      "y = GatherND <batch_dims = 1> (d, i)")
    [f] = found(bad_batch)
    assert (f.code, f.node, f.field) == ("C315", "#2 GatherND", "graph.node[2].input[1]")
    assert "batch dim 0 is 2 in data and 5 in indices" in f.message
    too_many = model(f"{data}  i = Constant <value = int64[2, 1] {{0, 1}}> ()  y = GatherND <batch_dims = 2> (d, i)")
    assert codes(too_many) == ["C314"]
    last = model(f"{data}  i = Constant <value = int64[2, 2] {{0, 1, 1, 0}}> ()  y = GatherND <batch_dims = 1> (d, i)")
    assert codes(last) == ["C315"]  # indices' last dim 2 > rank 2 - batch_dims 1
    ok = model(f"{data}  i = Constant <value = int64[2, 1] {{0, 2}}> ()  y = GatherND <batch_dims = 1> (d, i)")
    assert codes(ok) == []


@pytest.mark.parametrize("body, inputs, code, field", [
    ("y = Gather <axis = 2> (x, i)", "float[2, 3] x, int64[1] i", "C313", "attribute[axis]"),
    ("k = Constant <value = int64[1] {5}> ()  y = Gather <axis = 1> (x, k)", "float[2, 3] x", "C313", "input[1]"),
    ("y = Concat <axis = 0> (x, z)", "float[2, 3] x, float[2, 3, 4] z", "C314", "input"),
    ("y = Concat <axis = 0> (x, z)", "float[2, 3] x, float[2, 4] z", "C315", "input"),
    ("y = Concat <axis = 3> (x, x)", "float[2, 3] x", "C313", "attribute[axis]"),
    ("y = GatherElements <axis = 0> (x, i)", "float[2, 3] x, int64[2] i", "C314", "input[1]"),
    ("y = Transpose <perm = [0, 0]> (x)", "float[2, 3] x", "C314", "attribute[perm]"),
    ("k = Constant <value = int64[1] {7}> ()  y = Reshape (x, k)", "float[2, 3] x", "C315", "input[1]"),
    ("y = MatMul (x, z)", "float[2, 3] x, float[4, 5] z", "C315", "input[1]"),
    ("a = Constant <value = float[3] {1, 2, 3}> ()  b = Constant <value = float[4] {1, 2, 3, 4}> ()  y = Add (a, b)",
     "", "C315", "input"),
    ("k = Constant <value = int64[1] {3}> ()  y = Unsqueeze (x, k)", "float[2] x", "C313", "input[1]"),
])
def test_shapes_constants_make_invalid(body, inputs, code, field):
    m = model(body, inputs)
    got = [f for f in found(m) if f.code.startswith("C31")]
    assert [(f.code, f.field.rsplit(".", 1)[-1] if "attribute" not in f.field else f.field.split(".")[-1])
            for f in got] == [(code, field)], [str(f) for f in found(m)]
    assert got[0].node


def test_folded_shapes_flow_through_shape_computations():
    """Shape -> Gather -> Concat -> Reshape: what exporters write; folded from the declared input dims."""
    m = model("""s = Shape (x)  i = Constant <value = int64[1] {0}> ()  n = Gather <axis = 0> (s, i)
                 m1 = Constant <value = int64[1] {-1}> ()  k = Concat <axis = 0> (n, m1)  r = Reshape (x, k)
                 big = Constant <value = int64[1] {1000000000}> ()  t = Concat <axis = 0> (n, big)
                 y = Expand (r, t)""", "float[2, 1] x")
    [f] = found(m)
    assert f.code == "C204" and f.node == "#8 Expand" and "[2, 1000000000]" in f.message


def test_new_codes_block_running_not_loading():
    for code in ("C313", "C314", "C315"):
        f = findings.Finding(code, "x", "graph.node[0]")
        assert findings.blocks(f, "run") and not findings.blocks(f, "load")
    assert findings.blocks(findings.Finding("C204", "x", "graph.node[0]"), "load")


def test_valid_exported_shapes_have_no_findings():
    """What exporters write around shapes folds without false alarms."""
    m = model("""s = Shape (x)  a = Constant <value = int64[1] {0}> ()  b = Constant <value = int64[1] {1}> ()
                 n = Slice (s, a, b)  m1 = Constant <value = int64[1] {-1}> ()  k = Concat <axis = 0> (n, m1)
                 r = Reshape (x, k)  o = Constant <value = int64[1] {12}> ()  v = Constant <value = float[2] {0, 1}> ()
                 i = Cast <to = 7> (r)  h = OneHot <axis = -1> (i, o, v)  z = ReduceSum (h)
                 e = Unsqueeze (z, a)  y = Squeeze (e, a)""", "float[N, 3, 4] x")
    assert codes(m) == []
