"""Every change of every default-domain operator between opsets 7 and 21, from onnx's schema registry: each is
classified (onnx's adapter, onegraph's, type-only, impossible), and a representative node of each converts
down across it and back up, both models run on the same feeds and compared.

A change is a definition introduced at version ``v`` (8 <= v <= 21) of an operator that has one before; the
representative model holds one node of it at opset ``v``, its inputs of a type both definitions admit and of
the rank the operator takes (``CASES`` for what the schema cannot tell: constants, attributes, subgraphs).
"""

from __future__ import annotations

import collections
import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper, version_converter

from onegraph.convert import convert_opset
from onegraph.convert import opset_adapters as adapters
from onegraph.convert.steps import MOVES, REDUCE_OPS, schema, since
from onegraph.errors import ConversionError, ModelFileError, RuntimeFailure
from onegraph.verify.lowprec import reference_run
from onegraph.verify.runs import run

LOW, HIGH = 7, 21


@functools.cache
def _versions() -> dict[str, list[int]]:
    out = collections.defaultdict(list)
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx"):
            out[s.name].append(s.since_version)
    return {op: sorted(vs) for op, vs in out.items()}


CHANGES = [(op, v) for op, vs in sorted(_versions().items()) for v in vs if LOW < v <= HIGH and v != vs[0]]


# -- representative models --------------------------------------------------------------------------------
RNG = np.random.default_rng(0)
PREFERRED = ["tensor(float)", "tensor(int64)", "tensor(bool)", "tensor(int32)", "tensor(uint8)", "tensor(double)"]


class Fed:
    """A graph input fed with ``value``."""

    def __init__(self, value) -> None:
        self.value = np.asarray(value)


def fed(shape, dtype=np.float32, low=-1.0, high=1.0):
    if np.dtype(dtype).kind == "f":
        return Fed(RNG.uniform(low, high, shape).astype(dtype))
    if np.dtype(dtype).kind == "b":
        return Fed(RNG.integers(0, 2, shape).astype(bool))
    return Fed(RNG.integers(int(low), int(high), shape).astype(dtype))


def const(value, dtype=None):
    return np.asarray(value, dtype=dtype)


def f32(*values):
    return np.array(values, dtype=np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


def _subgraph(name, nodes, inputs, outputs):
    return helper.make_graph(nodes, name, inputs, outputs)


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _if_branches():
    then = _subgraph("then", [helper.make_node("Identity", ["x"], ["t"])], [], [_vi("t", T.FLOAT, [2, 3])])
    other = _subgraph("else", [helper.make_node("Neg", ["x"], ["e"])], [], [_vi("e", T.FLOAT, [2, 3])])
    return {"then_branch": then, "else_branch": other}


def _loop_body():
    one = helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(f32(1.0)))
    return _subgraph("body", [one, helper.make_node("Identity", ["c"], ["c_out"]),
                              helper.make_node("Add", ["v", "one"], ["v_out"])],
                     [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("v", T.FLOAT, [2])],
                     [_vi("c_out", T.BOOL, []), _vi("v_out", T.FLOAT, [2])])


