"""``onegraph.spark``: onegraph on Apache Spark (optional extra ``spark``). All Spark code lives here.

* :func:`score` — a Spark DataFrame scored by a onegraph model, outputs as typed columns (:mod:`.score`);
* :func:`calibrate` — tensor statistics computed per partition and tree-merged (:mod:`.calibrate`);
* :func:`from_spark` — a fitted Spark ML ``PipelineModel`` converted into one onegraph model (:mod:`.convert`:
  feature stages in :mod:`.stages`, predictors in :mod:`.models`, parity with Spark's ``transform`` in
  :mod:`.parity`);
* :func:`score_file` — a CSV / Parquet file scored into a Parquet dataset (:mod:`.dataset`, the CLI's
  ``score --spark``);
* :func:`spark_errors` — a failed job's onegraph error, back as one.
"""

from onegraph import _lazy

__all__ = ["score", "calibrate", "from_spark", "score_file", "spark_errors"]
_lazy.exports(__name__, {
    "score": "onegraph.spark.score", "calibrate": "onegraph.spark.calibrate",
    "spark_errors": "onegraph.spark.score", "from_spark": "onegraph.spark.convert",
    "score_file": "onegraph.spark.dataset",
})
