"""Resource limits of the process that checks a model.

``memory`` caps the address space the check may *add* to the checking process (``RLIMIT_AS`` set to the
process's size when the check starts plus ``memory``: the interpreter and the libraries it has loaded do not
count against it). ``cpu`` caps CPU seconds per model (``RLIMIT_CPU``), ``wall`` the elapsed seconds per model
(enforced by the calling process, which kills the checker), ``fsize`` the size of any file the checker
writes (``RLIMIT_FSIZE``; 0: it may write none).

Within ``memory``, each stage gets what the model justifies (:func:`stage_memory`), so a protobuf bomb is refused
early instead of grinding the checking process to the cap:

* **parse**: :data:`PARSE_BASE` + :data:`PARSE_FACTOR` x the file's bytes. upb, protobuf's parser, allocates
  each message in its arena: measured with protobuf 7 (upb), 158 bytes per ``NodeProto``, 203 per
  ``AttributeProto``, 58 per ``TensorShapeProto.Dimension``, and a stored tensor's bytes once. A real message
  carries at least ~10 bytes on the wire (an op type, a name, a value), so real models need at most ~16 x their
  size (measured: 2.5 x for 200,000 named ``Add`` nodes, 1.4 x for 50,000 ``Conv`` with attributes and shapes,
  1.0 x for a 300 MB initializer); a bomb of empty messages (2 bytes each on the wire) needs 30-100 x.
* **checker** and **runtime**: at least what the model declares (:func:`stage_need`, from its node count and
  tensor bytes, counted by the static stage): ``onnx.checker`` parses the model again and its shape inference
  copies it (2 x the tensors, ~200 bytes per node); onnxruntime copies the tensors twice and builds ~1 KiB per
  node (measured: 2.8 KiB per node for 200,000 ``Add``). A stage whose need exceeds ``memory`` is refused
  before it runs (C004); otherwise it may use :data:`STAGE_BASE` + :data:`STAGE_FACTOR` x its need, up to
  ``memory``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from onegraph.errors import OnegraphError

__all__ = ["Limits", "PARSE_BASE", "PARSE_FACTOR", "STAGE_BASE", "STAGE_FACTOR", "NODE_BYTES", "stage_need",
           "stage_memory"]

#: address space a parse may take whatever the file's size (the parsed message's own overhead)
PARSE_BASE = 64 << 20
#: parse memory per byte of file (upb's arena cost of real messages, with a margin: see the module doc)
PARSE_FACTOR = 16
#: bytes per node, at least, of the stages after the parse (a lower bound: refusals never hit a real model)
NODE_BYTES = {"static": 0, "checker": 200, "runtime": 1024}
#: copies of the stored tensors, at least, each stage makes
TENSOR_COPIES = {"static": 0, "checker": 2, "runtime": 2}
#: headroom of a stage over its need: it may use STAGE_BASE + STAGE_FACTOR x need
STAGE_BASE = 512 << 20
STAGE_FACTOR = 8

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


def stage_need(stage: str, *, nodes: int, tensor_bytes: int) -> int:
    """Bytes ``stage`` needs at least for a model of ``nodes`` nodes (every graph, subgraph and function) and
    ``tensor_bytes`` bytes of stored tensors (0 for ``parse`` and ``static``: their cost is the parse's)."""
    return NODE_BYTES.get(stage, 0) * nodes + TENSOR_COPIES.get(stage, 0) * tensor_bytes


def stage_memory(stage: str, memory: int, *, size: int, nodes: int | None = None, tensor_bytes: int | None = None
                 ) -> int:
    """Address space ``stage`` may add for a file of ``size`` bytes, at most ``memory`` (see the module doc).

    ``nodes`` / ``tensor_bytes``: what the static stage counted (None before it: the stage gets ``memory``).
    """
    if stage == "parse":
        return min(memory, PARSE_BASE + PARSE_FACTOR * size)
    if nodes is None or tensor_bytes is None or stage == "static":
        return memory
    return min(memory, STAGE_BASE + STAGE_FACTOR * stage_need(stage, nodes=nodes, tensor_bytes=tensor_bytes))