def _scan_body():
    return _subgraph("body", [helper.make_node("Add", ["s", "xt"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["y"])],
                     [_vi("s", T.FLOAT, [2]), _vi("xt", T.FLOAT, [2])],
                     [_vi("s_out", T.FLOAT, [2]), _vi("y", T.FLOAT, [2])])



def _rnn(op, hidden=2):
    gates = {"GRU": 3, "LSTM": 4, "RNN": 1}[op]
    w = RNG.uniform(-1, 1, (1, gates * hidden, 3)).astype(np.float32)
    r = RNG.uniform(-1, 1, (1, gates * hidden, hidden)).astype(np.float32)
    return lambda v: ([fed([2, 1, 3]), w, r], {"hidden_size": hidden, **({"layout": 0} if v >= 14 else {})}, 2)


def _reduce(v):
    if v >= 18:
        return [fed([2, 3, 4]), "axes"], {"keepdims": 1, "noop_with_empty_axes": 0}
    return [fed([2, 3, 4])], {"axes": [-1] if v == 11 else [1], "keepdims": 1}


def _softmax(v):
    return [fed([2, 3, 4])], {"axis": 1 if v >= 13 else -1}


#: operator -> version -> (inputs, attributes[, outputs]): inputs are Fed (graph inputs), arrays (initializers),
#: None (absent), or "axes" (a Constant node with value_ints [-1], the form exporters write)
CASES = {
    "ArgMax": lambda v: ([fed([2, 3, 4])], {"axis": -1, **({"select_last_index": 0} if v == 12 else {})}),
    "AveragePool": lambda v: ([fed([1, 1, 4, 4])], {"kernel_shape": [2, 2], **({"ceil_mode": 0} if v == 10 else {}),
                                                    **({"dilations": [1, 1]} if v == 19 else {})}),
    "MaxPool": lambda v: ([fed([1, 1, 4, 4])], {"kernel_shape": [2, 2], **({"ceil_mode": 0, "dilations": [1, 1]}
                                                                          if v == 10 else {})}),
    "LpPool": lambda v: ([fed([1, 1, 4, 4])], {"kernel_shape": [2, 2], **({"ceil_mode": 0} if v == 18 else {})}),
    "MaxUnpool": lambda v: ([fed([1, 1, 2, 2]), i64(0, 3, 9, 14).reshape(1, 1, 2, 2)],
                            {"kernel_shape": [2, 2], "strides": [2, 2]}),
    "BatchNormalization": lambda v: ([fed([2, 3, 4]), f32(1, 2, 3), f32(0, 1, 0), f32(0.1, 0, -0.1), f32(1, 2, 0.5)],
                                     {"training_mode": 0} if v == 14 else {}),
    "Cast": lambda v: ([fed([2, 3])], {"to": T.DOUBLE, **({"saturate": 1} if v == 19 else {})}),
    "CastLike": lambda v: ([fed([2, 3]), np.zeros(1, np.float64)], {"saturate": 1} if v == 19 else {}),
    "Clip": lambda v: ([fed([2, 3]), f32(-0.5)[0], f32(0.5)[0]], {}),
    "Compress": lambda v: ([fed([2, 3]), np.array([True, False, True])], {"axis": -1}),
    "Concat": lambda v: ([fed([2, 3]), fed([2, 2])], {"axis": -1}),
    "Constant": lambda v: ([], {"value_ints": [1, 2]} if v >= 12 else
                           {"value": numpy_helper.from_array(i64(1, 2) if v > 9 else f32(1, 2))}),
    "ConstantOfShape": lambda v: ([i64(2, 3)], {"value": numpy_helper.from_array(f32(1.5))}),
    "Conv": lambda v: ([fed([1, 1, 5, 5]), RNG.uniform(-1, 1, (2, 1, 3, 3)).astype(np.float32)],
                       {"pads": [1, 1, 1, 1]}),
    "ConvTranspose": lambda v: ([fed([1, 1, 3, 3]), RNG.uniform(-1, 1, (1, 2, 3, 3)).astype(np.float32)], {}),
    "CumSum": lambda v: ([fed([2, 3]), np.array(1, np.int64)], {}),
    "DFT": lambda v: ([fed([1, 8, 1]), None, np.array(1, np.int64)], {}),
    "DepthToSpace": lambda v: ([fed([1, 8, 2, 2])], {"blocksize": 2, **({"mode": "CRD"} if v == 11 else {})}),
    "DequantizeLinear": lambda v: (([fed([2, 3, 4], np.uint8, 0, 255), f32(0.1, 0.2, 0.3),
                                     np.array([1, 2, 3], np.uint8)], {"axis": 1}) if v == 13 else
                                   ([fed([2, 3], np.uint8, 0, 255), f32(0.1)[0], np.array(3, np.uint8)], {})),
    "QuantizeLinear": lambda v: (([fed([2, 3, 4], low=-10, high=10), f32(0.1, 0.2, 0.3),
                                   np.array([1, 2, 3], np.uint8)], {"axis": 1}) if v == 13 else
                                 ([fed([2, 3], low=-10, high=10), f32(0.1)[0], np.array(3, np.uint8)],
                                  {"output_dtype": T.UINT8} if v == 21 else {})),
    "Dropout": lambda v: ([fed([2, 3]), *([f32(0.5)[0]] if v >= 12 else [])], {}),
    "Expand": lambda v: ([fed([3, 1]), i64(2, 3, 4)], {}),
    "Flatten": lambda v: ([fed([2, 3, 4])], {"axis": -1 if v >= 11 else 2}),
    **{op: _rnn(op) for op in ("GRU", "LSTM", "RNN")},
    "Gather": lambda v: ([fed([3, 4]), i64(-1, 0) if v == 11 else i64(1, 0)], {"axis": -1 if v == 11 else 0}),
    "GatherElements": lambda v: ([fed([2, 3]), i64(0, 2, 1, 1, 0, 2).reshape(2, 3)], {"axis": 1}),
    "GatherND": lambda v: ([fed([2, 2]), i64(0, 0, 1, 1).reshape(2, 2)], {"batch_dims": 0} if v == 12 else {}),
    "Gemm": lambda v: ([fed([2, 3]), RNG.uniform(-1, 1, (3, 4)).astype(np.float32),
                        *([] if v == 11 else [f32(1, 2, 3, 4)])], {}),
    "GridSample": lambda v: ([fed([1, 1, 3, 3]), fed([1, 2, 2, 2])], {"mode": "linear" if v >= 20 else "bilinear"}),
    "GroupNormalization": lambda v: ([fed([2, 4, 3]), f32(1, 2, 3, 4), f32(0, 1, 0, 1)], {"num_groups": 2}),
    **{op: _softmax for op in ("Softmax", "LogSoftmax", "Hardmax")},
    "If": lambda v: ([fed([], bool)], _if_branches(), 1),
    "Loop": lambda v: ([np.array(3, np.int64), np.array(True), fed([2])], {"body": _loop_body()}, 1),
    "Scan": lambda v: ([fed([2]), fed([3, 2])], {"body": _scan_body(), "num_scan_inputs": 1,
                                                **({"scan_input_axes": [-2]} if v == 11 else {})}, 2),
    "Scatter": lambda v: ([fed([3, 3]), i64(1, 0, -1 if v >= 11 else 2).reshape(1, 3), f32(1, 1, 1).reshape(1, 3)],
                          {"axis": -2 if v >= 11 else 0}),
    "ScatterElements": lambda v: ([fed([3, 3]), i64(1, 0, 2).reshape(1, 3), f32(1, 1, 1).reshape(1, 3)],
                                  {"reduction": "add" if v >= 18 else "none"} if v >= 16 else {}),
    "ScatterND": lambda v: ([fed([3, 2]), i64(0, 2).reshape(2, 1), f32(1, 1, 2, 2).reshape(2, 2)],
                            {"reduction": "mul" if v >= 18 else "none"} if v >= 16 else {}),
    "NonMaxSuppression": lambda v: ([np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], np.float32),
                                     fed([1, 1, 3], low=0, high=1), i64(2), f32(0.5)], {}),
    "OneHot": lambda v: ([Fed(i64(-1, 0, 2)), i64(3), f32(0, 1)], {"axis": -1}),
    "OptionalGetElement": lambda v: ([fed([2, 3])], {}),
    "OptionalHasElement": lambda v: ([fed([2, 3])], {}),
    "Pad": lambda v: (([fed([2, 3]), i64(1, 2), f32(0.5)[0], i64(-1)], {"mode": "wrap" if v == 19 else "constant"})
                      if v >= 18 else ([fed([2, 3]), i64(0, 1, 0, 2), f32(0.5)[0]], {})),
    "Pow": lambda v: ([fed([2, 3], low=0.5, high=2), i64(2) if v == 12 else f32(2)], {}),
    "PRelu": lambda v: ([fed([2, 3, 4]), f32(0.1, 0.2, 0.3, 0.4)], {}),
    "QLinearMatMul": lambda v: ([fed([2, 3], np.uint8, 0, 255), f32(0.1)[0], np.array(1, np.uint8),
                                 RNG.integers(0, 255, (3, 2)).astype(np.uint8), f32(0.2)[0], np.array(2, np.uint8),
                                 f32(5)[0], np.array(3, np.uint8)], {}),
    **{op: _reduce for op in REDUCE_OPS},
    "ReduceSum": lambda v: (([fed([2, 3, 4]), "axes"], {"noop_with_empty_axes": 0}) if v >= 13
                            else ([fed([2, 3, 4])], {"axes": [-1]})),
    "Reshape": lambda v: ([fed([2, 3, 4]), i64(6, 4)], {"allowzero": 1} if v == 14 else {}),
    "Resize": lambda v: ({
        11: ([fed([1, 1, 2, 2]), f32(), f32(1, 1, 2, 2)], {"mode": "nearest", "coordinate_transformation_mode":
                                                           "asymmetric", "nearest_mode": "floor"}),
        13: ([fed([1, 1, 2, 2]), None, f32(1, 1, 2, 2)], {"mode": "linear", "coordinate_transformation_mode":
                                                          "half_pixel"}),
        18: ([fed([1, 1, 2, 2]), None, f32(2, 3)], {"mode": "linear", "axes": [2, 3], "antialias": 0}),
        19: ([fed([1, 1, 2, 2]), None, f32(1, 1, 2, 3)], {"mode": "linear",
                                                          "coordinate_transformation_mode": "half_pixel_symmetric"}),
    }[v]),
    "RoiAlign": lambda v: ([fed([1, 1, 4, 4]), f32(0, 0, 2, 2).reshape(1, 4), i64(0)],
                           {"output_height": 2, "output_width": 2,
                            "coordinate_transformation_mode": "output_half_pixel"}),
    "Shape": lambda v: ([fed([2, 3, 4])], {"start": 1} if v == 15 else {}),
    "Slice": lambda v: ([fed([3, 4]), i64(1), i64(3), i64(-1 if v == 11 else 1)], {}) if v >= 10 else
    ([fed([3, 4])], {"starts": [1], "ends": [3], "axes": [1]}),
    "Split": lambda v: ({11: ([fed([2, 3, 4])], {"axis": -1, "split": [1, 3]}, 2),
                         13: ([fed([2, 3, 4]), i64(1, 3)], {"axis": 2}, 2),
                         18: ([fed([2, 3, 4])], {"axis": 2, "num_outputs": 2}, 2)}[v]),
    "Squeeze": lambda v: ([fed([2, 1, 4]), i64(1)], {}) if v >= 13 else ([fed([2, 1, 4])], {"axes": [-2]}),
    "Unsqueeze": lambda v: ([fed([2, 3]), i64(-1)], {}) if v >= 13 else ([fed([2, 3])], {"axes": [-1]}),
    "TopK": lambda v: ([fed([2, 5]), i64(2)], {"axis": -1, **({"largest": 0} if v == 11 else {})}, 2),
    "Tile": lambda v: ([fed([2, 3]), i64(2, 1)], {}),
    "Upsample": lambda v: ([fed([1, 1, 2, 2]), f32(1, 1, 2, 2)], {"mode": "nearest"}),
    "LRN": lambda v: ([fed([1, 3, 4, 4])], {"size": 3}),
    "MeanVarianceNormalization": lambda v: ([fed([2, 3, 4, 4])], {}),
    "NegativeLogLikelihoodLoss": lambda v: ([fed([2, 3]), i64(0, 2)], {}),
    "SoftmaxCrossEntropyLoss": lambda v: ([fed([2, 3]), i64(0, 2)], {}),
    "SpaceToDepth": lambda v: ([fed([1, 1, 4, 4])], {"blocksize": 2}),
    "Mod": lambda v: ([fed([2, 3], np.int64, -9, 9), np.array([2, -3, 4], np.int64)], {}),
    "MatMul": lambda v: ([fed([2, 3]), fed([3, 4])], {}),
    "Where": lambda v: ([fed([2, 3], bool), fed([2, 3]), fed([2, 3])], {}),
    "Equal": lambda v: ([fed([2, 3], np.int64, 0, 3), fed([2, 3], np.int64, 0, 3)], {}),
    "Erf": lambda v: ([fed([2, 3])], {}),
}


