"""Calibration: run a model in onnxruntime over data and collect statistics of its float tensors.

The tensors to observe are exposed as extra graph outputs of the model (types from ONNX shape inference), the
data is fed batch by batch, and every batch's values go into one
:class:`~onegraph.stats.accumulators.TensorAccumulator` per tensor, so memory stays bounded by the batch size
whatever the number of samples. bfloat16 tensors are exposed through a Cast to float32 (exact), and every value
is accumulated in float64. Graph inputs are observed from the feeds.

Set-up costs what the model costs, not a fixed price: the graph is read as protobuf (onnx-ir, whose import
takes longer than a short calibration, loads only for a ``where`` predicate), shape inference runs here on a
copy without the weights' payloads, and the exposed model is the model's own bytes followed by the outputs to
add (protobuf merges a repeated field written twice), so no copy of the weights is made in Python.

Data:

* for a model built by onegraph (its input schema in the metadata): a pandas / polars DataFrame, an Arrow
  table, a dict of columns, or a CSV / Parquet file, fed column by column as :class:`onegraph.Session` does;
* for any model: an ``.npz`` file or a dict of numpy arrays named as the model's inputs, first axis =
  samples; or an iterable of such dicts, one per batch (streamed, never held together).
"""

from __future__ import annotations

import fnmatch
import itertools
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import onnx

from onegraph.check.loader import load_model, read_model
from onegraph.errors import (
    ConfigError,
    DataError,
    MissingColumnError,
    ModelFileError,
    RuntimeFailure,
    whole_number,
)
from onegraph.runtime.arrays import check_array_feeds
from onegraph.shapes import FLOAT_TYPES, drop_weights, with_shapes
from onegraph.stats.accumulators import TensorAccumulator, TensorStats

__all__ = ["FLOAT_TYPES", "Calibration", "select_tensors", "calibrate", "annotate_model"]

_NUMPY = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
          "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
          "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}


@dataclass
class Calibration:
    """Accumulated statistics per tensor name, and the number of samples fed."""

    accumulators: dict[str, TensorAccumulator]
    samples: int = 0
    #: float tensors selected but not observed (no type known after shape inference), with the reason
    skipped: dict[str, str] = field(default_factory=dict)

    def stats(self) -> dict[str, TensorStats]:
        """:class:`TensorStats` per tensor, in graph order."""
        return {name: acc.result() for name, acc in self.accumulators.items()}

    def merge(self, other: Calibration) -> Calibration:
        """Fold another calibration of the same model (other data) into this one; returns self (``other`` is
        left as it was, and later changes to it do not reach this one).

        Raises :class:`~onegraph.errors.DataError` for anything but a :class:`Calibration`, or statistics
        collected with other settings."""
        import copy

        if not isinstance(other, Calibration):
            raise DataError(f"cannot merge a {type(other).__name__} into a calibration",
                            hint="merge the Calibration another calibrate() call returned")
        for name, acc in other.accumulators.items():
            if name in self.accumulators:
                self.accumulators[name].merge(acc)
            else:
                self.accumulators[name] = copy.deepcopy(acc)
        self.samples += other.samples
        return self


class _Tensor(NamedTuple):
    """A tensor of the main graph: ONNX element type and shape (ints, names of symbolic dimensions, None
    for unknown ones) as shape inference left them (None: unknown), and the node producing it (None for a
    graph input). (A named tuple: defined in a fifth of a frozen dataclass' time, which a short calibration
    pays in its import.)"""

    name: str
    elem_type: int | None
    shape: tuple | None
    producer: onnx.NodeProto | None
    info: onnx.ValueInfoProto | None


def _tensors(proto: onnx.ModelProto) -> list[_Tensor]:
    """Graph inputs (not initializers) and node outputs of the main graph, in graph order."""
    graph = proto.graph
    infos = {v.name: v for v in (*graph.value_info, *graph.input, *graph.output)}
    initializers = {t.name for t in graph.initializer}
    found = [_tensor(v.name, infos, None) for v in graph.input if v.name not in initializers]
    found += [_tensor(name, infos, node) for node in graph.node for name in node.output if name]
    return found


