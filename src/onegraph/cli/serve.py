"""``onegraph serve``: the HTTP inference server (:mod:`onegraph.serve`)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from onegraph.cli.base import Trusted, app, err, reads_models

__all__ = ["serve"]


@app.command()
@reads_models
def serve(
    models: Annotated[list[str], typer.Argument(
        help="Models to serve: FILE.onnx (named after the file) or NAME=FILE.onnx.", show_default=False)],
    host: Annotated[str, typer.Option(help="Address to listen on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (0: a free one).")] = 8080,
    workers: Annotated[int, typer.Option(help="Processes answering on the port; each loads the models.")] = 1,
    max_batch: Annotated[int, typer.Option(help="Rows per onnxruntime run when requests are merged.")] = 64,
    max_wait_ms: Annotated[float, typer.Option(
        help="How long a batch that is not full waits for more requests (0: it takes the requests already read).")] = 0.0,
    max_queue: Annotated[int, typer.Option(help="Requests waiting per model; one more is answered 503.")] = 256,
    timeout: Annotated[float, typer.Option(help="Seconds a request may wait and run (then 504).")] = 30.0,
    max_body_mb: Annotated[float, typer.Option(help="Largest request body, MiB (then 413).")] = 16.0,
    threads: Annotated[int, typer.Option(help="onnxruntime threads per model (0: all cores).")] = 1,
    watch: Annotated[Optional[float], typer.Option(
        help="Poll the model files every SECONDS and load a changed one (0: load only on "
             "POST /v2/repository/models/NAME/load). Default: 0, or 1 with --workers > 1.",
        show_default=False)] = None,
    trusted: Trusted = False,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level.")] = "warning",
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = False,
) -> None:
    """Serve models over HTTP: Open Inference Protocol v2 (KServe / Triton clients) and a records endpoint
    that scores rows as `onegraph score` does; requests are micro-batched. Stop with Ctrl-C or SIGTERM
    (requests in flight are answered first)."""
    try:
        from onegraph.serve.options import ServeOptions
        from onegraph.serve.server import Server
    except ImportError as exc:
        from onegraph.errors import OnegraphError

        raise OnegraphError(f"onegraph serve needs {exc.name or 'the serve extra'}",
                            hint="pip install 'onegraph[serve]'") from None

    options = ServeOptions(
        max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue, timeout_s=timeout,
        max_body_bytes=int(max_body_mb * 1024 * 1024), threads=threads, trusted=trusted,
        # with several workers a load request reaches one process: the others see the new file by watching
        watch_s=watch if watch is not None else (1.0 if workers > 1 else 0.0),
    )
    server = Server(models, options, host=host, port=port, workers=workers, log_level=log_level,
                    access_log=access_log)
    for name, served in server.repository.models.items():
        err.print(f"model {name}: {served.path} (version {served.current.version}) -> POST {server.url}/v2/models/"
                  f"{name}/infer, POST {server.url}/v1/models/{name}:predict", markup=False)
    err.print(f"serving on {server.url} with {workers} worker(s); metrics at {server.url}/metrics; Ctrl-C stops",
              markup=False)
    server.run()
