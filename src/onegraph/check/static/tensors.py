"""Checks of stored tensors: data type, dims, the size of their data, and their external-data files.

Sizes follow the ONNX IR (``onnx/onnx.proto``, TensorProto): ``raw_data`` holds ``prod(dims)`` elements,
little-endian, sub-byte types packed (4-bit: 2 per byte; 2-bit: 4 per byte; 6-bit: a packed bit stream),
no strings. Typed fields hold one value per element, two for complex types, and the packed bytes for 4- and
2-bit types. External data (``data_location = EXTERNAL``) follows ``docs/ExternalData.md``: the keys
``location`` (relative to the model's folder), ``offset``, ``length``, ``checksum``.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator

import onnx
from onnx import TensorProto

from onegraph.check.findings import Finding
from onegraph.check.static.walk import TensorSite, bodies
from onegraph.check.static.walk import tensors as stored_tensors

__all__ = ["INT64_MAX", "element_bits", "byte_size", "type_name", "check_tensor", "check_attribute_values",
           "small_ints", "census"]

INT64_MAX = (1 << 63) - 1
_SUB_BYTE_BITS = {TensorProto.INT4: 4, TensorProto.UINT4: 4, TensorProto.FLOAT4E2M1: 4,
                  TensorProto.INT2: 2, TensorProto.UINT2: 2, TensorProto.FLOAT6E2M3: 6,
                  TensorProto.FLOAT6E3M2: 6}
_PACKED_TYPED = {4: 2, 2: 4}  # bits -> elements per typed-field value
_KNOWN_TYPES = frozenset(TensorProto.DataType.values()) - {TensorProto.UNDEFINED}
_EXTERNAL_KEYS = frozenset({"location", "offset", "length", "checksum", "basepath"})


def element_bits(data_type: int) -> int | None:
    """Bits per element of an ONNX tensor type; None for strings and unknown types."""
    if data_type in _SUB_BYTE_BITS:
        return _SUB_BYTE_BITS[data_type]
    if data_type == TensorProto.STRING or data_type not in _KNOWN_TYPES:
        return None
    return onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize * 8


def byte_size(elements: int, data_type: int) -> int | None:
    """Bytes ``elements`` values of ``data_type`` take in ``raw_data`` (None for strings / unknown types)."""
    bits = element_bits(data_type)
    return None if bits is None else -(-elements * bits // 8)


def type_name(data_type: int) -> str:
    try:
        return TensorProto.DataType.Name(data_type).lower()
    except ValueError:
        return f"type {data_type}"


def _typed_count(elements: int, data_type: int) -> int:
    if data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
        return 2 * elements
    per = _PACKED_TYPED.get(_SUB_BYTE_BITS.get(data_type, 0))
    return -(-elements // per) if per else elements


#: attribute type -> the field that must hold its value (presence is all protobuf records for these)
_HOLDER = {onnx.AttributeProto.TENSOR: "t", onnx.AttributeProto.GRAPH: "g",
           onnx.AttributeProto.SPARSE_TENSOR: "sparse_tensor", onnx.AttributeProto.TYPE_PROTO: "tp"}


def check_attribute_values(nodes: Iterator[onnx.NodeProto], path: str) -> Iterator[Finding]:
    """C207 for an attribute that declares a tensor / graph / sparse tensor / type but holds none: every
    reader (onnx-ir, onnxruntime, the converters) would take an empty default (a tensor of undefined type)."""
    for i, node in enumerate(nodes):
        for attr in node.attribute:
            holder = _HOLDER.get(attr.type)
            if holder is not None and not attr.ref_attr_name and not attr.HasField(holder):
                yield Finding("C207", f"attribute {attr.name[:80]!r} declares a {holder} value and holds none",
                              f"{path}.node[{i}].attribute[{attr.name[:80]}]",
                              node=node.name or f"#{i} {node.op_type}")


def check_tensor(site: TensorSite, *, folder: str | None, memory: int) -> Iterator[Finding]:
    """Findings for one stored tensor (C20x, and C10x for external data)."""
    t = site.tensor
    where = dict(node=site.node, tensor=t.name or None)
    if t.data_type not in _KNOWN_TYPES:
        yield Finding("C206", f"data type {t.data_type} is {'undefined' if t.data_type == 0 else 'unknown'}",
                      f"{site.path}.data_type", **where)
        return
    dims = list(t.dims)
    if any(d < 0 for d in dims):
        yield Finding("C202", f"dims {dims} hold a negative dimension", f"{site.path}.dims", **where)
        return
    elements = math.prod(dims)
    if elements > INT64_MAX:
        yield Finding("C203", f"dims {_short(dims)} hold {elements:.3g} elements, more than int64 can count",
                      f"{site.path}.dims", **where)
        return
    size = byte_size(elements, t.data_type)
    if size is not None and size > memory:
        yield Finding("C204", f"{type_name(t.data_type)} dims {_short(dims)} need {_bytes(size)}, more than the "
                      f"memory limit {_bytes(memory)}", f"{site.path}.dims", **where)
        return
    if t.data_location == TensorProto.EXTERNAL:
        yield from _external(site, size, folder=folder, where=where)
    elif t.HasField("raw_data"):
        if size is None:
            yield Finding("C201", f"a {type_name(t.data_type)} tensor cannot use raw_data",
                          f"{site.path}.raw_data", **where)
        elif len(t.raw_data) != size:
            yield Finding("C201", f"raw_data holds {len(t.raw_data)} bytes; {type_name(t.data_type)} dims "
                          f"{_short(dims)} need {size}", f"{site.path}.raw_data", **where)
    else:
        field = onnx.helper.tensor_dtype_to_field(t.data_type)
        count, expected = len(getattr(t, field)), _typed_count(elements, t.data_type)
        if count != expected:
            yield Finding("C205", f"{field} holds {count} values; {type_name(t.data_type)} dims {_short(dims)} "
                          f"need {expected}", f"{site.path}.{field}", **where)


def _external(site: TensorSite, size: int | None, *, folder: str | None, where: dict) -> Iterator[Finding]:
    t = site.tensor
    path = f"{site.path}.external_data"
    entries = {e.key: e.value for e in t.external_data}
    for key in entries.keys() - _EXTERNAL_KEYS:
        yield Finding("C110", f"unknown external-data key {key[:80]!r}", f"{path}[{key[:80]}]", severity="warning",
                      **where)
    numbers = {}
    for key in ("offset", "length"):
        if key in entries:
            try:
                numbers[key] = int(entries[key])
                if numbers[key] < 0:
                    raise ValueError
            except ValueError:
                yield Finding("C110", f"{key} {entries[key][:40]!r} is not a non-negative integer",
                              f"{path}[{key}]", **where)
                return
    location = entries.get("location", "")
    if not location:
        yield Finding("C106", "external data without a location", f"{path}[location]", **where)
        return
    if "\x00" in location:
        yield Finding("C110", "the location holds a NUL character", f"{path}[location]", **where)
        return
    parts = location.replace("\\", "/").split("/")
    if location.startswith(("/", "\\")) or os.path.isabs(location) or (len(location) > 1 and location[1] == ":"):
        yield Finding("C101", f"location {location[:200]!r} is absolute", f"{path}[location]", **where)
        return
    if ".." in parts:
        yield Finding("C102", f"location {location[:200]!r} climbs out with '..'", f"{path}[location]", **where)
        return
    if folder is None:
        yield Finding("C109", f"location {location[:200]!r} cannot be checked: the model was given as bytes",
                      f"{path}[location]", **where)
        return
    yield from _external_file(folder, [p for p in parts if p not in ("", ".")], numbers, size, path, where)


def _external_file(folder: str, parts: list[str], numbers: dict, size: int | None, path: str, where: dict
                   ) -> Iterator[Finding]:
    location = "/".join(parts)
    current = folder
    for part in parts:
        current = os.path.join(current, part)
        try:
            info = os.lstat(current)
        except OSError:
            yield Finding("C106", f"{location!r} does not exist in {folder}", f"{path}[location]", **where)
            return
        if stat.S_ISLNK(info.st_mode):
            yield Finding("C103", f"{location!r} goes through the symbolic link {current}", f"{path}[location]",
                          **where)
            return
    if not stat.S_ISREG(info.st_mode):
        yield Finding("C106", f"{location!r} is not a regular file", f"{path}[location]", **where)
        return
    if info.st_nlink > 1:
        yield Finding("C104", f"{location!r} has {info.st_nlink} hard links (it may be another file's contents)",
                      f"{path}[location]", **where)
        return
    real_folder = os.path.realpath(folder)
    if os.path.commonpath([real_folder, os.path.realpath(current)]) != real_folder:
        yield Finding("C105", f"{location!r} resolves outside {folder}", f"{path}[location]", **where)
        return
    offset = numbers.get("offset", 0)
    length = numbers.get("length")
    end = offset + (length if length is not None else 0)
    if offset > info.st_size or end > info.st_size:
        yield Finding("C107", f"offset {offset} + length {length or 0} reach beyond the end of {location!r} "
                      f"({info.st_size} bytes)", f"{path}[offset]", **where)
        return
    if size is None:
        return
    if length is not None and length != size:
        yield Finding("C108", f"length {length} does not match the {size} bytes dims x dtype need",
                      f"{path}[length]", **where)
    elif length is None and info.st_size - offset < size:
        yield Finding("C107", f"{location!r} holds {info.st_size - offset} bytes after offset {offset}; the tensor "
                      f"needs {size}", f"{path}[offset]", **where)


def census(model: onnx.ModelProto) -> tuple[int, int]:
    """What ``model`` declares: its nodes (every graph, subgraph and function) and the bytes of its stored
    tensors (dims x dtype, external data included; tensors whose dims are invalid count 0: the C20x rules
    report them)."""
    nodes = size = 0
    for body in bodies(model):
        nodes += len(body.nodes)
        for site in stored_tensors(body):
            dims = list(site.tensor.dims)
            if all(d >= 0 for d in dims) and math.prod(dims) <= INT64_MAX:
                size += byte_size(math.prod(dims), site.tensor.data_type) or len(site.tensor.string_data) * 8
    return nodes, size


def small_ints(t: onnx.TensorProto, limit: int = 64) -> list[int] | None:
    """The values of a small int64 / int32 tensor stored in the model, or None (other type, too big, broken)."""
    if t.data_location == TensorProto.EXTERNAL or any(d < 0 for d in t.dims) or math.prod(t.dims) > limit:
        return None
    n = math.prod(t.dims)
    if t.data_type not in (TensorProto.INT64, TensorProto.INT32):
        return None
    if t.HasField("raw_data"):
        width = 8 if t.data_type == TensorProto.INT64 else 4
        if len(t.raw_data) != n * width:
            return None
        return [int.from_bytes(t.raw_data[i:i + width], "little", signed=True) for i in range(0, n * width, width)]
    values = list(t.int64_data if t.data_type == TensorProto.INT64 else t.int32_data)
    return values if len(values) == n else None


def _short(dims: list[int]) -> str:
    return str(dims) if len(dims) <= 8 else f"[{', '.join(map(str, dims[:8]))}, ...] ({len(dims)} dims)"


def _bytes(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"