def _tensor(name: str, infos: dict[str, onnx.ValueInfoProto], producer: onnx.NodeProto | None) -> _Tensor:
    info = infos.get(name)
    if info is None or not info.type.HasField("tensor_type") or not info.type.tensor_type.elem_type:
        return _Tensor(name, None, None, producer, None)
    tensor_type = info.type.tensor_type
    shape = None
    if tensor_type.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor_type.shape.dim)
    return _Tensor(name, tensor_type.elem_type, shape, producer, info)


def select_tensors(model: Any, *, tensors: Sequence[str] | None = None, op_types: Sequence[str] | None = None,
                   functions: Sequence[str] | None = None,
                   where: Callable[[Any], bool] | None = None) -> list[str]:
    """Names of the float tensors of ``model``'s main graph to observe: graph inputs and node outputs (not
    initializers), in graph order.

    ``model`` is an ``onnx.ModelProto`` (types are read from its value infos: run shape inference first) or
    an ``onnx_ir.Model``. With no selector, every float tensor (and those of unknown type). Otherwise the
    union of: ``tensors`` (names or ``fnmatch`` patterns), ``op_types`` (outputs of nodes of these types),
    ``functions`` (outputs of calls of these model-local functions, named ``name``, ``domain:name`` or
    ``domain:name:overload``), ``where`` (a predicate on the ``onnx_ir.Value``).

    Raises
    ------
    ConfigError
        for a pattern, operator type or function that selects no float tensor.
    """
    if type(model).__module__.startswith("onnx_ir"):
        from onegraph.check import irsafe

        model = irsafe.to_proto(model)
    return [t.name for t in _select(model, tensors, op_types, functions, where)]


def _select(proto: onnx.ModelProto, tensors: Sequence[str] | None, op_types: Sequence[str] | None,
            functions: Sequence[str] | None, where: Callable[[Any], bool] | None) -> list[_Tensor]:
    values = [t for t in _tensors(proto) if t.elem_type is None or t.elem_type in FLOAT_TYPES]
    if not values:  # statistics of nothing would read as a calibration done
        raise ConfigError("the model has no float tensor (float32, float16, bfloat16 or double) to take statistics of",
                          hint="calibration observes float tensors; a model of integers or text has no float range "
                               "to quantize")
    if tensors is None and op_types is None and functions is None and where is None:
        return values
    _check_selectors(proto, values, tensors, op_types, functions)
    wanted_functions = set(functions or ())
    by_name = _ir_values(proto) if where is not None else {}
    chosen = []
    for t in values:
        producer = t.producer
        if tensors is not None and any(fnmatch.fnmatchcase(t.name, p) for p in tensors):
            chosen.append(t)
        elif op_types is not None and producer is not None and producer.op_type in op_types:
            chosen.append(t)
        elif wanted_functions and producer is not None and _function_names(proto, producer) & wanted_functions:
            chosen.append(t)
        elif where is not None and where(by_name[t.name]):
            chosen.append(t)
    if not chosen:  # only a `where` predicate can get here: a pattern, type or function selecting nothing raised
        raise ConfigError(f"the tensors asked for select none of the model's {len(values)} float tensors",
                          hint="check the where predicate (it is given each tensor as an onnx_ir.Value)")
    return chosen


def _ir_values(proto: onnx.ModelProto) -> dict[str, Any]:
    """The main graph's ``onnx_ir.Value`` objects by name (for a ``where`` predicate)."""
    from onegraph.check import irsafe

    graph = irsafe.from_proto(proto).graph
    return {v.name: v for v in (*graph.inputs, *(v for node in graph for v in node.outputs)) if v.name}


