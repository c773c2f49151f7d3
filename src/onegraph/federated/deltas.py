"""Delta files: ``delta = local - base`` for the exchanged parameters, as one self-describing safetensors file.

Format (version 1). A `safetensors <https://huggingface.co/docs/safetensors>`_ file: one tensor per
exchanged parameter, named as the initializer, and these text entries in its ``__metadata__``:

=================  =====================================================================================
key                value
=================  =====================================================================================
``format``         ``onegraph.federated.delta``
``format_version`` ``1``
``fingerprint``    structural fingerprint of the architecture (:mod:`onegraph.federated.fingerprint`)
``base_model``     ``sha256:<hex>`` of the base model file the delta was computed against
``samples``        number of training samples behind the delta (the FedAvg weight), decimal
``round``          federated round number, decimal, from 1
``parameters``     JSON: initializer name -> ``{"dtype": <ONNX type>, "mode": "delta" | "exact"}``
``producer``       ``onegraph <version>``; ``created_at`` (RFC 3339); ``client`` (optional, free text)
=================  =====================================================================================

``mode`` ``delta`` (floating-point parameters): the tensor is ``local - base``, computed and stored in the
parameter's dtype (float, double); float16 and bfloat16 parameters are widened to float32 first, so their
difference loses nothing to a 16-bit rounding. ``mode`` ``exact`` (integer and quantized parameters): the tensor
is the local value itself, never a difference and never averaged; types safetensors has no name for (float8,
4-bit...) are stored as their bytes (``U8``, the same shape), the ONNX type in ``parameters`` says how to read
them back.

Reading is lazy (``safetensors.safe_open``, memory-mapped): :func:`read_slice` opens the file, copies out one
slice of one tensor and closes it, so no more than that slice stays in memory. Every float slice read is
checked for NaN and infinity; a header that promises more bytes than the file holds (a truncated file) is
refused naming the parameters cut off.
"""

from __future__ import annotations

import dataclasses
import json
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

import ml_dtypes  # noqa: F401  (registers bfloat16 and friends with numpy, which safetensors reads through)
import numpy as np
import onnx_ir as ir
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Json,
    ValidationError,
    field_validator,
)

from onegraph.contract.metadata import Sha256
from onegraph.errors import FederatedError
from onegraph.federated.fingerprint import (
    dtype_name,
    first_difference,
    structure,
    tensor_bytes,
)
from onegraph.federated.params import Loaded, load, select

__all__ = ["FORMAT", "FORMAT_VERSION", "stored_dtype", "ParameterEntry", "DeltaMetadata", "DeltaParameter",
           "DeltaHeader", "make_delta", "check_same_architecture", "last_round", "read_header", "read_slice"]

FORMAT = "onegraph.federated.delta"
FORMAT_VERSION = "1"
#: numpy dtypes safetensors stores under their own name; anything else exact is stored as its bytes (U8)
_NATIVE = frozenset({"float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint64",
                     "uint32", "uint16", "uint8", "bool"})
_ONNX_TYPES = {dtype_name(t): t for t in ir.DataType if t != ir.DataType.UNDEFINED}


class ParameterEntry(BaseModel):
    """How one parameter is exchanged: its ONNX type (``float``, ``float16``, ``int8``...) and ``mode``."""

    model_config = ConfigDict(extra="allow", strict=True)

    dtype: str = Field(description="ONNX element type, as onnx-ir names it in lower case")
    mode: Literal["delta", "exact"]

    @field_validator("dtype")
    @classmethod
    def _known(cls, dtype: str) -> str:
        if dtype not in _ONNX_TYPES:
            raise ValueError(f"dtype {dtype!r} is not an ONNX element type")
        return dtype


class DeltaMetadata(BaseModel):
    """The safetensors ``__metadata__`` of a delta file (format version 1; the table above). Every value is
    text, as safetensors stores it: numbers in decimal, ``parameters`` as JSON."""

    model_config = ConfigDict(extra="allow")

    format: Literal["onegraph.federated.delta"]
    format_version: Literal["1"]
    fingerprint: Sha256
    base_model: Sha256
    samples: Annotated[int, Field(ge=0)]
    round: Annotated[int, Field(ge=1)]
    parameters: Json[dict[str, ParameterEntry]]
    producer: str | None = None
    created_at: str | None = None
    client: str | None = None

    def text(self) -> dict[str, str]:
        """The entries as safetensors stores them (text values)."""
        out = {k: str(v) for k, v in self.model_dump(exclude_none=True, exclude={"parameters"}).items()}
        out["parameters"] = json.dumps({k: v.model_dump() for k, v in self.parameters.items()})
        return out


