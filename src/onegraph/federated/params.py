"""A model's parameters: list, select, get and set the initializers that federated clients train.

The parameters of an ONNX model are the initializers of its main graph. Each has a *kind* that decides how
it is exchanged:

==============  ==============================================  =================================================
kind            element types                                   exchanged as
==============  ==============================================  =================================================
``float``       float16, bfloat16, float, double                a difference (``local - base``), averaged
``integer``     int8...uint64, bool                             its value, exactly: never averaged
``quantized``   float8, 4-bit, 2-bit types, and any initializer its value, exactly: never averaged (a scale or
                read by a quantization operator                 zero point averaged apart from its integer
                (DequantizeLinear, QLinearConv, MatMulInteger)  weights would no longer describe them)
``other``       string, complex                                 refused
==============  ==============================================  =================================================

Which parameters are exchanged (:func:`select`): those matching the name patterns given (``fnmatch``:
``coef*``, ``encoder.*.weight``); else the model's metadata ``transfer_learning.trainable`` list; else every
``float`` initializer not listed in ``transfer_learning.frozen`` and not a non-finite constant (one of at
most :data:`CONSTANT_SIZE` values holding NaN or ±inf: a missing-value marker, a mask; training cannot have
made it, and a difference of NaN is NaN). Integer and quantized initializers are exchanged only when named
(by pattern or by ``trainable``).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.check import irsafe
from onegraph.errors import FederatedError
from onegraph.federated.fingerprint import dtype_name, fingerprint

__all__ = ["CONSTANT_SIZE", "FLOAT_TYPES", "INTEGER_TYPES", "QUANTIZED_TYPES", "QUANTIZATION_OPS", "Parameter",
           "Loaded", "load", "kind_of", "select", "list_parameters", "get_parameters", "set_parameters",
           "mark_trainable"]

FLOAT_TYPES = frozenset({ir.DataType.FLOAT16, ir.DataType.BFLOAT16, ir.DataType.FLOAT, ir.DataType.DOUBLE})
INTEGER_TYPES = frozenset({ir.DataType.INT8, ir.DataType.INT16, ir.DataType.INT32, ir.DataType.INT64,
                           ir.DataType.UINT8, ir.DataType.UINT16, ir.DataType.UINT32, ir.DataType.UINT64,
                           ir.DataType.BOOL})
QUANTIZED_TYPES = frozenset({ir.DataType.FLOAT8E4M3FN, ir.DataType.FLOAT8E4M3FNUZ, ir.DataType.FLOAT8E5M2,
                             ir.DataType.FLOAT8E5M2FNUZ, ir.DataType.FLOAT8E8M0, ir.DataType.INT4, ir.DataType.UINT4,
                             ir.DataType.INT2, ir.DataType.UINT2, ir.DataType.FLOAT4E2M1, ir.DataType.FLOAT6E2M3,
                             ir.DataType.FLOAT6E3M2})
#: operators whose initializer inputs are quantized data, scales or zero points (any domain)
QUANTIZATION_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
                              "QLinearMatMul", "MatMulInteger", "ConvInteger", "MatMulIntegerToFloat", "MatMulNBits",
                              "DynamicQuantizeMatMul", "QGemm", "QAttention", "GatherBlockQuantized"})


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One initializer of the main graph.

    Attributes
    ----------
    name:
        Initializer name.
    dtype:
        ONNX element type, lower case (``float``, ``double``, ``int64``...).
    shape:
        Dimensions.
    kind:
        ``float``, ``integer``, ``quantized`` or ``other`` (see the module docstring).
    exchanged:
        Whether :func:`select` picks it.
    why:
        Why it is or is not exchanged (the pattern, the metadata list, its kind).
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    kind: str
    exchanged: bool = False
    why: str = ""

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))


@dataclasses.dataclass
class Loaded:
    """A model read for parameter exchange: its onnx-ir form, hash, fingerprint and metadata."""

    model: ir.Model
    hash: str
    label: str
    fields: dict[str, Any]
    path: str | None = None

    @functools.cached_property
    def fingerprint(self) -> str:
        return fingerprint(self.model)

    def tensor(self, name: str) -> Any:
        return self.model.graph.initializers[name].const_value


def load(model: Any, *, trusted: bool = False, role: str = "model") -> Loaded:
    """Read ``model`` (path, bytes, ``onnx.ModelProto``) through onegraph's safe loader into onnx-ir.

    The caller's model is never changed: a path is read, a ModelProto is only read from. ``role`` names
    the model in errors (``base model``, ``local model``).

    Raises :class:`~onegraph.errors.ModelFileError` for a file that is not a model or fails the pre-check.
    """
    from onegraph.check.loader import load_model
    from onegraph.meta import model_hash, read

    proto = load_model(model, trusted=trusted)
    is_file = isinstance(model, (str, os.PathLike))
    digest = model_hash(model if is_file or isinstance(model, (bytes, bytearray)) else proto)
    loaded = irsafe.from_proto(proto, f"{role} {model}" if is_file else f"the {role}")
    if is_file:
        ir.external_data.set_base_dir(loaded.graph, os.path.dirname(os.path.abspath(model)))
    label = f"{role} {model}" if is_file else f"the {role}"
    fields = read({p.key: p.value for p in proto.metadata_props}).fields
    return Loaded(loaded, digest, label, fields, os.fspath(model) if is_file else None)


#: the most values an initializer may have to be read when selecting (a non-finite one is a constant)
CONSTANT_SIZE = 4096


def _non_finite_constant(value: ir.Value) -> bool:
    t = value.const_value
    if t is None or t.size > CONSTANT_SIZE:
        return False  # large tensors are not read to select: the delta names a non-finite one
    return not bool(np.isfinite(np.asarray(t.numpy(), dtype=np.float64)).all())


def kind_of(value: ir.Value) -> str:
    """``float``, ``integer``, ``quantized`` or ``other`` for an initializer (see the module docstring)."""
    dtype = value.const_value.dtype if value.const_value is not None else ir.DataType.UNDEFINED
    if dtype in QUANTIZED_TYPES or any(node.op_type in QUANTIZATION_OPS for node, _ in value.uses()):
        return "quantized"
    if dtype in FLOAT_TYPES:
        return "float"
    if dtype in INTEGER_TYPES:
        return "integer"
    return "other"


def select(loaded: Loaded, patterns: Iterable[str] | None = None) -> list[Parameter]:
    """Every initializer of the main graph, each marked ``exchanged`` or not, and why.

    Parameters
    ----------
    loaded:
        The model (:func:`load`).
    patterns:
        ``fnmatch`` name patterns (case-sensitive). None or empty: the model's metadata decides (see the
        module docstring).

    Raises
    ------
    FederatedError
        for a pattern or a ``trainable`` name that matches no initializer, a selected parameter that the
        metadata lists as frozen, or one of kind ``other`` (string, complex), naming it; or when nothing is
        selected.
    """
    patterns = list(patterns or [])
    tl = loaded.fields.get("transfer_learning")
    tl = tl if isinstance(tl, dict) else {}
    frozen, trainable = set(tl.get("frozen", [])), list(tl.get("trainable", []))
    values = loaded.model.graph.initializers
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(name, pattern) for name in values):
            raise FederatedError(f"pattern {pattern!r} matches no initializer of {loaded.label}",
                                 hint="`onegraph fed params MODEL` lists them")
    for name in [] if patterns else trainable:
        if name not in values:
            raise FederatedError(f"{loaded.label}: transfer_learning.trainable names {name!r}, which is not an "
                                 "initializer", parameter=name, hint="fix the metadata with `onegraph meta set`")
    out = []
    for name, value in values.items():
        kind = kind_of(value)
        if patterns:
            hit = next((p for p in patterns if fnmatch.fnmatchcase(name, p)), None)
            chosen, why = hit is not None, f"matches {hit!r}" if hit else "matches no pattern"
        elif trainable:
            chosen, why = name in trainable, "trainable (metadata)" if name in trainable else "not in trainable"
        else:
            constant = kind == "float" and _non_finite_constant(value)
            chosen = kind == "float" and name not in frozen and not constant
            why = "frozen (metadata)" if name in frozen else (
                "floating point" if chosen else "never exchanged" if kind == "other" else
                "holds NaN or ±inf: a constant, exchanged only when named" if constant else
                f"{kind}: exchanged (exactly) only when named")
        if chosen and name in frozen:
            raise FederatedError(f"parameter {name!r} is selected but {loaded.label} lists it as frozen",
                                 parameter=name, hint="select other parameters, or change transfer_learning")
        if chosen and kind == "other":
            raise FederatedError(f"parameter {name!r} of {loaded.label} is a {_dtype(value)} tensor, which cannot "
                                 "be exchanged", parameter=name, hint="select numeric initializers only")
        t = value.const_value
        out.append(Parameter(name, _dtype(value), tuple(t.shape.numpy()) if t is not None else (), kind, chosen, why))
    if not any(p.exchanged for p in out):
        raise FederatedError(f"no parameter of {loaded.label} is selected for exchange",
                             hint="give name patterns (--select 'coef*'), or floating-point initializers")
    return out


def _dtype(value: ir.Value) -> str:
    return dtype_name(value.const_value.dtype) if value.const_value is not None else "undefined"


def list_parameters(model: Any, select_patterns: Iterable[str] | None = None, *, trusted: bool = False
                    ) -> list[Parameter]:
    """Every initializer of ``model``'s main graph: name, dtype, shape, kind, whether it is exchanged and why.

    ``select_patterns``: name patterns (see :func:`select`). Raises what :func:`load` and :func:`select` raise.
    """
    return select(load(model, trusted=trusted), select_patterns)


def get_parameters(model: Any, select_patterns: Iterable[str] | None = None, *, trusted: bool = False
                   ) -> dict[str, np.ndarray]:
    """The exchanged parameters of ``model`` as numpy arrays (copies, in the initializer's dtype and shape;
    bfloat16 / float8 / 4-bit types as ml_dtypes arrays), keyed by initializer name.

    ``select_patterns``: name patterns (see :func:`select`). Raises what :func:`load` and :func:`select` raise.
    """
    loaded = load(model, trusted=trusted)
    return {p.name: np.array(loaded.tensor(p.name).numpy()) for p in select(loaded, select_patterns) if p.exchanged}


def set_parameters(model: Any, values: Mapping[str, Any], *, path: str | os.PathLike | None = None,
                   trusted: bool = False) -> onnx.ModelProto:
    """A copy of ``model`` whose initializers named in ``values`` hold the given arrays; ``model`` is unchanged.

    Parameters
    ----------
    model:
        Path, bytes or ``onnx.ModelProto``.
    values:
        initializer name -> array-like of the initializer's shape (e.g. a PyTorch ``state_dict`` turned to
        numpy, or scikit-learn's ``coef_.T``). Floating-point values are cast to the initializer's dtype;
        integer and quantized initializers take values that convert exactly.
    path:
        Where to write the model (atomically); None: only return it.

    Raises
    ------
    FederatedError
        naming the parameter: not an initializer, another shape, a value that is NaN or infinite, one that
        does not convert exactly to an integer or quantized dtype, or a string / complex initializer.
    """
    loaded = load(model, trusted=trusted)
    initializers = loaded.model.graph.initializers
    for name, given in values.items():
        if name not in initializers:
            raise FederatedError(f"{loaded.label} has no initializer {name!r}", parameter=name,
                                 hint="`onegraph fed params MODEL` lists them")
        value = initializers[name]
        value.const_value = ir.Tensor(_converted(loaded, value, np.asarray(given)), name=name)
    proto = irsafe.to_proto(loaded.model)
    if path is not None:
        from onegraph.io import save_model

        save_model(proto, path)
    return proto


def _converted(loaded: Loaded, value: ir.Value, given: np.ndarray) -> np.ndarray:
    name, old = value.name, value.const_value
    kind, target = kind_of(value), old.dtype.numpy()
    shape = tuple(old.shape.numpy())
    if kind == "other":
        raise FederatedError(f"parameter {name!r} of {loaded.label} is a {_dtype(value)} tensor; it cannot be set",
                             parameter=name)
    if given.shape != shape:
        raise FederatedError(f"parameter {name!r}: the value has shape {list(given.shape)}, {loaded.label} "
                             f"has {list(shape)}", parameter=name, hint="give an array of the initializer's shape")
    if given.dtype.kind in "fc" and not np.isfinite(given).all():
        raise FederatedError(f"parameter {name!r}: the value holds NaN or infinity", parameter=name)
    with np.errstate(over="ignore", invalid="ignore"):
        converted = given.astype(target)
    overflowed = ~np.isfinite(converted.astype(np.float64)) if kind == "float" else None
    if overflowed is not None and overflowed.any():
        row = np.unravel_index(int(np.flatnonzero(overflowed)[0]), shape)
        raise FederatedError(f"parameter {name!r}: the value {given[row]:g} at {list(map(int, row))} is beyond the "
                             f"range of {_dtype(value)}, the parameter's type (it would be infinite)", parameter=name,
                             hint=f"give values within {_dtype(value)}'s range")
    if kind != "float" and not np.array_equal(converted.astype(given.dtype), given):
        raise FederatedError(f"parameter {name!r} is {kind} ({_dtype(value)}): the values do not convert "
                             "exactly", parameter=name, hint=f"give {_dtype(value)} values")
    return np.require(converted, requirements="C")


def mark_trainable(model: Any, patterns: Iterable[str], *, path: str | os.PathLike | None = None,
                   trusted: bool = False) -> onnx.ModelProto:
    """A copy of ``model`` whose metadata declares the parameters matching ``patterns`` trainable.

    Writes ``transfer_learning`` (:mod:`onegraph.contract.metadata`): ``base_model`` = the hash of ``model``,
    ``trainable`` = the selected initializers (kept ``frozen`` names that are not selected stay frozen).
    Deltas against the result exchange exactly those parameters unless told otherwise.

    Raises what :func:`select` raises, and :class:`~onegraph.meta.MetadataError`.
    """
    from onegraph.meta import set_metadata

    loaded = load(model, trusted=trusted)
    chosen = [p.name for p in select(loaded, patterns) if p.exchanged]
    tl = loaded.fields.get("transfer_learning") if isinstance(loaded.fields.get("transfer_learning"), dict) else {}
    frozen = [n for n in tl.get("frozen", []) if n not in chosen]
    proto = set_metadata(irsafe.to_proto(loaded.model), {"transfer_learning": {
        "base_model": loaded.hash, "frozen": frozen, "trainable": chosen}}, trusted=True)
    if path is not None:
        from onegraph.io import save_model

        save_model(proto, path)
    return proto
