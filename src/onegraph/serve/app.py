"""The HTTP application (starlette): Open Inference Protocol v2 routes, the records endpoint, metrics.

Routes
------
``GET  /v2``, ``/v2/health/live``, ``/v2/health/ready``          server metadata and health
``GET  /v2/models/{name}[/versions/{v}]``                        v2 model metadata
``GET  /v2/models/{name}[/versions/{v}]/ready``                  model readiness
``POST /v2/models/{name}[/versions/{v}]/infer``                  v2 inference (JSON or binary tensors)
``POST /v2/repository/index``                                    models and versions
``POST /v2/repository/models/{name}/load``                       load the model's file again (atomic swap)
``GET  /v1/models/{name}``                                       input schema and outputs (onegraph's names)
``POST /v1/models/{name}:predict``                               records: JSON instances, Arrow IPC or CSV
``GET  /metrics``                                                Prometheus metrics

Every error is answered ``{"error": "<one line>"}`` with a 4xx status for what the client can change (400 bad
input naming the column / row / tensor, 404 unknown model, 408 a body not sent within the timeout, 413 body
over the limit, 415 media type; 499, counted but not logged, a client gone before its body was read) and a
5xx status for the server's state (503 queue full, 504 timeout; 500 for a fault, without its traceback,
which goes to the server's log).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

import onegraph
from onegraph.errors import DataError, OnegraphError
from onegraph.serve import protocol, records
from onegraph.serve.errors import (
    BodyTimeoutError,
    BodyTooLargeError,
    ClientGoneError,
    ProtocolError,
    QueueFullError,
    RequestTimeoutError,
    UnsupportedMediaError,
    one_line,
    status_of,
)
from onegraph.serve.repository import ModelRepository, ModelVersion

__all__ = ["VERSION_HEADER", "create_app"]

log = logging.getLogger("onegraph.serve")
#: bodies larger than this are parsed in a worker thread, so a big CSV does not stall other requests
_INLINE_BODY = 64 * 1024
VERSION_HEADER = "onegraph-model-version"


def create_app(repository: ModelRepository) -> Starlette:
    """The ASGI application serving ``repository``'s models with its options and metrics.

    The lifespan starts the file watch (``options.watch_s`` > 0) and releases the models' threads at
    shutdown, after the server has answered its last request.
    """
    h = _Handlers(repository)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette):
        watch = None
        if repository.options.watch_s > 0:
            watch = asyncio.create_task(repository.watch(repository.options.watch_s))
        try:
            yield
        finally:
            if watch is not None:
                watch.cancel()
            repository.close()

    # starlette tries routes in order: the two inference routes first (a match costs a regex per route)
    routes = [
        Route("/v1/models/{name}:predict", h.endpoint("predict", h.predict), methods=["POST"]),
        Route("/v2/models/{name}/infer", h.endpoint("infer", h.infer), methods=["POST"]),
        # another method on :predict would match the GET route /v1/models/{name} below (a model 'x:predict'): 405
        Route("/v1/models/{name}:predict", _post_only),
    ]
    for prefix in ("/v2/models/{name}", "/v2/models/{name}/versions/{version}"):
        routes += [
            Route(prefix, h.endpoint("metadata", h.model_metadata), methods=["GET"]),
            Route(prefix + "/ready", h.endpoint("ready", h.model_ready), methods=["GET"]),
        ]
    routes += [
        Route("/v2/models/{name}/versions/{version}/infer", h.endpoint("infer", h.infer), methods=["POST"]),
        Route("/v2", h.endpoint("server", h.server_metadata), methods=["GET"]),
        Route("/v2/health/live", h.endpoint("live", h.live), methods=["GET"]),
        Route("/v2/health/ready", h.endpoint("ready", h.ready), methods=["GET"]),
        Route("/v2/repository/index", h.endpoint("index", h.index), methods=["POST"]),
        Route("/v2/repository/models/{name}/load", h.endpoint("load", h.load), methods=["POST"]),
        Route("/v1/models/{name}", h.endpoint("metadata_v1", h.records_metadata), methods=["GET"]),
        Route("/metrics", h.endpoint("metrics", h.metrics_text), methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: _http_error})
    app.state.repository = repository
    return app


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(doc, separators=(",", ":")).encode(), status, headers, media_type="application/json")


async def _post_only(request: Request) -> Response:
    raise HTTPException(405, headers={"Allow": "POST"})


async def _http_error(request: Request, exc: HTTPException) -> Response:
    """Routing errors (no such route, method not allowed) in the same one-line JSON form."""
    what = {404: "no route", 405: "method not allowed"}.get(exc.status_code, exc.detail)
    return _json({"error": f"{what}: {request.method} {request.url.path}"}, exc.status_code, exc.headers)


class _Handlers:
    def __init__(self, repository: ModelRepository) -> None:
        self.repo = repository
        self.options = repository.options
        self.metrics = repository.metrics

    # -- plumbing ---------------------------------------------------------------------------------
    def endpoint(self, label: str, handler: Callable[[Request], Awaitable[Response]]
                 ) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` answering every error as one JSON line with its status, each request counted."""

        async def wrapped(request: Request) -> Response:
            start = time.perf_counter()
            try:
                response = await handler(request)
            except Exception as exc:
                status = status_of(exc)
                if status == 500:
                    log.exception("%s %s failed", request.method, request.url.path)
                headers = {"retry-after": "1"} if isinstance(exc, QueueFullError) else None
                response = _json({"error": one_line(exc)}, status, headers)
            name = request.path_params.get("name", "")
            self.metrics.request(name if name in self.repo.models else "", label, response.status_code,
                                 time.perf_counter() - start)
            return response

        return wrapped

    async def _body(self, request: Request, headers: Any) -> bytes:
        """The request body, at most ``max_body_bytes`` (413 beyond, before reading it when the length is
        declared); gzip / deflate bodies are decompressed within the same limit."""
        limit = self.options.max_body_bytes
        declared = headers.get("content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                raise ProtocolError(f"header Content-Length {declared!r} is not a number of bytes") from None
            if length > limit:
                raise BodyTooLargeError(limit)
        chunks, size = [], 0
        try:
            async with asyncio.timeout(self.options.timeout_s):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        raise BodyTooLargeError(limit)
                    chunks.append(chunk)
        except TimeoutError:
            raise BodyTimeoutError(self.options.timeout_s) from None
        except ClientDisconnect:
            raise ClientGoneError() from None
        body = b"".join(chunks)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("gzip", "deflate"):
            return _decompress(body, encoding, limit)
        if encoding not in ("identity", ""):
            raise UnsupportedMediaError(f"content encoding {encoding!r} is not read here",
                                        hint="send the body as is, gzip or deflate")
        return body

    def _admit(self, version: ModelVersion) -> None:
        """503 before the body is read when the model's queue is already full (a burst costs no parsing)."""
        bound = self.repo.models[version.name].bound
        if bound.waiting >= bound.limit:
            raise QueueFullError(version.name, bound.limit)

    async def _result(self, version: ModelVersion, future: asyncio.Future) -> Any:
        """The batch's result for this request, or 504 after the per-request timeout (the request leaves
        the queue if it is still waiting)."""
        timed_out = []
        timer = asyncio.get_running_loop().call_later(
            self.options.timeout_s, lambda: (timed_out.append(True), future.cancel()))
        try:
            return await future
        except asyncio.CancelledError:
            if timed_out:
                raise RequestTimeoutError(version.name, self.options.timeout_s) from None
            raise
        finally:
            timer.cancel()

    async def _prepare(self, version: ModelVersion, table: Any, n: int | None, big: bool) -> Any:
        """``version.prepare(table)``; an error that names no row gets the first row at fault."""
        try:
            return await run_in_threadpool(version.prepare, table) if big else version.prepare(table)
        except OnegraphError as exc:
            row = records.error_row(version.session.feeds, table, n, exc)
            if row is None:
                raise
            raise DataError(f"{exc.message} (row {row})", hint=exc.hint) from None

    # -- v2 -----------------------------------------------------------------------------------------
    async def server_metadata(self, request: Request) -> Response:
        return _json({"name": "onegraph", "version": onegraph.__version__,
                      "extensions": ["binary_tensor_data", "model_repository"]})

    async def live(self, request: Request) -> Response:
        return _json({"live": True})

    async def ready(self, request: Request) -> Response:
        return _json({"ready": True})

    async def model_metadata(self, request: Request) -> Response:
        version = self.repo.get(request.path_params["name"], request.path_params.get("version"))
        return _json(version.metadata)

    async def model_ready(self, request: Request) -> Response:
        version = self.repo.get(request.path_params["name"], request.path_params.get("version"))
        return _json({"name": version.name, "ready": True})

    async def infer(self, request: Request) -> Response:
        version = self.repo.get(request.path_params["name"], request.path_params.get("version"))
        self._admit(version)
        headers = request.headers
        body = await self._body(request, headers)
        req = protocol.parse_infer_request(body, headers.get(protocol.HEADER_LENGTH))
        known = {s.name for s in version.session.inputs}
        unknown = [n for n in req.columns if n not in known]
        if unknown:
            raise ProtocolError(f"input tensor {unknown[0]!r} is not an input of model {version.name!r}",
                                hint=f"its inputs: {', '.join(s.name for s in version.session.inputs)}")
        protocol.check_datatypes(req, version.session.inputs)
        if req.outputs is None:
            outputs = [(n, req.binary_output) for n in version.outputs]
        else:
            outputs = req.outputs
            for name, _ in outputs:
                if name not in version.outputs:
                    raise ProtocolError(f"output {name!r} is not an output of model {version.name!r}",
                                        hint=f"its outputs: {', '.join(version.outputs)}")
        rows = await self._prepare(version, req.columns, req.rows, len(body) > _INLINE_BODY)
        arrays = await self._result(version, version.tensors.submit(rows, rows.n))
        content, headers = protocol.encode_infer_response(version.name, version.version, req.id, outputs, arrays)
        headers[VERSION_HEADER] = version.version
        return Response(content, headers=headers)

    async def index(self, request: Request) -> Response:
        return _json([{"name": name, "version": m.current.version, "state": "READY"}
                      for name, m in self.repo.models.items()])

    async def load(self, request: Request) -> Response:
        served = self.repo.served(request.path_params["name"])
        body = await self._body(request, request.headers)
        if body.strip():
            try:
                doc = json.loads(body)
            except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
                raise ProtocolError(f"the load request is not JSON ({exc})") from None
            if isinstance(doc, dict) and doc.get("parameters"):
                raise ProtocolError("a load request with parameters (a config, model files) is not supported",
                                    hint=f"write the new model to {served.path} (atomically) and send an empty load")
        version = await served.reload()
        return _json({"name": served.name, "version": version.version})

    # -- records ------------------------------------------------------------------------------------
    async def records_metadata(self, request: Request) -> Response:
        version = self.repo.get(request.path_params["name"])
        return _json({"name": version.name, "version": version.version, "ready": True,
                      "inputs": [{"name": s.name, "kind": s.kind, "type": s.onnx_type} for s in version.session.inputs],
                      "outputs": [o for o in version.session.outputs if o.get("role") != "check"]})

    async def predict(self, request: Request) -> Response:
        version = self.repo.get(request.path_params["name"])
        self._admit(version)
        headers = request.headers
        kind = records.media_type(headers.get("content-type"))
        answer = records.media_type(headers.get("accept"), default=kind, accept=True)
        body = await self._body(request, headers)
        big = len(body) > _INLINE_BODY
        specs = version.session.inputs
        n, table = await run_in_threadpool(records.read_rows, body, kind, specs) if big else \
            records.read_rows(body, kind, specs)
        rows = await self._prepare(version, table, n, big)
        scored = await self._result(version, version.records.submit(rows, rows.n))
        content = await run_in_threadpool(records.write_rows, scored, answer) if big else \
            records.write_rows(scored, answer)
        return Response(content, media_type=answer, headers={VERSION_HEADER: version.version})

    async def metrics_text(self, request: Request) -> Response:
        content, media = self.metrics.render()
        return Response(content, headers={"content-type": media})


def _decompress(body: bytes, encoding: str, limit: int) -> bytes:
    # a small compressed body can inflate to gigabytes: inflate at most limit + 1 bytes
    inflater = zlib.decompressobj(wbits=47)  # 32 + 15: a gzip or a zlib header, detected
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise ProtocolError(f"the {encoding} body cannot be decompressed ({exc})") from None
    if len(out) > limit:
        raise BodyTooLargeError(limit)
    if not inflater.eof:
        raise ProtocolError(f"the {encoding} body is truncated")
    return out