def stored_dtype(dtype: ir.DataType, mode: str) -> np.dtype:
    """The numpy dtype a parameter of ONNX type ``dtype`` is stored in, for ``mode`` delta or exact."""
    if mode == "delta":
        return np.dtype(np.float32) if dtype in (ir.DataType.FLOAT16, ir.DataType.BFLOAT16) else dtype.numpy()
    native = dtype.numpy()
    return native if native.name in _NATIVE else np.dtype(np.uint8)


@dataclasses.dataclass(frozen=True)
class DeltaParameter:
    """One tensor of a delta file: the parameter's ONNX type, ``mode`` (delta / exact) and shape."""

    dtype: str
    mode: str
    shape: tuple[int, ...]

    @property
    def onnx_type(self) -> ir.DataType:
        return _ONNX_TYPES[self.dtype]


@dataclasses.dataclass(frozen=True)
class DeltaHeader:
    """What a delta file says about itself (its ``__metadata__`` and tensor index), read without its data.

    Attributes
    ----------
    path:
        The file.
    fingerprint, base_model:
        ``sha256:<hex>`` of the architecture and of the base model file.
    samples, round:
        FedAvg weight (training samples) and round number.
    parameters:
        name -> :class:`DeltaParameter`, in file order.
    client, producer, created_at:
        Free text.
    """

    path: Path
    fingerprint: str
    base_model: str
    samples: int
    round: int
    parameters: dict[str, DeltaParameter]
    client: str | None = None
    producer: str | None = None
    created_at: str | None = None

    @property
    def label(self) -> str:
        return f"delta {self.path}" + (f" (client {self.client})" if self.client else "")


# -- writing ------------------------------------------------------------------------------------------
def make_delta(local: Any, base: Any, path: str | os.PathLike, *, samples: int | None = None,
               round: int | None = None, select_patterns: Iterable[str] | None = None, client: str | None = None,
               trusted: bool = False) -> DeltaHeader:
    """Write ``local - base`` for the exchanged parameters to ``path`` (atomically); return its header.

    Parameters
    ----------
    local, base:
        The locally trained model and the model the client started from (paths, bytes or ModelProto),
        read through onegraph's safe loader; neither is changed.
    path:
        The delta file to write (``.safetensors``).
    samples:
        Training samples behind the update (the FedAvg weight). None: ``training_data.rows`` of
        ``local``'s metadata (what ``onegraph.build`` records).
    round:
        Round number. None: one more than the last round in ``base``'s ``federated`` metadata, else 1.
    select_patterns:
        Name patterns of the parameters to exchange; None: ``base``'s metadata decides
        (:func:`onegraph.federated.params.select`).
    client:
        Optional client name, recorded in the header.

    Raises
    ------
    FederatedError
        when ``local`` and ``base`` differ in architecture (naming the first difference, e.g. a parameter's
        shape), when an initializer that is not exchanged differs between them (naming it), when a local
        floating-point parameter or its delta holds NaN or infinity (naming it and the first coordinate),
        or when the sample count is unknown or negative.
    """
    from safetensors.numpy import save_file

    from onegraph.io import atomic_path

    local_model = load(local, trusted=trusted, role="local model")
    base_model = load(base, trusted=trusted, role="base model")
    check_same_architecture(local_model, base_model)
    params = select(base_model, select_patterns)
    samples = _samples(samples, local_model, base_model)
    round = round if round is not None else last_round(base_model.fields) + 1
    if round < 1:
        raise FederatedError(f"round {round} is not a round number", hint="rounds count from 1")
    tensors, described = {}, {}
    for p in params:
        old, new = base_model.tensor(p.name), local_model.tensor(p.name)
        if not p.exchanged:
            if tensor_bytes(old) != tensor_bytes(new):
                raise FederatedError(f"initializer {p.name!r} differs between {local_model.label} and "
                                     f"{base_model.label} but is not exchanged", parameter=p.name,
                                     hint="select it too, or keep it as the base model has it")
            continue
        mode = "delta" if p.kind == "float" else "exact"
        store = stored_dtype(old.dtype, mode)
        if mode == "delta":
            local_values = new.numpy().astype(store)
            _check_finite(local_values, p.name, local_model.label, "holds", local_model.path)
            value = local_values - old.numpy().astype(store)
            _check_finite(value, p.name, local_model.label, "gives a delta with", local_model.path)
        else:
            value = new.numpy().view(store) if store == np.uint8 else new.numpy()
        tensors[p.name] = np.require(value, requirements="C")  # keeps 0-d arrays 0-d
        described[p.name] = {"dtype": p.dtype, "mode": mode}
    metadata = _header_metadata(base_model, samples, round, described, client)
    with atomic_path(path) as tmp:
        save_file(tensors, tmp, metadata=metadata)
    return read_header(path)


