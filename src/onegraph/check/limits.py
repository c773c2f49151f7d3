"""Resource limits of the process that checks a model.

``memory`` caps the address space the check may *add* to the checking process (``RLIMIT_AS`` set to the
process's size when the check starts plus ``memory``: the interpreter and the libraries it has loaded do not
count against it). ``cpu`` caps CPU seconds per model (``RLIMIT_CPU``), ``wall`` the elapsed seconds per model
(enforced by the calling process, which kills the checker), ``fsize`` the size of any file the checker
writes (``RLIMIT_FSIZE``; 0: it may write none).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from onegraph.errors import OnegraphError

__all__ = ["Limits"]

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
          "tib": 1 << 40}


@dataclasses.dataclass(frozen=True)
class Limits:
    """Limits of one model's check.

    Parameters
    ----------
    memory:
        Bytes of address space the check may add to the checking process (default 4 GiB).
    cpu:
        CPU seconds per model (default 60).
    wall:
        Elapsed seconds per model, all stages together (default 120).
    fsize:
        Largest file, in bytes, the checking process may write (default 0: none).
    """

    memory: int = 4 << 30
    cpu: float = 60.0
    wall: float = 120.0
    fsize: int = 0

    def __post_init__(self) -> None:
        for name in ("memory", "cpu", "wall", "fsize"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0 or (name != "fsize" and value == 0):
                raise OnegraphError(f"limit {name}={value!r} is not a positive number",
                                    hint="e.g. --limits memory=2G,cpu=30,wall=60,fsize=0")

    @classmethod
    def parse(cls, text: str | None, base: Limits | None = None) -> Limits:
        """Limits from ``"memory=2G,cpu=30,wall=60,fsize=0"`` (any subset; the others from ``base``).

        Sizes take the suffixes K, M, G, T (powers of 1024); times are seconds.

        Raises :class:`~onegraph.errors.OnegraphError` naming an unknown key or a malformed value.
        """
        base = base or cls()
        if not text:
            return base
        values: dict[str, Any] = {}
        for item in filter(None, (p.strip() for p in text.split(","))):
            key, sep, raw = item.partition("=")
            key = key.strip().lower()
            if not sep or key not in ("memory", "cpu", "wall", "fsize"):
                raise OnegraphError(f"unknown limit {item!r}", hint="use memory=, cpu=, wall=, fsize=")
            values[key] = _size(key, raw) if key in ("memory", "fsize") else _seconds(key, raw)
        return dataclasses.replace(base, **values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _size(key: str, raw: str) -> int:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", raw)
    if not m or m.group(2).lower() not in _UNITS:
        raise OnegraphError(f"limit {key}={raw!r} is not a size", hint="e.g. 512M, 2G, 0")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _seconds(key: str, raw: str) -> float:
    try:
        return float(raw.strip().rstrip("s"))
    except ValueError:
        raise OnegraphError(f"limit {key}={raw!r} is not a number of seconds", hint="e.g. cpu=30") from None
