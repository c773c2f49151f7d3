"""The pre-check every model onegraph reads goes through before native code touches it in-process.

:func:`ensure_safe` runs the stages of :func:`onegraph.verify.check` that matter for what the caller is
about to do, in the checking process: ``parse`` before the caller parses the bytes itself, ``parse``,
``static`` and ``runtime`` before it opens an onnxruntime session. An error finding stops the caller with
:class:`UnsafeModelError` naming it. Results are cached per content (SHA-256 of the bytes) and model
folder, so a file is checked once per process however often it is opened, and an edited file is checked
again. Models :func:`onegraph.build` made in this process are trusted (:func:`trust`).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from onegraph.errors import ModelFileError
from onegraph.verify.findings import ERROR, CheckReport, Finding
from onegraph.verify.limits import Limits

#: what the caller is about to do -> the stages that must pass first
PURPOSES = {"parse": ("parse",), "run": ("parse", "static", "runtime")}
_ALL = frozenset(s for stages in PURPOSES.values() for s in stages)
_CACHE: OrderedDict[tuple[bytes, str | None], frozenset[str]] = OrderedDict()
_CACHE_SIZE = 512
_LOCK = threading.Lock()
_ANY_FOLDER = "\x00any"


class UnsafeModelError(ModelFileError):
    """The pre-check found an error in a model: onegraph did not open it in-process.

    Attributes
    ----------
    findings:
        The error findings (stable codes, node / tensor / field at fault).
    report:
        The whole :class:`~onegraph.verify.findings.CheckReport`.
    """

    def __init__(self, label: str, findings: list[Finding], report: CheckReport) -> None:
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        if first.code == "C001":
            message = f"{label} is not a valid ONNX model ({first.message})"
        elif first.code == "C002":
            message = f"{label} holds no graph; it is not an ONNX model"
        else:
            message = f"{label} was not opened: {first}{more}"
        target = label.removeprefix("model file ") if label != "the model bytes" else "MODEL"
        super().__init__(message, hint=f"`onegraph check {target}` prints every finding; pass trusted=True "
                         "(command line: --trusted) only for files you trust")
        self.findings = findings
        self.report = report


def _key(data: bytes, folder: str | None) -> tuple[bytes, str | None]:
    return hashlib.sha256(data).digest(), folder


def trust(data: bytes) -> None:
    """Record ``data`` as safe to open from any folder (a model this process built and checked itself,
    which keeps every tensor in the file)."""
    _remember((hashlib.sha256(data).digest(), _ANY_FOLDER), _ALL)


def _remember(key: tuple[bytes, str | None], stages: frozenset[str]) -> None:
    with _LOCK:
        _CACHE[key] = _CACHE.get(key, frozenset()) | stages
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)


def ensure_safe(data: bytes, *, folder: str | None, label: str, purpose: str, limits: Limits | None = None
                ) -> None:
    """Return when the pre-check for ``purpose`` (``parse`` or ``run``) passes; raise otherwise.

    Parameters
    ----------
    data:
        The model's bytes, exactly those the caller will parse or open.
    folder:
        The folder external-data locations are relative to (None for bytes).
    label:
        How the error names the model (``model file m.onnx``).
    purpose:
        ``parse`` (the caller parses the protobuf) or ``run`` (the caller opens an onnxruntime session).
    limits:
        Limits of the pre-check; by default :class:`Limits` with memory raised to 8 x the model's size.

    Raises
    ------
    UnsafeModelError
        naming the first error finding (a model that does not parse raises it with the message
        ``... is not a valid ONNX model``), or C903 when the checking process cannot start.
    """
    stages = PURPOSES[purpose]
    key = _key(data, folder)
    with _LOCK:
        for known in (key, (key[0], _ANY_FOLDER)):
            if set(stages) <= _CACHE.get(known, frozenset()):
                _CACHE.move_to_end(known)
                return
    from onegraph.verify.check import Source, check

    if limits is None:
        limits = Limits(memory=max(Limits().memory, 8 * len(data)))
    report = check(Source(data, folder, label), stages=stages, limits=limits)
    errors = [f for f in report.findings if f.severity == ERROR]
    if errors:
        raise UnsafeModelError(label, errors, report)
    _remember(key, frozenset(stages))


def clear() -> None:
    """Forget every pre-check result (the tests start from scratch with it)."""
    with _LOCK:
        _CACHE.clear()
