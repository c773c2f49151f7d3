"""Verification: parity with the source objects, verified opset / float16 conversion, runtime comparison."""

from onegraph.verify.compare import CompareReport, compare_runtimes
from onegraph.verify.convert import convert_opset
from onegraph.verify.fp16 import convert_float16
from onegraph.verify.parity import OutputParity, ParityReport, parity
from onegraph.verify.report import ConversionReport

__all__ = ["CompareReport", "ConversionReport", "OutputParity", "ParityReport", "compare_runtimes",
           "convert_float16", "convert_opset", "parity"]
