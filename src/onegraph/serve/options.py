"""The knobs of the server, checked once: batching, back-pressure, limits."""

from __future__ import annotations

import dataclasses

from onegraph.errors import ConfigError

__all__ = ["ServeOptions"]


@dataclasses.dataclass(frozen=True)
class ServeOptions:
    """How the server batches, bounds and times requests.

    Attributes
    ----------
    max_batch:
        Rows per onnxruntime run when concurrent requests are merged (a request with more rows runs alone).
    max_wait_ms:
        How long, in milliseconds, a batch that is not full waits for more requests. 0 (the default): a
        batch holds the requests read in one pass of the event loop, and the next fills up while it runs,
        so a lone request never waits.
    max_queue:
        Requests waiting per model (both protocols); one more is answered 503.
    timeout_s:
        Seconds a request may wait and run before it is answered 504.
    max_body_bytes:
        Largest request body, in bytes (after decompression); a larger one is answered 413.
    threads:
        onnxruntime intra-op threads per model (0: onnxruntime's default, all cores). 1 leaves the other
        core to the event loop that parses requests while a batch runs.
    watch_s:
        Poll the model files every this many seconds and load a changed file (0: no watch).
    trusted:
        Skip the safe loader's isolated pre-check of the model files (only for files you made); by default
        every file, at startup and at each reload, is checked in an isolated process before it is opened.
    """

    max_batch: int = 64
    max_wait_ms: float = 0.0
    max_queue: int = 256
    timeout_s: float = 30.0
    max_body_bytes: int = 16 * 1024 * 1024
    threads: int = 1
    watch_s: float = 0.0
    trusted: bool = False

    def __post_init__(self) -> None:
        checks = [
            ("max_batch", self.max_batch >= 1, "at least 1 row"),
            ("max_wait_ms", 0 <= self.max_wait_ms <= 10_000, "between 0 and 10000 ms"),
            ("max_queue", self.max_queue >= 1, "at least 1 request"),
            ("timeout_s", self.timeout_s > 0, "more than 0 s"),
            ("max_body_bytes", self.max_body_bytes >= 1024, "at least 1 KiB"),
            ("threads", self.threads >= 0, "0 (onnxruntime's default) or more"),
            ("watch_s", self.watch_s >= 0, "0 (no watch) or more seconds"),
        ]
        for name, ok, expected in checks:
            if not ok:
                option = _OPTIONS.get(name, "--" + name.replace("_", "-"))
                raise ConfigError(f"{name}={getattr(self, name)!r} ({option}) is out of range",
                                  hint=f"give {expected}")

    def to_dict(self) -> dict:
        """The options as JSON-ready keyword arguments of :class:`ServeOptions`."""
        return dataclasses.asdict(self)


#: the command-line option of each field whose names differ
_OPTIONS = {"timeout_s": "--timeout", "max_body_bytes": "--max-body-mb", "watch_s": "--watch"}
