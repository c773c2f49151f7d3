"""Open Inference Protocol v2 (KServe / Triton) tensors <-> numpy, without HTTP.

A request names one tensor per model input (an input is a DataFrame column: shape ``[N]`` or ``[N, 1]``)
with its ``datatype`` and its elements either in JSON (``data``: flat or nested, row-major) or in the binary
tensor extension that Triton's clients use by default (the JSON header is the first
``Inference-Header-Content-Length`` bytes of the body, each binary tensor follows in input order, sized by
its ``parameters.binary_data_size``; BYTES elements are each a 4-byte little-endian length and the bytes).

Missing values, as :func:`onegraph.score` takes them: ``null`` in JSON data (a missing text, number or
integer); NaN in binary floating-point data; INT64_MIN in binary INT64 data (onegraph's missing integer).

Source: the KServe Open Inference Protocol REST specification (``required_api.md``) and Triton's binary
tensor data extension (``extension_binary_data.md``).
"""

from __future__ import annotations

import dataclasses
import json
import struct
from typing import Any

import numpy as np

from onegraph.serve.errors import ProtocolError

__all__ = ["DATATYPES", "ONNX_DATATYPES", "HEADER_LENGTH", "InferRequest", "parse_infer_request",
           "datatype_of", "encode_infer_response", "model_metadata", "check_datatypes"]

#: v2 datatype -> numpy dtype of its elements (BYTES: Python ``str`` in an object array)
DATATYPES: dict[str, Any] = {
    "BOOL": np.dtype(np.bool_), "UINT8": np.dtype(np.uint8), "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32), "UINT64": np.dtype(np.uint64), "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16), "INT32": np.dtype(np.int32), "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16), "FP32": np.dtype(np.float32), "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(object),
}
_OF_DTYPE = {dtype: name for name, dtype in DATATYPES.items()}
#: graph input element type (ColumnSpec.onnx_type) -> v2 datatype
ONNX_DATATYPES = {"double": "FP64", "float": "FP32", "int64": "INT64", "bool": "BOOL", "string": "BYTES"}
HEADER_LENGTH = "Inference-Header-Content-Length"


@dataclasses.dataclass
class InferRequest:
    """A decoded ``/infer`` request.

    Attributes
    ----------
    id: the request's ``id`` (echoed in the response), or None.
    rows: N, the first dimension shared by every input tensor.
    columns: input name -> 1-D array of N elements (numpy dtype of the tensor's datatype; object arrays with
        None where JSON data held ``null``).
    outputs: the outputs asked for as (name, binary) pairs, or None for all of them.
    binary_output: the request's ``binary_data_output`` parameter (the default for outputs not asked for).
    datatypes: input name -> the datatype its tensor declared.
    """

    id: str | None
    rows: int
    columns: dict[str, np.ndarray]
    outputs: list[tuple[str, bool]] | None
    binary_output: bool
    datatypes: dict[str, str] = dataclasses.field(default_factory=dict)


