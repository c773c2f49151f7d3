"""``onegraph serve``: an HTTP inference server for onegraph models.

Open Inference Protocol v2 (the REST API KServe and Triton clients speak) and a records endpoint that scores
rows as :func:`onegraph.score` does, with dynamic micro-batching, back-pressure, atomic model reloads and
Prometheus metrics. Models are opened only through :class:`onegraph.runtime.Session` (the safe loader).

::

    from onegraph.serve import Server
    with Server({"penguins": "penguins.onnx"}, port=0) as server:
        print(server.url)     # http://127.0.0.1:PORT; POST /v1/models/penguins:predict ...

Imports starlette, uvicorn, prometheus_client, numpy, pandas, pyarrow and onegraph's runtime only
(``pip install "onegraph[serve]"``).
"""

from onegraph import _lazy

__all__ = ["Server", "ServeOptions", "ModelRepository", "create_app"]
_lazy.exports(__name__, {
    "Server": "onegraph.serve.server", "ServeOptions": "onegraph.serve.options",
    "ModelRepository": "onegraph.serve.repository", "create_app": "onegraph.serve.app",
})
