"""Graph inputs no feed can be allocated for (C602).

``convert``, ``compare`` and ``stats`` run a model on generated feeds (:mod:`onegraph.verify.feeds`), and
``score`` on the user's rows: every feed holds at least the product of the input's fixed dimensions (a
symbolic one may be 1). An input whose fixed dims alone need more bytes than the memory limit can never be fed
within it; the generators refuse it (``DataError``), and ``check`` says so beforehand, as a warning: the model
is not unsafe to open, only impossible to run within the limits.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import onnx

from onegraph.check.findings import Finding
from onegraph.check.static.tensors import INT64_MAX, byte_size, type_name

__all__ = ["check_inputs", "feed_bytes"]

#: bytes per element of a string feed (numpy object arrays hold one pointer per element)
STRING_BYTES = 8


def feed_bytes(elements: int, elem_type: int) -> int:
    """Bytes a feed of ``elements`` values of ONNX type ``elem_type`` takes in memory (numpy)."""
    return byte_size(elements, elem_type) or STRING_BYTES * elements


def check_inputs(graph: onnx.GraphProto, memory: int) -> Iterator[Finding]:
    """C602 (warning) for each graph input whose fixed dims need more than ``memory`` bytes in any feed."""
    initializers = {t.name for t in graph.initializer}
    for k, inp in enumerate(graph.input):
        t = inp.type.tensor_type
        if inp.name in initializers or not inp.type.HasField("tensor_type") or not t.HasField("shape"):
            continue
        fixed = [d.dim_value for d in t.shape.dim if d.HasField("dim_value")]
        if any(d < 0 for d in fixed):
            continue  # C502 from shape inference
        elements = math.prod(fixed)
        size = feed_bytes(elements, t.elem_type) if elements <= INT64_MAX else None
        if size is None or size > memory:
            need = f"{size:,} bytes" if size is not None else "more elements than int64 can count"
            yield Finding("C602", f"its fixed dims {fixed[:8]} need {need} of {type_name(t.elem_type)} in every "
                          f"feed, more than the memory limit {memory:,}: no feed can be generated or scored",
                          f"graph.input[{k}].type.tensor_type.shape", tensor=inp.name)