def _check_selectors(proto: onnx.ModelProto, values: list[_Tensor], tensors: Sequence[str] | None,
                     op_types: Sequence[str] | None, functions: Sequence[str] | None) -> None:
    """Each tensor pattern, operator type and function must select at least one float tensor: one that
    selects nothing is a typo, not a request for no statistics."""
    for pattern in tensors or ():
        if not any(fnmatch.fnmatchcase(t.name, pattern) for t in values):
            sample = ", ".join(t.name for t in values[:5]) + (", ..." if len(values) > 5 else "")
            raise ConfigError(f"tensor pattern {pattern!r} matches no float tensor of the model",
                              hint=f"float tensors are named like: {sample}")
    producers = [t.producer for t in values]
    for op in op_types or ():
        if not any(p is not None and p.op_type == op for p in producers):
            ops = sorted({p.op_type for p in producers if p is not None})
            raise ConfigError(f"op type {op!r} produces no float tensor of the model",
                              hint=f"float tensors come from: {', '.join(ops)}")
    for name in functions or ():
        if not any(p is not None and name in _function_names(proto, p) for p in producers):
            raise ConfigError(f"function {name!r} produces no float tensor of the model",
                              hint="name a model-local function as name, domain:name or domain:name:overload")


def _function_names(proto: onnx.ModelProto, node: onnx.NodeProto) -> set[str]:
    for f in proto.functions:
        if (f.domain, f.name, f.overload) == (node.domain, node.op_type, node.overload):
            return {f.name, f"{f.domain}:{f.name}", f"{f.domain}:{f.name}:{f.overload}"}
    return set()


