"""Fuzzing campaigns: mutants of valid models through every command and public function that reads a model
(``onegraph.campaign``), and through ``onegraph check``'s isolated checking processes alone.

The command campaign (issue 14) runs each case in supervised runner processes — the caller — and counts what
breaks a promise: a crash of the caller on a signal, a hang, a traceback, an internal error (exit 70 / a
non-onegraph exception), memory exhaustion, a modified input, an open of a file outside the model's folder.

Mutates the fuzz seeds (``onegraph.check.fuzz.seed_models``) plus a real model onegraph builds (the bundled
penguins pipeline), checks every mutant with ``check_many`` (two checking processes, each reused from mutant
to mutant), and reports throughput, what the checker found, and every crash or limit the checking processes
contained (the calling process - this one - must survive them all: it parses nothing).

Anchor, measured side by side in the same run (``_timing.interleaved``): checking the unmutated seeds with
the isolated checker vs running the same four stages in this process (safe only because the seeds are
valid) - the cost of isolation per model.

Run: ``python bench/fuzz.py [--cases 10000] [--seed 1] [--workers 2] [--checker-cases 12000] [--out DIR]``
(``--out`` keeps a copy of each mutant that broke a promise or whose check crashed or hit a limit.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, interleaved  # noqa: E402

from onegraph.campaign.seeds import penguins_model  # noqa: E402
from onegraph.check import fuzz  # noqa: E402
from onegraph.check.limits import Limits  # noqa: E402
from onegraph.check.sandbox import Worker  # noqa: E402
from onegraph.check.stages import STAGES, State, run_stage  # noqa: E402


def isolation_overhead(seeds: dict[str, bytes], rounds: int) -> dict[str, float]:
    worker = Worker()
    limits = Limits()

    def isolated() -> None:
        for data in seeds.values():
            worker.check(data, folder=None, stages=STAGES, limits=limits)

    def in_process() -> None:
        for data in seeds.values():
            state = State(data, None, limits.memory)
            for stage in STAGES:
                run_stage(stage, state)

    try:
        return interleaved({"isolated": isolated, "in-process": in_process}, rounds=rounds, seconds=0.3)
    finally:
        worker.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000, help="cases of the command campaign")
    ap.add_argument("--checker-cases", type=int, default=0, help="mutants checked by the checker alone too")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a case counts as a hang")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds of the isolation anchor")
    ap.add_argument("--out", type=Path, help="folder to copy the mutants whose check crashed into")
    args = ap.parse_args()

    from onegraph.campaign.supervisor import FAILURES, run

    report = run(args.cases, seed=args.seed, runners=args.workers, timeout=args.timeout, keep=args.out,
                 progress=True)
    print(f"command campaign: {len(report.by_target)} targets, {args.workers} runner processes (seed {args.seed})")
    print(report)
    print("targets met: " + ("yes" if not any(report.outcomes[k] for k in FAILURES) else "NO") +
          " (0 crashes, hangs, tracebacks, internal errors, memory, modified inputs, reads outside)")
    if not args.checker_cases:
        return

    seeds = fuzz.seed_models()
    seeds["penguins"] = penguins_model(handle_unknown="ignore")
    folder = Path(tempfile.mkdtemp(prefix="onegraph-fuzz-"))
    (folder / "weights.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes())
    result = fuzz.campaign(args.checker_cases, seed=args.seed, workers=args.workers, folder=folder, seeds=seeds)

    print(f"{result.cases:,} mutants of {len(seeds)} seeds (seed {args.seed}), {args.workers} checking processes")
    print(f"  {result.seconds:.1f} s, {result.rate:.0f} cases/s; clean {result.clean:,}")
    print(f"  crashes of the calling process: 0 (it is printing this)")
    print(f"  crashes and limits contained by the checking processes: {len(result.contained)}")
    for label, finding in result.contained:
        print(f"    {label}: {finding[:220]}")
    print("  mutants with each finding code: " + ", ".join(f"{c} {n}" for c, n in sorted(result.codes.items())))
    if args.out and result.contained:
        args.out.mkdir(parents=True, exist_ok=True)
        wanted = {label for label, _ in result.contained}
        for label, data in fuzz.cases(args.checker_cases, seed=args.seed, seeds=seeds):
            if label in wanted:
                (args.out / f"case-{label.split()[1]}.onnx").write_bytes(data)
        print(f"  reproducers written to {args.out}")

    times = isolation_overhead(seeds, args.rounds)
    per = {k: v / len(seeds) for k, v in times.items()}
    print(f"valid seeds, 4 stages each (best of {args.rounds} interleaved rounds), per model:")
    for name, t in per.items():
        print(f"  {name:12s} {fmt(t)}")
    print(f"  isolation overhead: isolated / in-process = {per['isolated'] / per['in-process']:.2f}x")


if __name__ == "__main__":
    main()
