"""The checking process contains every way native code can fail: each becomes a finding naming the stage,
the later stages still run, and the calling (test) process carries on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onegraph.check.limits import Limits
from onegraph.check.run import Source, check, run_stages
from onegraph.check.sandbox import Worker

VALID = (Path(__file__).parent / "data" / "malformed" / "valid.onnx").read_bytes()
STAGES = ("parse", "static", "checker", "runtime")


@pytest.mark.parametrize("fault,code,words", [
    ("checker:segv", "C003", "SIGSEGV"),
    ("runtime:abort", "C003", "SIGABRT"),
    ("parse:segv", "C003", "SIGSEGV"),
    ("static:alloc", "C004", "out of memory"),
    ("checker:spin", "C005", "CPU-time limit"),
    ("runtime:write", "C006", "file larger than the limit"),
])
def test_each_failure_becomes_a_finding(fault, code, words, tmp_path):
    stage = fault.split(":")[0]
    worker = Worker(env={"ONEGRAPH_CHECK_FAULT": fault, "TMPDIR": str(tmp_path)})
    try:
        result = run_stages(worker, Source(VALID, None, "valid"), STAGES, Limits(memory=512 << 20, cpu=1, wall=60))
        findings, status = result.findings, result.stages
    finally:
        worker.close()
    assert [f.code for f in findings] == [code], findings
    assert findings[0].stage == stage and words in findings[0].message
    later = STAGES[STAGES.index(stage) + 1:]
    if stage == "parse":
        assert all(status[s] == "not run" for s in later)
    else:  # the stages after the failure ran in a fresh process
        assert all(status[s] == "ok" for s in later), status
    if code != "C004":  # a Python MemoryError leaves the process alive; the others end it
        assert worker.started == (1 if stage == "parse" or not later else 2)


def test_wall_time_limit_kills_a_hung_check():
    worker = Worker(env={"ONEGRAPH_CHECK_FAULT": "runtime:spin"})
    try:
        result = run_stages(worker, Source(VALID, None, "valid"), STAGES, Limits(cpu=600, wall=3))
        findings, status = result.findings, result.stages
    finally:
        worker.close()
    assert [f.code for f in findings] == ["C005"] and "wall-time" in findings[0].message
    assert status["runtime"] == "crashed" and status["checker"] == "ok"


def test_memory_limit_holds_for_a_large_model():
    """A 64 MiB initializer checked with 32 MiB of address space: parsing it cannot fit."""
    w = numpy_helper.from_array(np.zeros(16 << 20, dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16 << 20])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16 << 20])], [w])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()
    report = check(Source(data, None, "big"), limits=Limits(memory=32 << 20))
    assert report.codes()[:1] in (["C004"], ["C003"]), str(report)  # MemoryError, or an abort on allocation
    assert report.stages["parse"] in ("findings", "crashed")
    assert check(data, limits=Limits(memory=16 << 20)).codes() == ["C902"]  # over the limit: not even sent
    assert check(data).ok  # the same model with the default limits


def test_worker_is_reused_across_models():
    worker = Worker()
    try:
        for _ in range(5):
            result = run_stages(worker, Source(VALID, None, "valid"), STAGES, Limits())
            findings, status = result.findings, result.stages
            assert findings == [] and set(status.values()) == {"ok"}
        assert worker.started == 1
    finally:
        worker.close()


def test_missing_file_cannot_be_checked(tmp_path):
    report = check(tmp_path / "nothing.onnx")
    assert report.codes() == ["C901"] and report.exit_code == 2 and not report.checked


def test_bad_limits_and_stages_are_refused():
    from onegraph.errors import OnegraphError

    with pytest.raises(OnegraphError, match="unknown limit"):
        Limits.parse("memory=1G,speed=3")
    with pytest.raises(OnegraphError, match="not a size"):
        Limits.parse("memory=lots")
    assert Limits.parse("memory=1.5G,cpu=10,fsize=0") == Limits(memory=int(1.5 * (1 << 30)), cpu=10.0, fsize=0)
    with pytest.raises(OnegraphError, match="unknown check stage"):
        check(VALID, stages=("parse", "fly"))
    assert check(VALID, stages=("runtime", "static")).stages == {"parse": "ok", "static": "ok", "runtime": "ok"}


def test_model_proto_and_ir_model_are_checked_as_bytes():
    import onnx_ir as ir

    proto = onnx.load_from_string(VALID)
    assert check(proto).ok
    assert check(ir.from_proto(proto)).ok
