"""The calling side of the checking process: start it, send it models, turn its death into a finding.

A :class:`Worker` keeps one checking process (``python -m onegraph.check._worker``) alive across many
models, so the cost of starting Python and importing onnx and onnxruntime (about a second) is paid once per
process, not per model. When the process dies (a segfault, an abort, a CPU or file-size limit signal, the
kernel's OOM killer) or overruns the wall-time limit (it is killed), the model it was checking gets a
finding naming the stage, and the next model starts a fresh process.

Nothing here parses the model: the calling process only reads files and JSON lines.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from onegraph.check.findings import Finding
from onegraph.check.limits import Limits

__all__ = ["Outcome", "Unavailable", "Worker", "shared"]

_MAX_LINE = 1 << 24
_START_SECONDS = 120.0


@dataclasses.dataclass
class Outcome:
    """What the checking process said about one model, and how it ended."""

    findings: list[Finding]
    stages: dict[str, str]
    died_in: str | None = None
    #: external data files the model reads, relative to its folder (reported by the static stage)
    files: list[str] = dataclasses.field(default_factory=list)


class Unavailable(Exception):
    """The checking process could not be started."""


class Worker:
    """One checking process, reused for model after model.

    Parameters
    ----------
    env:
        Extra environment variables for the process (the tests set ``ONEGRAPH_CHECK_FAULT``).
    """

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self._env = dict(env or {})
        self._proc: subprocess.Popen | None = None
        self._buffer = b""
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._owner = os.getpid()
        self.enforced: list[str] = []
        self.started = 0

    # -- process ----------------------------------------------------------------------------------
    def _start(self) -> None:
        import onegraph

        root = os.path.dirname(os.path.dirname(os.path.abspath(onegraph.__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
        # glibc reserves 64 MiB of address space per thread arena: two keep RLIMIT_AS about the model
        env.update(MALLOC_ARENA_MAX="2", OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
        # onnxruntime >= 1.2x keeps a telemetry database under ~/.cache and sends it over the network from
        # a background thread: a checker writes no files and talks to nobody
        env["ORT_DISABLE_TELEMETRY"] = "1"
        env.update(self._env)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-X", "faulthandler", "-m", "onegraph.check._worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                start_new_session=True, close_fds=True)
        except OSError as exc:
            raise Unavailable(f"cannot start {sys.executable}: {exc}") from None
        self._buffer = b""
        self._stderr.clear()
        threading.Thread(target=self._drain, args=(self._proc,), daemon=True).start()
        self.started += 1
        try:
            ready = self._message(time.monotonic() + _START_SECONDS)
        except (_Died, _Timeout):
            self.close()
            raise Unavailable("the checking process did not start: " + " | ".join(self._stderr)[-500:]) from None
        self.enforced = list(ready.get("enforced", []))

    def _drain(self, proc: subprocess.Popen) -> None:
        for line in proc.stderr:
            self._stderr.append(line.decode("utf-8", "replace").rstrip())

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self._owner == os.getpid()

    def close(self) -> None:
        """Stop the process (it exits when its stdin closes; it is killed if it does not)."""
        proc, self._proc = self._proc, None
        if proc is None or self._owner != os.getpid():
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            _kill(proc)

    # -- one model --------------------------------------------------------------------------------
    def check(self, data: bytes, *, folder: str | None, stages: Sequence[str], limits: Limits) -> Outcome:
        """Run ``stages`` on ``data`` in the checking process (started if needed).

        Raises :class:`Unavailable` when the process cannot be started.
        """
        outcome = Outcome([], {s: "not run" for s in stages})
        current = None
        deadline = self._prepare(limits)
        try:
            self._send({"stages": list(stages), "folder": folder, "limits": limits.to_dict(), "size": len(data)},
                       data)
            while True:
                message = self._message(deadline)
                if "stage" in message:
                    current = str(message["stage"])
                elif "finding" in message:
                    outcome.findings.append(Finding.from_dict(message["finding"]))
                elif "files" in message:
                    outcome.files = [str(f) for f in message["files"]]
                elif "end" in message:
                    outcome.stages[str(message["end"])] = str(message.get("status", "ok"))
                    current = None
                elif "done" in message:
                    return outcome
        except _Timeout:
            _kill(self._proc)
            outcome.findings.append(Finding("C005", f"took longer than the wall-time limit of {limits.wall:g} s",
                                            "process", stage=current or "file"))
        except (_Died, OSError, ValueError, KeyError):  # ValueError / KeyError: garbage on the protocol pipe
            outcome.findings.append(self._death(current, limits))
        outcome.died_in = current or (stages[0] if stages else "parse")
        outcome.stages[outcome.died_in] = "crashed"
        self._proc = None
        return outcome

    def _prepare(self, limits: Limits) -> float:
        """Start the process if it is not running; the request's wall-clock deadline."""
        if not self.alive():
            self._proc = None
            self._start()
        self._stderr.clear()
        return time.monotonic() + limits.wall

    def _send(self, request: dict, data: bytes) -> None:
        """One request: a JSON line, then the model's bytes (``request["size"]`` of them)."""
        self._proc.stdin.write(json.dumps(request).encode() + b"\n")
        self._proc.stdin.write(data)
        self._proc.stdin.flush()

    def call(self, name: str, data: bytes, options: dict, limits: Limits) -> Outcome | bytes | tuple[str, str]:
        """Run onnx's native function ``name`` on ``data`` in the checking process: the result's bytes, the
        ``(exception type, message)`` it raised, or an :class:`Outcome` whose finding says how the process died
        (crash, limit, wall time).

        Raises :class:`Unavailable` when the process cannot be started.
        """
        deadline = self._prepare(limits)
        try:
            self._send({"call": name, "options": options, "limits": limits.to_dict(), "size": len(data)}, data)
            message = self._message(deadline)
            if "error" in message:
                return str(message["error"]), str(message.get("message", ""))
            return self._bytes(int(message["result"]), deadline)
        except _Timeout:
            _kill(self._proc)
            finding = Finding("C005", f"took longer than the wall-time limit of {limits.wall:g} s", "process",
                              stage="checker")
        except (_Died, OSError, ValueError, KeyError):
            finding = self._death("checker", limits)
        self._proc = None
        return Outcome([finding], {}, died_in="checker")

    def _bytes(self, n: int, deadline: float) -> bytes:
        """The next ``n`` bytes of the process's answer."""
        fd = self._proc.stdout.fileno()
        while len(self._buffer) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise _Timeout
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise _Died
            self._buffer += chunk
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def _death(self, stage: str | None, limits: Limits) -> Finding:
        proc = self._proc
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _kill(proc)
            code = proc.returncode
        time.sleep(0.05)  # let the stderr thread read the last lines (a fault handler's traceback)
        tail = _summary(list(self._stderr))
        stage = stage or "parse"
        detail = f"; stderr: {tail}" if tail else ""
        if code is not None and code < 0:
            sig = -code
            name = _signal_name(sig)
            if sig == getattr(signal, "SIGXCPU", None):
                return Finding("C005", f"used more than the CPU-time limit of {limits.cpu:g} s ({name})", "process",
                               stage=stage)
            if sig == getattr(signal, "SIGXFSZ", None):
                return Finding("C006", f"tried to write a file larger than the limit of {limits.fsize:,} bytes "
                               f"({name})", "process", stage=stage)
            if sig == signal.SIGKILL:
                return Finding("C004", f"was killed by {name}, most likely out of memory{detail}", "process",
                               stage=stage)
            return Finding("C003", f"the checking process crashed with {name} during the {stage} stage{detail}",
                           "process", stage=stage)
        return Finding("C003", f"the checking process exited with status {code} during the {stage} stage{detail}",
                       "process", stage=stage)

    def _message(self, deadline: float) -> dict:
        fd = self._proc.stdout.fileno()
        if time.monotonic() > deadline:  # also when the answer is already buffered: the wall limit is the limit
            raise _Timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise _Timeout
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise _Died
            self._buffer += chunk
            if len(self._buffer) > _MAX_LINE:
                raise _Died
        line, self._buffer = self._buffer.split(b"\n", 1)
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("protocol")
        return message

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class _Died(Exception):
    pass


class _Timeout(Exception):
    pass


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _summary(lines: list[str]) -> str:
    """The telling lines of a dying process's stderr: the error, and the innermost Python frame."""
    frames = [line.strip() for line in lines if line.lstrip().startswith("File ")]
    noise = ("Extension modules", "Current thread", "Thread 0x", "Stack (most recent", "Traceback")
    told = [line.strip() for line in lines
            if line.strip() and not line.lstrip().startswith("File ") and not line.startswith(noise)]
    return " | ".join(told[-4:] + frames[:1])[:400]


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


_SHARED: Worker | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> tuple[Worker, threading.Lock]:
    """The process-wide checking process (started on first use) and the lock to hold while using it."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED._owner != os.getpid():
            _SHARED = Worker()
    return _SHARED, _USE_LOCK


_USE_LOCK = threading.Lock()


@atexit.register
def _close_shared() -> None:
    if _SHARED is not None:
        _SHARED.close()