def _tensor_type(op: str, v: int, formal) -> str:
    """A type ``formal`` admits at both definitions (``v`` and the one before)."""
    new, old = schema(op, v), schema(op, v - 1)

    def allowed(s):
        by_param = {c.type_param_str: set(c.allowed_type_strs) for c in s.type_constraints}
        f = next((i for i in list(s.inputs) if i.name == formal.name), formal)
        return by_param.get(f.type_str, {f.type_str})
    both = allowed(new) & allowed(old) or allowed(new)
    return next((t for t in PREFERRED if t in both), sorted(both)[0])


def _default_case(op: str, v: int):
    s = schema(op, v)
    inputs = []
    for formal in s.inputs:
        if formal.option == onnx.defs.OpSchema.FormalParameterOption.Optional:
            break
        t = _tensor_type(op, v, formal)
        dtype = helper.tensor_dtype_to_np_dtype(getattr(T, t[7:-1].upper()))
        n = 2 if formal.option == onnx.defs.OpSchema.FormalParameterOption.Variadic else 1
        inputs += [fed([2, 3, 4], dtype, 0 if dtype.kind in "iu" else -1, 3 if dtype.kind in "iu" else 1)
                   for _ in range(n)]
    return inputs, {}


def representative(op: str, v: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One node of ``op``'s definition introduced at ``v``, in a model at opset ``v``, and its feeds."""
    case = CASES[op](v) if op in CASES else _default_case(op, v)
    inputs, attrs = case[0], case[1]
    n_out = case[2] if len(case) > 2 else sum(
        o.option == onnx.defs.OpSchema.FormalParameterOption.Single for o in schema(op, v).outputs)
    names, graph_inputs, inits, nodes, feeds = [], [], [], [], {}
    for i, value in enumerate(inputs):
        name = f"in{i}"
        if value is None:
            names.append("")
            continue
        names.append(name)
        if isinstance(value, Fed):
            feeds[name] = value.value
            graph_inputs.append(_vi(name, helper.np_dtype_to_tensor_dtype(value.value.dtype), list(value.value.shape)))
        elif isinstance(value, str):  # axes from a Constant node with value_ints, as torch's exporter writes
            nodes.append(helper.make_node("Constant", [], [name], value_ints=[-1]))
        else:
            inits.append(numpy_helper.from_array(np.asarray(value), name))
    if op == "If":  # branches read the outer x
        graph_inputs.append(_vi("x", T.FLOAT, [2, 3]))
        feeds["x"] = RNG.uniform(-1, 1, (2, 3)).astype(np.float32)
    outputs = [f"out{i}" for i in range(n_out)]
    nodes.append(helper.make_node(op, names, outputs, name="node", **attrs))
    graph = helper.make_graph(nodes, op, graph_inputs, [onnx.ValueInfoProto(name=o) for o in outputs],
                              initializer=inits)
    opsets = [helper.make_opsetid("", v)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {vi.name: vi.type for vi in inferred.graph.value_info}
    types.update({vi.name: vi.type for vi in inferred.graph.output if vi.type.HasField("tensor_type")})
    for out in model.graph.output:
        if out.name in types:
            out.type.CopyFrom(types[out.name])
    if not all(o.type.tensor_type.HasField("shape") for o in model.graph.output):  # not inferred: as computed
        values = reference_run(model, feeds)
        for out in model.graph.output:
            value = np.asarray(values[out.name])
            out.type.CopyFrom(helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(value.dtype), value.shape))
    return model, feeds


def outputs(model: onnx.ModelProto, feeds) -> list[np.ndarray]:
    """Every output in onnxruntime, or in onnx's reference evaluator where onnxruntime lacks the version."""
    try:
        return list(run(model, feeds).values())
    except RuntimeFailure as exc:
        if "NOT_IMPLEMENTED" not in str(exc) and "Could not find an implementation" not in str(exc):
            raise
        return list(reference_run(model, feeds).values())


def assert_same(got: list, expected: list, what: str) -> None:
    """Float outputs within rtol 1e-5 / atol 1e-6 (the conversion's own tolerance), others equal."""
    assert len(got) == len(expected), what
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, f"{what}: {g.dtype}{g.shape} != {e.dtype}{e.shape}"
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=what)
        else:
            np.testing.assert_array_equal(g, e, err_msg=what)


