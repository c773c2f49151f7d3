"""Calibration: run a model in onnxruntime over data and collect statistics of its float tensors.

The tensors to observe are exposed as extra graph outputs of a copy of the model (onnx-ir is the in-memory
model; types come from ONNX shape inference), the data is fed batch by batch, and every batch's values go
into one :class:`~onegraph.stats.accumulators.TensorAccumulator` per tensor, so memory stays bounded by the
batch size whatever the number of samples. bfloat16 tensors are exposed through a Cast to float32 (exact),
and every value is accumulated in float64. Graph inputs are observed from the feeds.

Data:

* for a model built by onegraph (its input schema in the metadata): a pandas / polars DataFrame, an Arrow
  table, a dict of columns, or a CSV / Parquet file, fed column by column as :class:`onegraph.Session` does;
* for any model: an ``.npz`` file or a dict of numpy arrays named as the model's inputs, first axis =
  samples; or an iterable of such dicts, one per batch (streamed, never held together).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.check import irsafe, native
from onegraph.check.loader import load_model
from onegraph.check.source import is_in_memory_model
from onegraph.errors import (
    ConfigError,
    DataError,
    MissingColumnError,
    ModelFileError,
    RuntimeFailure,
)
from onegraph.stats.accumulators import TensorAccumulator, TensorStats

__all__ = ["FLOAT_TYPES", "Calibration", "select_tensors", "calibrate", "annotate_model"]

FLOAT_TYPES = (ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.FLOAT16, ir.DataType.BFLOAT16)
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
        """Fold another calibration of the same model (other data) into this one; returns self."""
        for name, acc in other.accumulators.items():
            if name in self.accumulators:
                self.accumulators[name].merge(acc)
            else:
                self.accumulators[name] = acc
        self.samples += other.samples
        return self


def select_tensors(model: ir.Model, *, tensors: Sequence[str] | None = None, op_types: Sequence[str] | None = None,
                   functions: Sequence[str] | None = None,
                   where: Callable[[ir.Value], bool] | None = None) -> list[ir.Value]:
    """The float tensors of ``model``'s main graph to observe: graph inputs and node outputs (not
    initializers), in graph order.

    With no selector, every float tensor. Otherwise the union of: ``tensors`` (names or ``fnmatch``
    patterns), ``op_types`` (outputs of nodes of these types), ``functions`` (outputs of calls of these
    model-local functions, named ``name``, ``domain:name`` or ``domain:name:overload``), ``where`` (a
    predicate on the ``onnx_ir.Value``).
    """
    graph = model.graph
    initializers = set(graph.initializers)
    values = [v for v in graph.inputs if v.name not in initializers]
    values += [v for node in graph for v in node.outputs if v.name]
    values = [v for v in values if v.type is None or v.dtype in FLOAT_TYPES]
    if tensors is None and op_types is None and functions is None and where is None:
        return values
    _check_selectors(model, values, tensors, op_types, functions)
    wanted_functions = set(functions or ())
    chosen = []
    for v in values:
        producer = v.producer()
        if tensors is not None and any(fnmatch.fnmatchcase(v.name, p) for p in tensors):
            chosen.append(v)
        elif op_types is not None and producer is not None and producer.op_type in op_types:
            chosen.append(v)
        elif wanted_functions and producer is not None and _function_names(model, producer) & wanted_functions:
            chosen.append(v)
        elif where is not None and where(v):
            chosen.append(v)
    return chosen


def _check_selectors(model: ir.Model, values: list[ir.Value], tensors: Sequence[str] | None,
                     op_types: Sequence[str] | None, functions: Sequence[str] | None) -> None:
    """Each tensor pattern, operator type and function must select at least one float tensor: one that
    selects nothing is a typo, not a request for no statistics."""
    for pattern in tensors or ():
        if not any(fnmatch.fnmatchcase(v.name, pattern) for v in values):
            sample = ", ".join(v.name for v in values[:5]) + (", ..." if len(values) > 5 else "")
            raise ConfigError(f"tensor pattern {pattern!r} matches no float tensor of the model",
                              hint=f"float tensors are named like: {sample}")
    producers = [v.producer() for v in values]
    for op in op_types or ():
        if not any(p is not None and p.op_type == op for p in producers):
            ops = sorted({p.op_type for p in producers if p is not None})
            raise ConfigError(f"op type {op!r} produces no float tensor of the model",
                              hint=f"float tensors come from: {', '.join(ops)}")
    for name in functions or ():
        if not any(p is not None and name in _function_names(model, p) for p in producers):
            raise ConfigError(f"function {name!r} produces no float tensor of the model",
                              hint="name a model-local function as name, domain:name or domain:name:overload")


def _function_names(model: ir.Model, node: ir.Node) -> set[str]:
    function = model.functions.get(node.op_identifier())
    if function is None:
        return set()
    return {function.name, f"{function.domain}:{function.name}",
            f"{function.domain}:{function.name}:{function.overload}"}


def calibrate(model: Any, data: Any, *, tensors: Sequence[str] | None = None, op_types: Sequence[str] | None = None,
              functions: Sequence[str] | None = None, where: Callable[[ir.Value], bool] | None = None,
              batch_size: int = 256, channel_axis: int | None = 1, bins: int = 1024, sketch_k: int = 200,
              std_k: Sequence[float] = (3.0,), sketch_per_sample: int | None = 16, seed: int | None = 0,
              progress: bool | None = None, threads: int | None = None) -> Calibration:
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
        Seed of that sampling (None: fresh entropy).
    progress:
        Show a progress bar on stderr (default: when stderr is a terminal).
    threads:
        onnxruntime intra-op threads (default: all cores but one, which accumulates the statistics of a batch
        while onnxruntime runs the next).

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
    RuntimeFailure
        when onnxruntime fails on a batch.
    """
    proto = _as_proto(model)
    try:  # the file passed the check, which ran inference on it: in this process for a model given in memory
        proto = native.infer_shapes(proto, isolated=not is_in_memory_model(model))
    except Exception:  # noqa: BLE001 - types then come from the value infos the model carries
        pass
    ir_model = irsafe.from_proto(proto)
    selected = select_tensors(ir_model, tensors=tensors, op_types=op_types, functions=functions, where=where)
    skipped = {v.name: "type unknown after shape inference" for v in selected if v.type is None}
    selected = [v for v in selected if v.type is not None]
    input_names = {v.name for v in ir_model.graph.inputs}
    observed_inputs = [v.name for v in selected if v.name in input_names]
    exposed = _expose(ir_model, [v for v in selected if v.name not in input_names])
    if threads is None:
        threads = max(1, (os.cpu_count() or 2) - 1)
    runner = _Runner(irsafe.to_proto(ir_model).SerializeToString(), proto, threads)
    settings = dict(bins=bins, sketch_k=sketch_k, std_k=std_k)
    per_sample = {v.name: _values_per_sample(v) for v in selected}
    accumulators = {
        v.name: TensorAccumulator(v.name, channel_axis=_static_axis(v, channel_axis),
                                  sketch_rate=_rate(per_sample[v.name], sketch_per_sample),
                                  seed=None if seed is None else seed + i, **settings)
        for i, v in enumerate(selected)}
    buffers = {name: _Buffer(accumulators[name]) for name, size in per_sample.items() if size is not None}
    output_names = list(exposed.values())

    def accumulate(n: int, feeds: dict[str, np.ndarray], results: list[np.ndarray]) -> None:
        for name, value in [*((i, feeds[i]) for i in observed_inputs), *zip(exposed, results)]:
            if name in buffers:
                buffers[name].add(value, n)
            else:
                accumulators[name].update(value, n)

    samples = 0
    with ThreadPoolExecutor(max_workers=1) as pool:
        # onnxruntime runs the next batch in a worker thread (it releases the GIL) while this thread
        # accumulates the current one: a calibration takes max(inference, statistics), not their sum
        batches = runner.batches(data, batch_size)
        pending = _submit(pool, runner, output_names, batches)  # data errors surface before any progress bar
        with _progress_bar(progress) as bar:
            task = bar.add_task("calibrating", total=runner.total)
            while pending is not None:
                n, feeds, future = pending
                results = future.result()
                pending = _submit(pool, runner, output_names, batches)
                accumulate(n, feeds, results)
                samples += n
                bar.update(task, advance=n, total=runner.total)
    for buffer in buffers.values():
        buffer.flush()
    if samples == 0:
        raise DataError("the calibration data holds no sample", hint="give at least one row / sample")
    ordered = {name: accumulators[name] for name in [v.name for v in selected]}
    return Calibration(ordered, samples, skipped)


