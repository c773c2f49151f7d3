"""Verified model conversion: opset up / down (onnx's version converter plus onegraph's adapters) and float16 /
bfloat16 (onnxconverter-common with a block list from measured ranges), each verified by running the original
and the converted model on the same feeds and refused unless they agree.
"""

from onegraph import _lazy

__all__ = ["convert_opset", "convert_float16", "ConversionReport", "NodeConversion"]
_lazy.exports(__name__, {
    "convert_opset": "onegraph.convert.opset", "convert_float16": "onegraph.convert.fp16",
    "ConversionReport": "onegraph.convert.report", "NodeConversion": "onegraph.convert.report",
})