def calibrate(model: Any, data: Any, *, tensors: Sequence[str] | None = None, op_types: Sequence[str] | None = None,
              functions: Sequence[str] | None = None, where: Callable[[Any], bool] | None = None,
              batch_size: int = 256, channel_axis: int | None = 1, bins: int = 1024, sketch_k: int = 200,
              std_k: Sequence[float] = (3.0,), sketch_per_sample: int | None = 16, seed: int | None = 0,
              progress: bool | None = None, threads: int | None = None,
              require_channels: bool = False) -> Calibration:
    """Statistics of a model's float tensors over calibration data, one batch at a time.

    Parameters
    ----------
    model:
        A path to an ``.onnx`` file, its bytes, an ``onnx.ModelProto`` or an ``onnx_ir.Model``.
    data:
        See the module docstring: a table or CSV / Parquet file (models built by onegraph), an ``.npz`` file,
        a dict of arrays named as the inputs (first axis = samples), or an iterable of such dicts (batches).
    tensors, op_types, functions, where:
        Which tensors to observe (:func:`select_tensors`); all float tensors by default.
    batch_size:
        Samples per onnxruntime call (capped by a fixed batch dimension of the model's inputs).
    channel_axis, bins, sketch_k, std_k:
        Settings of each :class:`~onegraph.stats.accumulators.TensorAccumulator`; per-channel statistics
        are kept for tensors whose ``channel_axis`` has a fixed size in the model (not the batch axis).
    sketch_per_sample:
        About how many values per sample of each tensor enter its quantile sketch: a tensor of ``v`` values per
        sample gets ``sketch_rate`` = the largest power of two <= ``sketch_per_sample / v`` (at least 1/256),
        which keeps the sketch's cost per sample bounded; its rank error bound grows accordingly (stated in
        each result). None: every value (exact streaming KLL).
    seed:
        Seed of that sampling (None: fresh entropy). Past the values held exactly (4 MiB of samples in all), a
        KLL sketch compacts at random with DataSketches' own unseeded generator: seeded runs then agree within
        the stated rank error, not bit for bit.
    progress:
        Show a progress bar on stderr (default: when stderr is a terminal).
    threads:
        onnxruntime intra-op threads (default: onnxruntime's, all cores).
    require_channels:
        Refuse, before any run, a selection in which no tensor has a fixed-size ``channel_axis`` (per-channel
        quantization parameters asked for would all fall back to per-tensor ones).

    Returns
    -------
    Calibration
        ``.stats()`` gives a :class:`~onegraph.stats.accumulators.TensorStats` per tensor.

    Raises
    ------
    ModelFileError
        for a model that cannot be read or opened.
    DataError, MissingColumnError
        for data that does not match the model's inputs (naming the input).
    ConfigError
        for a ``batch_size`` below 1.
    RuntimeFailure
        when onnxruntime fails on a batch.
    """
    batch_size = whole_number("batch_size", batch_size,
                              hint="give batch_size >= 1 (command line: --batch-size N), e.g. 256")
    if sketch_per_sample is not None:
        sketch_per_sample = whole_number("sketch_per_sample", sketch_per_sample,
                                         hint="give sketch_per_sample >= 1, e.g. 16, or None for every value")
    # a file is checked first, for an onnxruntime session (the exposed model adds outputs only); an in-memory
    # model is serialized
    source = read_model(model, purpose="run")
    light = _without_weights(load_model(source.data, trusted=True))
    selected = _select(light, tensors, op_types, functions, where)
    skipped = {t.name: "type unknown after shape inference" for t in selected if t.elem_type is None}
    selected = [t for t in selected if t.elem_type is not None]
    input_names = {v.name for v in light.graph.input}
    observed_inputs = [t.name for t in selected if t.name in input_names]
    extra, exposed = _exposure(light, [t for t in selected if t.name not in input_names])
    runner = _Runner(source.data + extra, light, threads, source.folder)
    del source, light  # the session holds the model now
    # the samples are held exactly up to _HELD values in all (a short calibration needs no sketch)
    settings = dict(bins=bins, sketch_k=sketch_k, std_k=std_k, held=_HELD // max(1, len(selected)))
    per_sample = {t.name: _values_per_sample(t.shape) for t in selected}
    accumulators = {
        t.name: TensorAccumulator(t.name, channel_axis=_static_axis(t.shape, channel_axis),
                                  sketch_rate=_rate(per_sample[t.name], sketch_per_sample),
                                  seed=None if seed is None else seed + i, **settings)
        for i, t in enumerate(selected)}
    for t in selected:  # read through a Cast to float32 (exact): the statistics keep the tensor's own type
        if t.elem_type == onnx.TensorProto.BFLOAT16:
            accumulators[t.name].dtype = "bfloat16"
    if require_channels and all(acc.channel_axis is None for acc in accumulators.values()):
        raise ConfigError(f"per-channel parameters asked for, but no observed tensor has a fixed-size axis "
                          f"{channel_axis}", hint="give the channel axis the tensors have (command line: "
                          "--channel-axis N; 1 for NCHW), or leave out --per-channel")
    buffers = {name: _Buffer(accumulators[name]) for name, size in per_sample.items() if size is not None}
    output_names = list(exposed.values())

    def accumulate(n: int, feeds: dict[str, np.ndarray], results: list[np.ndarray]) -> None:
        for name, value in [*((i, feeds[i]) for i in observed_inputs), *zip(exposed, results)]:
            if name in buffers:
                buffers[name].add(value, n)
            else:
                accumulators[name].update(value, n)

    batches = runner.batches(data, batch_size)
    first = next(batches, None)  # data errors surface before any progress bar
    samples = 0
    with _progress_bar(progress) as bar:
        task = bar.add_task("calibrating", total=runner.total)
        # statistics between onnxruntime's runs, not in a thread beside them: the GIL changes hands several
        # times per batch, and overlapping cost more wall time than it saved (bench/README.md)
        for n, feeds in itertools.chain([first] if first is not None else [], batches):
            accumulate(n, feeds, runner.run(output_names, feeds))
            samples += n
            bar.update(task, advance=n, total=runner.total)
    for buffer in buffers.values():
        buffer.flush()
    if samples == 0:
        raise DataError("the calibration data holds no sample", hint="give at least one row / sample")
    ordered = {name: accumulators[name] for name in [t.name for t in selected]}
    return Calibration(ordered, samples, skipped)


def _without_weights(proto: onnx.ModelProto) -> onnx.ModelProto:
    """``proto`` (a copy this function may change) with shape inference's value infos, read from a copy of
    it without the payloads of large float initializers.

    Shape inference reads initializers' types and dimensions, and the values only of the small integer and
    float tensors operators take as shapes, scales or axes; the weights' payloads would be serialized,
    copied into onnx and back for nothing (three copies of every weight). The graph is the one the check
    ran shape inference on (the checking process for a file, see ``onegraph.check.stages``), so it runs here.
    """
    return with_shapes(drop_weights(proto))


class _Buffer:
    """Batches of a batch-first tensor, copied one after the other into an array kept for the whole
    calibration before they reach its accumulator: one update per ``_BUFFERED`` values instead of one per
    (small) batch saves most of numpy's per-call overhead, and copying each batch as it comes (instead of
    concatenating the batches held) lets onnxruntime's outputs go at once and reuses the same memory, already
    mapped and in the CPU's caches. Holds ``_BUFFERED`` values plus one batch."""

    def __init__(self, accumulator: TensorAccumulator) -> None:
        self.accumulator = accumulator
        self.store: np.ndarray | None = None
        self.rows = self.samples = 0

    def add(self, value: np.ndarray, samples: int) -> None:
        store, rows = self.store, len(value)
        if store is None or value.shape[1:] != store.shape[1:] or value.dtype != store.dtype:
            self.flush()
            # the graph gives this tensor a dynamic batch axis: its size in the statistics is None, whatever
            # the rows the store holds at a flush (one flush of a short calibration gave its row count)
            self.accumulator._note_shape((None, *value.shape[1:]))
            per_row = max(1, math.prod(value.shape[1:]))
            store = self.store = np.empty((-(-_BUFFERED // per_row) + rows, *value.shape[1:]), value.dtype)
        elif self.rows + rows > len(store):
            self.flush()
            if rows > len(store):  # a batch larger than the first: no copy
                self.accumulator.update(value, samples)
                return
        store[self.rows:self.rows + rows] = value
        self.rows += rows
        self.samples += samples
        if self.rows * (store.size // len(store)) >= _BUFFERED:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.accumulator.update(self.store[:self.rows], self.samples)
        self.rows = self.samples = 0


#: values of a tensor per accumulator update (its slice size, ``accumulators._CHUNK``): numpy's per-call
#: overhead (~1 us per operation, ~40 operations) stays small next to the work (digits CNN, conv output:
#: 23 ns per value at 16K values, 13 at 64K, 10.6 at 128K and 256K) and the temporaries in the CPU's caches
_BUFFERED = 1 << 17


def _values_per_sample(shape: tuple | None) -> int | None:
    """Values per sample of a tensor whose first axis is the (dynamic) batch and the others fixed, else None."""
    if not shape or isinstance(shape[0], int):
        return None
    dims = shape[1:]
    return int(np.prod(dims)) if all(isinstance(d, int) for d in dims) else None


#: sampled values held exactly (before the KLL sketches take over) over all the tensors of a calibration: 4 MiB
_HELD = 1 << 19


def _rate(per_sample: int | None, target: int | None) -> float:
    if target is None or per_sample is None or per_sample <= target:
        return 1.0
    rate = 1.0
    while rate > 1 / 256 and rate * per_sample > target:
        rate /= 2
    return rate


def _static_axis(shape: tuple | None, axis: int | None) -> int | None:
    """``axis`` when the tensor has it with a fixed size (channels); None for a dynamic one (the batch)."""
    if axis is None or shape is None or not -len(shape) <= axis < len(shape):
        return None
    return axis if isinstance(shape[axis], int) else None


def _as_proto(model: Any) -> onnx.ModelProto:
    if type(model).__module__.startswith("onnx_ir"):
        from onegraph.check import irsafe

        return irsafe.to_proto(model)
    return load_model(model)


def _exposure(proto: onnx.ModelProto, values: list[_Tensor]) -> tuple[bytes, dict[str, str]]:
    """What makes ``values`` graph outputs, as serialized ``ModelProto`` bytes to append to the model's own
    (parsing merges the graph written twice: its outputs and nodes are appended); tensor name -> output name
    to read (bfloat16 through a Cast to float32)."""
    outputs = {v.name for v in proto.graph.output}
    graph = onnx.GraphProto()
    exposed = {}
    for t in values:
        if t.elem_type == onnx.TensorProto.BFLOAT16:
            out = f"{t.name}__onegraph_float32"
            graph.node.append(onnx.helper.make_node("Cast", [t.name], [out], to=onnx.TensorProto.FLOAT))
            info = graph.output.add()
            info.CopyFrom(t.info)
            info.name = out
            info.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
            exposed[t.name] = out
            continue
        if t.name not in outputs:
            graph.output.append(t.info)
        exposed[t.name] = t.name
    return onnx.ModelProto(graph=graph).SerializeToString(), exposed


class _Runner:
    """onnxruntime on the exposed model, fed from tables (onegraph models) or numpy arrays (any model)."""

    def __init__(self, exposed: bytes, original: onnx.ModelProto, threads: int | None, folder: str | None) -> None:
        self.table = _has_input_schema(original)
        self.total: int | None = None
        if self.table:
            from onegraph.runtime import Session

            self.session = Session(exposed, threads=threads, extra_outputs=True)
            self._run = lambda names, feeds: self.session.run_feeds(feeds, names)
            self.inputs = {s.name: None for s in self.session.inputs}
            self.fixed_batch = None
            return
        import onnxruntime as ort

        from onegraph.check.options import session_options

        try:
            session = ort.InferenceSession(exposed, session_options(threads=threads, folder=folder),
                                           providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own exception types
            raise ModelFileError(f"onnxruntime cannot open the model: {str(exc).strip()[:500]}") from None
        self.inputs = {i.name: _NUMPY.get(i.type) for i in session.get_inputs()}
        self._declared = session.get_inputs()
        first = {i.name: i.shape[0] for i in session.get_inputs() if i.shape and isinstance(i.shape[0], int)}
        empty = [name for name, size in first.items() if size < 1]
        if empty:
            raise ModelFileError(f"input {empty[0]!r} declares a first dimension of {first[empty[0]]}: each run "
                                 "takes no sample, so there is nothing to calibrate",
                                 hint="declare the batch dimension as a name (dynamic) or a positive size")
        self.fixed_batch = min(first.values()) if first else None

        def run(names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
            try:
                return session.run(names, feeds)
            except Exception as exc:  # onnxruntime's own exception types
                raise RuntimeFailure(f"onnxruntime failed: {str(exc).strip()[:500]}") from None

        self._run = run

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self._run(names, feeds) if names else []

    # -- data -------------------------------------------------------------------------------------
    def batches(self, data: Any, batch_size: int) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """``(samples, feeds)`` per batch."""
        if self.fixed_batch is not None:
            batch_size = min(batch_size, self.fixed_batch)
        if isinstance(data, (str, os.PathLike)):
            data = self._read_file(Path(data))
        if isinstance(data, np.ndarray):
            raise DataError("the calibration data is a bare array: name it as the model's input",
                            hint=f"give {{{next(iter(self.inputs), 'input')!r}: array}} (first axis: samples), or "
                                 "an iterable of such dicts")
        if self.table and not _is_feed_batches(data):
            n, feeds = self.session.feeds(data)
            yield from self._sliced(n, feeds, batch_size)
            return
        if isinstance(data, Mapping):
            feeds = self._checked(data)
            yield from self._sliced(len(next(iter(feeds.values()))), feeds, batch_size)
            return
        if _is_feed_batches(data) or isinstance(data, (list, tuple)):
            # batches larger than batch_size are cut too: batch_size bounds memory
            for i, batch in enumerate(data):
                if not isinstance(batch, Mapping):
                    raise DataError(f"batch {i} of the calibration data is a {type(batch).__name__}, not a dict of "
                                    "arrays named as the model's inputs",
                                    hint=f"give each batch as {{{next(iter(self.inputs), 'input')!r}: array}}")
                feeds = self._checked(batch)
                yield from _slices(len(next(iter(feeds.values()))), feeds, batch_size)
            return
        raise DataError(f"cannot calibrate on a {type(data).__name__}",
                        hint="give an .npz file, a dict of arrays named as the model's inputs, or batches of them"
                        + ("" if not self.table else "; or a DataFrame / CSV / Parquet file"))

    def _read_file(self, path: Path) -> Any:
        from onegraph.io import read_table

        if path.suffix.lower() == ".npz":
            if not path.exists():
                raise DataError(f"data file {path} does not exist", hint="check the path")
            try:
                with np.load(path, allow_pickle=False) as npz:
                    return {k: npz[k] for k in npz.files}
            except Exception as exc:  # zipfile / numpy format errors
                raise DataError(f"cannot read {path} as .npz: {exc}") from None
        if not self.table:
            raise DataError(f"data file {path}: a model without onegraph's input schema takes .npz data",
                            hint="save the inputs with numpy.savez(path, **{input_name: array})")
        return read_table(path, specs=self.session.inputs)

    def _checked(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        missing = [name for name in self.inputs if name not in feeds]
        if missing:
            raise MissingColumnError(missing, [str(k) for k in feeds])
        out = {}
        for name, dtype in self.inputs.items():
            try:
                arr = np.asarray(feeds[name])
            except (ValueError, TypeError) as exc:  # ragged nested lists, objects numpy cannot hold
                raise DataError(f"input {name!r}: its values are not one array ({str(exc).strip()[:200]})",
                                hint="give an array (or nested lists of equal lengths) whose first axis is samples") \
                    from None
            if dtype is not None and arr.dtype != dtype and arr.dtype.kind in "biuf":
                arr = _cast(name, arr, np.dtype(dtype))
            elif dtype is not None and arr.dtype != dtype:
                raise DataError(f"input {name!r}: {arr.dtype} values where the model takes {np.dtype(dtype).name}",
                                hint=f"give {np.dtype(dtype).name} arrays (numbers)")
            if arr.ndim == 0:
                raise DataError(f"input {name!r}: a scalar is no batch",
                                hint="give an array whose first axis is samples")
            out[name] = arr
        lengths = {len(a) for a in out.values()}
        if len(lengths) > 1:
            raise DataError(f"the inputs have different numbers of samples ({sorted(lengths)})",
                            hint="give every input the same first axis")
        if not self.table:  # the batch axis is sliced to the model's fixed size, if any: not compared
            check_array_feeds(self._declared, out, "the model", any_batch=True)
        return out

    def _sliced(self, n: int, feeds: dict[str, np.ndarray], batch_size: int) -> Iterator[tuple[int, dict]]:
        self.total = n
        yield from _slices(n, feeds, batch_size)


def _cast(name: str, arr: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``arr`` as the input's ``dtype``; DataError naming the input where a finite value is beyond the range of a
    narrower float type (numpy's cast would make it ±inf, counted as an infinite value of the tensor)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = arr.astype(dtype)
    if dtype.kind == "f" and arr.dtype.kind == "f" and arr.dtype.itemsize > dtype.itemsize:
        beyond = np.isinf(out) & np.isfinite(arr)
        if beyond.any():
            k = int(np.flatnonzero(beyond.reshape(-1))[0])
            per_sample = max(1, arr[0].size) if arr.ndim else 1
            raise DataError(f"input {name!r}: value {arr.reshape(-1)[k].item()!r} (sample {k // per_sample}) is "
                            f"beyond the range of {dtype.name}, the model's input type",
                            hint=f"clip the values to +-{float(np.finfo(dtype).max):.4g} or scale them")
    return out


def _has_input_schema(model: onnx.ModelProto) -> bool:
    """Whether ``model`` carries onegraph's input schema (a model onegraph built: fed from tables). The
    metadata schema (pydantic, pandas) loads only for a model with onegraph metadata."""
    props = {p.key: p.value for p in model.metadata_props}
    if not any(key.startswith("org.onegraph.") for key in props):
        return False
    from onegraph.contract import metadata as meta

    fields, _ = meta.decode(props)
    return "inputs" in fields


def _slices(n: int, feeds: dict[str, np.ndarray], batch_size: int) -> Iterator[tuple[int, dict]]:
    """``(samples, feeds)`` of consecutive slices of at most ``batch_size`` samples."""
    for start in range(0, n, batch_size):
        stop = min(n, start + batch_size)
        yield stop - start, {k: v[start:stop] for k, v in feeds.items()}


def _is_feed_batches(data: Any) -> bool:
    """An iterable of dicts (batches of feeds), not a table or a dict of columns."""
    if isinstance(data, (Mapping, str, bytes, os.PathLike)) or hasattr(data, "columns") or hasattr(data, "schema"):
        return False
    return isinstance(data, Iterable) and not isinstance(data, (list, tuple)) or (
        isinstance(data, (list, tuple)) and len(data) > 0 and isinstance(data[0], Mapping)
        and all(isinstance(np.asarray(v), np.ndarray) and np.ndim(v) > 0 for v in data[0].values()))


def _may_be_terminal() -> bool:
    """False when rich would certainly not find a terminal on stderr (no tty, no variable forcing one)."""
    forced = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
    return bool(getattr(sys.stderr, "isatty", lambda: False)()) or any(os.environ.get(k) for k in forced)


class _NoBar:
    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def add_task(self, *args: Any, **kwargs: Any) -> int:
        return 0

    def update(self, *args: Any, **kwargs: Any) -> None:
        return None


def _progress_bar(progress: bool | None) -> Any:
    if progress is False or (progress is None and not _may_be_terminal()):
        return _NoBar()  # rich (~0.1 s to import) is not needed
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    err = Console(stderr=True)
    if progress is None:
        progress = err.is_terminal
    if not progress:
        return _NoBar()
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("samples"),
                    TimeElapsedColumn(), console=err, transient=False)


def annotate_model(model: Any, data: Any, *, quant_type: str | None = "uint8", method: str = "minmax",
                   symmetric: bool = False, reduce_range: bool = False, per_channel: bool = False,
                   percentile: float = 99.999, **options: Any) -> tuple[onnx.ModelProto, Calibration, dict]:
    """Calibrate ``model`` on ``data`` and return a copy carrying the statistics and quantization parameters.

    ``options`` go to :func:`calibrate`; ``quant_type`` (None: statistics only), ``method``, ``symmetric``,
    ``reduce_range``, ``per_channel``, ``percentile`` to :func:`onegraph.stats.qparams.quant_params` for each
    tensor with finite values (per channel where the tensor has channel statistics, per tensor otherwise;
    scales in float16 for float16 tensors, float32 otherwise). The input model is not modified.

    Returns
    -------
    (annotated model, calibration, tensor name -> QuantParams)

    Raises
    ------
    the errors of :func:`calibrate` and :func:`onegraph.stats.qparams.quant_params`.
    """
    from onegraph.stats.annotate import annotate
    from onegraph.stats.qparams import check_options, quant_params

    check_options(quant_type, method)
    calibration = calibrate(model, data, require_channels=per_channel and quant_type is not None, **options)
    stats = calibration.stats()
    qparams = {}
    if quant_type is not None:
        for name, s in stats.items():
            if s.min is None:
                continue
            channel = per_channel and s.channels is not None and None not in s.channels.min
            qparams[name] = quant_params(s, quant_type, method=method, symmetric=symmetric, reduce_range=reduce_range,
                                         per_channel=channel, percentile=percentile,
                                         dtype=np.float16 if s.dtype == "float16" else np.float32, tensor=name)
    return annotate(_as_proto(model), stats, qparams), calibration, qparams