def _submit(pool: ThreadPoolExecutor, runner: _Runner, names: list[str], batches: Iterator) -> tuple | None:
    """Start onnxruntime on the next batch: ``(samples, feeds, future of the outputs)``, or None at the end."""
    try:
        n, feeds = next(batches)
    except StopIteration:
        return None
    return n, feeds, pool.submit(runner.run, names, feeds)


class _Buffer:
    """Batches of a batch-first tensor, concatenated before they reach its accumulator: one update per
    ``_BUFFERED`` values instead of one per (small) batch saves most of numpy's per-call overhead."""

    def __init__(self, accumulator: TensorAccumulator) -> None:
        self.accumulator = accumulator
        self.parts: list[np.ndarray] = []
        self.size = self.samples = 0

    def add(self, value: np.ndarray, samples: int) -> None:
        if self.parts and value.shape[1:] != self.parts[0].shape[1:]:
            self.flush()
        self.parts.append(value)
        self.size += value.size
        self.samples += samples
        if self.size >= _BUFFERED:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            whole = self.parts[0] if len(self.parts) == 1 else np.concatenate(self.parts)
            self.accumulator.update(whole, self.samples)
        self.parts, self.size, self.samples = [], 0, 0


_BUFFERED = 1 << 14


def _values_per_sample(value: ir.Value) -> int | None:
    """Values per sample of a tensor whose first axis is the (dynamic) batch and the others fixed, else None."""
    shape = value.shape
    if shape is None or len(shape) == 0 or isinstance(shape[0], int):
        return None
    dims = list(shape)[1:]
    return int(np.prod(dims)) if all(isinstance(d, int) for d in dims) else None


