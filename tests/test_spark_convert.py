"""Spark ML PipelineModel -> one onegraph model: labels identical to Spark's transform, probabilities
within 1e-6, rows Spark skips marked, refused values refused (local Spark, real penguins rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import onegraph
from onegraph.errors import ExportError, UnknownCategoryError

pytest.importorskip("pyspark")

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
IMPUTED = [f"{c}_filled" for c in NUMERIC]


@pytest.fixture(scope="module")
def rows(penguins):
    """Penguins plus rows Spark handles specially: an unseen sex (kept), missing numbers (imputed)."""
    frame = penguins.drop(columns=["year"]).copy()
    extra = frame.iloc[[0, 150, 300]].copy()
    extra["sex"] = "juvenile"
    extra.iloc[1, frame.columns.get_loc("body_mass_g")] = np.nan
    frame = pd.concat([frame, extra], ignore_index=True)
    frame = frame.astype(object).where(frame.notna(), None).astype({c: float for c in NUMERIC})
    frame["is_adelie"] = (frame["species"] == "Adelie").astype(float)
    frame.insert(0, "row", np.arange(len(frame), dtype=np.int64))
    return frame


@pytest.fixture(scope="module")
def fitted(spark, rows):
    """One feature pipeline (every supported stage) and three predictors fitted on its output."""
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.classification import (
        GBTClassifier,
        LogisticRegression,
        RandomForestClassifier,
    )
    from pyspark.ml.feature import (
        Bucketizer,
        Imputer,
        MinMaxScaler,
        OneHotEncoder,
        QuantileDiscretizer,
        StandardScaler,
        StringIndexer,
        VectorAssembler,
    )

    df = spark.createDataFrame(rows).cache()
    features = Pipeline(stages=[
        StringIndexer(inputCol="species", outputCol="label"),
        StringIndexer(inputCol="island", outputCol="island_index", handleInvalid="error"),
        StringIndexer(inputCol="sex", outputCol="sex_index", handleInvalid="keep", stringOrderType="alphabetAsc"),
        OneHotEncoder(inputCols=["island_index", "sex_index"], outputCols=["island_hot", "sex_hot"],
                      handleInvalid="keep"),
        Imputer(inputCols=NUMERIC, outputCols=IMPUTED, strategy="median"),
        QuantileDiscretizer(inputCol="body_mass_g_filled", outputCol="mass_bucket", numBuckets=4),
        Bucketizer(inputCol="flipper_length_mm_filled", outputCol="flipper_bucket",
                   splits=[-float("inf"), 190.0, 200.0, 210.0, float("inf")]),
        VectorAssembler(inputCols=[*IMPUTED, "island_hot", "sex_hot", "mass_bucket", "flipper_bucket"],
                        outputCol="raw"),
        StandardScaler(inputCol="raw", outputCol="standard", withMean=True),
        MinMaxScaler(inputCol="raw", outputCol="unit"),
        StringIndexer(inputCol="sex", outputCol="sex_or_skip", handleInvalid="skip"),
        VectorAssembler(inputCols=["unit", "sex_or_skip"], outputCol="unit_sex"),
    ]).fit(df)
    train = features.transform(df).cache()
    stages = features.stages
    predictors = {
        "lr": LogisticRegression(featuresCol="standard", maxIter=15, regParam=0.01),
        "forest": RandomForestClassifier(featuresCol="raw", numTrees=6, maxDepth=4, seed=3),
        "gbt": GBTClassifier(featuresCol="unit_sex", labelCol="is_adelie", maxIter=5, maxDepth=3, seed=3),
    }
    models = {}
    for name, predictor in predictors.items():
        keep = stages if name == "gbt" else stages[:-2]  # the rows-skipping stages only where they are used
        models[name] = PipelineModel(keep + [predictor.fit(train)])
    return df, models


def _spark_predictions(pipeline, df):
    from pyspark.ml.functions import vector_to_array

    out = pipeline.transform(df).select("row", "prediction", vector_to_array("probability").alias("p"))
    return out.toArrow().to_pandas().sort_values("row").reset_index(drop=True)


@pytest.mark.parametrize("name", ["lr", "forest", "gbt"])
def test_converted_pipeline_matches_spark(fitted, rows, name, tmp_path):
    from onegraph.spark import from_spark

    df, models = fitted
    pipeline = models[name]
    proto = from_spark(pipeline, df, check_parity=name == "gbt", path=tmp_path / f"{name}.onnx")
    assert {i.name for i in proto.graph.input} <= set(rows.columns) - {"row", "species", "is_adelie"}
    ours = onegraph.score(proto, rows)
    theirs = _spark_predictions(pipeline, df)
    if name == "gbt":  # Spark drops the rows whose sex the skipping indexer has not seen (and nulls)
        kept = ~ours["skipped"].to_numpy()
        expected_kept = rows["sex"].notna().to_numpy()
        np.testing.assert_array_equal(kept, expected_kept)
        assert theirs["row"].tolist() == rows["row"][kept].tolist()
        ours = ours[kept].reset_index(drop=True)
        classes = [0.0, 1.0]
    else:
        assert theirs["row"].tolist() == rows["row"].tolist()
        classes = ["Adelie", "Gentoo", "Chinstrap"]  # the label indexer's order (frequency)
    probability_columns = [f"probabilities_{c}" for c in classes]
    assert list(ours.columns[:1 + len(classes)]) == ["label", *probability_columns]
    expected = np.asarray(classes, dtype=object)[theirs["prediction"].astype(int)]
    assert (ours["label"].to_numpy(dtype=object) == expected).all()  # labels identical
    np.testing.assert_allclose(ours[probability_columns].to_numpy(float), np.stack(theirs["p"]), rtol=0, atol=1e-6)


def test_unseen_island_is_refused_like_spark(fitted, rows):
    from onegraph.spark import from_spark

    df, models = fitted
    proto = from_spark(models["lr"], df, check_parity=False)
    atlantis = rows.iloc[:2].copy()
    atlantis.loc[atlantis.index[1], "island"] = "Atlantis"
    with pytest.raises(UnknownCategoryError, match="'island'.*Atlantis"):
        onegraph.score(proto, atlantis)
    spark_df = df.sparkSession.createDataFrame(atlantis)
    with pytest.raises(Exception, match="Atlantis|[Uu]nseen"):
        models["lr"].transform(spark_df).select("prediction").collect()


def test_unsupported_stage_is_named(fitted):
    from pyspark.ml import PipelineModel
    from pyspark.ml.feature import Normalizer

    from onegraph.spark import from_spark

    df, models = fitted
    stages = [Normalizer(inputCol="raw", outputCol="standard") if type(s).__name__ == "StandardScalerModel" else s
              for s in models["lr"].stages]
    with pytest.raises(ExportError, match=r"stage \d+ \(Normalizer\)"):
        from_spark(PipelineModel(stages), df, check_parity=False)
