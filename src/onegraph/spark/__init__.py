"""``onegraph.spark``: onegraph on Apache Spark (optional extra ``spark``).

* :func:`score` — a Spark DataFrame scored by a onegraph model, outputs as typed columns
  (:mod:`onegraph.runtime.spark`);
* :func:`calibrate` — tensor statistics computed per partition and tree-merged;
* :func:`from_spark` — a fitted Spark ML ``PipelineModel`` converted into one onegraph model
  (:mod:`onegraph.export.spark`);
* :func:`spark_errors` — a failed job's onegraph error, back as one.
"""

from onegraph import _lazy

__all__ = ["score", "calibrate", "from_spark", "spark_errors"]
_lazy.exports(__name__, {
    "score": "onegraph.runtime.spark", "calibrate": "onegraph.runtime.spark",
    "spark_errors": "onegraph.runtime.spark", "from_spark": "onegraph.export.spark.convert",
})
