"""Every change of every default-domain operator between opsets 8 and 21, classified: how a node crosses it.

Keyed by ``(operator, version)``, the ``since_version`` of the newer definition (a conversion crosses one
change per step: :mod:`onegraph.convert.steps`). Each change is in one of these tables:

* :data:`TYPE_ONLY`: the change only admitted more types or reworded the documentation; a node crosses it
  when its types are admitted by the older definition (the schema checks alone);
* :data:`ADAPTERS`: onegraph's own :class:`~onegraph.convert.steps.Step`: a handler where the change needs
  one (inputs that became attributes, negative axes, new modes: :mod:`onegraph.convert.opset_rewrites`),
  then the schema checks, which alone drop an attribute added with a default when it holds it;
* :data:`ONNX`: onnx's version converter has a correct adapter; the node is left to it;
* :data:`IMPOSSIBLE`: the older opset cannot express the change: refused, with the reason;

and a deprecated definition (onnx's registry says so) holds no valid node. ``tests/test_opset_steps.py``
walks every change between opsets 7 and 21 in onnx's schema registry and fails for one left out, then
converts a representative node of each down and back up, both models run on the same feeds. Up, onnx's
converter has an adapter for every change; :data:`UP_ADAPTERS` replaces the ones it gets wrong. Changes
outside these tables (above opset 21) are left to onnx's converter; where it has no adapter and the
definitions differ only in types or attributes added with a default, the schema checks convert the node.
"""

from __future__ import annotations

import onnx_ir as ir

from onegraph.convert import opset_rewrites as rw
from onegraph.convert.steps import (
    MOVES,
    REDUCE_OPS,
    TARGET_DOMAIN,
    Context,
    Refusal,
    Rewrite,
    Step,
    inputs_to_attributes,
    nonnegative_axes,
    reduce_axes,
    schema,
    since,
)

__all__ = ["TARGET_DOMAIN", "Refusal", "Step", "schema", "since", "TYPE_ONLY", "ADAPTERS", "ONNX", "IMPOSSIBLE",
           "UP_ADAPTERS", "classify", "down_step", "up_step"]


# -- the tables -----------------------------------------------------------------------------------------
def _types(version: int, detail: str, ops: str) -> dict[tuple[str, int], str]:
    return {(op, version): f"new versions only admit more types ({detail})" for op in ops.split()}


_UNARY13 = ("Abs Ceil Erf Exp Floor Log Neg Reciprocal Relu Sigmoid Sign Sqrt Tanh IsNaN NonZero Identity Expand "
            "Tile Transpose Flatten Concat Gather GatherElements GatherND Gemm MatMul Max Min Mean Sum Mod Pow Equal "
            "Greater Less LRN MeanVarianceNormalization Pad Clip Reshape Shape Size Slice SpaceToDepth DepthToSpace "
            "ScatterElements ScatterND Cast Constant Dropout If Loop ArgMax ArgMin Add Sub Mul Div "
            "SoftmaxCrossEntropyLoss NegativeLogLikelihoodLoss ") + " ".join(REDUCE_OPS)

#: (operator, version) -> why a node crosses that change as it is (the schema checks alone)
TYPE_ONLY: dict[tuple[str, int], str] = {
    **_types(13, "bfloat16", _UNARY13),
    **_types(14, "8- and 16-bit integers", "Add Sub Mul Div"),
    **_types(14, "signed integers", "Relu"),
    **_types(14, "float16, bfloat16", "CumSum"),
    **_types(14, "sequences", "Identity"),
    **_types(16, "bfloat16, optionals", "Identity If Loop LeakyRelu PRelu Where GreaterOrEqual LessOrEqual Scan"),
    **_types(19, "float8; strings for Equal", "Constant Identity If Loop Reshape Shape Size Scan Equal"),
    **_types(20, "bfloat16, float8", "ConstantOfShape IsInf IsNaN ReduceMax ReduceMin"),
    **_types(21, "int4, uint4, float8", "Cast CastLike Constant ConstantOfShape Identity If Loop Reshape Shape Size "
                                         "Scan Squeeze Unsqueeze Transpose Flatten Pad QLinearMatMul"),
    **_types(9, "integers, strings", "Constant Flatten Gemm Greater Less MatMul PRelu Cast"),
    **_types(12, "more integers", "Clip Max Min ReduceMax ReduceMin MaxPool"),
    ("Equal", 11): "new versions only admit more types (floating point, more integers)",
    ("Erf", 13): "new versions only admit more types (bfloat16; integers no longer)",
    ("Conv", 11): "only reworded the documentation (onnx/onnx#2414)",
    ("ConvTranspose", 11): "only reworded the documentation",
    **{(op, 11): "only reworded the pads and output shape formulas (onnx's converter: compatible)"
       for op in ("AveragePool", "MaxPool", "LpPool", "MaxUnpool")},
    ("NonMaxSuppression", 11): "only clarified that boxes with IoU strictly above the threshold are dropped",
    ("Loop", 11): "only allowed loop-carried values to change shape between iterations",
    ("Pow", 13): "new versions only admit more types (bfloat16)",
    ("Pow", 15): "new versions only admit more types (bfloat16 exponents)",
    ("BatchNormalization", 9): "dropped the spatial attribute (always spatial, BatchNormalization-7's default)",
    ("BatchNormalization", 15): "scale / bias and the statistics may each have their own type",
    ("DequantizeLinear", 19): "new versions only admit more types (float16 / bfloat16 scales, float8 inputs)",
    ("QuantizeLinear", 19): "new versions only admit more types (float16 / bfloat16 scales, float8 outputs: "
                            "saturate is for those)",
}

