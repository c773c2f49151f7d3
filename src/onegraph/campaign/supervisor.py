"""The supervisor: cases to runners, and the tally (:func:`run`).

Case ``i`` is mutant ``i`` (:func:`onegraph.campaign.mutations.mutants`) run by target ``i mod len(targets)``,
so every target sees mutants of every seed. Each case gets a fresh folder (the mutant, a copy of its seed, a
``weights.bin`` it may legitimately read, the canary links); the files are hashed before and after. A runner
that dies on a signal is a crash of the caller; one that answers nothing within the time limit is a hang
(it is killed); both are restarted for the next case. Runners work side by side (``runners``), each with its
own canaries.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from onegraph.campaign.canary import Canaries
from onegraph.campaign.mutations import mutants
from onegraph.campaign.seeds import Seeds, make_seeds
from onegraph.campaign.targets import TARGETS

__all__ = ["FAILURES", "Failure", "CampaignReport", "run"]

#: outcomes that break a promise of issue 14
FAILURES = ("crash", "hang", "traceback", "internal", "memory", "modified", "outside")


@dataclasses.dataclass
class Failure:
    """One case that broke a promise: what, where, and its reproducer (the mutant's bytes, when kept)."""

    case: int
    label: str
    target: str
    outcome: str
    detail: str
    reproducer: str | None = None

    def __str__(self) -> str:
        where = f" (reproducer {self.reproducer})" if self.reproducer else ""
        return f"{self.outcome}: {self.target} on {self.label}: {self.detail[:300]}{where}"


@dataclasses.dataclass
class CampaignReport:
    """What a campaign saw: outcomes per target, and every failure."""

    cases: int
    seconds: float
    outcomes: collections.Counter
    by_target: dict[str, collections.Counter]
    failures: list[Failure]
    canaries_watched: bool

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0

    def count(self, outcome: str) -> int:
        return self.outcomes[outcome]

    def __str__(self) -> str:
        lines = [f"{self.cases:,} cases in {self.seconds:.1f} s ({self.rate:.1f} cases/s); outcomes: "
                 + ", ".join(f"{k} {v:,}" for k, v in self.outcomes.most_common())]
        lines += [f"  {name:<28} " + ", ".join(f"{k} {v}" for k, v in c.most_common())
                  for name, c in sorted(self.by_target.items())]
        counts = ", ".join(f"{k} {self.outcomes[k]}" for k in FAILURES)
        lines.append(f"failures: {counts}" + ("" if self.canaries_watched else " (canaries not watched: no inotify)"))
        lines += [f"  {f}" for f in self.failures[:50]]
        return "\n".join(lines)


class _Runner:
    """One runner process and its canaries."""

    def __init__(self, index: int, root: Path, env: dict[str, str]) -> None:
        self.folder = root / f"r{index}"
        self.canaries = Canaries(self.folder)
        self.env = env
        self.proc: subprocess.Popen | None = None
        self._buffer = b""

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "onegraph.campaign.runner"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env,
                                     start_new_session=True)
        self._buffer = b""
        ready = self._answer(time.monotonic() + 300)
        if ready is None or "ready" not in ready:
            raise RuntimeError("the campaign runner did not start")

    def ask(self, request: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            pass
        answer = self._answer(time.monotonic() + timeout)
        if answer is not None:
            return answer
        if self.proc.poll() is None:  # alive and silent: a hang
            self.kill()
            return {"outcome": "hang", "detail": f"no answer within {timeout:g} s"}
        code = self.proc.wait()
        self.proc = None
        if code < 0:
            return {"outcome": "crash", "detail": f"the runner died with {_signal(-code)}"}
        return {"outcome": "crash", "detail": f"the runner exited with status {code}"}

    def _answer(self, deadline: float) -> dict | None:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def kill(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self.canaries.close()


def _signal(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _digest(folder: Path, skip: str) -> dict[str, str]:
    """SHA-256 of every regular file in ``folder`` but the outputs (names starting with ``skip``)."""
    found = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith(skip) or path.is_symlink() or not path.is_file():
            continue
        found[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def run(cases: int, *, seed: int = 0, runners: int = 2, timeout: float = 120.0, targets: list[str] | None = None,
        workdir: Path | None = None, keep: Path | None = None, seeds: Seeds | None = None,
        progress: bool = False) -> CampaignReport:
    """Run ``cases`` cases and tally their outcomes.

    Parameters
    ----------
    cases:
        How many (case ``i``: mutant ``i`` of the seeds, target ``i mod len(targets)``).
    seed:
        The campaign's seed (a case is the same on every machine).
    runners:
        Runner processes side by side.
    timeout:
        Seconds a case may take before it counts as a hang.
    targets:
        Names of :data:`~onegraph.campaign.targets.TARGETS` (default: all).
    workdir:
        Where the case folders go (a temporary folder by default, removed at the end).
    keep:
        Folder to copy the mutant of every failure into (its reproducer).
    seeds:
        The seeds (:func:`~onegraph.campaign.seeds.make_seeds`; built in ``workdir`` when None).
    """
    names = list(targets or TARGETS)
    own = workdir is None
    root = Path(tempfile.mkdtemp(prefix="onegraph-campaign-")) if own else Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ONEGRAPH_CACHE_DIR=str(root / "cache"), PYTHONDONTWRITEBYTECODE="1")
    try:
        seeds = seeds or make_seeds(root / "seeds")
        shared = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in
                  {seeds.csv, *seeds.data.values(), *seeds.deltas.values()}}
        pool = [_Runner(k, root, env) for k in range(max(1, runners))]
        work: queue.Queue = queue.Queue()
        for item in mutants(cases, seeds.models, seed=seed, outside=str(pool[0].canaries.absolute)):
            work.put(item)
        outcomes: collections.Counter = collections.Counter()
        by_target: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        failures: list[Failure] = []
        lock = threading.Lock()
        start = time.perf_counter()

        def serve(runner: _Runner) -> None:
            while True:
                try:
                    index, seed_name, label, data = work.get_nowait()
                except queue.Empty:
                    return
                target = names[index % len(names)]
                if runner.folder != pool[0].folder:  # absolute locations name runner 0's canary: use our own
                    data = data.replace(os.fsencode(pool[0].canaries.absolute), os.fsencode(runner.canaries.absolute))
                answer = _one_case(runner, index, target, data, seed_name, seeds, timeout)
                with lock:
                    outcomes[answer["outcome"]] += 1
                    by_target[target][answer["outcome"]] += 1
                    if answer["outcome"] in FAILURES:
                        failures.append(Failure(index, label, target, answer["outcome"], answer.get("detail", ""),
                                                _keep(keep, index, data)))
                    done = sum(outcomes.values())
                    if progress and done % 100 == 0:
                        print(f"  {done:,} cases, {sum(outcomes[k] for k in FAILURES)} failures", flush=True)

        threads = [threading.Thread(target=serve, args=(r,)) for r in pool]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - start
        watched = all(r.canaries.watching for r in pool)
        for r in pool:
            r.close()
        for path, digest in shared.items():
            if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                failures.append(Failure(-1, str(path), "(shared data)", "modified", f"{path.name} changed"))
                outcomes["modified"] += 1
        return CampaignReport(cases, seconds, outcomes, dict(by_target), sorted(failures, key=lambda f: f.case),
                              watched)
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)


def _one_case(runner: _Runner, index: int, target: str, data: bytes, seed_name: str, seeds: Seeds,
              timeout: float) -> dict:
    folder = runner.folder / f"case{index}"
    folder.mkdir(parents=True)
    try:
        (folder / "model.onnx").write_bytes(data)
        (folder / "seed.onnx").write_bytes(seeds.models[seed_name])
        (folder / "weights.bin").write_bytes(b"\x00" * 4096)
        runner.canaries.plant(folder)
        before = _digest(folder, "out")
        runner.canaries.opened()  # forget opens before the case (none expected)
        files = {"folder": str(folder), "model": str(folder / "model.onnx"), "seed": str(folder / "seed.onnx"),
                 "data": str(seeds.data[seed_name]), "csv": str(seeds.csv), "delta": str(seeds.deltas[seed_name])}
        answer = runner.ask({"case": index, "target": target, "files": files}, timeout)
        opened = runner.canaries.opened()
        if opened:
            return {"outcome": "outside", "detail": f"opened {', '.join(opened)} outside the model's folder"}
        after = _digest(folder, "out")
        changed = sorted(k for k in before if after.get(k) != before[k])
        if changed and answer["outcome"] not in ("crash", "hang"):
            return {"outcome": "modified", "detail": f"changed {', '.join(changed)}"}
        return answer
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _keep(keep: Path | None, index: int, data: bytes) -> str | None:
    if keep is None:
        return None
    keep.mkdir(parents=True, exist_ok=True)
    path = keep / f"case{index}.onnx"
    path.write_bytes(data)
    return str(path)
