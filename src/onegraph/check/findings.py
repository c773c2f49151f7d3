"""What ``onegraph check`` reports: findings with stable codes, and the report that holds them.

A :class:`Finding` names the place at fault (``node``, ``tensor`` and always ``field``: the path of the
protobuf field, e.g. ``graph.node[3].input[1]``), a ``severity`` and a stable ``code``. Codes never change
meaning; new checks get new codes. The table :data:`CODES` is the reference (it is also printed by
``onegraph check --codes``).

Exit codes of ``onegraph check`` (:attr:`CheckReport.exit_code`): 0 the model is clean, 1 it has findings
(errors or warnings), 2 it could not be checked (unreadable file, model larger than the limits, the
checking process could not start).
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["ERROR", "WARNING", "INFO", "SEVERITIES", "CODES", "Finding", "CheckReport"]

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)

#: code -> (name, default severity, what it means). Codes C9xx mean "could not check" (exit code 2).
CODES: dict[str, tuple[str, str, str]] = {
    # the file and the checking process
    "C001": ("not-a-model", ERROR, "the bytes do not parse as an ONNX ModelProto (truncated, corrupt, other format)"),
    "C002": ("no-graph", ERROR, "the model holds no graph"),
    "C003": ("crash", ERROR, "native code crashed (segfault, abort, ...) while checking; the stage is named"),
    "C004": ("memory-limit", ERROR, "checking the model needed more memory than the limit (or than what the file "
                                    "size and the model's declared tensors and nodes justify)"),
    "C005": ("time-limit", ERROR, "checking the model took more CPU or wall time than the limit"),
    "C006": ("file-size-limit", ERROR, "native code tried to write a file larger than the limit"),
    "C007": ("invalid-utf8", ERROR, "a name or other string field holds bytes that are not UTF-8"),
    # external data
    "C101": ("external-absolute", ERROR, "an external-data location is an absolute path"),
    "C102": ("external-traversal", ERROR, "an external-data location contains '..'"),
    "C103": ("external-symlink", ERROR, "an external-data location goes through a symbolic link"),
    "C104": ("external-hardlink", ERROR, "an external-data file has more than one hard link"),
    "C105": ("external-outside", ERROR, "an external-data location resolves outside the model's folder"),
    "C106": ("external-missing", ERROR, "an external-data file is missing, not a regular file, or has no location"),
    "C107": ("external-out-of-bounds", ERROR, "external-data offset + length reach beyond the end of the file"),
    "C108": ("external-length", ERROR, "external-data length does not match dims x dtype"),
    "C109": ("external-unverified", WARNING, "the model uses external data but was given as bytes without a folder"),
    "C110": ("external-entry", ERROR, "a malformed external-data entry (offset / length not a non-negative integer, "
                                      "unknown key)"),
    # tensors and shapes
    "C201": ("raw-data-length", ERROR, "raw_data length does not match dims x dtype"),
    "C202": ("negative-dim", ERROR, "a tensor dimension is negative"),
    "C203": ("dims-overflow", ERROR, "the product of dimensions overflows int64"),
    "C204": ("exceeds-memory", ERROR, "a tensor, or an allocation a constant shape asks for, exceeds the memory limit"),
    "C205": ("typed-data-count", ERROR, "the number of values in a typed data field does not match dims"),
    "C206": ("bad-dtype", ERROR, "a tensor's data type is undefined or unknown"),
    "C207": ("attribute-empty", ERROR, "an attribute declares a tensor, graph or type and holds none"),
    # graph structure
    "C301": ("input-count", ERROR, "a node's inputs do not match its operator schema (count, or a required one empty)"),
    "C302": ("output-count", ERROR, "a node's outputs do not match its operator schema"),
    "C303": ("undefined-input", ERROR, "a node uses a value nothing defines"),
    "C304": ("cycle", ERROR, "nodes (or model-local functions) depend on each other in a cycle"),
    "C305": ("duplicate-name", ERROR, "a value name is defined more than once"),
    "C306": ("output-undefined", ERROR, "a graph output is not computed by the graph"),
    "C307": ("not-sorted", WARNING, "nodes are not in topological order"),
    "C308": ("attribute-type", ERROR, "an attribute has a type its operator does not accept"),
    "C309": ("attribute-unknown", ERROR, "an attribute its operator does not define"),
    "C310": ("attribute-missing", ERROR, "a required attribute is missing"),
    "C311": ("attribute-value", ERROR, "an attribute value outside what its operator accepts"),
    "C312": ("input-rank", ERROR, "an input of a rank its operator cannot take"),
    "C313": ("axis-range", ERROR, "an axis (attribute or constant input) outside the rank of the input it indexes, "
                                  "or a constant index outside the dim it indexes"),
    "C314": ("rank-mismatch", ERROR, "inputs whose ranks the operator requires to agree do not (Concat inputs, "
                                     "GatherND batch_dims, GatherElements, Transpose perm)"),
    "C315": ("shape-mismatch", ERROR, "dimensions known from constants or declared shapes that make a node "
                                      "invalid (broadcasting, Concat, GatherND batch and index dims, Reshape "
                                      "element count, MatMul inner dims)"),
    # operators and versions
    "C401": ("opset-unsupported", ERROR, "an opset version onnxruntime does not support"),
    "C402": ("no-kernel", ERROR, "onnxruntime has no implementation of the operator at this opset"),
    "C403": ("unknown-operator", ERROR, "an operator no registry nor model-local function defines"),
    "C404": ("opset-missing", ERROR, "a node's domain has no opset import"),
    "C405": ("ir-version", ERROR, "the IR version is missing or newer than this onnx supports"),
    # native checkers
    "C501": ("checker", ERROR, "onnx.checker (full_check) rejects the model"),
    "C502": ("shape-inference", ERROR, "ONNX shape inference rejects the model"),
    "C503": ("runtime-refused", ERROR, "onnxruntime refuses to open the model"),
    # what the other commands read beside the graph
    "C601": ("metadata-invalid", ERROR, "an org.onegraph.* metadata value the schema refuses, or that names "
                                        "inputs, outputs or types the graph does not have (the key is named): "
                                        "the commands that read it refuse the model"),
    "C602": ("input-too-large", WARNING, "a graph input whose fixed dims need more than the memory limit in any "
                                         "feed: no feed can be generated or scored"),
    # could not check (exit code 2)
    "C901": ("unreadable", ERROR, "the model file cannot be read"),
    "C902": ("too-large", ERROR, "the model is larger than the memory limit allows to check"),
    "C903": ("checker-unavailable", ERROR, "the checking process could not be started"),
}


def blocks(finding: Finding, purpose: str) -> bool:
    """Whether ``finding`` keeps a model from being used for ``purpose`` in the calling process.

    ``run`` (an onnxruntime session): every error except onnx's own verdicts on validity (C501, C502):
    onnxruntime decides whether it opens the model (C503), and except what the other commands read beside the
    graph (C6xx: a malformed metadata key makes the reader that needs it raise a ``MetadataError`` naming the
    key, and ``onegraph meta set`` must still be able to repair it). ``load`` (parse it, run onnx code such as
    shape inference or the converter on it): only what makes native code reading the model unsafe: the file
    and the checking process (C00x: a crash or an exhausted limit there would happen here too), external data
    (C10x) and stored tensors inconsistent with their dims or types, or allocations beyond the memory limit
    (C20x). A model that is merely invalid (a missing attribute, an unknown operator, shapes that disagree:
    C3xx) can still be shown, inspected and converted: the checking process has parsed it and run onnx's
    checker and shape inference on it without crashing; onnxruntime is not given it (C313-C315 name what its
    kernels would index out of bounds).
    """
    if finding.severity != ERROR:
        return False
    if purpose == "run":
        return finding.code not in ("C501", "C502") and finding.code[:2] != "C6"
    return finding.code[:2] == "C0" or finding.code[:2] in ("C1", "C2")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One problem found in a model.

    Attributes
    ----------
    code:
        Stable code, a key of :data:`CODES` (``C303``).
    message:
        What is wrong, in words.
    field:
        Path of the protobuf field at fault (``graph.node[2].input[1]``, ``graph.initializer[0].dims``), or
        ``file`` / ``process`` for findings about the file or the checking process.
    node, tensor:
        Name of the node (``#<index> <op_type>`` when it has none) / tensor (value) concerned, if any.
    stage:
        Where it was found: ``parse``, ``static``, ``checker``, ``runtime`` or ``file``.
    severity:
        ``error``, ``warning`` or ``info`` (the code's default unless stated).
    """

    code: str
    message: str
    field: str
    node: str | None = None
    tensor: str | None = None
    stage: str = "static"
    severity: str = ""

    def __post_init__(self) -> None:
        for name in ("message", "field", "node", "tensor"):
            value = getattr(self, name)
            if isinstance(value, bytes):  # a name that is not UTF-8, straight from the protobuf
                object.__setattr__(self, name, value.decode("utf-8", "backslashreplace"))
        if self.code not in CODES:
            raise ValueError(f"unknown finding code {self.code}")
        if not self.severity:
            object.__setattr__(self, "severity", CODES[self.code][1])

    @property
    def name(self) -> str:
        return CODES[self.code][0]

    def where(self) -> str:
        parts = []
        if self.node is not None:
            parts.append(f"node {self.node!r}")
        if self.tensor is not None:
            parts.append(f"tensor {self.tensor!r}")
        # a process-level finding (crash, exhausted limit) belongs to the stage that was running: each
        # stage after a crash runs again in a fresh process and can exhaust a limit of its own
        if self.field == "process":
            parts.append("process (before any stage)" if self.stage == "file" else f"process ({self.stage} stage)")
        else:
            parts.append(self.field)
        return ", ".join(parts)

    def __str__(self) -> str:
        return f"{self.severity} {self.code} {self.name} at {self.where()}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        d = {"code": self.code, "name": self.name, "severity": self.severity, "stage": self.stage,
             "field": self.field, "message": self.message}
        if self.node is not None:
            d["node"] = self.node
        if self.tensor is not None:
            d["tensor"] = self.tensor
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(code=str(d["code"]), message=str(d["message"]), field=str(d["field"]),
                   node=d.get("node"), tensor=d.get("tensor"), stage=str(d.get("stage", "static")),
                   severity=str(d.get("severity", "")))


