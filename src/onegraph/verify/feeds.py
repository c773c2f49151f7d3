"""Inputs for running any model: from data the user gives, or generated from the input types and shapes.

Verification (``convert``) and runtime comparison (``compare``) run a model on "the same inputs" twice. Those
inputs come from, in order of preference:

* a table (pandas / polars DataFrame, Arrow table, or a ``.csv`` / ``.parquet`` file): for a model built by
  onegraph, its stored input schema turns columns into feeds (:class:`onegraph.runtime.Session`); for any
  other model, columns are matched to inputs by name, and a model with a single rank-2 input takes the
  table's numeric columns, in order, as its matrix (scikit-learn converters' ``X``);
* a ``.npz`` file (or a dict of arrays) whose names are the model's input names;
* nothing: arrays generated from each input's element type and shape (a fixed seed, so both runs and any
  rerun see the same values). Symbolic dimensions take ``rows`` for the first axis and 4 elsewhere; floats
  are standard normal, integers 0..3 (small enough to be valid indices and categories), booleans fair coins,
  strings drawn from ``"a"``, ``"b"``, ``"c"``. The feeds together may take at most ``memory`` bytes (the
  check's default memory limit, 4 GiB): a larger shape is refused with a ``DataError`` naming the input and
  the bytes before anything is allocated (``onegraph check`` warns about such inputs: C602).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from onegraph.check.limits import Limits
from onegraph.check.loader import load_model
from onegraph.check.static.inputs import feed_bytes
from onegraph.contract import metadata as meta
from onegraph.errors import DataError
from onegraph.io import read_table

__all__ = ["model_feeds", "table_feeds", "generated_feeds"]

Feeds = dict[str, np.ndarray]


def _inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def _np_dtype(elem_type: int, name: str = "input") -> Any:
    """The numpy dtype of an ONNX element type; :class:`DataError` naming the input for one numpy has none of."""
    if elem_type == onnx.TensorProto.STRING:
        return np.dtype(object)
    try:
        return onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    except (KeyError, ValueError, TypeError):
        raise DataError(f"input {name!r} has element type {elem_type}, which no array can hold",
                        hint="check the model with `onegraph check`") from None


def _is_onegraph(model: onnx.ModelProto) -> bool:
    fields, _ = meta.decode({p.key: p.value for p in model.metadata_props})
    return "inputs" in fields


def model_feeds(model: Any, data: Any = None, *, rows: int = 16, seed: int = 0, memory: int | None = None) -> Feeds:
    """The onnxruntime feeds to run ``model`` on.

    Parameters
    ----------
    model:
        A path, bytes or ``onnx.ModelProto``.
    data:
        None (generate), a table (DataFrame, Arrow, polars, dict of columns), a dict / ``.npz`` of arrays
        named by input, or a path to a ``.csv``, ``.parquet`` or ``.npz`` file.
    rows:
        Rows to generate (first symbolic axis) when ``data`` is None; also the most rows taken from a
        table or from arrays (the first ``rows`` rows along each input's batch axis: a first axis of
        symbolic or unknown size), so a long file does not make verification slow. None takes them all.
    seed:
        Seed of the generated values.
    memory:
        Bytes the generated feeds may take together (default: :class:`~onegraph.check.limits.Limits`'
        ``memory``, 4 GiB).

    Returns
    -------
    dict
        input name -> array of the input's element type (strings as ``object``).

    Raises
    ------
    DataError
        when an input cannot be built from the data (named), a file cannot be read, the data has no rows, or
        generated feeds would take more than ``memory`` bytes (the input and the bytes named).
    """
    proto = load_model(model)
    if data is None:
        return generated_feeds(proto, rows=rows, seed=seed, memory=memory)
    feeds = _given_feeds(proto, data, rows)
    if feeds and all(np.ndim(v) and len(v) == 0 for v in feeds.values()):  # nothing to verify on
        where = f" in {data}" if isinstance(data, (str, os.PathLike)) else ""
        raise DataError(f"the data has no rows{where} to run the model on", hint="give data with at least one row")
    return feeds


def _given_feeds(proto: onnx.ModelProto, data: Any, rows: int | None) -> Feeds:
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if path.suffix.lower() == ".npz":
            if not path.exists():
                raise DataError(f"data file {path} does not exist", hint="check the path")
            try:
                with np.load(path, allow_pickle=False) as npz:
                    arrays = {k: npz[k] for k in npz.files}
            except ValueError as exc:  # object arrays need pickle, which a data file must not run
                raise DataError(f"data file {path} cannot be read without pickle ({exc})",
                                hint="save strings as a str array (np.array(values, dtype=str)), "
                                     "not dtype=object") from None
            return _named_arrays(proto, arrays, str(path), rows)
        data = read_table(path)
    if isinstance(data, Mapping) and data and all(isinstance(v, np.ndarray) for v in data.values()) \
            and set(data) >= {i.name for i in _inputs(proto)}:
        return _named_arrays(proto, dict(data), "the arrays given", rows)
    return table_feeds(proto, data, rows=rows)


def _named_arrays(proto: onnx.ModelProto, arrays: dict[str, np.ndarray], where: str,
                  rows: int | None = None) -> Feeds:
    """Arrays by input name; with ``rows``, the first ``rows`` along each input's batch axis (a first
    axis of symbolic or unknown size: a fixed first axis is part of the input's shape and kept)."""
    feeds = {}
    for inp in _inputs(proto):
        if inp.name not in arrays:
            raise DataError(f"input {inp.name!r} is missing from {where} (names given: {', '.join(sorted(arrays))})",
                            hint="name each array after the model input it feeds")
        arr = np.asarray(arrays[inp.name])
        dims = inp.type.tensor_type.shape.dim
        if rows is not None and arr.ndim and (not dims or not dims[0].HasField("dim_value")):
            arr = arr[:rows]
        feeds[inp.name] = _cast(inp, arr)
    return feeds


