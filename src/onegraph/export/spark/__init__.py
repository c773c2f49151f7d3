"""Spark ML pipelines -> onegraph models: feature stages (:mod:`.stages`), predictors (:mod:`.models`),
conversion and parity (:mod:`.convert`, :mod:`.parity`). Needs the optional extra ``spark`` (pyspark)."""

from onegraph import _lazy

__all__ = ["from_spark"]
_lazy.exports(__name__, {"from_spark": "onegraph.export.spark.convert"})