def check_same_architecture(local: Loaded, base: Loaded) -> None:
    """Raise :class:`FederatedError` naming the first structural difference between two models."""
    if local.fingerprint == base.fingerprint:
        return
    ours, theirs = first_difference(structure(local.model), structure(base.model))
    parameter = None
    for line in (ours, theirs):
        if line and line.startswith("graph initializer "):
            parameter = line.split()[2]
            break
    raise FederatedError(f"{local.label} and {base.label} have different architectures: "
                         f"{ours or '(nothing)'} | {theirs or '(nothing)'}", parameter=parameter,
                         hint="parameters are exchanged only between models of the same graph")


def _samples(samples: int | None, local: Loaded, base: Loaded) -> int:
    if samples is None:
        data = local.fields.get("training_data")
        samples = data.get("rows") if isinstance(data, dict) else None
        if samples is None or data == base.fields.get("training_data"):
            # a model whose parameters were set in place keeps the base's training_data: its rows are not the
            # client's, and a wrong FedAvg weight would go unnoticed
            raise FederatedError(f"{local.label} does not record how many rows it was trained on (its "
                                 "training_data is missing or the base model's)", hint="give the sample count "
                                 "(--samples N)")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 0:
        raise FederatedError(f"sample count {samples!r} is not a count", hint="give a whole number >= 0")
    return int(samples)


def last_round(fields: dict[str, Any]) -> int:
    """The last federated round in a model's metadata (0 when it has none)."""
    fed = fields.get("federated")
    return fed["rounds"][-1]["round"] if isinstance(fed, dict) else 0


def _header_metadata(base: Loaded, samples: int, round: int, described: dict, client: str | None) -> dict[str, str]:
    import onegraph
    from onegraph.contract.metadata import now_rfc3339

    header = DeltaMetadata(format=FORMAT, format_version=FORMAT_VERSION, fingerprint=base.fingerprint,
                           base_model=base.hash, samples=samples, round=round, parameters=json.dumps(described),
                           producer=f"onegraph {onegraph.__version__}", created_at=now_rfc3339(), client=client or None)
    return header.text()


def _check_finite(values: np.ndarray, name: str, where: str, verb: str, file: str | None, origin: tuple = ()
                  ) -> None:
    """Raise naming the parameter, the file and the first bad coordinate (``origin``: where ``values``, a slice,
    starts in the parameter)."""
    bad = ~np.isfinite(values)
    if bad.any():
        first = np.unravel_index(int(np.argmax(bad)), values.shape) if values.ndim else ()
        at = [int(i) + (origin[k] if k < len(origin) else 0) for k, i in enumerate(first)]
        raise FederatedError(f"parameter {name!r} in {where} {verb} NaN or infinite values "
                             f"(first at {at}: {values[first]})", parameter=name, file=file,
                             hint="this update cannot be merged; retrain the client or leave it out")