def _cast(inp: onnx.ValueInfoProto, arr: np.ndarray) -> np.ndarray:
    dtype = _np_dtype(inp.type.tensor_type.elem_type, inp.name)
    try:
        return arr.astype(dtype, copy=False)
    except (TypeError, ValueError) as exc:
        raise DataError(f"input {inp.name!r}: cannot use {arr.dtype} values as {dtype} ({exc})") from None


def table_feeds(proto: onnx.ModelProto, data: Any, *, rows: int | None = None) -> Feeds:
    """Feeds from a table: onegraph's schema when the model has one, else columns matched to inputs."""
    from onegraph.contract.tables import as_pandas

    frame = as_pandas(data)
    if rows is not None:
        frame = frame.head(rows)
    if _is_onegraph(proto):
        from onegraph.runtime.session import Session

        return Session(proto).feeds(frame)[1]
    inputs = _inputs(proto)
    columns = [str(c) for c in frame.columns]
    if all(i.name in columns for i in inputs):
        feeds = {}
        for inp in inputs:
            values = frame[inp.name].to_numpy()
            rank = len(inp.type.tensor_type.shape.dim)
            feeds[inp.name] = _cast(inp, values.reshape((-1,) + (1,) * max(rank - 1, 0)))
        return feeds
    if len(inputs) == 1 and len(inputs[0].type.tensor_type.shape.dim) == 2:
        numeric = frame.select_dtypes("number")
        if numeric.shape[1] == 0:
            raise DataError("the table has no numeric column to feed the model's matrix input "
                            f"{inputs[0].name!r}", hint="give a table of numbers, or a .npz named by input")
        width = inputs[0].type.tensor_type.shape.dim[1]
        if width.HasField("dim_value") and width.dim_value != numeric.shape[1]:
            names = ", ".join(map(str, numeric.columns[:8])) + (", ..." if numeric.shape[1] > 8 else "")
            raise DataError(f"the model's matrix input {inputs[0].name!r} takes {width.dim_value} columns; the "
                            f"table has {numeric.shape[1]} numeric columns ({names})",
                            hint="keep only the feature columns, in the order the model was fitted on (drop the "
                                 "target), or give a .npz of arrays named by input")
        return {inputs[0].name: _cast(inputs[0], numeric.to_numpy())}
    missing = [i.name for i in inputs if i.name not in columns]
    raise DataError(f"the table has no column for input(s) {', '.join(map(repr, missing))}",
                    hint="name the columns after the model inputs, or give a .npz of arrays named by input")


