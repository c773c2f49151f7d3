"""``onegraph.score``: outputs of a model for a table, with one cached session per model."""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

import pandas as pd

from onegraph.check.source import is_in_memory_model
from onegraph.runtime.session import Session

__all__ = ["cached_session", "score"]

_CACHE: OrderedDict[tuple, Session] = OrderedDict()
_CACHE_SIZE = 8
_LAST: list = [None, None]  # key and session of the last call (the most recent entry of _CACHE)


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
    """
    key = _key(model)
    if _CACHE and key == _LAST[0]:  # the model scored last (the single-row loop): no reordering
        return _LAST[1]
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
    return sess


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
