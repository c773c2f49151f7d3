"""Reading, writing and comparing a model's metadata (:mod:`onegraph.contract.metadata`), and the values
``onegraph.build`` fills in: hyperparameters, the training data's content hash, the dtypes in use."""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import onnx

from onegraph.contract.metadata import (
    FIELDS,
    PREFIX,
    SCHEMA_VERSION,
    STANDARD_KEYS,
    Metadata,
    against_graph,
    encode,
    read,
    validate,
)
from onegraph.errors import MetadataError, ModelFileError

__all__ = ["read_metadata", "set_metadata", "diff", "model_hash", "table_hash", "jsonable_params",
           "qualified_name", "dtypes_in_use", "source_library"]

_ALIASES = {standard: name for name, standard in STANDARD_KEYS.items()}


def read_metadata(model: Any, *, trusted: bool = False) -> Metadata:
    """The metadata of ``model`` (path, bytes or ModelProto), read without raising, checked against its graph.

    Besides each value's own type, the names it mentions must exist: ``inputs`` / ``outputs`` entries name
    graph inputs / outputs, ``transfer_learning`` parameters name initializers, ``precision`` regions name
    nodes. Problems are :class:`~onegraph.errors.MetadataError` entries of ``Metadata.errors``.

    Raises :class:`~onegraph.errors.ModelFileError` for a file that is not a model (see
    :func:`onegraph.check.loader.load_model`; ``trusted`` skips its isolated pre-parse).
    """
    from onegraph.check.loader import load_model

    proto = load_model(model, trusted=trusted)
    found = read({p.key: p.value for p in proto.metadata_props})
    found.errors.extend(against_graph(proto.graph, found.fields))
    return found


def set_metadata(model: Any, updates: Mapping[str, Any] | None = None, *, remove: Iterable[str] = (),
                 trusted: bool = False, missing_ok: bool = True) -> onnx.ModelProto:
    """A copy of ``model`` with metadata fields set or removed; the input is not modified.

    Parameters
    ----------
    model:
        Path, bytes or ``onnx.ModelProto``.
    updates:
        field -> value. Fields of the schema (``author``, ``training_data``...; JSON fields take the value or
        its JSON text) are validated; ``model_author`` / ``model_license`` mean ``author`` / ``license``;
        any other key (``com.example.x``) is stored as given (a string).
    remove:
        Fields or keys to delete.
    missing_ok:
        False: a key of ``remove`` the model does not carry is an error (a typo, not a removal).

    Raises
    ------
    MetadataError
        naming the first malformed value, a ``meta_version`` newer than this onegraph's schema
        (:data:`~onegraph.contract.metadata.SCHEMA_VERSION`: it would claim fields this version cannot write), or
        with ``missing_ok=False`` a key to remove that is absent (nothing is changed); a key without a dot that
        is close to a field's name (``autor``: a typo, not a key of its own).
    """
    from onegraph.check.loader import load_model

    proto = onnx.ModelProto()
    proto.CopyFrom(load_model(model, trusted=trusted))
    props = {p.key: p.value for p in proto.metadata_props}
    ours, foreign = {}, {}
    for key, value in (updates or {}).items():
        if not isinstance(key, str):
            raise MetadataError(repr(key), f"a key is text, not {type(key).__name__}", hint="name the key as a string")
        name = _field_name(key)
        if name is None:
            if not isinstance(value, str):
                raise MetadataError(key, f"a key outside {PREFIX}* takes a string, not {type(value).__name__}")
            near = difflib.get_close_matches(key, [*FIELDS, *_ALIASES], n=1, cutoff=0.8) if "." not in key else []
            if near:  # a typo of a field would be stored as a stray key, the field left unset
                raise MetadataError(key, f"is not a field (did you mean {near[0]!r}?)",
                                    hint=f"write {near[0]}=..., or a key with a dot (com.example.{key}) to store it "
                                         "as written")
            foreign[key] = value
        else:
            ours[name] = value
    encoded = encode(ours)
    if "meta_version" in ours and validate("meta_version", ours["meta_version"]) > SCHEMA_VERSION:
        raise MetadataError("meta_version", f"{ours['meta_version']} is newer than the schema version this onegraph "
                                            f"writes ({SCHEMA_VERSION})",
                                hint=f"leave meta_version out (onegraph writes it) or give 1 to {SCHEMA_VERSION}")
    props.update(encoded)
    props.update(foreign)
    for key in remove:
        name = _field_name(key)
        keys = [PREFIX + name, STANDARD_KEYS.get(name, "")] if name else [key]
        if not missing_ok and not any(k in props for k in keys):
            raise MetadataError(key, "is not in the model's metadata (nothing removed)",
                                hint="`onegraph meta show MODEL` lists the keys it carries")
        for k in keys:
            props.pop(k, None)
    if ours:  # an entry the graph contradicts (inputs naming no graph input...) would break every later command
        from onegraph.contract.metadata import against_graph, decode

        fields, _ = decode(props)
        problem = next((p for p in against_graph(proto.graph, fields) if p.key[len(PREFIX):] in ours), None)
        if problem is not None:
            raise problem
    del proto.metadata_props[:]
    for key, value in props.items():
        proto.metadata_props.add(key=key, value=value)
    return proto