def parse_infer_request(body: bytes, header_length: str | None = None) -> InferRequest:
    """Decode an ``/infer`` body (JSON, or JSON + binary tensors when ``header_length`` is given).

    Raises
    ------
    ProtocolError
        naming the field or tensor at fault: not JSON, no ``inputs``, an unknown datatype, a shape that is
        not one value per row, data whose length or element types do not match the shape and datatype,
        inputs with different row counts.
    """
    json_size = len(body)
    if header_length is not None:
        try:
            json_size = int(header_length)
        except ValueError:
            raise ProtocolError(f"header {HEADER_LENGTH}: {header_length!r} is not a number of bytes") from None
        if not 0 <= json_size <= len(body):
            raise ProtocolError(f"header {HEADER_LENGTH}: {json_size} bytes, but the body has {len(body)}")
    try:
        header = json.loads(body[:json_size])
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise ProtocolError(f"the request is not JSON ({exc})",
                            hint="send {\"inputs\": [{\"name\", \"shape\", \"datatype\", \"data\"}, ...]}") from None
    if not isinstance(header, dict) or not isinstance(header.get("inputs"), list) or not header["inputs"]:
        what = "its 'inputs' list is empty" if isinstance(header, dict) and header.get("inputs") == [] else \
            "it has no 'inputs' list"
        raise ProtocolError(f"the request names no input tensor: {what}",
                            hint="send {\"inputs\": [{\"name\", \"shape\", \"datatype\", \"data\"}, ...]}")
    binary = memoryview(body)[json_size:]
    columns: dict[str, np.ndarray] = {}
    datatypes: dict[str, str] = {}
    rows = None
    for i, tensor in enumerate(header["inputs"]):
        name, count, values, binary = _input(i, tensor, binary)
        if name in columns:
            raise ProtocolError(f"input tensor {name!r} is given twice")
        if rows is not None and count != rows:
            first = next(iter(columns))
            raise ProtocolError(f"input tensor {name!r} has {count} rows, input tensor {first!r} has {rows}",
                                hint="give every input tensor the same first dimension")
        rows = count
        columns[name] = values
        datatypes[name] = tensor["datatype"]
    if len(binary):
        raise ProtocolError(f"the body has {len(binary)} bytes after the last binary tensor",
                            hint=f"check {HEADER_LENGTH} and each input's binary_data_size")
    parameters = header.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise ProtocolError("the request's 'parameters' is not an object")
    if "classification" in parameters:
        raise ProtocolError("the classification extension is not supported",
                            hint="ask for the model's label and probabilities outputs")
    binary_output = bool(parameters.get("binary_data_output", False))
    outputs = None
    if header.get("outputs") is not None:
        if not isinstance(header["outputs"], list):
            raise ProtocolError("the request's 'outputs' is not a list")
        outputs = []
        for out in header["outputs"]:
            if not isinstance(out, dict) or not isinstance(out.get("name"), str):
                raise ProtocolError(f"requested output {out!r} has no name")
            params = out.get("parameters") or {}
            if "classification" in params:
                raise ProtocolError(f"output {out['name']!r}: the classification extension is not supported")
            outputs.append((out["name"], bool(params.get("binary_data", binary_output))))
    request_id = header.get("id")
    return InferRequest(None if request_id is None else str(request_id), rows or 0, columns, outputs, binary_output,
                        datatypes)


#: the datatypes an input of each kind takes: its own (``model_metadata``'s), the integer ones whose values a
#: double or an int64 holds exactly, and ISO 8601 text (BYTES) for dates and durations. A float of another
#: width, a bool for a number or text for a number is refused, as Triton refuses a datatype other than the
#: model's: converting it would change the value (FP32 48.2 is 48.200000762939453) or its meaning.
_INTEGERS = ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32")
_ACCEPTED = {"float": ("FP64", *_INTEGERS), "int": _INTEGERS, "bool": ("BOOL",), "string": ("BYTES",),
             "datetime": ("INT64", "BYTES"), "timedelta": ("INT64", "BYTES")}


def check_datatypes(request: InferRequest, inputs: Any) -> None:
    """Refuse an input tensor of ``request`` whose declared datatype the model's input does not take (see
    :data:`_ACCEPTED`), or an INT64 tensor for a double input holding an integer beyond 2**53 (not exact).

    ``inputs``: the session's :class:`~onegraph.contract.columns.ColumnSpec` list.

    Raises
    ------
    ProtocolError
        naming the tensor, its datatype and the model's.
    """
    for spec in inputs:
        given = request.datatypes.get(spec.name)
        if given is None:
            continue
        own = ONNX_DATATYPES.get(spec.onnx_type)
        accepted = (own,) if spec.onnx_type == "float" else _ACCEPTED.get(spec.kind, (own,))
        if given not in accepted and given != own:
            raise ProtocolError(f"input tensor {spec.name!r}: datatype {given}, but the model's input is {own}"
                                f" ({spec.kind})", hint=f"send it as {' or '.join(dict.fromkeys((own, *accepted)))}")
        if given == "INT64" and own == "FP64":
            values = request.columns[spec.name]
            big = np.abs(values[values != None] if values.dtype == object else values) > 2**53  # noqa: E711
            if big.any():
                raise ProtocolError(f"input tensor {spec.name!r}: an INT64 value beyond 2**53 is not exact as the "
                                    "model's FP64 input", hint="send it as FP64")


