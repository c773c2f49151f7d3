"""onegraph on Spark: scoring throughput with local[1] vs local[2], and onegraph-on-Spark vs Spark ML.

Data: the bundled Palmer penguins repeated to ``--rows`` rows (``--partitions`` partitions, cached in Spark
memory before timing). Each timed job scores every row and discards the result (``write.format("noop")``),
so it measures reading the cached rows, Arrow batches to the Python workers, onnxruntime, and the result
back, without any file writing.

1. **local[1] vs local[2]**: the same onegraph model (penguins pipeline: impute + scale numbers, impute +
   one-hot text, logistic regression, built by ``onegraph.build``) scored by ``onegraph.spark.score``. A
   process holds one SparkContext, so each master runs in its own worker process (started by this script);
   the jobs alternate between them round by round (interleaved), and the best round of each is kept.
2. **onegraph-on-Spark vs Spark ML**: in the local[2] process, a Spark ML PipelineModel (StringIndexer x2,
   OneHotEncoder, Imputer, VectorAssembler, StandardScaler, LogisticRegression) fitted on the penguins and
   converted by ``onegraph.spark.from_spark``; Spark ML's own ``transform`` (prediction + probability) and
   ``onegraph.spark.score`` of the converted model, alternated round by round.

Run: ``python bench/spark.py [--rows 2000000] [--partitions 8] [--rounds 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _session(master: str):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(master).appName(f"bench {master}").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _rows(spark, rows: int, partitions: int):
    import pyarrow as pa

    from onegraph.datasets import load_penguins

    frame = load_penguins().drop(columns="species")
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = pa.concat_tables([table] * (rows // len(frame) + 1)).slice(0, rows)
    df = spark.createDataFrame(table).repartition(partitions).cache()
    df.count()
    return df


def _timed(job) -> float:
    start = time.perf_counter()
    job()
    return time.perf_counter() - start


def worker(master: str, model: str, rows: int, partitions: int, spark_ml: bool) -> None:
    """Serve timing requests on stdin: a candidate name per line; reply its seconds as JSON."""
    import onegraph.spark as og

    spark = _session(master)
    df = _rows(spark, rows, partitions)
    jobs = {"onegraph": lambda: og.score(df, model, keep=False).write.format("noop").mode("overwrite").save()}
    if spark_ml:
        pipeline, converted = _spark_ml(spark, df)
        jobs["spark_ml"] = lambda: (pipeline.transform(df).select("prediction", "probability")
                                    .write.format("noop").mode("overwrite").save())
        jobs["onegraph_converted"] = lambda: (og.score(df, converted, keep=False)
                                              .write.format("noop").mode("overwrite").save())
    for job in jobs.values():  # warm-up: Python workers started, onnxruntime sessions opened
        job()
    print(json.dumps({"ready": sorted(jobs)}), flush=True)
    for line in sys.stdin:
        name = line.strip()
        if not name:
            break
        print(json.dumps({name: _timed(jobs[name])}), flush=True)
    spark.stop()


def _spark_ml(spark, df):
    """The Spark ML pipeline fitted on the penguins, and its onegraph conversion (checked on them)."""
    from pyspark.ml import Pipeline
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.feature import (
        Imputer,
        OneHotEncoder,
        StandardScaler,
        StringIndexer,
        VectorAssembler,
    )

    from onegraph.datasets import load_penguins
    from onegraph.spark import from_spark

    penguins = spark.createDataFrame(load_penguins())
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    filled = [f"{c}_filled" for c in numeric]
    pipeline = Pipeline(stages=[
        StringIndexer(inputCol="species", outputCol="label"),
        StringIndexer(inputCols=["island", "sex"], outputCols=["island_index", "sex_index"], handleInvalid="keep"),
        OneHotEncoder(inputCols=["island_index", "sex_index"], outputCols=["island_hot", "sex_hot"]),
        Imputer(inputCols=numeric, outputCols=filled),
        VectorAssembler(inputCols=[*filled, "island_hot", "sex_hot"], outputCol="raw"),
        StandardScaler(inputCol="raw", outputCol="features", withMean=True),
        LogisticRegression(maxIter=50),
    ]).fit(penguins)
    converted = from_spark(pipeline, penguins).SerializeToString()
    path = Path(tempfile.mkdtemp()) / "spark_ml.onnx"
    path.write_bytes(converted)
    return pipeline, str(path)


class Worker:
    def __init__(self, master: str, model: str, args: argparse.Namespace, spark_ml: bool) -> None:
        cmd = [sys.executable, __file__, "--worker", master, "--model", model, "--rows", str(args.rows),
               "--partitions", str(args.partitions)] + (["--spark-ml"] if spark_ml else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     stderr=subprocess.DEVNULL)
        self.ready = self._reply()["ready"]

    def _reply(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("a benchmark worker exited early (run it alone with --worker to see why)")
            if line.startswith("{"):
                return json.loads(line)

    def time(self, name: str) -> float:
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return self._reply()[name]

    def close(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=120)


def _model(path: Path) -> None:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.datasets import load_penguins
    from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler

    penguins = load_penguins()
    frame = penguins.drop(columns="species")
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
    pipe = make_pipeline(ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), numeric),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         ["island", "sex"]),
    ]), LogisticRegression(max_iter=1000)).fit(frame, penguins["species"])
    onegraph.build(pipe, None, frame, path=path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--spark-ml", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.model, args.rows, args.partitions, args.spark_ml)
        return
    import onnxruntime
    import pyspark

    import onegraph

    model = Path(tempfile.mkdtemp()) / "penguins.onnx"
    _model(model)
    one, two = Worker("local[1]", str(model), args, False), Worker("local[2]", str(model), args, True)
    best: dict[str, float] = {}
    try:
        for _ in range(args.rounds):  # interleaved: each round runs every candidate once, in turn
            for label, w, name in (("local[1]", one, "onegraph"), ("local[2]", two, "onegraph"),
                                   ("Spark ML transform", two, "spark_ml"),
                                   ("onegraph, converted pipeline", two, "onegraph_converted")):
                best[label] = min(best.get(label, float("inf")), w.time(name))
    finally:
        one.close()
        two.close()
    print(f"onegraph {onegraph.__version__}, pyspark {pyspark.__version__}, onnxruntime {onnxruntime.__version__}, "
          f"{os.cpu_count()} cores; {args.rows:,} rows in {args.partitions} partitions; best of {args.rounds} "
          "interleaved rounds")
    for label, seconds in best.items():
        print(f"  {label:30s} {seconds:8.2f} s  {args.rows / seconds:12,.0f} rows/s")
    print(f"  local[2] / local[1] speed-up: {best['local[1]'] / best['local[2]']:.2f}x (target >= 1.6x)")
    print(f"  onegraph vs Spark ML transform (converted pipeline, local[2]): "
          f"{best['Spark ML transform'] / best['onegraph, converted pipeline']:.2f}x faster")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    # the worker processes and Spark's Python workers import this checkout's onegraph too
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    main()
