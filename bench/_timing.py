"""Side-by-side timing: candidates measured in interleaved rounds, best round kept.

The machines are shared and noisy; a figure means something only next to its anchor measured in the
same rounds. Each round runs every candidate for about the same wall time, in turn, and the minimum
per-call time over the rounds is reported (the least disturbed measurement of each).
"""

from __future__ import annotations

import time
from collections.abc import Callable


def per_call(fn: Callable[[], object], seconds: float, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per call of ``fn``, running it for about ``seconds`` (measured with ``clock``: wall time by
    default; ``time.process_time`` counts only this process's CPU, steadier on a machine others load)."""
    fn()
    n = 1
    while True:
        start = clock()
        for _ in range(n):
            fn()
        elapsed = clock() - start
        if elapsed >= seconds:
            return elapsed / n
        n = max(n * 2, int(n * seconds / max(elapsed, 1e-9)) + 1)


def interleaved(candidates: dict[str, Callable[[], object]], rounds: int = 7, seconds: float = 0.2,
                clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Best seconds-per-call of each candidate over ``rounds`` interleaved rounds."""
    best = {name: float("inf") for name in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            best[name] = min(best[name], per_call(fn, seconds, clock))
    return best


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:9.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:9.2f} ms"
    return f"{seconds:9.3f} s "
