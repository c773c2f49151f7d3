"""Prometheus metrics of one server (``GET /metrics``), in a registry of its own.

Each server (each app: tests start several in one process) has its own
:class:`prometheus_client.CollectorRegistry`, so two apps never mix their counts. With ``--workers N`` every
worker process counts its own requests: scrape each, or sum per instance.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

__all__ = ["LATENCY_BUCKETS", "BATCH_BUCKETS", "Metrics"]

#: request latency buckets, seconds: 100 us .. 30 s
LATENCY_BUCKETS = (1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: rows (or requests) per batch
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384, 65536)


class Metrics:
    """The server's counters, histograms and gauges.

    ``onegraph_serve_requests_total{model,endpoint,code}``, ``onegraph_serve_request_seconds{model,endpoint}``
    (latency, seconds), ``onegraph_serve_batch_rows{model}`` / ``onegraph_serve_batch_requests{model}`` (per
    onnxruntime run), ``onegraph_serve_rows_total{model}``, ``onegraph_serve_queue_requests{model}`` (waiting
    now), ``onegraph_serve_model_loads_total{model,outcome}``, ``onegraph_serve_model_version{model}``.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._requests = Counter("onegraph_serve_requests", "Requests answered, by HTTP status code.",
                                 ["model", "endpoint", "code"], registry=r)
        self._latency = Histogram("onegraph_serve_request_seconds", "Time from the request read to the answer.",
                                  ["model", "endpoint"], buckets=LATENCY_BUCKETS, registry=r)
        self._batch_rows = Histogram("onegraph_serve_batch_rows", "Rows per onnxruntime run.", ["model"],
                                     buckets=BATCH_BUCKETS, registry=r)
        self._batch_requests = Histogram("onegraph_serve_batch_requests", "Requests merged into one run.",
                                         ["model"], buckets=BATCH_BUCKETS, registry=r)
        self._rows = Counter("onegraph_serve_rows", "Rows scored.", ["model"], registry=r)
        self._queue = Gauge("onegraph_serve_queue_requests", "Requests waiting for a batch.", ["model"], registry=r)
        self._loads = Counter("onegraph_serve_model_loads", "Model loads (startup, reloads).", ["model", "outcome"],
                              registry=r)
        self._version = Gauge("onegraph_serve_model_version", "Version of the model served (1 at startup).",
                              ["model"], registry=r)
        self._children: dict[tuple, tuple] = {}

    def request(self, model: str, endpoint: str, code: int, seconds: float) -> None:
        """Count one answered request (model "" when the name is not a served model's)."""
        key = (model, endpoint, code)
        pair = self._children.get(key)
        if pair is None:  # labels() costs a dict lookup and a lock; the pair is reused for every request
            pair = self._children[key] = (self._requests.labels(model, endpoint, str(code)),
                                          self._latency.labels(model, endpoint))
        pair[0].inc()
        pair[1].observe(seconds)

    def batch(self, model: str) -> Callable[[int, int], None]:
        """The ``on_batch(requests, rows)`` callback of a model's batchers."""
        rows_h, requests_h, rows_c = self._batch_rows.labels(model), self._batch_requests.labels(model), \
            self._rows.labels(model)

        def on_batch(requests: int, rows: int) -> None:
            rows_h.observe(rows)
            requests_h.observe(requests)
            rows_c.inc(rows)

        return on_batch

    def watch_queue(self, model: str, waiting: Callable[[], float]) -> None:
        self._queue.labels(model).set_function(waiting)

    def loaded(self, model: str, version: int | None) -> None:
        """Count a load: ``version`` the new version, None for a load that failed (the old one stays)."""
        self._loads.labels(model, "ok" if version is not None else "failed").inc()
        if version is not None:
            self._version.labels(model).set(version)

    def render(self) -> tuple[bytes, str]:
        """The text exposition format and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
