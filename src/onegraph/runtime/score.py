"""``onegraph.score``: outputs of a model for a table, with one cached session per model."""

from __future__ import annotations

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
_LAST: list = [None, None]  # key and session of the last call (the most recent entry of _CACHE)
#: the model path of the last call, when its file was last looked at (monotonic ns) and onegraph's write count
#: then: within RECHECK_NS of that look, and with no file written by onegraph since, the same path is the same
#: session without an ``os.stat`` (a system call costs a single-row call more than its own ~2 us: it leaves
#: the CPU's caches and branch predictors cold for the onnxruntime and pandas code after it)
_LOOKED: list = [None, 0, -1]
#: how long a model file's version is trusted without looking again, in nanoseconds (1 ms)
RECHECK_NS = 1_000_000


def _key(model: Any) -> tuple:
    if isinstance(model, (str, os.PathLike)):
        try:
            st = os.stat(model)
        except OSError:
            return ("path", str(model))  # Session() reports the missing file
        # the file itself (device, inode), and its version (mtime, size): a rewritten model is reloaded
        return ("file", st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    if is_in_memory_model(model) and hasattr(model, "ByteSize"):
        # keyed by identity and size: a ModelProto edited after scoring gets a new session
        return ("proto", id(model), model.ByteSize())
    if isinstance(model, (bytes, bytearray)):
        return ("bytes", id(model), len(model))
    return ("object", id(model))


def cached_session(model: Any, *, trusted: bool = False) -> Session:
    """The cached :class:`Session` for ``model`` (a path, bytes or ``onnx.ModelProto``).

    ``trusted`` skips the pre-check of a model not opened yet (see :class:`Session`).

    A path is keyed by its file's identity and version (device, inode, modification time, size), so a
    rewritten model gets a new session. While calls for the same path follow each other within
    :data:`RECHECK_NS` (1 ms), the file is not looked at again; a file onegraph writes in this process
    (``build``, ``save_model``, the CLI) is looked at on the next call whatever the time, so a model rewritten
    by another process is picked up within a millisecond of its rename, and one rewritten here at once.
    """
    looked, when, writes = _LOOKED
    now = time.monotonic_ns()
    if model is looked and now - when < RECHECK_NS and writes == written.count():  # the single-row loop
        return _LAST[1]
    path = isinstance(model, (str, os.PathLike))
    if path:
        if model == looked and now - when < RECHECK_NS and writes == written.count():  # an equal path
            return _LAST[1]
        writes = written.count()
    key = _key(model)
    if not (_CACHE and key == _LAST[0]):  # else the model scored last (the single-row loop): no reordering
        sess = _CACHE.get(key)
        if sess is None:
            sess = Session(model, trusted=trusted)
            _CACHE[key] = sess
            sess._owner = model  # keeps the object alive so its id is not reused while cached
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
        else:
            _CACHE.move_to_end(key)
        _LAST[:] = [key, sess]
    # only once the path's session is _LAST's: a file that failed to open is looked at again
    _LOOKED[:] = [model, now, writes] if path else [None, 0, -1]
    return _LAST[1]


def score(model: Any, data: Any, *, trusted: bool = False) -> pd.DataFrame:
    """Score ``data`` with ``model``; a DataFrame of the model's outputs, one row per input row.

    Parameters
    ----------
    model:
        Path to a ``.onnx`` file, its bytes, or an ``onnx.ModelProto`` (a model built by onegraph carries its
        input schema; other models are fed by their input names and types).
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
    return cached_session(model, trusted=trusted).score(data)
