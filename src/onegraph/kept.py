"""The files a command has read, which no write of the same command may replace (floor 1: the loader of
:mod:`onegraph.check` records them, :mod:`onegraph.io` consults them).

A command's ``-o`` is checked against the paths it was given before the work
(:func:`onegraph.io.check_output_path`); the external data files of a model are known only once the model has
passed its check and been parsed, so :func:`onegraph.check.loader.load_model` records them here and
:func:`onegraph.io.atomic_path` refuses to replace one. The record is active inside :func:`keeping_inputs`
(every CLI command that writes a file runs in one); the Python API, where writing over a file one read can be
the point, is not restricted.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

__all__ = ["keeping_inputs", "keep", "kept_as"]

_KEPT: contextvars.ContextVar[dict[tuple[int, int], str] | None] = contextvars.ContextVar("kept", default=None)


@contextlib.contextmanager
def keeping_inputs() -> Iterator[None]:
    """Record, inside the block, the files read (:func:`keep`) so that no write replaces them."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def _identity(path: str | os.PathLike) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def keep(path: str | os.PathLike, what: str) -> None:
    """Record ``path`` (an existing file) as ``what`` (``the external data of model file m.onnx``), when a
    :func:`keeping_inputs` block is active."""
    kept = _KEPT.get()
    if kept is not None and (key := _identity(path)) is not None:
        kept.setdefault(key, what)


def kept_as(path: str | os.PathLike) -> str | None:
    """What ``path`` was recorded as, or None (not recorded, not existing, or no block active)."""
    kept = _KEPT.get()
    if not kept:
        return None
    key = _identity(path)
    return kept.get(key) if key is not None else None
