"""Verification: parity with the source objects, checking untrusted models in an isolated process, verified
opset / float16 conversion, runtime comparison.

``onegraph.verify.check(model)`` checks a model that may be malformed or malicious (see
:mod:`onegraph.verify.check`); ``check_many`` checks many with reused checking processes.
"""

from onegraph import _lazy

__all__ = ["OutputParity", "ParityReport", "parity", "check", "check_many", "CheckReport", "Finding", "Limits",
           "CompareReport", "ConversionReport", "compare_runtimes", "convert_float16", "convert_opset"]
_lazy.exports(__name__, {
    "OutputParity": "onegraph.verify.parity", "ParityReport": "onegraph.verify.parity",
    "parity": "onegraph.verify.parity", "check": "onegraph.verify.check", "check_many": "onegraph.verify.check",
    "CheckReport": "onegraph.verify.findings", "Finding": "onegraph.verify.findings",
    "Limits": "onegraph.verify.limits",
    "CompareReport": "onegraph.verify.compare", "compare_runtimes": "onegraph.verify.compare",
    "convert_opset": "onegraph.verify.convert", "convert_float16": "onegraph.verify.fp16",
    "ConversionReport": "onegraph.verify.report",
})