@dataclasses.dataclass
class CheckReport:
    """The outcome of checking one model.

    Attributes
    ----------
    model:
        The file checked (or ``<bytes>``).
    findings:
        Every finding, in the order the stages produced them.
    stages:
        stage -> ``ok`` / ``findings`` / ``crashed`` / ``skipped`` / ``not run``.
    limits:
        The limits the checking process ran under (``memory`` bytes, ``cpu`` / ``wall`` seconds, ``fsize``
        bytes).
    seconds:
        Wall time of the whole check.
    files:
        The external data files the model reads, relative to its folder.
    """

    model: str
    findings: list[Finding]
    stages: dict[str, str]
    limits: dict[str, Any]
    seconds: float = 0.0
    files: list[str] = dataclasses.field(default_factory=list)

    @property
    def checked(self) -> bool:
        """False when the model could not be checked (a C9xx finding)."""
        return not any(f.code.startswith("C9") for f in self.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def ok(self) -> bool:
        """Checked, and no error or warning."""
        return self.checked and not any(f.severity in (ERROR, WARNING) for f in self.findings)

    @property
    def exit_code(self) -> int:
        """0 clean, 1 findings, 2 could not check."""
        if not self.checked:
            return 2
        return 0 if self.ok else 1

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        d = {"model": self.model, "status": "checked" if self.checked else "not checked",
             "exit_code": self.exit_code, "findings": [f.to_dict() for f in self.findings],
             "stages": dict(self.stages), "limits": dict(self.limits), "seconds": round(self.seconds, 4)}
        if self.files:
            d["external_data"] = list(self.files)
        return d

    def __str__(self) -> str:
        if not self.findings:
            return f"{self.model}: clean ({', '.join(s for s, v in self.stages.items() if v == 'ok')} passed)"
        counts = {s: sum(f.severity == s for f in self.findings) for s in SEVERITIES}
        summary = ", ".join(f"{n} {s}{'s' if n > 1 else ''}" for s, n in counts.items() if n)
        head = f"{self.model}: {summary}" + ("" if self.checked else " (could not check)")
        return "\n".join([head] + [f"  {f}" for f in self.findings])
