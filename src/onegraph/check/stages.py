"""The stages of a check, as the checking process runs them on one model's bytes.

Only the checking process calls these: each runs native code (protobuf parsing, ``onnx.checker``, ONNX
shape inference, onnxruntime session creation) on untrusted bytes. Every stage returns findings; a crash
kills the checking process instead, and the calling process reports it (see :mod:`onegraph.check.sandbox`).
"""

from __future__ import annotations

import re
from typing import Any

from onegraph.check.findings import Finding
from onegraph.check.limits import stage_memory, stage_need
from onegraph.check.static.walk import has_external_data

__all__ = ["STAGES", "State", "budget", "run_stage"]

STAGES = ("parse", "static", "checker", "runtime")
#: external-data findings that keep onnxruntime from opening the model (it would read those files)
_UNSAFE_FILES = {"C101", "C102", "C103", "C104", "C105", "C106", "C107", "C108", "C110"}
_MESSAGE = 600


class State:
    """What the stages of one model share: its bytes, its folder, the parsed message, the findings so far."""

    def __init__(self, data: bytes, folder: str | None, memory: int) -> None:
        self.data, self.folder, self.memory = data, folder, memory
        #: address space the running stage may add (:func:`onegraph.check.limits.stage_memory`)
        self.budget = memory
        #: what the model declares, counted by the static stage: nodes of every body, bytes of stored tensors
        self.nodes: int | None = None
        self.tensor_bytes: int | None = None
        self.model: Any = None
        #: whether the static stage ran in this process (it decides which external files may be read)
        self.static_done = False
        self.findings: list[Finding] = []
        #: external data files the model reads (locations relative to ``folder``), once the static stage passed
        self.files: list[str] = []


def budget(stage: str, state: State) -> int:
    """Address space ``stage`` may add: what the file's size and the model's declarations justify, within the
    memory limit (:func:`onegraph.check.limits.stage_memory`). The checking process caps itself at it."""
    state.budget = stage_memory(stage, state.memory, size=len(state.data), nodes=state.nodes,
                                tensor_bytes=state.tensor_bytes)
    return state.budget


def run_stage(stage: str, state: State) -> tuple[str, list[Finding]]:
    """Run ``stage``; returns its status (``ok``, ``findings``, ``skipped``) and its findings.

    A stage the model's declared size cannot fit in the memory limit is refused before it runs (C004)."""
    if stage != "parse" and state.model is None:
        return "skipped", []
    refused = _too_large(stage, state)
    if refused is not None:
        state.findings.append(refused)
        return "findings", [refused]
    try:
        found = _STAGES[stage](state)
    except MemoryError:
        found = [Finding("C004", f"ran out of memory (limit {state.budget:,} bytes for this stage)", "process",
                         stage=stage)]
    if found is None:
        return "skipped", []
    state.findings.extend(found)
    return ("findings" if found else "ok"), found


def _too_large(stage: str, state: State) -> Finding | None:
    if state.nodes is None or state.tensor_bytes is None:
        return None
    need = stage_need(stage, nodes=state.nodes, tensor_bytes=state.tensor_bytes)
    if need <= state.memory:
        return None
    what = "onnxruntime" if stage == "runtime" else "onnx.checker"
    return Finding("C004", f"the model declares {state.nodes:,} nodes and {state.tensor_bytes:,} bytes of tensors: "
                   f"{what} needs at least {need:,} bytes for them, more than the memory limit "
                   f"{state.memory:,}; the {stage} stage was not run", "process", stage=stage)


def _parse(state: State) -> list[Finding]:
    import onnx

    model = onnx.ModelProto()
    try:
        model.ParseFromString(state.data)
    except MemoryError:
        raise
    except Exception as exc:  # DecodeError, or RuntimeError from upb
        if "alloc failed" in str(exc):  # upb's arena hit the memory limit
            why = ("" if state.budget >= state.memory else
                   ", the most a file of this size justifies at upb's cost per message: it holds far more, "
                   "smaller protobuf messages than a model does (a protobuf bomb)")
            return [Finding("C004", f"parsing {len(state.data):,} bytes ran out of memory (limit "
                            f"{state.budget:,} bytes{why})", "process", stage="parse")]
        return [Finding("C001", f"{len(state.data):,} bytes do not parse as an ONNX model ({_text(exc)})", "file",
                        stage="parse")]
    if not model.HasField("graph"):
        return [Finding("C002", "the model holds no graph", "graph", stage="parse")]
    from onegraph.check.static.tensors import census

    state.model = model
    state.nodes, state.tensor_bytes = census(model)  # what the later stages' memory scales with
    return []


