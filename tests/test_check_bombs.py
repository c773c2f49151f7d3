"""Protobuf bombs (issue 14, kind 5): the check's memory scales with what the file and the model justify, so a
bomb is refused early with a C004 naming the stage instead of grinding the checking process to its cap, and a
valid large model still passes. The bombs are built in memory, as protobuf wire bytes (a committed 60 MB file
would be a bomb in the repository)."""

from __future__ import annotations

import pytest
from onnx import TensorProto, helper

from onegraph.check.guard import default_limits
from onegraph.check.limits import PARSE_BASE, PARSE_FACTOR, Limits, stage_memory, stage_need
from onegraph.check.loader import read_model
from onegraph.check.run import check

MB = 1_000_000


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _model(graph: bytes) -> bytes:
    """ModelProto: ir_version 10 (field 1), opset_import {version 21} (8), graph (7)."""
    return b"\x08\x0a" + _field(8, b"\x10\x15") + _field(7, graph)


def _bomb(kind: str, size: int) -> bytes:
    """``size`` bytes of empty repeated messages (2 bytes each on the wire, 60-200 bytes each in upb)."""
    n = size // 2
    if kind == "nodes":  # GraphProto.node (1)
        return _model(b"\x0a\x00" * n)
    if kind == "attributes":  # NodeProto.attribute (5) of one node
        return _model(_field(1, _field(4, b"Relu") + b"\x2a\x00" * n))
    # TensorShapeProto.dim (1) of the graph input (GraphProto.input = 11)
    tensor = b"\x08\x01" + _field(2, b"\x0a\x00" * n)  # TypeProto.Tensor: elem_type, shape
    return _model(_field(11, _field(1, b"x") + _field(2, _field(1, tensor))))  # ValueInfoProto: name, type


@pytest.mark.parametrize("kind", ["nodes", "attributes", "dims"])
def test_a_60_mb_protobuf_bomb_is_refused_at_the_parse(kind):
    data = _bomb(kind, 60 * MB)
    report = check(data, limits=default_limits(len(data)))
    [f] = report.findings
    assert (f.code, f.stage, f.field) == ("C004", "parse", "process"), str(report)
    budget = PARSE_BASE + PARSE_FACTOR * len(data)
    assert f"limit {budget:,} bytes" in f.message and "protobuf bomb" in f.message
    assert report.stages == {"parse": "findings", "static": "skipped", "checker": "skipped", "runtime": "skipped"}


def test_later_stages_are_refused_when_the_declared_nodes_cannot_fit():
    n = 100_000
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"]) for i in range(n)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT, [4])])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()
    memory = 64 << 20
    assert stage_need("runtime", nodes=n, tensor_bytes=0) > memory
    report = check(data, limits=Limits(memory=memory))
    refused = [f for f in report.findings if f.stage == "runtime"]
    assert [f.code for f in refused] == ["C004"], str(report)
    assert "declares 100,000 nodes" in refused[0].message and "was not run" in refused[0].message
    assert report.stages["parse"] == "ok" and report.stages["static"] == "ok"


def test_stage_budgets_scale_with_the_model():
    assert stage_memory("parse", 4 << 30, size=60 * MB) == PARSE_BASE + PARSE_FACTOR * 60 * MB
    assert stage_memory("parse", 4 << 30, size=1 << 30) == 4 << 30  # never above the limit
    assert stage_memory("runtime", 4 << 30, size=MB) == 4 << 30  # before the static stage counted
    small = stage_memory("runtime", 4 << 30, size=MB, nodes=100, tensor_bytes=MB)
    assert small < 1 << 30


def test_a_valid_300_mb_model_still_passes():
    w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[75, 1 << 20], raw_data=bytes(300 << 20))
    graph = helper.make_graph([helper.make_node("Add", ["x", "W"], ["y"])], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1 << 20])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [75, 1 << 20])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    data = model.SerializeToString()
    del model, w, graph
    report = check(data, limits=default_limits(len(data)))
    assert report.ok, str(report)
    read_model(data, purpose="run")  # the loader passes it too (it raises for a refused model)
