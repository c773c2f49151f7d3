"""Federated parameter exchange for ONNX models: query and set a model's trainable parameters, send what
local training changed as a delta file, and merge many clients' deltas into a new model.

::

    from onegraph import federated as fed

    fed.list_parameters("global.onnx")                          # name, dtype, shape, kind, exchanged?
    weights = fed.get_parameters("global.onnx", ["coef*"])       # -> {name: numpy array}
    local = fed.set_parameters("global.onnx", {"coef__32": trained})       # a copy with new values
    fed.make_delta(local, "global.onnx", "client1.safetensors", samples=64)
    fed.average("global.onnx", ["client1.safetensors", ...], method="fedavg", path="next.onnx")

Modules: :mod:`~onegraph.federated.params` (parameters, selection, get / set), :mod:`~onegraph.federated.fingerprint`
(structural fingerprint), :mod:`~onegraph.federated.deltas` (the delta file format),
:mod:`~onegraph.federated.aggregate` (FedAvg, median, trimmed mean; streaming).
"""

from onegraph.federated.aggregate import METHODS, apply_deltas, average, check_deltas
from onegraph.federated.deltas import DeltaHeader, make_delta, read_header
from onegraph.federated.fingerprint import fingerprint, structure
from onegraph.federated.params import (
                                       Parameter,
                                       get_parameters,
                                       list_parameters,
                                       load,
                                       mark_trainable,
                                       set_parameters,
)

__all__ = ["METHODS", "DeltaHeader", "Parameter", "apply_deltas", "average", "check_deltas", "fingerprint",
           "get_parameters", "list_parameters", "load", "make_delta", "mark_trainable", "read_header",
           "set_parameters", "structure"]