def generated_feeds(proto: onnx.ModelProto, *, rows: int = 16, seed: int = 0, memory: int | None = None) -> Feeds:
    """Deterministic arrays for every input, from its element type and shape (see the module doc).

    Raises :class:`~onegraph.errors.DataError` for an input that is not a tensor, or when the feeds would take
    more than ``memory`` bytes together (default 4 GiB), naming the input that crosses it and the bytes it
    needs; nothing is allocated then.
    """
    budget = Limits().memory if memory is None else int(memory)
    shapes = {}
    total = 0
    for inp in _inputs(proto):
        t = inp.type
        if not t.HasField("tensor_type"):
            raise DataError(f"input {inp.name!r} is not a tensor ({t.WhichOneof('value')})",
                            hint="give its values in a .npz file")
        shape = []
        for axis, d in enumerate(t.tensor_type.shape.dim):
            shape.append(d.dim_value if d.HasField("dim_value") else (rows if axis == 0 else 4))
        if any(d < 0 for d in shape):
            raise DataError(f"input {inp.name!r} has a negative dimension {shape}", hint="fix the model's input shape")
        size = feed_bytes(math.prod(shape), t.tensor_type.elem_type)
        total += size
        if total > budget:
            raise DataError(f"input {inp.name!r} of shape {shape} needs {size:,} bytes of generated values"
                            + (f" ({total:,} with the inputs before it)" if total > size else "")
                            + f", more than the memory limit of {budget:,}",
                            hint="give the inputs' values (a table or a .npz file), or fix the input's dims")
        shapes[inp.name] = (t.tensor_type.elem_type, tuple(shape))
    rng = np.random.default_rng(seed)
    return {name: _random(rng, elem_type, shape, name) for name, (elem_type, shape) in shapes.items()}


#: values generated per step: the feed is filled in place, so the memory beyond the feed itself is one step's
#: float64 draws (8 MiB), not a float64 copy of the whole feed (4x a float16 feed, 8x a bool one)
_STEP = 1 << 20


def _random(rng: np.random.Generator, elem_type: int, shape: tuple[int, ...], name: str) -> np.ndarray:
    dtype = _np_dtype(elem_type, name)
    if dtype == object:
        draw = lambda n: rng.choice(np.array(["a", "b", "c"], dtype=object), size=n)  # noqa: E731
    elif dtype == np.bool_:
        draw = lambda n: rng.random(n) < 0.5  # noqa: E731
    elif np.issubdtype(dtype, np.integer):
        draw = lambda n: rng.integers(0, 4, size=n)  # noqa: E731
    elif np.issubdtype(dtype, np.floating) or dtype.kind == "V" or dtype.name in ("bfloat16", "float16"):
        draw = lambda n: rng.standard_normal(n).astype(np.float32)  # noqa: E731
    else:
        draw = None
    if draw is not None:
        out = np.empty(shape, dtype=dtype)
        flat = out.reshape(-1)
        for start in range(0, flat.size, _STEP):
            stop = min(flat.size, start + _STEP)
            flat[start:stop] = draw(stop - start).astype(dtype)
        return out
    raise DataError(f"input {name!r}: cannot generate values of type {dtype}", hint="give its values in a .npz file")