def _static(state: State) -> list[Finding]:
    from onegraph.check.static import static_findings
    from onegraph.check.static.walk import external_locations

    found = [_staged(f, "static") for f in static_findings(state.model, folder=state.folder, memory=state.memory)]
    state.files = external_locations(state.model)
    state.static_done = True
    return found


def _checker(state: State) -> list[Finding] | None:
    import onnx
    import onnx.checker
    import onnx.shape_inference

    if len(state.data) >= 2**31 or _external_blocked(state):
        return None  # onnx.checker takes bytes only below 2 GiB
    data = state.data
    if has_external_data(state.model):
        # onnx.checker resolves external data against the current folder when given bytes: hand it the
        # tensors loaded from the model's folder instead (their locations passed the static checks)
        from onnx.external_data_helper import load_external_data_for_model

        model = onnx.ModelProto()
        model.CopyFrom(state.model)
        try:
            load_external_data_for_model(model, state.folder)
        except MemoryError:
            raise
        except Exception as exc:  # onnx's own checks of the files refuse them
            return [_native("C501", exc, "checker")]
        data = model.SerializeToString()
    try:
        onnx.checker.check_model(data, full_check=True)
    except MemoryError:
        raise
    except onnx.shape_inference.InferenceError as exc:
        return [_native("C502", exc, "checker")]
    except Exception as exc:  # ValidationError, or whatever the checker raises on garbage
        # the checker stops before its shape inference: run inference anyway (as the calling process may, on a
        # model that is invalid but safe to load), so a crash in it happens here
        found = [_native("C501", exc, "checker")]
        try:
            onnx.shape_inference.infer_shapes(data, check_type=False, strict_mode=False, data_prop=True)
        except MemoryError:
            raise
        except Exception as inference:  # InferenceError, or what inference raises on garbage
            found.append(_native("C502", inference, "checker"))
        return found
    return []


def _runtime(state: State) -> list[Finding] | None:
    import onnxruntime as ort

    from onegraph.check.options import session_options

    if _external_blocked(state):
        return None
    options = session_options(threads=1, folder=state.folder)
    try:
        session = ort.InferenceSession(state.data, options, providers=["CPUExecutionProvider"])
        session.get_inputs(), session.get_outputs(), session.get_modelmeta()
    except MemoryError:
        raise
    except Exception as exc:  # onnxruntime's Fail / InvalidGraph / NotImplemented / InvalidArgument
        text = _text(exc)
        if "bad_alloc" in text or "bad allocation" in text or "Failed to allocate" in text:
            return [Finding("C004", f"onnxruntime ran out of memory opening the model: {text}", "process",
                            stage="runtime")]
        code = "C402" if "Could not find an implementation" in text else "C503"
        return [_native(code, exc, "runtime")]
    return []


def _external_blocked(state: State) -> bool:
    """Whether the model's external data must not be read: refused by the static checks, or no folder."""
    if any(f.code in _UNSAFE_FILES for f in state.findings):
        return True  # never let native code read an external-data file the static checks refused
    # nor one they did not see: after a crash of the static stage, the stages after it run without it
    return (state.folder is None or not state.static_done) and has_external_data(state.model)


_STAGES = {"parse": _parse, "static": _static, "checker": _checker, "runtime": _runtime}

_NODE_PATTERNS = [re.compile(p) for p in (
    r"implementation for (?P<op>\w+)\(\d+\) node with name '(?P<name>[^']*)'",
    r"node with name '(?P<name>[^']*)'",
    r"Node \((?P<name>[^)]*)\) Op \((?P<op>[^)]*)\)",
    r"In Node, \(\"(?P<name>[^\"]*)\", (?P<op>\w+),",
    r"Name:\s*(?P<name>\S*)\s+OpType:\s*(?P<op>\S+)",
    r"\(op_type:(?P<op>\w+), node name: (?P<name>[^)]*)\)",
    r"\(op_type:(?P<op>\w+)\)",
)]


def _native(code: str, exc: BaseException, stage: str) -> Finding:
    """A finding from a native checker's message, naming the node when the message does."""
    text = _text(exc)
    node = None
    for pattern in _NODE_PATTERNS:
        m = pattern.search(text)
        if m:
            found = m.groupdict()
            node = found.get("name") or (f"{found['op']} (unnamed)" if found.get("op") else None)
            break
    return Finding(code, text, "graph", node=node, stage=stage)


def _staged(f: Finding, stage: str) -> Finding:
    return Finding(f.code, f.message, f.field, node=f.node, tensor=f.tensor, stage=stage, severity=f.severity)


def _text(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:_MESSAGE] + ("..." if len(text) > _MESSAGE else "")
