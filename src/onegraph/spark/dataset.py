"""A data file scored on Apache Spark into a Parquet dataset (``onegraph score MODEL DATA --spark MASTER -o OUT``).

DATA is read by Spark (CSV: header row, the model's columns converted to the types its
input schema names, pandas' missing-value markers such as ``NA`` read as missing, as ``onegraph score`` reads
them; Parquet: as stored), scored by :func:`onegraph.spark.score.score` and written as a Parquet dataset
(a folder of part files in partition order, i.e. input order), into a temporary sibling folder renamed into
place when complete.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

from onegraph.errors import ConfigError, DataError, OnegraphError

__all__ = ["score_file"]


def score_file(model: Path, data: Path, output: Path, *, keep: list[str] | None, trusted: bool,
               master: str, keep_na_words: bool = False) -> tuple[int, list[str], float]:
    """Score ``data`` (a CSV or Parquet file) with ``model`` on the Spark cluster at ``master`` into the Parquet
    dataset ``output`` (a folder of part files, in input order, renamed into place when complete). A CSV's
    cells pandas reads as missing (``NA``, ``null``...) are missing, as ``onegraph score`` reads them; with
    ``keep_na_words`` only empty cells are.

    Returns the rows written, the columns and the seconds the job took.

    Raises
    ------
    OnegraphError
        for an ``output`` that exists or is not ``.parquet``; DataError for a missing or unreadable ``data``;
        the model's errors (MissingColumnError, ColumnTypeError...) before the job; RuntimeFailure when the
        job fails.
    """
    import shutil

    from pyspark.sql import SparkSession

    from onegraph.io import check_output_path
    from onegraph.runtime import cached_session
    from onegraph.spark.score import score, spark_errors

    if output.exists():  # a dataset is a folder: never written over
        raise OnegraphError(f"cannot write {output}: it exists", hint="remove it or give another name")
    check_output_path(output)
    if output.suffix.lower() not in (".parquet", ".pq"):
        raise ConfigError(f"--spark writes a Parquet dataset, not {output.suffix or 'a file without extension'}",
                          hint="give -o OUT.parquet")
    specs = cached_session(model, trusted=trusted).inputs
    if master.startswith("local"):  # local workers run this interpreter, the one with onegraph installed
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    if "SPARK_CONF_DIR" not in os.environ and "SPARK_HOME" not in os.environ:  # a user's own config wins
        os.environ["SPARK_CONF_DIR"] = str(Path(__file__).with_name("conf"))  # no start-up log lines
    spark = (SparkSession.builder.master(master).appName("onegraph score").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    _quiet(spark)
    frame = _read(spark, data, specs, keep_na_words)
    keep_columns: Any = list(dict.fromkeys(keep)) if keep else False
    tmp = output.with_name(f".{output.name}.{uuid.uuid4().hex[:8]}.tmp")
    start = time.perf_counter()
    try:
        with spark_errors():
            try:
                scored = score(frame, model, keep=keep_columns, trusted=True)
                scored.write.parquet(str(tmp))
            except Exception as exc:
                if "CAST_INVALID_INPUT" in str(exc):  # Spark's message names neither the column nor the row
                    _refuse_unreadable(spark, data, specs, keep_na_words)
                raise
        elapsed = time.perf_counter() - start
        os.replace(tmp, output)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _rows(output), list(scored.columns), elapsed


def _quiet(spark: Any) -> None:
    """One line per error, as every command: the executors' Java stack traces (log4j) and PySpark's JSON
    error log repeat, in hundreds of lines, what the command's own error says."""
    from pyspark.logger import PySparkLogger

    spark.sparkContext.setLogLevel("OFF")
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(100)  # above CRITICAL: its logger.exception is not printed


def _read(spark: Any, data: Path, specs: list, keep_na_words: bool = False) -> Any:
    """DATA as a Spark DataFrame, the model's columns typed as its input schema says (CSV)."""
    from onegraph.spark.score import SPARK_TYPES

    frame, decimal = _raw(spark, data)
    if data.suffix.lower() != ".csv":
        return frame
    for spec in specs:
        if spec.name in frame.columns:
            frame = frame.withColumn(spec.name, _text(spec, keep_na_words, decimal).cast(SPARK_TYPES[spec.kind]))
    return frame


def _raw(spark: Any, data: Path) -> tuple[Any, str]:
    """DATA as Spark reads it (a Parquet file as stored, a CSV's columns as text), and the decimal mark of its
    numbers (:func:`onegraph.io.csv_dialect`, sniffed as the local score does: Spark's reader assumes commas)."""
    if not data.exists():
        raise DataError(f"data file {data} does not exist", hint="check the path")
    suffix = data.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return spark.read.parquet(str(data)), "."
    if suffix != ".csv":
        raise DataError(f"data file {data}: --spark reads .csv or .parquet", hint="convert it to Parquet")
    from onegraph.io import csv_dialect

    sep, decimal = csv_dialect(data)
    # quotes within a quoted field are doubled (RFC 4180, as pandas and spreadsheets write them and the local
    # score reads them); Spark's own default escape is a backslash, which kept both quotes in the text
    return (spark.read.option("header", True).option("inferSchema", False).option("sep", sep)
            .option("escape", '"').csv(str(data)), decimal)


def _text(spec: Any, keep_na_words: bool = False, decimal: str = ".") -> Any:
    """A CSV column's text as the model's input reads it: pandas' missing-value markers (``NA``, ``null``...) as
    null unless ``keep_na_words`` (Spark's reader already reads an empty cell as null), and a number's decimal
    comma a point where the file writes them so (``decimal``), dropping the point thousands separators of a
    number so written (3.750 is 3750, as :func:`onegraph.io.read_table` reads it)."""
    from pandas._libs.parsers import STR_NA_VALUES
    from pyspark.sql import functions as F

    from onegraph.io import GROUPED_NUMBER

    column = F.col(spec.name)
    text = column if keep_na_words else F.when(column.isin(sorted(STR_NA_VALUES)), None).otherwise(column)
    if spec.kind not in ("float", "int") or decimal != ",":
        return text
    grouped = F.when(text.rlike(f"^\\s*{GROUPED_NUMBER.pattern}\\s*$"), F.regexp_replace(text, r"\.", ""))
    return F.regexp_replace(grouped.otherwise(text), ",", ".")


#: what a CSV cell must hold for each input kind, in the words of the error
_READABLE = {"float": "a number", "int": "an integer", "bool": "true or false", "datetime": "a date / time",
             "timedelta": "a duration"}


def _refuse_unreadable(spark: Any, data: Path, specs: list, keep_na_words: bool = False) -> None:
    """DataError naming the first model column of the CSV ``data`` with a value its input type cannot read,
    and the value (Spark refuses it under ANSI casts naming neither); returns when none is found."""
    from onegraph.spark.score import SPARK_TYPES

    raw, decimal = _raw(spark, data)
    for spec in specs:
        if spec.name not in raw.columns or spec.kind not in _READABLE:
            continue
        text = _text(spec, keep_na_words, decimal)
        bad = raw.filter(text.isNotNull() & text.try_cast(SPARK_TYPES[spec.kind]).isNull()).limit(1).collect()
        if bad:
            raise DataError(f"column {spec.name!r}: value {bad[0][spec.name]!r} in {data} is not "
                            f"{_READABLE[spec.kind]}", hint="correct or remove it (onegraph score without --spark "
                            "names its row)")


def _rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(path.glob("*.parquet")))
