"""``onegraph.verify.check``: check an untrusted model in an isolated, resource-limited process.

The calling process only reads the file; a separate process (see :mod:`onegraph.verify.sandbox`) parses it,
runs the static checks :mod:`onegraph.verify.static` makes beyond ``onnx.checker``, runs ``onnx.checker``
with ``full_check`` (which includes shape inference), and opens it in onnxruntime, under memory, CPU-time,
wall-time and file-size limits. A crash or an exhausted limit in any stage becomes a finding naming the
stage; the stages after it run again in a fresh process, so one crash does not hide the other findings.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import onnx

from onegraph.verify.findings import CheckReport, Finding
from onegraph.verify.limits import Limits
from onegraph.verify.sandbox import Unavailable, Worker, shared
from onegraph.verify.stages import STAGES

_FINISHED = ("ok", "findings", "skipped")
_PREREQUISITES = ("parse", "static")


@dataclasses.dataclass(frozen=True)
class Source:
    """A model's bytes, the folder its external data is relative to, and the name reports use."""

    data: bytes
    folder: str | None
    label: str


def read_source(model: Any, *, folder: str | os.PathLike | None = None, limit: int | None = None
                ) -> Source | Finding:
    """The :class:`Source` of ``model`` (a path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``), or the
    C901 / C902 finding that keeps it from being checked (a file that cannot be read, or is over ``limit``
    bytes). Nothing is parsed."""
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        try:
            size = path.stat().st_size
            if limit is not None and size > limit:
                return Finding("C902", f"{size:,} bytes, more than the memory limit of {limit:,}", "file",
                               stage="file")
            data = path.read_bytes()
        except OSError as exc:
            return Finding("C901", f"cannot read {path}: {exc.strerror or exc}", "file", stage="file")
        base = folder if folder is not None else path.resolve().parent
        return Source(data, os.fspath(base), str(path))
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
    elif isinstance(model, onnx.ModelProto):
        data = model.SerializeToString()
    elif type(model).__module__.startswith("onnx_ir"):
        import onnx_ir as ir

        data = ir.to_proto(model).SerializeToString()
    else:
        return Finding("C901", f"cannot check a {type(model).__name__}; give a path, bytes or a ModelProto", "file",
                       stage="file")
    if limit is not None and len(data) > limit:
        return Finding("C902", f"{len(data):,} bytes, more than the memory limit of {limit:,}", "file", stage="file")
    return Source(data, os.fspath(folder) if folder is not None else None, "<bytes>")


def check(model: Any, *, limits: Limits | None = None, stages: Sequence[str] = STAGES,
          folder: str | os.PathLike | None = None) -> CheckReport:
    """Check a model that may be malformed or malicious, without risking the calling process.

    Parameters
    ----------
    model:
        Path to a ``.onnx`` file, its bytes, an ``onnx.ModelProto`` or an ``onnx_ir.Model``.
    limits:
        Memory / CPU / wall-time / file-size limits of the check (:class:`~onegraph.verify.limits.Limits`).
    stages:
        Any of ``parse``, ``static`` (the checks ``onnx.checker`` does not make), ``checker``
        (``onnx.checker.check_model(full_check=True)``), ``runtime`` (open it in onnxruntime); they run in this
        order, and ``parse`` always runs.
    folder:
        Folder external-data locations are relative to; by default the model file's folder (none for bytes).

    Returns
    -------
    CheckReport
        Findings with stable codes (:data:`onegraph.verify.findings.CODES`), each naming the node / tensor /
        protobuf field; ``exit_code`` 0 clean, 1 findings, 2 not checked.

    Notes
    -----
    Never raises for a bad model: parse errors, crashes (segfault, abort), memory or time exhaustion are
    findings. The checking process contains crashes and resource exhaustion; it is not a security sandbox
    against code execution (it runs as the same user).
    """
    limits = limits or Limits()
    stages = _stages(stages)
    worker, lock = shared()
    with lock:
        return _check_one(worker, model, limits, stages, folder)


def check_many(models: Iterable[Any], *, limits: Limits | None = None, stages: Sequence[str] = STAGES,
               workers: int = 2) -> Iterator[CheckReport]:
    """Check many models with ``workers`` checking processes, each reused from model to model.

    Yields one :class:`CheckReport` per model, in order. ``models`` holds anything :func:`check` takes, or
    :class:`Source` objects.
    """
    limits = limits or Limits()
    stages = _stages(stages)
    pool: queue.SimpleQueue[Worker] = queue.SimpleQueue()
    made = [Worker() for _ in range(max(1, workers))]
    for w in made:
        pool.put(w)

    def one(model: Any) -> CheckReport:
        worker = pool.get()
        try:
            return _check_one(worker, model, limits, stages, None)
        finally:
            pool.put(worker)

    try:
        with ThreadPoolExecutor(max_workers=len(made)) as executor:
            batch: list[Any] = []
            for model in models:
                batch.append(model)
                if len(batch) >= 16 * len(made):
                    yield from executor.map(one, batch)
                    batch = []
            yield from executor.map(one, batch)
    finally:
        for w in made:
            w.close()


def _check_one(worker: Worker, model: Any, limits: Limits, stages: Sequence[str],
               folder: str | os.PathLike | None) -> CheckReport:
    start = time.perf_counter()
    source = model if isinstance(model, Source) else read_source(model, folder=folder, limit=limits.memory)
    if isinstance(source, Finding):
        label = str(model) if isinstance(model, (str, os.PathLike)) else "<bytes>"
        return CheckReport(label, [source], {s: "not run" for s in stages}, limits.to_dict(),
                           time.perf_counter() - start)
    findings, status = run_stages(worker, source, stages, limits)
    info = {**limits.to_dict(), "enforced": list(worker.enforced) + ["wall"]}
    return CheckReport(source.label, findings, status, info, time.perf_counter() - start)


def run_stages(worker: Worker, source: Source, stages: Sequence[str], limits: Limits
               ) -> tuple[list[Finding], dict[str, str]]:
    """Findings and stage statuses of ``source``; after a crash, the later stages run in a fresh process."""
    findings: list[Finding] = []
    status = {s: "not run" for s in stages}
    crashed: list[str] = []
    while True:
        # a fresh process parses (and runs the static checks, which decide what the runtime stage may read)
        # again; the findings of stages already finished are known and dropped
        pending = [s for s in stages if status[s] == "not run"]
        if crashed and not pending:
            return findings, status
        run = [s for s in stages if s not in crashed and (s in _PREREQUISITES or s in pending)]
        try:
            outcome = worker.check(source.data, folder=source.folder, stages=run, limits=limits)
        except Unavailable as exc:
            findings.append(Finding("C903", str(exc), "process", stage="file"))
            return findings, status
        done = {s for s, v in status.items() if v in _FINISHED}
        findings.extend(f for f in outcome.findings if f.stage not in done)
        for stage, value in outcome.stages.items():
            if stage in status and stage not in done and value != "not run":
                status[stage] = value
        if outcome.died_in is None or outcome.died_in == "parse" or outcome.died_in in crashed:
            return findings, status
        crashed.append(outcome.died_in)


def _stages(stages: Sequence[str]) -> list[str]:
    """``stages`` in their order, with ``parse`` (every other stage needs the parsed model)."""
    from onegraph.errors import OnegraphError

    unknown = [s for s in stages if s not in STAGES]
    if unknown or not stages:
        raise OnegraphError(f"unknown check stage(s) {unknown or stages}", hint=f"use some of {', '.join(STAGES)}")
    return [s for s in STAGES if s in stages or s == "parse"]
