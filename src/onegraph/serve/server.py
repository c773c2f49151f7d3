"""Running the application on uvicorn: the listening socket, one or several worker processes, or a
background thread (tests, notebooks).

The socket is bound before the models are loaded, so a port in use is reported at once as one line
(:class:`~onegraph.errors.ConfigError`); uvicorn then serves on it. Shutdown (SIGTERM, SIGINT, :meth:`Server.stop`)
is graceful: the socket stops accepting, requests already read are answered (their batches run), then the
models' threads are released.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import uvicorn

from onegraph.errors import ConfigError
from onegraph.serve.app import create_app
from onegraph.serve.options import ServeOptions
from onegraph.serve.repository import ModelRepository

__all__ = ["CONFIG_ENV", "parse_models", "bind", "worker_app", "Server"]

#: the configuration worker processes read (``--workers`` > 1: each process loads the models itself)
CONFIG_ENV = "ONEGRAPH_SERVE_CONFIG"


def parse_models(specs: list[str]) -> dict[str, str]:
    """``FILE`` or ``NAME=FILE`` arguments as name -> path (a file's name: its stem, ``penguins.onnx`` ->
    ``penguins``). Raises :class:`ConfigError` for two models of one name."""
    models: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or os.path.exists(spec):
            name, path = Path(spec).stem, spec
        if name in models:
            raise ConfigError(f"two models are named {name!r} ({models[name]} and {path})",
                              hint="name them: NAME=FILE")
        models[name] = path
    return models


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free port). Raises :class:`ConfigError` naming
    the address when it cannot be bound (in use, not an address of this machine, no permission)."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"port {port} is not a TCP port", hint="give a number between 1 and 65535")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        hint = ("choose another --port, or stop the process that holds it" if exc.errno == errno.EADDRINUSE
                else "give an address of this machine (--host), e.g. 127.0.0.1")
        raise ConfigError(f"cannot listen on {host}:{port}: {reason}", hint=hint) from None


def worker_app():
    """The application of a worker process (uvicorn factory): models and options from :data:`CONFIG_ENV`."""
    config = json.loads(os.environ[CONFIG_ENV])
    return create_app(ModelRepository(config["models"], ServeOptions(**config["options"])))


class Server:
    """The server of ``models`` on ``host:port``.

    Parameters
    ----------
    models:
        name -> ``.onnx`` path (or a list of ``FILE`` / ``NAME=FILE``, see :func:`parse_models`).
    options:
        :class:`~onegraph.serve.options.ServeOptions`.
    host, port:
        Where to listen (port 0: a free port, read it from :attr:`port`).
    workers:
        Processes answering on the socket; each loads the models and batches on its own.
    log_level, access_log:
        uvicorn's logging (warning and no access log by default: a log line per request costs more than a
        batched row).

    Raises
    ------
    ConfigError
        for a port that cannot be bound or a bad option; :class:`~onegraph.errors.ModelFileError` for a model
        that does not load.
    """

    def __init__(self, models: dict[str, str] | list[str], options: ServeOptions | None = None, *,
                 host: str = "127.0.0.1", port: int = 8080, workers: int = 1, log_level: str = "warning",
                 access_log: bool = False) -> None:
        if workers < 1:
            raise ConfigError(f"--workers {workers}: give 1 or more processes")
        if log_level not in uvicorn.config.LOG_LEVELS:  # uvicorn raised KeyError for it after loading the models
            raise ConfigError(f"--log-level {log_level!r} is not a log level",
                              hint=f"give one of {', '.join(uvicorn.config.LOG_LEVELS)}")
        self.models = parse_models(models) if isinstance(models, list) else dict(models)
        self.options = options or ServeOptions()
        self.workers = workers
        self.socket = bind(host, port)
        try:
            # loaded here even with several workers: a model that does not load is reported before they start
            self.repository = ModelRepository(self.models, self.options)
        except BaseException:
            self.socket.close()
            raise
        self.host, self.port = self.socket.getsockname()[:2]
        if workers > 1:
            self.repository.close()
            os.environ[CONFIG_ENV] = json.dumps({"models": self.models, "options": self.options.to_dict()})
            app: object = "onegraph.serve.server:worker_app"
        else:
            app = create_app(self.repository)
        self.config = uvicorn.Config(
            app, factory=workers > 1, workers=workers, log_level=log_level, access_log=access_log,
            lifespan="on", server_header=False,
            # in-flight requests are answered before exit: at most a timeout each, then a margin
            timeout_graceful_shutdown=int(self.options.timeout_s) + 5,
        )
        self._server = uvicorn.Server(self.config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def run(self) -> None:
        """Serve until SIGTERM / SIGINT (in the main thread), then shut down gracefully."""
        if self.workers > 1:
            from uvicorn.supervisors import Multiprocess

            Multiprocess(self.config, sockets=[self.socket]).run()
        else:
            main = threading.current_thread() is threading.main_thread()
            # uvicorn re-raises the SIGTERM it shut down on, once its own handler is gone: SystemExit(0) (a clean
            # stop, as Ctrl-C and the multi-process supervisor end), not death by the signal (exit status 143)
            previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)) if main else None
            try:
                self._server.run(sockets=[self.socket])
            finally:
                if main:
                    signal.signal(signal.SIGTERM, previous)

    def start(self) -> Server:
        """Serve from a background thread (one worker); returns once the server accepts requests."""
        if self.workers > 1:
            raise ConfigError("a server with several workers runs in the foreground", hint="call run()")
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self.socket]},
                                        name="onegraph-serve", daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise ConfigError("the server stopped while starting; see its log")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop a server started with :meth:`start`, answering the requests it has read first."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
