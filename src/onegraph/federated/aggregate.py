"""Merging client deltas into a new model: FedAvg, coordinate-wise median and trimmed mean, or a plain apply.

Methods, for each coordinate of each floating-point parameter (deltas ``d_i`` of ``n`` clients, base value
``b``; arithmetic in float64, the result cast to the parameter's dtype):

* ``fedavg`` — ``b + sum_i(s_i * d_i) / sum_i(s_i)``, ``s_i`` the client's sample count: federated averaging
  (McMahan et al. 2017, "Communication-Efficient Learning of Deep Networks from Decentralized Data"). The sum
  runs over the files in the order given, as ``numpy.average(d, axis=0, weights=s)`` computes it, so the
  result is that expression bit for bit.
* ``median`` — ``b + numpy.median(d, axis=0)`` (Yin et al. 2018, "Byzantine-Robust Distributed Learning:
  Towards Optimal Statistical Rates").
* ``trimmed-mean`` — ``b + scipy.stats.trim_mean(d, trim, axis=0)``: per coordinate, ``int(trim * n)``
  largest and smallest values are cut and the rest averaged (same paper).
* ``apply`` — ``b + sum_i(d_i)`` (:func:`apply_deltas`; one delta gives the local model back).

Integer and quantized parameters (mode ``exact``) are never averaged: every delta must carry the same value,
which the result takes; clients that disagree are refused, naming the parameter and the file.

**Memory.** The deltas are streamed, never loaded whole: each parameter is cut into chunks along its
leading axes (:func:`chunks`), and for each chunk every delta file is opened, the chunk's slice read lazily
(``safetensors.safe_open(...).get_slice``, memory-mapped) and the file closed again. FedAvg and apply keep one
float64 accumulator per chunk; median and trimmed mean need every client's value for a coordinate at once,
so they stack ``n`` slices, and the chunk shrinks as ``n`` grows to keep the stack within ``memory`` bytes.
The merged parameters are ``onnx_ir.LazyTensor`` values computed while the output model is serialized, one
parameter at a time, so the process holds the base model, the output model, its serialized bytes (written
atomically in one piece) and one chunk's working set: about three models plus ``memory``, whatever the number of
clients (``bench/federated.py`` measures it).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.check import irsafe
from onegraph.errors import FederatedError, whole_number
from onegraph.federated.deltas import DeltaHeader, last_round, read_header, read_slice
from onegraph.federated.fingerprint import dtype_name
from onegraph.federated.params import Loaded, kind_of, load

__all__ = ["METHODS", "MEMORY", "average", "apply_deltas", "check_deltas", "chunks"]

METHODS = ("fedavg", "median", "trimmed-mean")
#: default working memory of one chunk, bytes
MEMORY = 64 << 20


def average(base: Any, deltas: Sequence[str | os.PathLike], *, method: str = "fedavg", trim: float | None = None,
            path: str | os.PathLike | None = None, memory: int = MEMORY, trusted: bool = False) -> onnx.ModelProto:
    """Merge client deltas computed against ``base`` into a new model (see the module docstring).

    Parameters
    ----------
    base:
        The model every delta was computed against (path, bytes or ModelProto); never changed.
    deltas:
        Delta files (:func:`onegraph.federated.make_delta`), all for ``base``, the same parameters and round.
    method:
        ``fedavg`` (weighted by each delta's sample count), ``median`` or ``trimmed-mean``.
    trim:
        For ``trimmed-mean`` only: fraction of the clients cut at each end, per coordinate (``0 <= trim < 0.5``;
        default 0.2).
    path:
        Where to write the merged model (atomically); None: only return it.
    memory:
        Bytes of working memory for one chunk (the stacked client values of median / trimmed mean).

    Returns
    -------
    onnx.ModelProto
        ``base`` with the merged parameters; metadata ``federated`` (fingerprint, rounds: this one appended
        with method, clients, samples) and ``lineage`` (parent: ``base``'s hash).

    Raises
    ------
    FederatedError
        naming the delta file (and parameter) at fault: another architecture or base model, a parameter
        ``base`` lacks or with another shape or dtype, deltas of different parameters or rounds, NaN or
        infinity, a truncated file, clients that disagree on a parameter exchanged exactly, zero samples
        in all (FedAvg), the same file given twice. Nothing is written then.
    """
    if method not in METHODS:
        raise FederatedError(f"unknown method {method!r}", hint=f"use one of {', '.join(METHODS)}")
    if trim is not None and method != "trimmed-mean":  # it was ignored: the user asked for a cut not made
        raise FederatedError(f"trim {trim} applies to --method trimmed-mean, not {method}",
                             hint="add --method trimmed-mean, or leave --trim out")
    trim = 0.2 if trim is None else trim
    if method == "trimmed-mean" and not 0 <= trim < 0.5:
        raise FederatedError(f"trim {trim} is not a fraction in [0, 0.5)", hint="e.g. --trim 0.2")
    return _merge(base, deltas, method, trim if method == "trimmed-mean" else None, path, memory, trusted)


def apply_deltas(base: Any, deltas: Sequence[str | os.PathLike], *, path: str | os.PathLike | None = None,
                 memory: int = MEMORY, trusted: bool = False) -> onnx.ModelProto:
    """``base`` plus the sum of ``deltas`` (each computed against ``base``): one delta gives its local model
    back; several add up (e.g. deltas of different layers). Integer and quantized parameters take the value the
    deltas carry (they must agree). Metadata, errors and memory as :func:`average` (method ``apply``)."""
    return _merge(base, deltas, "apply", None, path, memory, trusted)


def _merge(base: Any, deltas: Sequence[str | os.PathLike], method: str, trim: float | None,
           path: str | os.PathLike | None, memory: int, trusted: bool) -> onnx.ModelProto:
    memory = whole_number("memory", memory, hint="give the working memory of one chunk in bytes, e.g. 64 << 20")
    if path is not None:
        from onegraph.io import check_output_path

        check_output_path(path, model=True)
    proto = _merged_proto(base, deltas, method, trim, memory, trusted)
    gc.collect()  # onnx-ir graphs are cyclic: free the base model before the output is serialized
    if path is not None:
        from onegraph.io import save_model

        save_model(proto, path)
    return proto


def _merged_proto(base: Any, deltas: Sequence[str | os.PathLike], method: str, trim: float | None, memory: int,
                  trusted: bool) -> onnx.ModelProto:
    model = load(base, trusted=trusted, role="base model")
    headers = check_deltas(model, deltas, fedavg=method == "fedavg")
    # bytes per coordinate of a chunk: the slice read, float64 term / sum / base / result (40); the stack of
    # every client's values for median (8 n) and, for trimmed mean, scipy's partitioned copy of it (8 n more)
    per_element = 48 if method in ("fedavg", "apply") else 40 + 8 * len(headers) * (1 if method == "median" else 2)
    max_elements = max(1, memory // per_element)
    for name, param in headers[0].parameters.items():
        value = model.model.graph.initializers[name]
        merge = _Parameter(name, value.const_value, param.mode, headers, method, trim, max_elements)
        value.const_value = ir.LazyTensor(merge, dtype=value.const_value.dtype, shape=value.const_value.shape,
                                          name=name)
    model.model.metadata_props.update(_lineage(model, headers, method, trim))
    try:
        return irsafe.to_proto(model.model)
    except Exception as exc:  # onnx-ir wraps what a LazyTensor raises in SerdeError, level by level
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, FederatedError):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            raise
        raise cause from None


def check_deltas(base: Loaded, deltas: Sequence[str | os.PathLike], *, fedavg: bool = False) -> list[DeltaHeader]:
    """Read and check every delta's header against ``base`` and the first delta, before any data is read.

    Raises :class:`FederatedError` naming the file and parameter at fault (see :func:`average`).
    """
    if not deltas:
        raise FederatedError("no delta files given", hint="give one or more files made by `onegraph fed delta`")
    seen: dict[str, str] = {}
    for d in deltas:
        key = os.path.realpath(d)
        if key in seen:
            raise FederatedError(f"delta {d} is given twice (also as {seen[key]})", file=str(d),
                                 hint="each client's delta counts once")
        seen[key] = str(d)
    headers = [read_header(d) for d in deltas]
    fingerprint, initializers = base.fingerprint, base.model.graph.initializers
    first = headers[0]
    for h in headers:
        for name, param in h.parameters.items():
            _check_parameter(h, name, param, initializers, base)
        if h.fingerprint != fingerprint:
            raise FederatedError(f"{h.label} was made for another architecture than {base.label} (fingerprint "
                                 f"{h.fingerprint[:19]}..., the base has {fingerprint[:19]}...)", file=str(h.path),
                                 hint="parameters are exchanged only between models of the same graph")
        if h.base_model != base.hash:
            raise FederatedError(f"{h.label} was computed against another base model ({h.base_model[:19]}...) than "
                                 f"{base.label} ({base.hash[:19]}...)", file=str(h.path),
                                 hint="clients must train from, and diff against, this round's base model")
        for name in set(first.parameters) ^ set(h.parameters):
            raise FederatedError(f"{h.label} and {first.label} exchange different parameters: only one has "
                                 f"{name!r}", parameter=name, file=str(h.path),
                                 hint="make every delta with the same parameter selection")
        if h.round != first.round:
            raise FederatedError(f"{h.label} is for round {h.round}, {first.label} for round {first.round}",
                                 file=str(h.path), hint="merge the deltas of one round at a time")
    done = last_round(base.fields)
    if first.round <= done:
        raise FederatedError(f"{first.label} is for round {first.round}, but {base.label} is already the result of "
                             f"round {done}", file=str(first.path), hint="make the deltas against the newest model")
    if fedavg and sum(h.samples for h in headers) == 0:
        raise FederatedError("every delta has 0 samples: FedAvg has no weights",
                             hint="record the sample counts (--samples), or use --method median")
    return headers


def _check_parameter(h: DeltaHeader, name: str, param: Any, initializers: Any, base: Loaded) -> None:
    def refuse(what: str) -> FederatedError:
        return FederatedError(f"{h.label}: parameter {name!r} {what}", parameter=name, file=str(h.path),
                              hint="the delta was made for another model; make it against this base")

    if name not in initializers:
        raise refuse(f"is not an initializer of {base.label}")
    value = initializers[name]
    tensor = value.const_value
    if param.onnx_type != tensor.dtype:
        raise refuse(f"has dtype {param.dtype}, not the base's {dtype_name(tensor.dtype)}")
    shape = tuple(tensor.shape.numpy())
    if param.shape != shape:
        raise refuse(f"has shape {list(param.shape)}, not the base's {list(shape)}")
    expected = "delta" if kind_of(value) == "float" else "exact"
    if param.mode != expected:
        raise refuse(f"is sent as {param.mode}; a {kind_of(value)} parameter is sent as {expected}")


def chunks(shape: tuple[int, ...], max_elements: int) -> Iterator[tuple[slice, ...]]:
    """Index tuples covering an array of ``shape`` in C order, each a contiguous block of at most
    ``max_elements`` (>= 1) elements.

    The block is a range along one axis ``k`` (the outermost whose trailing block fits), with the axes
    before ``k`` fixed and the ones after it whole, so each slice is one contiguous read in the file.
    """
    if not shape:
        yield ()
        return
    if 0 in shape:
        return
    k, inner = len(shape) - 1, 1
    while k > 0 and inner * shape[k] <= max_elements:
        inner *= shape[k]
        k -= 1
    step = max(1, max_elements // inner)
    for lead in np.ndindex(*shape[:k]):
        fixed = tuple(slice(i, i + 1) for i in lead)
        for start in range(0, shape[k], step):
            yield fixed + (slice(start, min(start + step, shape[k])),)


class _Parameter:
    """Computes one merged parameter when onnx-ir serializes it (the ``LazyTensor`` function)."""

    def __init__(self, name: str, base: Any, mode: str, headers: list[DeltaHeader], method: str,
                 trim: float | None, max_elements: int) -> None:
        self.name, self.base, self.mode, self.headers = name, base, mode, headers
        self.method, self.trim, self.max_elements = method, trim, max_elements

    def __call__(self) -> ir.Tensor:
        base = self.base.numpy()
        out = np.empty(base.shape, dtype=base.dtype)
        for index in chunks(base.shape, self.max_elements):
            if self.mode == "exact":
                out[index] = self._agreed(index)
            else:
                with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, in one line
                    merged = base[index].astype(np.float64) + self._combine(index)
                    out[index] = merged.astype(base.dtype)
                if not np.isfinite(out[index]).all():
                    raise FederatedError(f"parameter {self.name!r}: the merged value overflows "
                                         f"{dtype_name(self.base.dtype)}", parameter=self.name,
                                         hint="one of the deltas is far too large; leave it out")
        return ir.Tensor(out, dtype=self.base.dtype, name=self.name)

    def _combine(self, index: tuple) -> np.ndarray:
        headers = self.headers
        if self.method in ("fedavg", "apply"):
            total = term = None
            for h in headers:
                values = read_slice(h, self.name, index, check=False)
                weight = float(h.samples) if self.method == "fedavg" else 1.0
                with np.errstate(over="ignore", invalid="ignore"):  # a non-finite sum is located below, by file
                    if total is None:  # sum in file order from the first term, as numpy.average's sum does
                        total = np.multiply(values, weight, dtype=np.float64)
                        term = np.empty_like(total)
                    else:
                        np.add(total, np.multiply(values, weight, out=term, dtype=np.float64), out=total)
            if not np.isfinite(total).all():  # NaN or infinity in a delta makes the sum so: find which
                self._locate(index)
            return total / float(sum(h.samples for h in headers)) if self.method == "fedavg" else total
        first = read_slice(headers[0], self.name, index, check=False)
        stack = np.empty((len(headers),) + first.shape, dtype=np.float64)
        stack[0] = first
        for i, h in enumerate(headers[1:], start=1):
            stack[i] = read_slice(h, self.name, index, check=False)
        if not np.isfinite(stack).all():  # a robust statistic could cut an infinity away: refuse it first
            self._locate(index)
        if self.method == "median":
            return np.median(stack, axis=0, overwrite_input=True)
        from scipy.stats import trim_mean

        return trim_mean(stack, self.trim, axis=0)

    def _locate(self, index: tuple) -> None:
        """Raise naming the first delta whose slice holds NaN or infinity, or the overflow of their sum."""
        largest, worst = -1.0, self.headers[0]
        for h in self.headers:
            values = read_slice(h, self.name, index)
            size = float(np.max(np.abs(values), initial=0.0))
            if size > largest:
                largest, worst = size, h
        raise FederatedError(f"parameter {self.name!r}: the deltas' weighted sum overflows float64; {worst.label} "
                             f"holds the largest values (|value| up to {largest:.3g})", parameter=self.name,
                             file=str(worst.path), hint="that delta is far too large: leave it out")

    def _agreed(self, index: tuple) -> np.ndarray:
        first = read_slice(self.headers[0], self.name, index)
        for h in self.headers[1:]:
            other = read_slice(h, self.name, index)
            if other.tobytes() != first.tobytes():
                raise FederatedError(f"{h.label} and {self.headers[0].label} hold different values for parameter "
                                     f"{self.name!r}, which is exchanged exactly ({dtype_name(self.base.dtype)}): "
                                     "integer and quantized parameters are never averaged", parameter=self.name,
                                     file=str(h.path), hint="leave that parameter out of the exchange, or leave "
                                     "the disagreeing clients out")
        return first


def _lineage(model: Loaded, headers: list[DeltaHeader], method: str, trim: float | None) -> dict[str, str]:
    """``metadata_props`` entries for the merged model: ``federated`` (this round appended), ``lineage``,
    ``created_at``, ``producer``."""
    import onegraph
    from onegraph.contract.metadata import now_rfc3339
    from onegraph.meta import encode

    entry = {"round": headers[0].round, "base_model": model.hash, "method": method, "clients": len(headers),
             "samples": sum(h.samples for h in headers)}
    if trim is not None:
        entry["trim"] = trim
    fed = model.fields.get("federated")
    rounds = list(fed["rounds"]) if isinstance(fed, dict) else []
    lineage = {"parent": model.hash, "relation": f"federated {method}"}
    if model.path is not None:
        lineage["parent_name"] = os.path.basename(model.path)
    return encode({"federated": {"fingerprint": model.fingerprint, "rounds": [*rounds, entry]}, "lineage": lineage,
                   "created_at": now_rfc3339(), "producer": f"onegraph {onegraph.__version__}"})
