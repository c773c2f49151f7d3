"""The checking process: reads models from stdin, runs the stages, writes findings as JSON lines.

Started by :class:`onegraph.check.sandbox.Worker` (``python -m onegraph.check._worker``). Protocol: each
request is one JSON line (``stages``, ``folder``, ``limits``, ``size``) followed by ``size`` bytes of model;
or a native call (``call``: ``infer_shapes`` / ``check_model`` / ``convert_version``, ``options``, ``limits``,
``size``, then the model), answered by ``{"result": n}`` and ``n`` bytes of the resulting model, or
``{"error": type, "message": ...}`` (see :mod:`onegraph.check.native`);
the answer is JSON lines: ``{"stage": s}`` when a stage starts, ``{"finding": {...}}`` for each finding,
``{"files": [...]}`` after the static stage (the external data files the model reads),
``{"end": s, "status": ...}`` when it ends, ``{"done": 1}`` after the last. JSON, not pickle: the calling
process must never execute what this process, which handles untrusted bytes, sends back.

Before each model the process caps its own address space (``RLIMIT_AS``: current size + ``memory``; before each
stage, lower: what the file's size or the model's declarations justify, :func:`onegraph.check.stages.budget`), CPU
time (``RLIMIT_CPU``) and file size (``RLIMIT_FSIZE``), and lifts the caps afterwards; core dumps are off.
Stdout is kept for the protocol: native libraries that print write to stderr instead.

``ONEGRAPH_CHECK_FAULT=<stage>:<kind>`` (kind: ``segv``, ``abort``, ``alloc``, ``spin``, ``write``) makes this
process fail that way when the stage starts: the tests use it to prove each failure is contained.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.dont_write_bytecode = True
    import onnx  # noqa: F401 - loaded before the limits apply, so they measure the model's check only
    import onnx.checker  # noqa: F401
    import onnx.reference  # noqa: F401 - the static stage folds constants with it
    import onnx.shape_inference  # noqa: F401
    import onnxruntime  # noqa: F401

    from onegraph.check import stages
    from onegraph.check.findings import Finding
    from onegraph.check.static.operators import registry

    registry()
    limits = _Limits()
    fault = os.environ.get("ONEGRAPH_CHECK_FAULT", "")

    def send(obj: dict) -> None:
        protocol.write(json.dumps(obj).encode() + b"\n")

    def send_result(result: bytes) -> None:
        protocol.write(json.dumps({"result": len(result)}).encode() + b"\n")
        protocol.write(result)

    send({"ready": 1, "pid": os.getpid(), "enforced": limits.enforced})
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return
        request = json.loads(line)
        data = stdin.read(request["size"])
        if "call" in request:  # one of onnx's native functions on a model derived in the calling process
            limits.apply(request["limits"])
            try:
                send_result(native_call(request["call"], data, request.get("options") or {}))
            except MemoryError:
                send({"error": "MemoryError", "message": "ran out of memory"})
            except Exception as exc:  # onnx's own exception types: the caller raises them again
                send({"error": type(exc).__name__, "message": str(exc)[:4000]})
            finally:
                del data
                limits.lift()
            continue
        memory = int(request["limits"]["memory"])
        state = stages.State(data, request.get("folder"), memory)
        limits.apply(request["limits"])
        try:
            for stage in request["stages"]:
                send({"stage": stage})
                try:
                    limits.memory(stages.budget(stage, state))
                    if fault.startswith(stage + ":"):
                        _fail(fault.split(":", 1)[1])
                    status, found = stages.run_stage(stage, state)
                except MemoryError:
                    status = "findings"
                    found = [Finding("C004", f"ran out of memory (limit {state.budget:,} bytes for this stage)",
                                     "process", stage=stage)]
                for f in found:
                    send({"finding": f.to_dict()})
                if stage == "static" and state.files:
                    send({"files": state.files})
                send({"end": stage, "status": status})
        finally:
            del state, data
            limits.lift()
        send({"done": 1})


def native_call(name: str, data: bytes, options: dict) -> bytes:
    """Run onnx's native function ``name`` on the model ``data``; the resulting model's bytes (or none)."""
    import onnx
    import onnx.checker
    import onnx.shape_inference
    import onnx.version_converter

    if name == "infer_shapes":
        return onnx.shape_inference.infer_shapes(
            data, check_type=bool(options.get("check_type")), strict_mode=bool(options.get("strict_mode")),
            data_prop=bool(options.get("data_prop"))).SerializeToString()
    if name == "check_model":
        onnx.checker.check_model(data, full_check=bool(options.get("full_check")))
        return b""
    if name == "convert_version":
        return onnx.version_converter.convert_version(onnx.ModelProto.FromString(data),
                                                      int(options["target"])).SerializeToString()
    raise ValueError(f"unknown native call {name!r}")


class _Limits:
    def __init__(self) -> None:
        try:
            import resource
        except ImportError:  # not POSIX: the wall-time limit of the calling process still applies
            self.resource = None
            self.enforced: list[str] = []
            return
        self.resource = resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        import signal

        # CPython ignores SIGXFSZ (writes then fail with EFBIG); native code may ignore that error, so an
        # oversized write ends the process and the calling process reports it
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        self.enforced = ["memory", "cpu", "fsize"] if hasattr(resource, "RLIMIT_AS") else ["cpu", "fsize"]

    def apply(self, limits: dict) -> None:
        r = self.resource
        if r is None:
            return
        #: the address space the whole check may reach: the process's size now + the memory limit
        self.cap = _address_space() + int(limits["memory"])
        if "memory" in self.enforced:
            self._soft(r.RLIMIT_AS, self.cap)
        used = sum(os.times()[:2])
        self._soft(r.RLIMIT_CPU, int(used + float(limits["cpu"])) + 1)
        self._soft(r.RLIMIT_FSIZE, int(limits["fsize"]))

    def memory(self, budget: int) -> None:
        """Cap the address space at its current size + ``budget`` (a stage's share), never above the check's cap."""
        if self.resource is not None and "memory" in self.enforced:
            self._soft(self.resource.RLIMIT_AS, min(self.cap, _address_space() + int(budget)))

    def lift(self) -> None:
        r = self.resource
        if r is None:
            return
        for which in (r.RLIMIT_AS, r.RLIMIT_CPU, r.RLIMIT_FSIZE):
            _, hard = r.getrlimit(which)
            r.setrlimit(which, (hard, hard))

    def _soft(self, which: int, value: int) -> None:
        _, hard = self.resource.getrlimit(which)
        if hard != self.resource.RLIM_INFINITY:
            value = min(value, hard)
        self.resource.setrlimit(which, (value, hard))


def _address_space() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _fail(kind: str) -> None:
    if kind == "segv":
        import ctypes

        ctypes.string_at(0)
    elif kind == "abort":
        os.abort()
    elif kind == "alloc":
        hog = []
        while True:
            hog.append(bytearray(64 << 20))
    elif kind == "spin":
        while True:
            pass
    elif kind == "write":
        with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"onegraph-fault-{os.getpid()}"), "wb") as f:
            f.write(b"x" * (1 << 20))


if __name__ == "__main__":
    main()
