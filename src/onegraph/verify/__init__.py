"""Verification: does a graph compute what it should? Parity of a model's outputs with expected values,
runs in onnxruntime on the same feeds, runtime comparison (onnxruntime vs the reference evaluator, or two
models) naming the first diverging node, true low-precision evaluation, and the portability check.

Checking untrusted files is :mod:`onegraph.check`; verified opset / float16 conversion is
:mod:`onegraph.convert` (both also reachable from here under the names earlier releases documented).
"""

from onegraph import _lazy

__all__ = ["OutputParity", "ParityReport", "CompareReport", "compare_runtimes", "portability_problems",
           # documented here by earlier releases; they live in onegraph.check and onegraph.convert
           "check", "check_many", "CheckReport", "Finding", "Limits", "ConversionReport", "convert_float16",
           "convert_opset"]
_lazy.exports(__name__, {
    "OutputParity": "onegraph.verify.parity", "ParityReport": "onegraph.verify.parity",
    "CompareReport": "onegraph.verify.compare", "compare_runtimes": "onegraph.verify.compare",
    "portability_problems": "onegraph.verify.portable",
    "check": "onegraph.check.run", "check_many": "onegraph.check.run", "CheckReport": "onegraph.check.findings",
    "Finding": "onegraph.check.findings", "Limits": "onegraph.check.limits",
    "ConversionReport": "onegraph.convert.report", "convert_float16": "onegraph.convert.fp16",
    "convert_opset": "onegraph.convert.opset",
})
