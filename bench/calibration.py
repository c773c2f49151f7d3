"""Calibration: onegraph.stats vs onnxruntime.quantization's MinMax and Percentile calibrators.

Model and data: a small CNN (two Conv + ReLU + MaxPool, a Linear; 9 float tensors observed) trained with torch
on scikit-learn's bundled handwritten digits and exported by torch.onnx (tests/data/digits-cnn.onnx);
calibration samples are the 1,797 digit images, cycled to reach the sample count. Every tool gets the same
batches of ``--batch`` samples from a generator, so the data itself never sits in memory.

* Peak memory: each (tool, sample count) runs in its own fresh subprocess. After imports and model set-up the
  process' peak resident set (VmHWM, which counts native allocations that tracemalloc cannot see) is reset by
  writing 5 to /proc/self/clear_refs; after calibration VmHWM is read back. Reported: the peak during
  calibration above the resident set it started from, at 100 and at 10,000 samples, and the growth ratio.
* Time per sample: the three tools side by side in this process (bench/_timing.py ``interleaved``), each
  doing a whole calibration of ``--time-samples`` samples including its session set-up. onegraph computes
  every statistic (counts, NaN/inf, min/max, mean/std, zeros, histogram, KLL quantiles, outlier bounds,
  per-channel min/max/mean/std); MinMax only min/max; Percentile a histogram.

onnxruntime's Percentile calibrator fails on batches of different sizes (it stacks every batch with
``np.asarray``), so the batch size divides every sample count (50 by default).

Run: ``python bench/calibration.py [--batch 50] [--time-samples 2000] [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))


def batches(x: np.ndarray, samples: int, batch: int):
    """``samples`` samples of ``x`` cycled, as feed dicts of ``batch`` samples (made on demand)."""
    done = 0
    while done < samples:
        n = min(batch, samples - done)
        index = (np.arange(done, done + n)) % len(x)
        yield {"x": x[index]}
        done += n


def run(tool: str, model: Path, x: np.ndarray, samples: int, batch: int, work: Path) -> object:
    if tool == "onegraph":
        from onegraph.stats import calibrate

        return calibrate(model, batches(x, samples, batch), progress=False).stats()
    from onnxruntime.quantization.calibrate import (
        CalibrationDataReader,
        CalibrationMethod,
        create_calibrator,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = batches(x, samples, batch)

        def get_next(self):
            return next(self.it, None)

    method = {"ort_minmax": CalibrationMethod.MinMax, "ort_percentile": CalibrationMethod.Percentile}[tool]
    calibrator = create_calibrator(str(model), calibrate_method=method,
                                   augmented_model_path=str(work / f"{tool}.aug.onnx"))
    calibrator.collect_data(Reader())
    return calibrator.compute_data()


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])  # kB
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(tool: str, model: Path, data: Path, samples: int, batch: int) -> None:
    import contextlib
    import io

    import onnxruntime  # noqa: F401 - imported before the peak is reset
    from onnxruntime.quantization import calibrate  # noqa: F401

    import onegraph.stats  # noqa: F401

    x = np.load(data)
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
        base = _status("VmRSS")
        run(tool, model, x, samples, batch, Path(tmp))
        peak = _status("VmHWM")
    print(json.dumps({"base_kb": base, "peak_kb": peak}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=50)  # divides every sample count: see the docstring
    parser.add_argument("--time-samples", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--child", nargs=5, metavar=("TOOL", "MODEL", "DATA", "SAMPLES", "BATCH"))
    args = parser.parse_args()
    if args.child:
        tool, model, data, samples, batch = args.child
        child(tool, Path(model), Path(data), int(samples), int(batch))
        return

    import contextlib
    import io

    from _timing import fmt, interleaved
    from stats_models import cnn

    tools = ("onegraph", "ort_minmax", "ort_percentile")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = work / "cnn.onnx"
        model_bytes, x = cnn()
        model.write_bytes(model_bytes)
        np.save(work / "digits.npy", x)
        print(f"model: CNN on digits ({len(x)} images 1x8x8, cycled); batches of {args.batch} samples")
        print("peak memory during calibration, above the process' resident set before it (fresh subprocess each):")
        memory = {}
        for tool in tools:
            row = []
            for samples in (100, 10_000):
                out = subprocess.run([sys.executable, __file__, "--child", tool, str(model), str(work / "digits.npy"),
                                      str(samples), str(args.batch)], capture_output=True, text=True, check=True)
                figures = json.loads(out.stdout.strip().splitlines()[-1])
                row.append((figures["peak_kb"] - figures["base_kb"]) / 1024)
            memory[tool] = row
            print(f"  {tool:15s} 100 samples {row[0]:8.1f} MiB   10,000 samples {row[1]:8.1f} MiB   "
                  f"growth {row[1] / max(row[0], 1e-9):6.2f}x")
        n = args.time_samples
        sink = io.StringIO()

        def timed(tool: str):
            def go() -> None:
                with contextlib.redirect_stdout(sink):  # onnxruntime's calibrators print progress
                    run(tool, model, x, n, args.batch, work)
            return go

        best = interleaved({tool: timed(tool) for tool in tools}, rounds=args.rounds, seconds=0.5)
        print(f"time per sample, whole calibration of {n} samples (best of {args.rounds} interleaved rounds):")
        for tool in tools:
            print(f"  {tool:15s} {fmt(best[tool] / n)}   ({best[tool] / best['ort_minmax']:.2f}x ORT MinMax)")


if __name__ == "__main__":
    main()
