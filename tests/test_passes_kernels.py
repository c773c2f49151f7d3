"""The kernel map: a backend's replacement for a named function, applied on request."""

from __future__ import annotations

import collections
import math

import numpy as np
import passes_models as pm
import pytest

from onegraph import passes
from onegraph.errors import PassError
from onegraph.passes.kernels import (
    CustomOp,
    FusedBody,
    KernelMap,
    PythonKernel,
    StandardOp,
)


def expected(name: str) -> list[np.ndarray]:
    return pm.run(pm.load(name), pm.inputs(name), optimize=False)


def test_standard_operator_replaces_the_calls():
    model = pm.load("encoder")
    passes.group_functions(model, classes=["LayerNorm"])  # the five nn.LayerNorm, one shared body
    kernels = KernelMap().register("torch.nn:LayerNorm",
                                   StandardOp("LayerNormalization", attributes={"axis": -1, "epsilon": 1e-5}),
                                   backend="onnxruntime")
    replaced = kernels.apply(model, "onnxruntime")
    assert sum(replaced.values()) == 5
    assert not model.functions and pm.op_counts(model)["LayerNormalization"] == 5
    pm.assert_close(pm.run(pm.checked(model), pm.inputs("encoder")), expected("encoder"))


def test_fused_body_for_a_primitive_module_and_unmapped_functions_keep_their_bodies():
    model = pm.load("encoder")
    passes.group_functions(model, classes=["PrimLayerNorm", "Attention"])
    before = {k: [n.op_type for n in f] for k, f in model.functions.items() if k[1] == "Attention"}
    kernels = KernelMap().register("passes_models:PrimLayerNorm", FusedBody(("layer_norm",)), backend="cpu")
    replaced = kernels.apply(model, "cpu")
    assert set(replaced) == {"passes_models:PrimLayerNorm:prim.ln1", "passes_models:PrimLayerNorm:prim.ln2"}
    for key, function in model.functions.items():
        ops = collections.Counter(n.op_type for n in function)
        if key[1] == "PrimLayerNorm":
            assert ops["LayerNormalization"] == 1 and "ReduceMean" not in ops
    assert {k: [n.op_type for n in f] for k, f in model.functions.items() if k[1] == "Attention"} == before
    pm.assert_close(pm.run(pm.checked(model), pm.inputs("encoder")), expected("encoder"))


erf = np.vectorize(math.erf)


def gelu(x, *_):
    return (0.5 * x * (1 + erf(x / math.sqrt(2)))).astype(x.dtype)


def gelu_tanh(x, *_):
    return (0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))).astype(x.dtype)


def test_custom_op_domain_and_python_kernels_in_the_reference_evaluator():
    model = pm.load("encoder")
    passes.fuse(model, ["gelu"], as_functions=True)
    (erf_form,) = [k for k, f in model.functions.items() if k[1] == "Gelu" and any(n.op_type == "Erf" for n in f)]
    vendor = KernelMap().register(passes.format_id(erf_form), CustomOp("com.vendor", "FastGelu"), backend="vendor")
    vendor.apply(model, "vendor")
    assert pm.op_counts(model)["com.vendor:FastGelu"] == 1 and model.opset_imports["com.vendor"] == 1
    # the reference evaluator runs the vendor's op with a Python implementation, the other GELU function too
    reference = (KernelMap()
                 .register("com.vendor:FastGelu", PythonKernel(gelu), backend="reference")
                 .register("onegraph.fusion:Gelu", PythonKernel(gelu_tanh), backend="reference"))
    evaluator = reference.reference_evaluator(model)
    got = evaluator.run(None, pm.inputs("encoder"))
    pm.assert_close(got, expected("encoder"))


def test_errors_name_the_backend_and_the_kernel():
    kernels = KernelMap().register("a:B", StandardOp("Relu"), backend="x")
    with pytest.raises(PassError, match="no entries for backend 'y'"):
        kernels.apply(pm.load("encoder"), "y")
    with pytest.raises(PassError, match="not a kernel"):
        kernels.register("a:B", "Relu", backend="x")  # type: ignore[arg-type]
    model = pm.load("encoder")
    passes.group_functions(model, classes=["LayerNorm"])
    bad = KernelMap().register("torch.nn:LayerNorm", StandardOp("LayerNormalization", inputs=(0, 7)), backend="x")
    with pytest.raises(PassError, match="takes input 7"):
        bad.apply(model, "x")