def _field_name(key: str) -> str | None:
    """The schema field a key means (``org.onegraph.author``, ``author``, ``model_author``), else None."""
    name = key[len(PREFIX):] if key.startswith(PREFIX) else _ALIASES.get(key, key)
    if name in FIELDS or key.startswith(PREFIX):
        return name
    return None


def diff(a: Metadata, b: Metadata) -> list[tuple[str, Any, Any]]:
    """(key, value in ``a``, value in ``b``) for every key that differs; None where a key is absent."""
    pa, pb = _comparable(a), _comparable(b)
    return [(k, pa.get(k), pb.get(k)) for k in sorted(pa.keys() | pb.keys()) if pa.get(k) != pb.get(k)]


def _comparable(m: Metadata) -> dict[str, Any]:
    out: dict[str, Any] = {PREFIX + k: v for k, v in m.fields.items()}
    out.update({PREFIX + k: v for k, v in m.invalid.items()})
    out.update(m.others)
    return out


# -- what build fills in --------------------------------------------------------------------------
def model_hash(model: Any) -> str:
    """``sha256:<hex>`` of a model file's bytes (or of a ModelProto's serialization): what ``lineage.parent``
    holds for a child model."""
    if isinstance(model, (str, os.PathLike)):
        try:
            with open(model, "rb") as f:
                digest = hashlib.file_digest(f, "sha256")
        except FileNotFoundError:
            raise ModelFileError(f"model file {model} does not exist", hint="check the path") from None
        except OSError as exc:  # a folder, no permission
            raise ModelFileError(f"model file {model} cannot be read: {exc.strerror}", hint="check the path") from None
        return f"sha256:{digest.hexdigest()}"
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else bytes(model)
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def table_hash(frame: Any) -> str:
    """``sha256:<hex>`` of a pandas DataFrame's content: its column names and dtypes (as JSON), then the
    64-bit row hashes of ``pandas.util.hash_pandas_object(frame, index=False)``. Equal tables give equal
    hashes; row order, values, names and dtypes all count."""
    import pandas as pd

    h = hashlib.sha256(json.dumps([[str(c), str(frame[c].dtype)] for c in frame.columns]).encode())
    h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return f"sha256:{h.hexdigest()}"


def jsonable_params(obj: Any) -> dict[str, Any]:
    """``obj.get_params(deep=False)`` as JSON values: numbers, strings, lists; estimators and other objects
    by their qualified class name; non-finite floats as text (JSON has no NaN)."""
    getter = getattr(obj, "get_params", None)
    if getter is None:
        return {}
    return {str(k): _jsonable(v) for k, v in getter(deep=False).items()}


def _jsonable(value: Any, depth: int = 0) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, np.ndarray) and value.size <= 100:
        value = value.tolist()
    if isinstance(value, (list, tuple)) and depth < 4:
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, dict) and depth < 4:
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    named = isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__"))
    return qualified_name(value if named else type(value))  # a class or function by name, an object by class


def qualified_name(target: Any) -> str:
    """``sklearn.linear_model.LogisticRegression`` for a class or function: its public module path (private
    parts such as ``_logistic`` dropped) and qualified name."""
    module = ".".join(p for p in (getattr(target, "__module__", None) or "").split(".") if not p.startswith("_"))
    return f"{module}.{target.__qualname__}" if module else target.__qualname__


def dtypes_in_use(proto: onnx.ModelProto) -> list[str]:
    """Sorted ONNX element types (lower-case ``TensorProto`` names) of the model's inputs, outputs, value
    infos, initializers and Cast targets."""
    g = proto.graph
    types = {v.type.tensor_type.elem_type for v in [*g.input, *g.output, *g.value_info]
             if v.type.HasField("tensor_type")}
    types |= {t.data_type for t in g.initializer}
    types |= {a.i for n in g.node if n.op_type == "Cast" for a in n.attribute if a.name == "to"}
    types.discard(onnx.TensorProto.UNDEFINED)
    return sorted(onnx.TensorProto.DataType.Name(t).lower() for t in types if t in onnx.TensorProto.DataType.values())


def source_library(obj: Any) -> str | None:
    """``<distribution> <version>`` of the library that defines ``obj``'s class (``scikit-learn 1.9.1``)."""
    return _library_of(type(obj).__module__.split(".")[0])


@functools.cache
def _library_of(top: str) -> str | None:
    # packages_distributions() reads every installed distribution's RECORD (0.5-1 s with a data-science
    # stack): once per process, not once per build
    from importlib import metadata

    names = metadata.packages_distributions().get(top, [top])
    for name in names:
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return None
