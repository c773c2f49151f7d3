"""Tensor statistics carried by the model: streaming calibration, quantization parameters, recovered ranges.

* :mod:`~onegraph.stats.accumulators`: streaming, mergeable per-tensor statistics;
* :mod:`~onegraph.stats.calibrate`: run a model in onnxruntime over data and collect them;
* :mod:`~onegraph.stats.annotate`: write them into the model (``onegraph.stats`` JSON per tensor, scale /
  zero point in ``quantization_annotation``), read them back, strip them;
* :mod:`~onegraph.stats.qparams`: scale / zero point from statistics (ONNX Runtime's formulas);
* :mod:`~onegraph.stats.recover`: ranges read back from QDQ / QLinear* models;
* :mod:`~onegraph.stats.report`: HTML report and terminal tables.
"""

from onegraph.stats.accumulators import TensorAccumulator, TensorStats, merge_all
from onegraph.stats.annotate import (
    AnnotateStatsPass,
    StripStatsPass,
    annotate,
    read_qparams,
    read_stats,
    strip,
)
from onegraph.stats.calibrate import Calibration, annotate_model, calibrate
from onegraph.stats.qparams import (
    QuantizationError,
    QuantParams,
    quant_params,
    scale_zero_point,
)
from onegraph.stats.recover import recover, recover_ranges

__all__ = [
    "TensorAccumulator", "TensorStats", "merge_all", "Calibration", "calibrate", "annotate_model",
    "AnnotateStatsPass", "StripStatsPass", "annotate", "read_stats", "read_qparams", "strip",
    "QuantParams", "QuantizationError", "quant_params", "scale_zero_point", "recover", "recover_ranges",
]
