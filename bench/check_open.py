"""What the safe loader adds to opening a model: ``onegraph.Session(path)`` with and without the pre-check.

Model: the bundled penguins pipeline (impute + scale + one-hot + logistic regression), written to a file.
Candidates, side by side in one process (``_timing.interleaved``, best round kept):

* ``trusted``: ``Session(path, trusted=True)``, onnxruntime opens the bytes directly (the anchor);
* ``pre-checked``: ``Session(path)`` with the pre-check cache emptied before each open, so every open runs the
  parse / static / runtime stages in the (already started) checking process;
* ``cached``: ``Session(path)`` with the cache kept: what every open after the first costs.

The first pre-check of a process also starts the checking process; that cold start is timed once, first.
Scoring after the session is open is the same code either way (see ``bench/latency.py``).

Run: ``python bench/check_open.py [--rounds 7]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, interleaved  # noqa: E402
from fuzz import penguins_model  # noqa: E402

import onegraph  # noqa: E402
from onegraph.check import guard  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    path = Path(tempfile.mkdtemp(prefix="onegraph-open-")) / "penguins.onnx"
    path.write_bytes(penguins_model())
    guard.clear()  # build trusted its own output: start as a stranger's file would
    start = time.perf_counter()
    onegraph.Session(path)
    cold = time.perf_counter() - start

    def pre_checked() -> None:
        guard.clear()
        onegraph.Session(path)

    times = interleaved({"trusted": lambda: onegraph.Session(path, trusted=True), "pre-checked": pre_checked,
                         "cached": lambda: onegraph.Session(path)}, rounds=args.rounds, seconds=0.5)
    print(f"model {path.name} ({path.stat().st_size / 1024:.1f} KiB)")
    print(f"  first open of the process (starts the checking process): {fmt(cold)}")
    for name, t in times.items():
        print(f"  {name:12s} {fmt(t)}   ({t / times['trusted']:.2f}x trusted)")


if __name__ == "__main__":
    main()