# -- the tests -------------------------------------------------------------------------------------------
def test_every_change_between_opsets_7_and_21_is_classified():
    unclassified = [f"{op}-{v}" for op, v in CHANGES if adapters.classify(op, v)[0] == "unclassified"]
    assert not unclassified, f"operator changes without an adapter or a reason: {', '.join(unclassified)}"
    tables = [set(adapters.TYPE_ONLY), set(adapters.ADAPTERS), set(adapters.ONNX), set(adapters.IMPOSSIBLE)]
    for i, a in enumerate(tables):
        for b in tables[i + 1:]:
            assert not a & b, f"classified twice: {sorted(a & b)}"
    reasons = [*adapters.TYPE_ONLY.values(), *adapters.ONNX.values(), *adapters.IMPOSSIBLE.values()]
    assert all(reasons) and all(step.what for step in adapters.ADAPTERS.values())
    known = set(CHANGES)
    for table in tables:  # nothing classified that the registry does not define (first versions aside)
        for op, v in table:
            assert (op, v) in known or since(op, v) == v, f"{op}-{v} is not a version of {op}"


def test_moved_inputs_are_attributes_of_the_older_definition():
    """MOVES against the registry: each moved input is an input of the newer definition, and the attribute
    it was exists in the older one and not in the newer."""
    for op, by_version in MOVES.items():
        for v, moves in by_version.items():
            new, old = schema(op, v), schema(op, v - 1)
            assert new.since_version == v
            for move in moves:
                assert move.index < len(new.inputs)
                if move.attribute is not None:
                    assert move.attribute in old.attributes and move.attribute not in new.attributes, (op, v, move)