_HALF = "attribute added with a default that keeps the older behaviour"

#: (operator, version) -> onegraph's step down across that change
ADAPTERS: dict[tuple[str, int], Step] = {
    **{(op, v): Step("inputs that were attributes", inputs_to_attributes)
       for op, vs in MOVES.items() for v in vs if op not in REDUCE_OPS + ("ReduceSum", "Dropout")},
    **{(op, 18): Step("axes as an input, noop_with_empty_axes", reduce_axes) for op in REDUCE_OPS},
    ("ReduceSum", 13): Step("axes as an input, noop_with_empty_axes; admits bfloat16", reduce_axes),
    ("Squeeze", 13): Step("axes as an input; admits bfloat16", inputs_to_attributes),
    ("Unsqueeze", 13): Step("axes as an input; admits bfloat16", inputs_to_attributes),
    ("Split", 13): Step("split sizes as an input; admits bfloat16", inputs_to_attributes),
    ("Dropout", 12): Step("ratio and training_mode as inputs, seed", rw.dropout_inputs),
    ("Dropout", 10): Step("the mask output became boolean", rw.dropout_mask),
    **{(op, 11): Step("negative axes", nonnegative_axes) for op in
       ("ArgMax", "ArgMin", "Compress", "Concat", "Flatten", "Hardmax", "LogSoftmax", "Softmax", "Split", "Squeeze",
        "Unsqueeze", "ReduceSum", *REDUCE_OPS)},
    ("Gather", 11): Step("negative axis and indices", rw.gather),
    ("ScatterElements", 11): Step("first version (Scatter-9 renamed, negative axis and indices)", rw.scatter_elements),
    ("OneHot", 11): Step("negative axis and indices", rw.one_hot),
    ("Slice", 11): Step("negative axes", rw.slice_axes),
    ("Scan", 11): Step("negative scan axes", rw.scan_axes),
    ("Scan", 9): Step("no batch axis; scan axes and directions", rw.scan_9),
    ("TopK", 11): Step("negative axis, largest and sorted", rw.top_k),
    ("If", 11): Step("branches may output different shapes", rw.if_shapes),
    ("Constant", 12): Step("value_float(s) / value_int(s) / value_string(s)", rw.constant_values),
    ("Constant", 11): Step("sparse_value; value no longer required"),
    **{(op, 13): Step("axis coerced to 2-D before, admits bfloat16", rw.softmax) for op in ("Softmax", "LogSoftmax",
                                                                                         "Hardmax")},
    ("Gemm", 11): Step("C optional", rw.gemm_c),
    ("Pow", 12): Step("the exponent has a type of its own", rw.pow_exponent),
    ("Reshape", 14): Step("allowzero", rw.reshape),
    ("Shape", 15): Step("start / end", rw.shape),
    ("Split", 18): Step("num_outputs", rw.split),
    ("Pad", 18): Step("axes input", rw.pad_axes),
    ("Pad", 19): Step("wrap mode", rw.pad_wrap),
    ("Resize", 10): Step("first version (Upsample-9 renamed)", rw.resize_10),
    ("Resize", 11): Step("roi, sizes, coordinate mappings, cubic", rw.resize_11),
    ("Resize", 13): Step("roi and scales optional", rw.resize_13),
    ("Resize", 18): Step("axes, antialias, keep_aspect_ratio_policy", rw.resize_18),
    ("Resize", 19): Step("half_pixel_symmetric", rw.resize_19),
    ("LayerNormalization", 17): Step("first version", rw.layer_normalization),
    ("GroupNormalization", 21): Step("scale and bias per channel, stash_type", rw.group_normalization),
    ("DepthToSpace", 11): Step("mode (CRD)", rw.depth_to_space),
    ("DequantizeLinear", 13): Step("axis (per-channel scale); admits bfloat16", rw.quantize_axis),
    ("QuantizeLinear", 13): Step("axis (per-channel scale); admits bfloat16", rw.quantize_axis),
    ("QuantizeLinear", 21): Step("output_dtype, block_size; admits int4 / int16", rw.quantize_dtype),
    ("DequantizeLinear", 21): Step("block_size; admits int4 / int16"),
    ("ScatterElements", 16): Step("reduction (none, add, mul)"), ("ScatterND", 16): Step("reduction (none, add, mul)"),
    ("ScatterElements", 18): Step("reductions max and min", rw.scatter_reduction),
    ("ScatterND", 18): Step("reductions max and min", rw.scatter_reduction),
    ("RoiAlign", 16): Step("coordinate_transformation_mode, half_pixel by default", rw.roi_align),
    ("GridSample", 20): Step("modes renamed, N-D inputs", rw.grid_sample),
    ("BatchNormalization", 14): Step("training_mode; statistics of their own type", rw.batch_normalization),
    ("OptionalGetElement", 18): Step("admits plain tensors and sequences", rw.optional_get),
    ("OptionalHasElement", 18): Step("input optional, admits plain tensors and sequences", rw.optional_has),
    ("ArgMax", 12): Step(f"select_last_index: {_HALF}"), ("ArgMin", 12): Step(f"select_last_index: {_HALF}"),
    ("AveragePool", 10): Step(f"ceil_mode: {_HALF}"), ("AveragePool", 19): Step(f"dilations: {_HALF}"),
    ("MaxPool", 10): Step(f"ceil_mode, dilations: {_HALF}"), ("LpPool", 18): Step(f"ceil_mode, dilations: {_HALF}"),
    ("GatherND", 12): Step(f"batch_dims: {_HALF}"),
    **{(op, 14): Step(f"layout: {_HALF}") for op in ("GRU", "LSTM", "RNN")},
    ("Cast", 19): Step("saturate (for float8 targets)", rw.cast_saturate),
    ("CastLike", 19): Step("saturate (for float8 targets)", rw.cast_saturate),
}