def _rate(per_sample: int | None, target: int | None) -> float:
    if target is None or per_sample is None or per_sample <= target:
        return 1.0
    rate = 1.0
    while rate > 1 / 256 and rate * per_sample > target:
        rate /= 2
    return rate


def _static_axis(value: ir.Value, axis: int | None) -> int | None:
    """``axis`` when the tensor has it with a fixed size (channels); None for a dynamic one (the batch)."""
    shape = value.shape
    if axis is None or shape is None or not -len(shape) <= axis < len(shape):
        return None
    return axis if isinstance(shape[axis], int) else None


def _as_proto(model: Any) -> onnx.ModelProto:
    if isinstance(model, ir.Model):
        return irsafe.to_proto(model)
    return load_model(model)


def _expose(model: ir.Model, values: list[ir.Value]) -> dict[str, str]:
    """Make ``values`` graph outputs; tensor name -> output name to read (bfloat16 through a Cast)."""
    graph = model.graph
    outputs = {v.name for v in graph.outputs}
    exposed = {}
    for v in values:
        if v.dtype == ir.DataType.BFLOAT16:
            cast = ir.node("Cast", [v], attributes={"to": ir.DataType.FLOAT})
            out = cast.outputs[0]
            out.name = f"{v.name}__onegraph_float32"
            out.dtype = ir.DataType.FLOAT
            out.shape = v.shape
            graph.append(cast)
            graph.outputs.append(out)
            exposed[v.name] = out.name
            continue
        if v.name not in outputs:
            graph.outputs.append(v)
        exposed[v.name] = v.name
    return exposed


class _Runner:
    """onnxruntime on the exposed model, fed from tables (onegraph models) or numpy arrays (any model)."""

    def __init__(self, exposed: bytes, original: onnx.ModelProto, threads: int | None) -> None:
        from onegraph.contract import metadata as meta
        from onegraph.runtime import Session

        fields, _ = meta.decode({p.key: p.value for p in original.metadata_props})
        self.table = "inputs" in fields
        self.total: int | None = None
        if self.table:
            self.session = Session(exposed, threads=threads)
            self._run = lambda names, feeds: self.session.run_feeds(feeds, names)
            self.inputs = {s.name: None for s in self.session.inputs}
            self.fixed_batch = None
            return
        import onnxruntime as ort

        from onegraph.check.options import session_options

        try:
            session = ort.InferenceSession(exposed, session_options(threads=threads), providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own exception types
            raise ModelFileError(f"onnxruntime cannot open the model: {str(exc).strip()[:500]}") from None
        self.inputs = {i.name: _NUMPY.get(i.type) for i in session.get_inputs()}
        first = [i.shape[0] for i in session.get_inputs() if i.shape and isinstance(i.shape[0], int)]
        self.fixed_batch = min(first) if first else None

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
        if self.table and not _is_feed_batches(data):
            n, feeds = self.session.feeds(data)
            yield from self._sliced(n, feeds, batch_size)
            return
        if isinstance(data, Mapping):
            feeds = self._checked(data)
            yield from self._sliced(len(next(iter(feeds.values()))), feeds, batch_size)
            return
        if _is_feed_batches(data):  # batches larger than batch_size are cut too: batch_size bounds memory
            for batch in data:
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
            arr = np.asarray(feeds[name])
            if dtype is not None and arr.dtype != dtype and arr.dtype.kind in "biuf":
                arr = arr.astype(dtype)
            if arr.ndim == 0:
                raise DataError(f"input {name!r}: a scalar is no batch",
                                hint="give an array whose first axis is samples")
            out[name] = arr
        lengths = {len(a) for a in out.values()}
        if len(lengths) > 1:
            raise DataError(f"the inputs have different numbers of samples ({sorted(lengths)})",
                            hint="give every input the same first axis")
        return out

    def _sliced(self, n: int, feeds: dict[str, np.ndarray], batch_size: int) -> Iterator[tuple[int, dict]]:
        self.total = n
        yield from _slices(n, feeds, batch_size)


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
    calibration = calibrate(model, data, **options)
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