# -- reading ------------------------------------------------------------------------------------------
def read_header(path: str | os.PathLike) -> DeltaHeader:
    """The header of the delta file at ``path``, validated (format, version, fields, tensor index).

    Raises
    ------
    FederatedError
        naming the file (and the parameter, when one is at fault): missing file, not a safetensors file,
        a truncated file, not an onegraph delta, another format version, a malformed field, a tensor the
        ``parameters`` entry does not describe or stored in an unexpected dtype.
    """
    p = Path(path)
    label = f"delta {p}"
    if not p.is_file():
        raise FederatedError(f"{label} does not exist" if not p.exists() else f"{label} is not a file",
                             file=str(p), hint="check the path")
    with _open(p, label) as f:
        meta = f.metadata() or {}
        shapes = {name: (tuple(f.get_slice(name).get_shape()), f.get_slice(name).get_dtype()) for name in f.keys()}
    if meta.get("format") != FORMAT:
        raise FederatedError(f"{label} is not an onegraph delta (its header has no format {FORMAT!r})", file=str(p),
                             hint="make deltas with `onegraph fed delta LOCAL BASE -o D`")
    if meta.get("format_version") != FORMAT_VERSION:
        raise FederatedError(f"{label} has delta format version {meta.get('format_version')!r}; this onegraph "
                             f"reads version {FORMAT_VERSION}", file=str(p), hint="upgrade onegraph")
    try:
        header = DeltaMetadata.model_validate(meta)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = first["loc"]
        if len(loc) >= 2 and loc[0] == "parameters" and loc[1] in shapes:
            raise FederatedError(f"{label}: tensor {loc[1]!r} is not described in the header's parameters "
                                 f"({first['msg']})", parameter=str(loc[1]), file=str(p)) from None
        where = ".".join(map(str, loc))
        raise FederatedError(f"{label} has a malformed header ({where}: {first['msg']})", file=str(p)) from None
    described = header.parameters
    params = {}
    for name, (shape, stored) in shapes.items():
        info = described.get(name)
        if info is None:
            raise FederatedError(f"{label}: tensor {name!r} is not described in the header's parameters",
                                 parameter=name, file=str(p))
        param = DeltaParameter(info.dtype, info.mode, shape)
        expected = stored_dtype(param.onnx_type, param.mode)
        if _SAFETENSORS_NAMES.get(stored) != expected:
            raise FederatedError(f"{label}: parameter {name!r} is stored as {stored}; a {param.dtype} parameter "
                                 f"in mode {param.mode} is stored as {expected}", parameter=name, file=str(p))
        params[name] = param
    missing = sorted(set(described) - set(shapes))
    if missing:
        raise FederatedError(f"{label}: the header lists parameter {missing[0]!r} but the file has no tensor for it",
                             parameter=missing[0], file=str(p))
    return DeltaHeader(p, header.fingerprint, header.base_model, header.samples, header.round, params, header.client,
                       header.producer, header.created_at)


_SAFETENSORS_NAMES = {"F64": np.dtype(np.float64), "F32": np.dtype(np.float32), "F16": np.dtype(np.float16),
                      "BF16": np.dtype(ml_dtypes.bfloat16), "I64": np.dtype(np.int64), "I32": np.dtype(np.int32),
                      "I16": np.dtype(np.int16), "I8": np.dtype(np.int8), "U64": np.dtype(np.uint64),
                      "U32": np.dtype(np.uint32), "U16": np.dtype(np.uint16), "U8": np.dtype(np.uint8),
                      "BOOL": np.dtype(np.bool_)}


def read_slice(header: DeltaHeader, name: str, index: tuple, *, check: bool = True) -> np.ndarray:
    """``header``'s tensor ``name`` at ``index`` (a tuple of slices), in the parameter's own terms: a delta
    in its stored float dtype (checked finite unless ``check`` is False: the caller checks), an exact value in
    the parameter's dtype.

    Raises :class:`FederatedError` naming the parameter and file for NaN or infinity, or a file that changed.
    """
    with _open(header.path, header.label, name) as f:
        values = f.get_slice(name)[index] if index else f.get_tensor(name)
    param = header.parameters[name]
    if param.mode == "delta":
        if check:
            _check_finite(values, name, header.label, "holds", str(header.path), tuple(i.start for i in index))
        return values
    target = param.onnx_type.numpy()
    return values.view(target) if values.dtype != target else values


class _open:
    """``safetensors.safe_open`` whose errors become :class:`FederatedError` naming the file (and, for a
    truncated file, the parameters whose bytes are missing)."""

    def __init__(self, path: Path, label: str, parameter: str | None = None) -> None:
        self.path, self.label, self.parameter = path, label, parameter

    def __enter__(self) -> Any:
        from safetensors import SafetensorError, safe_open

        try:
            self.handle = safe_open(self.path, framework="numpy")
            return self.handle.__enter__()
        except (SafetensorError, OSError) as exc:
            cut = _cut_off(self.path)
            if cut:
                raise FederatedError(f"{self.label} is truncated: the data of parameter {cut[0]!r} "
                                     + (f"(and {len(cut) - 1} more) " if len(cut) > 1 else "")
                                     + "ends beyond the end of the file", parameter=cut[0], file=str(self.path),
                                     hint="copy the file again") from None
            raise FederatedError(f"{self.label} is not a readable safetensors file ({exc})",
                                 parameter=self.parameter, file=str(self.path),
                                 hint="make deltas with `onegraph fed delta`") from None

    def __exit__(self, *exc: Any) -> None:
        self.handle.__exit__(*exc)


def _cut_off(path: Path) -> list[str]:
    """Parameters whose bytes a safetensors header places beyond the end of the file (none when the header
    itself cannot be read)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n > size:
                return []
            header = json.loads(f.read(n))
        return [k for k, v in header.items() if k != "__metadata__" and 8 + n + int(v["data_offsets"][1]) > size]
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return []