#: (operator, version) -> why onnx's converter's own adapter is trusted there
ONNX: dict[tuple[str, int], str] = {
    **{(op, 8): "multidirectional broadcasting (onnx: BroadcastBackwardCompatibility / Sum_8_7)"
       for op in ("Max", "Min", "Mean", "Sum")},
    ("MaxPool", 8): "storage_order and the Indices output (onnx: MaxPool_8_7)",
}

#: (operator, version) -> why no node of that version can be expressed at the version before
IMPOSSIBLE: dict[tuple[str, int], str] = {}

#: (operator, version) -> onegraph's step up across that change where onnx's adapter gets it wrong
UP_ADAPTERS: dict[tuple[str, int], Step] = {
    ("Resize", 13): Step("tf_half_pixel_for_nn removed", rw.resize_up_13),
    ("Resize", 11): Step("coordinate mappings (half_pixel by default), roi", rw.resize_up_11),
    ("Upsample", 10): Step("deprecated: Resize-10 is its definition", rw.upsample_up_10),
    ("Clip", 11): Step("min and max as inputs of the input's type", rw.clip_up_11),
    ("Scan", 9): Step("no batch axis", rw.scan_up_9),
}


def classify(op_type: str, version: int) -> tuple[str, str]:
    """How a node of ``op_type`` converts down across ``version``: (``type-only`` | ``onegraph`` | ``onnx`` |
    ``impossible`` | ``deprecated`` | ``unclassified``, what changed / why). A deprecated definition holds
    no valid node (there is nothing to convert down; up, onnx's converter replaces the operator)."""
    s = schema(op_type, version)
    if s is not None and s.since_version == version and s.deprecated:
        return "deprecated", f"{op_type} is deprecated from opset {version}"
    if (op_type, version) in IMPOSSIBLE:
        return "impossible", IMPOSSIBLE[(op_type, version)]
    if (op_type, version) in ADAPTERS:
        return "onegraph", ADAPTERS[(op_type, version)].what
    if (op_type, version) in TYPE_ONLY:
        return "type-only", TYPE_ONLY[(op_type, version)]
    if (op_type, version) in ONNX:
        return "onnx", ONNX[(op_type, version)]
    return "unclassified", ""


def down_step(op_type: str, version: int) -> Step | None:
    """onegraph's step down across ``version`` (None: onnx's converter's)."""
    if (op_type, version) in IMPOSSIBLE:
        reason = IMPOSSIBLE[(op_type, version)]

        def refuse(node: ir.Node, ctx: Context) -> Rewrite:
            raise Refusal(reason)
        return Step(reason, refuse)
    if (op_type, version) in ADAPTERS:
        return ADAPTERS[(op_type, version)]
    if (op_type, version) in TYPE_ONLY:
        return Step(TYPE_ONLY[(op_type, version)])
    return None


def up_step(op_type: str, version: int) -> Step | None:
    """onegraph's step up across ``version`` (None: onnx's converter's)."""
    return UP_ADAPTERS.get((op_type, version))