def _input(i: int, tensor: Any, binary: memoryview) -> tuple[str, int, np.ndarray, memoryview]:
    if not isinstance(tensor, dict):
        raise ProtocolError(f"input tensor {i} is not an object", hint="give {\"name\", \"shape\", \"datatype\", \"data\"}")
    if not isinstance(tensor.get("name"), str):
        what = "has no name" if tensor.get("name") is None else f"has name {tensor['name']!r}, which is not text"
        raise ProtocolError(f"input tensor {i} {what}", hint="name it by the model's input (its column)")
    name = tensor["name"]
    datatype = tensor.get("datatype")
    if datatype not in DATATYPES:
        raise ProtocolError(f"input tensor {name!r}: datatype {datatype!r} is not a v2 datatype",
                            hint=f"use one of {', '.join(DATATYPES)}")
    shape = tensor.get("shape")
    if (not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape)
            or not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1))):
        raise ProtocolError(f"input tensor {name!r}: shape {shape!r} is not one value per row",
                            hint="a model input is a column: give shape [N] or [N, 1]")
    count = shape[0]
    size = (tensor.get("parameters") or {}).get("binary_data_size")
    if size is not None:
        if type(size) is not int or not 0 <= size <= len(binary):
            raise ProtocolError(f"input tensor {name!r}: binary_data_size {size!r} exceeds the "
                                f"{len(binary)} bytes left in the body")
        values = _from_binary(name, datatype, binary[:size], count)
        return name, count, values, binary[size:]
    if tensor.get("data") is None:
        raise ProtocolError(f"input tensor {name!r} has neither data nor binary_data_size")
    return name, count, _from_json(name, datatype, tensor["data"], count), binary


def _flatten(data: Any) -> list:
    if not isinstance(data, list):
        return [data]
    if not any(isinstance(v, list) for v in data):
        return data
    flat: list = []
    for v in data:
        flat.extend(_flatten(v))
    return flat


def _from_json(name: str, datatype: str, data: Any, count: int) -> np.ndarray:
    flat = _flatten(data)
    if len(flat) != count:
        raise ProtocolError(f"input tensor {name!r}: {len(flat)} elements for shape [{count}]")
    missing = False
    for j, v in enumerate(flat):
        t = type(v)
        if v is None:
            missing = True
            ok = datatype != "BOOL"
        elif datatype == "BYTES":
            ok = t is str
        elif datatype == "BOOL":
            ok = t is bool
        elif datatype.startswith(("INT", "UINT")):
            ok = t is int
        else:
            ok = t is int or t is float
        if not ok:
            expected = {"BYTES": "text", "BOOL": "true or false"}.get(
                datatype, "an integer" if datatype.startswith(("INT", "UINT")) else "a number")
            raise ProtocolError(f"input tensor {name!r} ({datatype}): element {j} is {v!r}, not {expected}")
    dtype = DATATYPES[datatype]
    if datatype == "BYTES" or (missing and dtype.kind in "iu"):
        values = np.empty(count, dtype=object)  # None: a missing value, as onegraph.score reads it
        values[:] = flat
        return values
    if missing:
        flat = [np.nan if v is None else v for v in flat]
    try:
        return np.array(flat, dtype=dtype)
    except OverflowError:
        raise ProtocolError(f"input tensor {name!r} ({datatype}): a value is out of the datatype's range") from None