@pytest.mark.parametrize("op, v", CHANGES, ids=[f"{op}-{v}" for op, v in CHANGES])
def test_every_change_converts_down_and_back_up(op, v):
    kind, why = adapters.classify(op, v)
    if kind == "deprecated":  # no valid node at v: the node of v - 1 converts up (to the replacing operator)
        model, feeds = representative(op, v - 1)
        expected = outputs(model, feeds)
        up, report = convert_opset(model, v, data=feeds)
        assert report.ok and op not in {n.op_type for n in up.graph.node}
        assert_same(outputs(up, feeds), expected, f"{op}-{v - 1} at opset {v}")
        return
    if kind == "impossible":
        model, feeds = representative(op, v)
        with pytest.raises(Exception, match=why[:40]):
            convert_opset(model, v - 1, data=feeds)
        return
    model, feeds = representative(op, v)
    if kind == "onnx":  # onnx's converter has the adapter the table says it has
        version_converter.convert_version(model, v - 1)
    expected = outputs(model, feeds)
    down, report = convert_opset(model, v - 1, data=feeds)
    assert report.ok and not report.refused
    assert {o.domain: o.version for o in down.opset_import}[""] == v - 1
    onnx.checker.check_model(down)
    assert_same(outputs(down, feeds), expected, f"{op}-{v} at opset {v - 1}")
    up, report = convert_opset(down, v, data=feeds)
    assert report.ok
    onnx.checker.check_model(up)
    assert_same(outputs(up, feeds), expected, f"{op}-{v} back at opset {v}")


# -- the cases of issue 14 (kind 9), as PyTorch exports them and by hand ---------------------------------------
def _opset(model) -> int:
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load_from_string(model)
    return {o.domain: o.version for o in proto.opset_import}[""]


