"""``onegraph.check.check``: check an untrusted model in an isolated, resource-limited process.

The calling process only reads the file; a separate process (see :mod:`onegraph.check.sandbox`) parses it,
runs the static checks :mod:`onegraph.check.static` makes beyond ``onnx.checker``, runs ``onnx.checker``
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
from typing import Any

from onegraph.check.findings import CheckReport, Finding
from onegraph.check.limits import Limits
from onegraph.check.sandbox import Unavailable, Worker, shared
from onegraph.check.source import ModelTooLargeError, Source, source_of
from onegraph.check.stages import STAGES
from onegraph.errors import ModelFileError, OnegraphError

__all__ = ["read_source", "check", "check_many", "StageResult", "run_stages"]

_FINISHED = ("ok", "findings", "skipped")
_PREREQUISITES = ("parse", "static")


def read_source(model: Any, *, folder: str | os.PathLike | None = None, limit: int | None = None
                ) -> Source | Finding:
    """The :class:`Source` of ``model`` (a path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``), or the
    C901 / C902 finding that keeps it from being checked (a file that cannot be read, or is over ``limit``
    bytes or protobuf's 2 GiB). Nothing is parsed."""
    try:
        source = source_of(model, folder=folder, limit=limit)
    except ModelTooLargeError as exc:
        return Finding("C902", f"{exc.size:,} bytes, more than the memory limit of {exc.limit:,}", "file",
                       stage="file")
    except ModelFileError as exc:
        return Finding("C901", exc.message, "file", stage="file")
    label = str(model) if isinstance(model, (str, os.PathLike)) else "<bytes>"
    return Source(source.data, source.folder, label)


def check(model: Any, *, limits: Limits | None = None, stages: Sequence[str] = STAGES,
          folder: str | os.PathLike | None = None) -> CheckReport:
    """Check a model that may be malformed or malicious, without risking the calling process.

    Parameters
    ----------
    model:
        Path to a ``.onnx`` file, its bytes, an ``onnx.ModelProto`` or an ``onnx_ir.Model``.
    limits:
        Memory / CPU / wall-time / file-size limits of the check (:class:`~onegraph.check.limits.Limits`).
    stages:
        Any of ``parse``, ``static`` (the checks ``onnx.checker`` does not make), ``checker``
        (``onnx.checker.check_model(full_check=True)``), ``runtime`` (open it in onnxruntime); they run in this
        order, and ``parse`` always runs.
    folder:
        Folder external-data locations are relative to; by default the model file's folder (none for bytes).

    Returns
    -------
    CheckReport
        Findings with stable codes (:data:`onegraph.check.findings.CODES`), each naming the node / tensor /
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
    result = run_stages(worker, source, stages, limits)
    info = {**limits.to_dict(), "enforced": list(worker.enforced) + ["wall"]}
    return CheckReport(source.label, result.findings, result.stages, info, time.perf_counter() - start,
                       files=result.files)


@dataclasses.dataclass
class StageResult:
    """Findings, stage statuses and the external data files (relative to the model's folder) of one check."""

    findings: list[Finding]
    stages: dict[str, str]
    files: list[str]


def run_stages(worker: Worker, source: Source, stages: Sequence[str], limits: Limits) -> StageResult:
    """Run ``stages`` on ``source``; after a crash, the later stages run in a fresh process."""
    result = StageResult([], {s: "not run" for s in stages}, [])
    status = result.stages
    crashed: list[str] = []
    while True:
        # a fresh process parses (and runs the static checks, which decide what the runtime stage may read)
        # again; the findings of stages already finished are known and dropped
        pending = [s for s in stages if status[s] == "not run"]
        if crashed and not pending:
            return result
        run = [s for s in stages if s not in crashed and (s in _PREREQUISITES or s in pending)]
        try:
            outcome = worker.check(source.data, folder=source.folder, stages=run, limits=limits)
        except Unavailable as exc:
            result.findings.append(Finding("C903", str(exc), "process", stage="file"))
            return result
        done = {s for s, v in status.items() if v in _FINISHED}
        result.findings.extend(f for f in outcome.findings if f.stage not in done)
        result.files = result.files or outcome.files
        for stage, value in outcome.stages.items():
            if stage in status and stage not in done and value != "not run":
                status[stage] = value
        if outcome.died_in is None or outcome.died_in == "parse" or outcome.died_in in crashed:
            return result
        crashed.append(outcome.died_in)


def _stages(stages: Sequence[str]) -> list[str]:
    """``stages`` in their order, with ``parse`` (every other stage needs the parsed model)."""
    unknown = [s for s in stages if s not in STAGES]
    if not stages:
        raise OnegraphError("no check stage given", hint=f"use some of {', '.join(STAGES)} (e.g. --stages "
                                                          "parse,static), or leave the option out to run every one")
    if unknown:
        raise OnegraphError(f"unknown check stage(s) {unknown}", hint=f"use some of {', '.join(STAGES)}")
    return [s for s in STAGES if s in stages or s == "parse"]
