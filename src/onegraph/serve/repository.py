"""The models a server serves, by name, each loaded through the safe loader and swapped atomically.

A model is opened only by :class:`onegraph.runtime.Session`, which pre-checks the file in an isolated
process first (untrusted files never reach onnx or onnxruntime code in the server). A reload builds the new
version completely (session, batchers, metadata) off the event loop, then replaces the current version in
one assignment: a request holds the version it started with, so requests queued on the old version finish
on it and new requests go to the new one; none is dropped. A file that fails to load leaves the old version
serving.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from onegraph.errors import ConfigError, ModelFileError, OnegraphError
from onegraph.runtime import Session
from onegraph.serve.batching import MicroBatcher, QueueBound
from onegraph.serve.errors import UnknownModelError
from onegraph.serve.lanes import Rows, batch_function, split_arrays, split_frame
from onegraph.serve.metrics import Metrics
from onegraph.serve.options import ServeOptions
from onegraph.serve.protocol import model_metadata

__all__ = ["file_identity", "ModelVersion", "ServedModel", "ModelRepository"]

log = logging.getLogger("onegraph.serve")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def file_identity(path: str) -> tuple[int, int, int, int, int]:
    """(device, inode, mtime ns, size, change time ns) of ``path``: changes when the file is rewritten or
    replaced, also by a copy that keeps the source's time and size (``cp -p``, ``shutil.copy2``: no program
    sets the inode's change time)."""
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns


class ModelVersion:
    """One loaded version of a model: its session, one batcher per protocol, its v2 metadata.

    Attributes
    ----------
    name, version: the model's name and this version's number as text ("1" at startup, +1 per load).
    session: the :class:`~onegraph.runtime.Session`.
    outputs: names of the outputs served (the model's outputs but its internal checks).
    records: batcher of the records endpoint (results: :class:`~onegraph.serve.lanes.ScoredRows`).
    tensors: batcher of the v2 endpoint (results: dict of output arrays).
    metadata: the v2 model metadata document.
    """

    def __init__(self, name: str, number: int, session: Session, identity: tuple, *, options: ServeOptions,
                 bound: QueueBound, executor: ThreadPoolExecutor, metrics: Metrics) -> None:
        self.name = name
        self.number = number
        self.version = str(number)
        self.session = session
        self.identity = identity
        tensors = session.tensor_inputs
        if tensors:
            shown, shape = tensors[0]
            raise ConfigError(f"model {name}: input {shown!r} of shape {shape} takes a tensor, not one value per row; "
                              "onegraph serve scores rows of table columns (models of onegraph.build / compose)",
                              hint="score image or audio folders with `onegraph score MODEL FOLDER`, or serve a tensor "
                                   "model with onnxruntime's or Triton's server")
        self.outputs = [o["name"] for o in session.outputs if o.get("role") != "check"]
        # rows scored as windows of their group depend on each other: such requests are never merged
        self._whole = getattr(session, "sequence", None) is not None
        common: dict[str, Any] = dict(bound=bound, max_batch=options.max_batch, max_wait=options.max_wait_ms / 1e3,
                                      executor=executor, combine=not self._whole, on_batch=metrics.batch(name))
        self.records = MicroBatcher(batch_function(session.score, split_frame), **common)
        self.tensors = MicroBatcher(batch_function(session.run, split_arrays), **common)
        self.metadata = model_metadata(name, self.version, session, self.outputs)

    def prepare(self, table: Any) -> Rows:
        """The request's rows as batch payload: ``table``'s feeds (1-D arrays) built now, so a bad request
        is refused before it is queued. Raises :class:`~onegraph.errors.MissingColumnError` /
        :class:`~onegraph.errors.ColumnTypeError` naming the column."""
        n, feeds = self.session.feeds(table)
        if self._whole:
            return Rows(n, table)
        return Rows(n, {k: v if v.ndim == 1 else v.reshape(n) for k, v in feeds.items()}, table)

    @property
    def waiting(self) -> int:
        return self.records.waiting + self.tensors.waiting


