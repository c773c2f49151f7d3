"""The runner: the process a campaign's cases run in, as a user's would (``python -m onegraph.campaign.runner``).

It is the *caller* the campaign watches: if it dies on a signal, the supervisor records a crash; if it stops
answering, a hang. Protocol (JSON lines): the supervisor sends ``{"case": i, "target": name, "files": {...}}``;
the runner answers ``{"case": i, "outcome": ..., "detail": ...}``. Outcomes: ``ok``; ``refused`` (a onegraph
error: one line on stderr and a non-zero exit, or an ``OnegraphError`` from a function); ``traceback`` (stderr
holds one); ``internal`` (the CLI's exit 70, or any other exception from a function); ``memory`` (MemoryError).
The protocol has its own pipe: the commands' and native libraries' stdout is the original stdout, captured.

The runner caps its own address space (``ONEGRAPH_CAMPAIGN_MEMORY`` bytes, default 6 GiB) so a case that
allocates without bound ends in a MemoryError instead of the kernel's OOM killer.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from pathlib import Path

__all__ = ["run_case", "main"]


def run_case(target_name: str, files: dict[str, str]) -> dict:
    """Run one target on one case in this process; returns ``outcome`` and ``detail``."""
    from onegraph.campaign.targets import TARGETS, Case
    from onegraph.errors import OnegraphError

    target = TARGETS[target_name]
    case = Case(**{k: Path(v) for k, v in files.items()})
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if target.call is not None:
                target.call(case)
                code = 0
            else:
                code = _command(list(map(case.fill, target.argv)))
    except OnegraphError as exc:
        return {"outcome": "refused", "detail": str(exc).splitlines()[0][:300]}
    except MemoryError:
        return {"outcome": "memory", "detail": _where()}
    except Exception as exc:  # noqa: BLE001 - an exception a public function lets out is a failure to report
        return {"outcome": "internal", "detail": f"{type(exc).__name__}: {str(exc)[:200]} at {_where()}"}
    stderr = err.getvalue()
    if "Traceback (most recent call last)" in stderr:
        return {"outcome": "traceback", "detail": stderr[-600:]}
    if code == 70:
        return {"outcome": "internal", "detail": stderr.strip()[:400]}
    if "MemoryError" in stderr:
        return {"outcome": "memory", "detail": stderr.strip()[:400]}
    return {"outcome": "ok" if code == 0 else "refused", "detail": stderr.strip()[:300]}


def _command(argv: list[str]) -> int:
    from onegraph.cli import main

    saved = sys.argv
    sys.argv = ["onegraph", *argv]
    try:
        main()
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved


def _where() -> str:
    frames = traceback.extract_tb(sys.exc_info()[2])
    inner = [f for f in frames if "onegraph" in f.filename] or frames
    f = inner[-1] if inner else None
    return f"{Path(f.filename).name}:{f.lineno} ({f.name})" if f else "?"


def _limit_memory() -> None:
    try:
        import resource
    except ImportError:  # not POSIX: the supervisor's time limit still applies
        return
    limit = int(os.environ.get("ONEGRAPH_CAMPAIGN_MEMORY", 6 << 30))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # native code printing to fd 1 must not corrupt the protocol
    sys.stdout = sys.stderr
    _limit_memory()
    import onegraph.campaign.targets  # noqa: F401
    import onegraph.cli  # noqa: F401 - imported before the first case, so its time is not the case's

    protocol.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        answer = run_case(request["target"], request["files"])
        protocol.write(json.dumps({"case": request["case"], **answer}) + "\n")


if __name__ == "__main__":
    main()