@pytest.mark.parametrize("exporter, targets", [("torchscript", [12, 11, 10, 9]), ("dynamo", [19, 17, 13, 11, 9])])
def test_torch_exports_convert_down_and_back(exporter, targets):
    """mean / sum / clamp / pad / split / squeeze / nearest interpolation from torch 2.13's two exporters,
    converted down to each target and back, equal to torch's own outputs (rtol 1e-5, atol 1e-6)."""
    from convert_models import torch_layers

    model, feeds, expected = torch_layers(exporter)
    src = _opset(model)
    for target in targets:
        down, report = convert_opset(model, target, data=feeds)
        assert report.ok and _opset(down) == target, str(report)
        onnx.checker.check_model(down)
        back, report = convert_opset(down, src, data=feeds)
        assert report.ok, str(report)
        for m in (down, back):
            assert_same([np.asarray(o, np.float32) for o in outputs(m, feeds)], expected, f"{exporter} at {target}")


def _reduce_mean(opset, axes_node=None, inputs=("x", "axes"), graph_inputs=(), inits=(), **attrs):
    nodes = [axes_node] if axes_node is not None else []
    nodes.append(helper.make_node("ReduceMean", list(inputs), ["y"], name="mean", **attrs))
    graph = helper.make_graph(nodes, "g", [_vi("x", T.FLOAT, [2, 3, 4]), *graph_inputs],
                              [_vi("y", T.FLOAT, None)], initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_reduce_mean_axes_from_a_constant_with_value_ints_18_to_17():
    model = _reduce_mean(18, helper.make_node("Constant", [], ["axes"], value_ints=[-1]), keepdims=1)
    with pytest.raises(Exception, match="required undefined attribute 'value'"):
        version_converter.convert_version(model, 17)  # the public failure
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    converted, report = convert_opset(model, 17, data={"x": x})
    assert report.ok and "axes=[-1]" in str(report)
    np.testing.assert_allclose(outputs(converted, {"x": x})[0], x.mean(axis=-1, keepdims=True), rtol=1e-6)


def test_reduce_mean_noop_with_empty_axes_20_to_17():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    axes = numpy_helper.from_array(i64(1), "axes")
    model = _reduce_mean(20, inits=[axes], keepdims=0, noop_with_empty_axes=0)
    plain = version_converter.convert_version(model, 17)  # the public failure: an attribute opset 17 lacks
    with pytest.raises(RuntimeFailure, match="noop_with_empty_axes"):
        run(plain, {"x": x})
    converted, report = convert_opset(model, 17, data={"x": x})
    assert report.ok
    np.testing.assert_allclose(outputs(converted, {"x": x})[0], x.mean(axis=1), rtol=1e-6)
    # noop_with_empty_axes=1 and no axes: the identity, which ReduceMean-13 without axes is not
    model = _reduce_mean(20, inputs=("x",), noop_with_empty_axes=1)
    converted, report = convert_opset(model, 17, data={"x": x})
    assert report.ok and [n.op_type for n in converted.graph.node] == ["Identity"]
    np.testing.assert_array_equal(outputs(converted, {"x": x})[0], x)


def test_axes_known_only_at_run_time_are_refused_naming_node_operator_versions():
    model = _reduce_mean(18, graph_inputs=[_vi("axes", T.INT64, [1])])
    with pytest.raises(ConversionError) as info:
        convert_opset(model, 17)
    message = str(info.value)
    for words in ("ReduceMean node 'mean'", "ReduceMean-18 -> ReduceMean-13", "opset 18 -> 17",
                  "becomes the attribute 'axes'", "'axes' is a graph input"):
        assert words in message, message
    # noop_with_empty_axes=1 with run-time axes: whether they are empty cannot be told
    model = _reduce_mean(18, graph_inputs=[_vi("axes", T.INT64, [None])], noop_with_empty_axes=1)
    with pytest.raises(ConversionError, match="cannot be told"):
        convert_opset(model, 17)


def test_resize_13_to_11_gets_an_explicit_empty_roi():
    scales = numpy_helper.from_array(f32(1, 1, 2, 2), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="nearest",
                            coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    graph = helper.make_graph([node], "g", [_vi("x", T.FLOAT, [1, 1, 2, 2])], [_vi("y", T.FLOAT, None)],
                              initializer=[scales])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(Exception, match="No Adapter From Version \\$13 for Resize"):
        version_converter.convert_version(model, 11)  # the public failure
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    converted, report = convert_opset(model, 11, data={"x": x})
    assert report.ok and "roi given as an empty tensor" in str(report)
    resize = next(n for n in converted.graph.node if n.op_type == "Resize")
    assert len(resize.input) == 3 and all(resize.input)
    np.testing.assert_array_equal(outputs(converted, {"x": x})[0], x.repeat(2, axis=2).repeat(2, axis=3))


@pytest.mark.parametrize("op, src, dst, attrs, inputs, shape, words", [
    # a mapping opset 18 lacks, on lengths where it is not half_pixel
    ("Resize", 19, 18, {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
     ["x", "", "scales"], [1, 1, 3, 3], "half_pixel_symmetric with output lengths"),
    # an axis counted from the back, before opset 11, on an input of unknown rank
    ("Unsqueeze", 11, 10, {"axes": [-1]}, ["x"], None, "counts from the back"),
    # a reduction opset 17 lacks
    ("ScatterElements", 18, 17, {"reduction": "max"}, ["x", "i", "u"], [3], "reduction='max'"),
    # wrap padding on an input of unknown length
    ("Pad", 19, 18, {"mode": "wrap"}, ["x", "pads"], None, "mode wrap needs the input's shape"),
])
def test_what_the_older_opset_cannot_express_is_refused_with_the_reason(op, src, dst, attrs, inputs, shape, words):
    inits = {"scales": f32(1, 1, 1.5, 1.5), "i": i64(0, 2), "u": f32(1, 2), "pads": i64(1, 1)}
    node = helper.make_node(op, inputs, ["y"], name="n", **attrs)
    graph = helper.make_graph([node], "g", [_vi("x", T.FLOAT, shape)], [_vi("y", T.FLOAT, None)],
                              initializer=[numpy_helper.from_array(inits[i], i) for i in inputs if i in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", src)])
    with pytest.raises(ConversionError) as info:
        convert_opset(model, dst)
    (refused,) = info.value.report.refused
    assert refused.op_type == op and refused.name == "n"
    assert words in refused.how and f"{op}-{since(op, src)} -> " in refused.how, refused.how


def test_cli_converts_the_torch_export_to_opset_11(tmp_path, cli):
    from convert_models import torch_layers

    model, feeds, _ = torch_layers("torchscript")
    src = tmp_path / "layers13.onnx"
    src.write_bytes(model)
    result = cli("convert", str(src), "--opset", "11", "-o", str(tmp_path / "layers11.onnx"))
    assert result.returncode == 0, result.stderr
    assert "Resize-13 -> Resize-11: absent roi given as an empty tensor" in result.stdout
    assert "result: ok" in result.stdout and _opset((tmp_path / "layers11.onnx").read_bytes()) == 11


def test_old_versions_onnxruntime_lacks_are_verified_in_the_reference_evaluator():
    """Clip-6 on doubles is valid ONNX that onnxruntime has no kernel for: the converted model is run in
    onnx's reference evaluator instead, and the report says so."""
    bounds = [numpy_helper.from_array(np.array(-0.5), "lo"), numpy_helper.from_array(np.array(0.5), "hi")]
    graph = helper.make_graph([helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip")], "g",
                              [_vi("x", T.DOUBLE, [2, 3])], [_vi("y", T.DOUBLE, [2, 3])], initializer=bounds)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = RNG.standard_normal((2, 3))
    converted, report = convert_opset(model, 10, data={"x": x})
    assert report.ok and any("reference evaluator" in n and "Clip(6)" in n for n in report.notes)
    with pytest.raises(RuntimeFailure, match="NOT_IMPLEMENTED"):
        run(converted, {"x": x})
    np.testing.assert_array_equal(reference_run(converted, {"x": x})["y"], np.clip(x, -0.5, 0.5))


@pytest.mark.parametrize("target", [17, 11, 9])
def test_function_bodies_take_the_same_steps(target):
    """A model-local function (no initializers): axes from a Constant with value_ints shared by ReduceMean-18
    and Unsqueeze-13, scales of a Resize-13 without roi; the body converts, the Constant is removed once no
    node reads it, and the values stay x.mean(-1) repeated twice along the last two axes."""
    body = [helper.make_node("Constant", [], ["axes"], value_ints=[-1]),
            helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=1, noop_with_empty_axes=0),
            helper.make_node("Constant", [], ["sc"], value_floats=[1.0, 1.0, 2.0, 2.0]),
            helper.make_node("Unsqueeze", ["m", "axes"], ["m4"]),
            helper.make_node("Resize", ["m4", "", "sc"], ["y"], mode="nearest", nearest_mode="floor",
                             coordinate_transformation_mode="asymmetric")]
    fn = helper.make_function("local", "F", ["x"], ["y"], body, [helper.make_opsetid("", 20)])
    graph = helper.make_graph([helper.make_node("F", ["x"], ["y"], domain="local")], "g",
                              [_vi("x", T.FLOAT, [1, 2, 3])], [_vi("y", T.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("local", 1)],
                              functions=[fn])
    x = RNG.standard_normal((1, 2, 3)).astype(np.float32)
    converted, report = convert_opset(model, target, data={"x": x})
    (f,) = converted.functions
    assert report.ok and {o.domain: o.version for o in f.opset_import}[""] == target
    assert ("axes" in {o for n in f.node for o in n.output}) == (target >= 13)  # read by Unsqueeze-13 only
    expected = x.mean(axis=-1, keepdims=True)[..., None].repeat(2, axis=2).repeat(2, axis=3)
    np.testing.assert_allclose(outputs(converted, {"x": x})[0], expected, rtol=1e-6)


def test_an_opset_onnx_does_not_define_is_refused_before_any_step():
    """A mutant importing opset 2**31 - 1 (the campaign's case): refused at once, not walked opset by opset."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [_vi("x", T.FLOAT, [3])],
                              [_vi("y", T.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 2**31 - 1)], ir_version=10)
    with pytest.raises(ModelFileError, match="opset 2147483647, which onnx .* does not define"):
        convert_opset(model, 13)


def _asymmetric_linear(x: np.ndarray, scales: list[float]) -> np.ndarray:
    """Resize-10's linear mode in numpy, axis by axis: x_original = x_resized / scale (the ``asymmetric``
    mapping of the Resize-11 spec), clamped to the input, interpolated between its two neighbours."""
    out = x.astype(np.float64)
    for axis, s in enumerate(scales):
        n = out.shape[axis]
        pos = np.minimum(np.arange(int(np.floor(n * s))) / s, n - 1)
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, n - 1)
        w = (pos - lo).reshape([-1 if a == axis else 1 for a in range(out.ndim)])
        out = np.take(out, lo, axis=axis) * (1 - w) + np.take(out, hi, axis=axis) * w
    return out


def _resize_10(op: str, mode: str, scales: list[float], opset: int) -> onnx.ModelProto:
    node = helper.make_node(op, ["x", "scales"], ["y"], name="resize", mode=mode)
    graph = helper.make_graph([node], "g", [_vi("x", T.FLOAT, [1, 1, 5, 7])], [_vi("y", T.FLOAT, None)],
                              initializer=[numpy_helper.from_array(f32(*scales), "scales")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("dst", [11, 13, 19])
@pytest.mark.parametrize("op, opset, mode, scales", [
    ("Resize", 10, "linear", [1, 1, 1.5, 2.5]), ("Upsample", 9, "linear", [1, 1, 2, 3]),
    ("Resize", 10, "linear", [1, 1, 0.6, 0.5]), ("Resize", 10, "nearest", [1, 1, 1.5, 2.5]),
    ("Resize", 10, "nearest", [1, 1, 0.6, 0.5]), ("Upsample", 9, "nearest", [1, 1, 2, 3])])
def test_resize_10_up_keeps_its_asymmetric_mapping(op, opset, mode, scales, dst):
    """onnx's Resize_10_11 adapter leaves Resize-11's default half_pixel mapping in place: every linear Resize-10
    (and Upsample-9) converted up moved by half a pixel, and nearest picked other pixels at fractional scales.
    The converted node maps ``asymmetric``-ally and rounds as Resize-10 does in onnxruntime."""
    model = _resize_10(op, mode, scales, opset)
    x = RNG.standard_normal((1, 1, 5, 7)).astype(np.float32)
    converted, report = convert_opset(model, dst, data={"x": x})
    assert report.ok, str(report)
    (resize,) = [n for n in converted.graph.node if n.op_type == "Resize"]
    attrs = {a.name: helper.get_attribute_value(a) for a in resize.attribute}
    assert attrs["coordinate_transformation_mode"] == b"asymmetric"
    (got,) = outputs(converted, {"x": x})
    (old,) = outputs(model, {"x": x})
    np.testing.assert_array_equal(got, old)  # the same pixels and weights, in the same float32 kernel
    if mode == "linear":  # and what the spec's mapping gives, computed here (float64 vs the kernel's float32)
        np.testing.assert_allclose(got, _asymmetric_linear(x, scales), rtol=1e-5, atol=1e-6)


def test_resize_10_nearest_with_scales_both_sides_of_one_is_refused():
    with pytest.raises(ConversionError) as info:
        convert_opset(_resize_10("Resize", "nearest", [1, 1, 0.6, 2.5], 10), 11)
    (refused,) = info.value.report.refused
    assert "on both sides of 1" in refused.how and "Resize-10 -> Resize-11" in refused.how, refused.how


@pytest.mark.parametrize("dst", [11, 13])
@pytest.mark.parametrize("elem, dtype", [(T.DOUBLE, np.float64), (T.FLOAT16, np.float16), (T.FLOAT, np.float32)])
@pytest.mark.parametrize("bounds", [{"min": -0.5, "max": 0.25}, {"max": 0.25}, {"min": -0.5}])
def test_clip_6_up_gives_min_and_max_in_the_input_type(elem, dtype, bounds, dst):
    """onnx's Clip_10_11 adapter writes min / max as float32 whatever the input: a double or float16 Clip-6
    converted up failed to load in onnxruntime (a type error naming no step). They have the input's type."""
    node = helper.make_node("Clip", ["x"], ["y"], name="clip", **bounds)
    graph = helper.make_graph([node], "g", [_vi("x", elem, [4, 3])], [_vi("y", elem, [4, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    x = RNG.standard_normal((4, 3)).astype(dtype)
    converted, report = convert_opset(model, dst, data={"x": x})
    assert report.ok, str(report)
    (y,) = outputs(converted, {"x": x})  # onnxruntime has Clip-11 for float32 only: the reference evaluator
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, np.clip(x, dtype(bounds.get("min", -np.inf)), dtype(bounds.get("max", np.inf))))
