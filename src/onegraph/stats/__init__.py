"""Tensor statistics carried by the model: streaming calibration, quantization parameters, recovered ranges.

* :mod:`~onegraph.stats.accumulators`: streaming, mergeable per-tensor statistics;
* :mod:`~onegraph.stats.calibrate`: run a model in onnxruntime over data and collect them;
* :mod:`~onegraph.stats.annotate`: write them into the model (``onegraph.stats`` JSON per tensor, scale /
  zero point in ``quantization_annotation``), read them back, strip them;
* :mod:`~onegraph.stats.qparams`: scale / zero point from statistics (ONNX Runtime's formulas);
* :mod:`~onegraph.stats.recover`: ranges read back from QDQ / QLinear* models;
* :mod:`~onegraph.stats.report`: HTML report and terminal tables.
"""

from onegraph import _lazy

__all__ = [
    "TensorAccumulator", "TensorStats", "merge_all", "Calibration", "calibrate", "annotate_model",
    "AnnotateStatsPass", "StripStatsPass", "annotate", "read_stats", "read_qparams", "strip",
    "QuantParams", "QuantizationError", "quant_params", "scale_zero_point", "recover", "recover_ranges",
]
# each name loads its module on first use: ``calibrate`` needs numpy, onnx and onnxruntime only (datasketches
# once a tensor's sample outgrows its held share), not onnx-ir (annotate, recover) or pydantic (the statistics
# document)
_lazy.exports(__name__, {
    **dict.fromkeys(["TensorAccumulator", "TensorStats", "merge_all"], "onegraph.stats.accumulators"),
    **dict.fromkeys(["AnnotateStatsPass", "StripStatsPass", "annotate", "read_qparams", "read_stats", "strip"],
                    "onegraph.stats.annotate"),
    **dict.fromkeys(["Calibration", "annotate_model", "calibrate"], "onegraph.stats.calibrate"),
    **dict.fromkeys(["QuantizationError", "QuantParams", "quant_params", "scale_zero_point"],
                    "onegraph.stats.qparams"),
    **dict.fromkeys(["recover", "recover_ranges"], "onegraph.stats.recover"),
})
