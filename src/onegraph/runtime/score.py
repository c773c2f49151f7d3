"""``onegraph.score``: outputs of a model for a table, with one cached session per model."""

from __future__ import annotations

import contextlib
import os
import time
from collections import OrderedDict
from typing import Any

import pandas as pd

from onegraph import written
from onegraph.check.source import is_in_memory_model
from onegraph.runtime.session import Session

__all__ = ["cached_session", "score"]

_CACHE: OrderedDict[tuple, Session] = OrderedDict()
_CACHE_SIZE = 8
#: the last call, as one tuple (threads read and replace it whole, never half of it): its key and session, and
#: for an absolute path, the path, when its file was looked at (monotonic ns) and onegraph's write count then.
#: Within RECHECK_NS of that look, and with no file written by onegraph since, the same path is the same
#: session without an ``os.stat`` (a system call costs a single-row call more than its own ~2 us: it leaves
#: the CPU's caches and branch predictors cold for the onnxruntime and pandas code after it). A relative path
#: is looked at on every call: the working folder may have changed.
_LAST: tuple = (None, None, None, 0, -1)
#: how long a model file's version is trusted without looking again, in nanoseconds (10 ms: a look each
#: millisecond cost a single-row call ~1.5 us on average beside onnxruntime's, bench/README.md)
RECHECK_NS = 10_000_000


def _key(model: Any) -> tuple:
    if isinstance(model, (str, os.PathLike)):
        try:
            st = os.stat(model)
        except (OSError, ValueError):  # ValueError: a NUL in the path
            return ("path", str(model))  # Session() reports the missing file
        # the file itself (device, inode) and its version: modification time and size, and the inode's change
        # time, which no program sets (a copy that keeps the source's time and size, shutil.copy2, changes it)
        return ("file", st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns)
    if is_in_memory_model(model) and hasattr(model, "ByteSize"):
        # keyed by identity and size: a ModelProto edited to another size gets a new session, one edited in
        # place to the same size does not (serializing it on every call would cost as much as a large model)
        return ("proto", id(model), model.ByteSize())
    if isinstance(model, (bytes, bytearray)):
        return ("bytes", id(model), len(model))
    return ("object", id(model))


def _absolute(model: Any) -> bool:
    """Whether ``model`` is a path that names the same file whatever the working folder (absolute, and not
    through ``/proc`` or ``/dev``, whose ``self/cwd`` and ``fd`` links follow the process)."""
    try:
        if not isinstance(model, (str, os.PathLike)):
            return False
        path = os.fspath(model)
        return isinstance(path, str) and os.path.isabs(path) and not path.startswith(("/proc/", "/dev/"))
    except (TypeError, ValueError):
        return False


def cached_session(model: Any, *, trusted: bool = False) -> Session:
    """The cached :class:`Session` for ``model`` (a path, bytes or ``onnx.ModelProto``).

    ``trusted`` skips the pre-check of a model not opened yet (see :class:`Session`).

    A path is keyed by its file's identity and version (device, inode, modification time, size, change time),
    so a rewritten model gets a new session. While calls for the same absolute path follow each other within
    :data:`RECHECK_NS` (10 ms), the file is not looked at again; a file onegraph writes in this process
    (``build``, ``save_model``, the CLI) is looked at on the next call whatever the time, so a model rewritten
    by another process is picked up within 10 ms of its rename, and one rewritten here at once. A
    relative path is looked at on every call. An in-memory model is keyed by the object and its size: after
    editing a ``ModelProto`` or ``bytearray`` in place, score it through a new :class:`Session`.
    """
    recent = _recent(model)
    return recent if recent is not None else _opened(model, trusted)  # recent: the single-row loop


def _opened(model: Any, trusted: bool) -> Session:
    """:func:`cached_session` past its first test: the file looked at, the session found or opened."""
    global _LAST
    last_key, last_session = _LAST[:2]
    now = time.monotonic_ns()
    writes = written.count()
    key = _key(model)
    if key == last_key:  # the model scored last: no reordering
        session = last_session
    else:
        session = _CACHE.get(key)
        if session is None:
            session = Session(model, trusted=trusted)
            if key[0] == "path" or _key(model) != key:
                # the file was missing when looked at, or changed while it was read: the session may be of
                # another version than the key says, so it serves this call only
                return session
            _CACHE[key] = session
            session._owner = model  # keeps the object alive so its id is not reused while cached
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
        else:
            with contextlib.suppress(KeyError):  # another thread's call may have just let it go
                _CACHE.move_to_end(key)
    _LAST = (key, session, model if _absolute(model) else None, now, writes)
    return session


def _recent(model: Any) -> Session | None:
    """The last call's session when ``model`` is its absolute path, looked at less than :data:`RECHECK_NS` ago
    with no file written by onegraph since; else None."""
    _, session, looked, when, writes = _LAST
    if (looked is not None and (model is looked or (type(model) is type(looked) and model == looked))
            and time.monotonic_ns() - when < RECHECK_NS and writes == written.count()):
        return session
    return None


def score(model: Any, data: Any, *, trusted: bool = False) -> pd.DataFrame:
    """Score ``data`` with ``model``; a DataFrame of the model's outputs, one row per input row.

    Parameters
    ----------
    model:
        Path to a ``.onnx`` file, its bytes, or an ``onnx.ModelProto`` (a model built by onegraph carries its
        input schema; other models are fed by their input names and types). One session per model is kept
        (:func:`cached_session`): a rewritten file is opened again, noticed within 10 ms.
    data:
        A pandas or polars DataFrame, a pyarrow Table, any object with ``__arrow_c_stream__``, a dict of
        column -> values (scalars mean one row), a list of records or a 1-D NumPy structured / record array
        (its fields are the columns). Extra columns are ignored.
    trusted:
        Skip the pre-check (an isolated process parses and opens the model first, once per file content;
        see :func:`onegraph.check.loader.read_model`). Only for files you made or trust.

    Returns
    -------
    pandas.DataFrame
        ``label`` and ``probabilities_<class>`` columns for a classifier, ``prediction`` for a regressor,
        the transformed columns for a preprocessing-only model. The index is the input's (pandas).

    Raises
    ------
    MissingColumnError, ColumnTypeError
        for a column that is absent or holds values the model cannot take (naming it).
    UnknownCategoryError
        for categories never seen in fit where the encoder was set to refuse them.
    ModelFileError, RuntimeFailure
        for a model that cannot be read or run; :class:`~onegraph.check.guard.UnsafeModelError` (a
        ``ModelFileError``) when the pre-check finds an error, naming it.
    """
    session = _recent(model)  # cached_session's first test, without its call (single-row scoring)
    return (session if session is not None else _opened(model, trusted)).score(data)