def _from_binary(name: str, datatype: str, data: memoryview, count: int) -> np.ndarray:
    if datatype == "BYTES":
        values = np.empty(count, dtype=object)
        offset = 0
        for j in range(count):
            if offset + 4 > len(data):
                raise ProtocolError(f"input tensor {name!r} (BYTES): binary data ends at element {j} of {count}")
            (length,) = struct.unpack_from("<I", data, offset)
            offset += 4
            if offset + length > len(data):
                raise ProtocolError(f"input tensor {name!r} (BYTES): element {j} runs past the binary data")
            try:
                values[j] = bytes(data[offset:offset + length]).decode("utf-8")
            except UnicodeDecodeError:
                raise ProtocolError(f"input tensor {name!r} (BYTES): element {j} is not UTF-8 text") from None
            offset += length
        if offset != len(data):
            raise ProtocolError(f"input tensor {name!r} (BYTES): {len(data) - offset} bytes after element {count - 1}")
        return values
    dtype = DATATYPES[datatype]
    if len(data) != count * dtype.itemsize:
        raise ProtocolError(f"input tensor {name!r} ({datatype}): {len(data)} bytes of binary data for "
                            f"{count} elements of {dtype.itemsize} bytes")
    return np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype, copy=False)


def datatype_of(array: np.ndarray) -> str:
    """The v2 datatype of an output array (object arrays of text: BYTES)."""
    name = _OF_DTYPE.get(array.dtype)
    if name is None:
        raise ProtocolError(f"an output of dtype {array.dtype} has no v2 datatype")
    return name


def encode_infer_response(model: str, version: str, request_id: str | None,
                          outputs: list[tuple[str, bool]], arrays: dict[str, np.ndarray]
                          ) -> tuple[bytes, dict[str, str]]:
    """The ``/infer`` response body and its headers for ``arrays`` (output name -> array, rows first),
    the outputs in the order of ``outputs`` ((name, binary) pairs). Text outputs are BYTES; a missing text
    output element is the graph's missing string U+FFFF, as the model's contract writes it."""
    tensors = []
    blobs = []
    for name, binary in outputs:
        array = arrays[name]
        tensor: dict[str, Any] = {"name": name, "datatype": datatype_of(array), "shape": list(array.shape)}
        if binary:
            blob = _to_binary(array)
            tensor["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            tensor["data"] = array.reshape(-1).tolist()
        tensors.append(tensor)
    response: dict[str, Any] = {"model_name": model, "model_version": version, "outputs": tensors}
    if request_id is not None:
        response["id"] = request_id
    header = json.dumps(response, separators=(",", ":")).encode()
    if not blobs:
        return header, {"content-type": "application/json"}
    return b"".join([header, *blobs]), {"content-type": "application/octet-stream",
                                        HEADER_LENGTH: str(len(header))}


def _to_binary(array: np.ndarray) -> bytes:
    if array.dtype == object:
        parts = []
        for v in array.reshape(-1).tolist():
            b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
            parts.append(struct.pack("<I", len(b)))
            parts.append(b)
        return b"".join(parts)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def model_metadata(name: str, version: str, session: Any, outputs: list[str]) -> dict:
    """The v2 model metadata of a :class:`~onegraph.runtime.Session`: one input tensor per column
    (``[-1]``: N rows; ``[-1, 1]`` is accepted too) and the ``outputs`` served with their datatypes and
    shapes (``[-1, k]`` for k classes), read from a run on zero rows."""
    inputs = [{"name": s.name, "datatype": ONNX_DATATYPES[s.onnx_type], "shape": [-1]} for s in session.inputs]
    empty = session.run({s.name: np.empty(0, dtype=DATATYPES[ONNX_DATATYPES[s.onnx_type]]) for s in session.inputs})
    tensors = [{"name": n, "datatype": datatype_of(empty[n]), "shape": [-1, *empty[n].shape[1:]]} for n in outputs]
    return {"name": name, "versions": [version], "platform": "onnxruntime_onnx", "inputs": inputs, "outputs": tensors}