class ServedModel:
    """A model served under one name: the file it is loaded from and its current :class:`ModelVersion`."""

    def __init__(self, name: str, path: str, options: ServeOptions, metrics: Metrics) -> None:
        self.name = name
        self.path = path
        self._options = options
        self._metrics = metrics
        self.bound = QueueBound(name, options.max_queue)
        # one thread per model: its batches run one at a time, while the event loop reads the next requests
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"onegraph-serve-{name}")
        self._count = 0
        self._lock: asyncio.Lock | None = None
        self.failed_identity: tuple | None = None
        self.current = self._build()
        metrics.watch_queue(name, lambda: self.bound.waiting)

    def _build(self) -> ModelVersion:
        try:
            identity = file_identity(self.path)
        except OSError as exc:
            self._metrics.loaded(self.name, None)
            raise ModelFileError(f"model file {self.path} cannot be read: {exc.strerror}",
                                 hint="check the path") from None
        try:
            session = Session(self.path, threads=self._options.threads or None, trusted=self._options.trusted)
            version = ModelVersion(self.name, self._count + 1, session, identity, options=self._options,
                                   bound=self.bound, executor=self.executor, metrics=self._metrics)
        except OnegraphError:
            self.failed_identity = identity
            self._metrics.loaded(self.name, None)
            raise
        self._count += 1
        self.failed_identity = None
        self._metrics.loaded(self.name, version.number)
        return version

    async def reload(self) -> ModelVersion:
        """Load the file again as a new version and serve it; requests already queued finish on the old one.
        A file unchanged since the current version was loaded (same device, inode, mtime and size) is not
        loaded again: the current version is returned.

        Raises the loader's error (:class:`~onegraph.errors.ModelFileError`, ...) when the file does not load;
        the current version then keeps serving.
        """
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one load of a model at a time; versions numbered in order
            try:
                if file_identity(self.path) == self.current.identity:
                    return self.current  # unchanged since it was loaded: a load request repeated is not a new version
            except OSError:
                pass  # _build says why the file cannot be read
            loop = asyncio.get_running_loop()
            version = await loop.run_in_executor(None, self._build)  # the safe loader takes ~0.1-1 s
            old, self.current = self.current, version
            log.info("model %s: version %s loaded from %s (version %s retired)", self.name, version.version,
                     self.path, old.version)
            return version

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=False)


class ModelRepository:
    """The models of one server, by name.

    Parameters
    ----------
    models:
        name -> path of the ``.onnx`` file. Names are URL path segments: letters, digits, ``_ . -``.
    options:
        The server's :class:`~onegraph.serve.options.ServeOptions`.
    metrics:
        Where loads and batches are counted (a new :class:`~onegraph.serve.metrics.Metrics` by default).

    Raises
    ------
    ConfigError
        for no model or a name that is not a URL path segment.
    ModelFileError
        for a file that does not exist or does not load (the safe loader's finding, naming it).
    """

    def __init__(self, models: dict[str, str | os.PathLike], options: ServeOptions | None = None,
                 metrics: Metrics | None = None) -> None:
        if not models:
            raise ConfigError("no model to serve", hint="give one or more .onnx files (NAME=FILE to name one)")
        for name in models:
            if not _NAME.match(name):
                raise ConfigError(f"model name {name!r} cannot be a URL path segment",
                                  hint="use letters, digits, '_', '.' and '-' (NAME=FILE names a model)")
        self.options = options or ServeOptions()
        self.metrics = metrics or Metrics()
        self.models: dict[str, ServedModel] = {}
        try:
            for name, path in models.items():
                self.models[name] = ServedModel(name, os.fspath(path), self.options, self.metrics)
        except BaseException:
            self.close()
            raise

    def get(self, name: str, version: str | None = None) -> ModelVersion:
        """The version of ``name`` to answer a request with (the current one; ``version``, if given, must be
        it). Raises :class:`~onegraph.serve.errors.UnknownModelError` (404)."""
        served = self.models.get(name)
        if served is None:
            raise UnknownModelError(name, list(self.models))
        current = served.current
        if version is not None and version != current.version:
            raise UnknownModelError(name, [f"{n} (version {m.current.version})" for n, m in self.models.items()],
                                    version=version)
        return current

    def served(self, name: str) -> ServedModel:
        if name not in self.models:
            raise UnknownModelError(name, list(self.models))
        return self.models[name]

    async def watch(self, interval: float) -> None:
        """Poll the model files every ``interval`` seconds; load a file whose identity changed (a file that
        fails to load is tried again only once it changes again). Runs until cancelled."""
        while True:
            await asyncio.sleep(interval)
            for served in self.models.values():
                try:
                    identity = file_identity(served.path)
                except OSError:
                    continue  # being replaced, or gone: keep serving the loaded version
                if identity != served.current.identity and identity != served.failed_identity:
                    try:
                        await served.reload()
                    except OnegraphError as exc:
                        log.warning("model %s: %s changed but does not load; version %s keeps serving: %s",
                                    served.name, served.path, served.current.version, exc)

    def close(self) -> None:
        """Release the models' threads (after the last request)."""
        for served in self.models.values():
            served.close()
