"""``onegraph.spark.from_spark``: a fitted Spark ML ``PipelineModel`` -> one verified onegraph model.

The graph has one input per DataFrame column the pipeline reads (typed by the one table of
:mod:`onegraph.contract.columns`, through the columns' Arrow types), the feature stages the final model
depends on (:mod:`.stages`; stages it does not need, such as the label's ``StringIndexer``, are left out),
and the model (:mod:`.models`). Outputs: ``label`` and ``probabilities`` (classifier) or ``prediction``
(regressor), as :func:`onegraph.build` writes them; a classifier trained on a label indexed by a
``StringIndexer`` of the pipeline reports that indexer's labels as its classes, else Spark's indices
(``0.0, 1.0, ...``). With a ``handleInvalid="skip"`` stage, the boolean output ``skipped`` marks the rows
Spark would drop.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
import pandas as pd

from onegraph.contract.columns import ColumnSpec, spec_for
from onegraph.emit import BOOL, DOUBLE, GraphBuilder
from onegraph.errors import ExportError, MissingColumnError, ParityError
from onegraph.export import assemble
from onegraph.spark.models import model_emitter, supported_models
from onegraph.spark.stages import Skips, columns_io, stage_emitter, supported_stages

__all__ = ["SKIPPED", "from_spark"]

SKIPPED = "skipped"


def from_spark(pipeline: Any, sample: Any, *, path: str | os.PathLike | None = None, check_parity: bool = True,
               atol: float = 1e-6, name: str = "onegraph", metadata: Mapping[str, Any] | None = None
               ) -> onnx.ModelProto:
    """Convert a fitted Spark ML ``PipelineModel`` (feature stages + a final predictor) into one ONNX model.

    Parameters
    ----------
    pipeline:
        A fitted ``pyspark.ml.PipelineModel`` whose last stage is a supported predictor (or the predictor
        alone). Feature stages: ``StringIndexerModel`` (every ``handleInvalid``), ``OneHotEncoderModel``,
        ``VectorAssembler``, ``ImputerModel``, ``StandardScalerModel``, ``MinMaxScalerModel``, ``Bucketizer``
        (and so ``QuantileDiscretizer``'s result). Predictors: ``LogisticRegressionModel``,
        ``DecisionTree*``, ``RandomForest*``, ``GBT*`` classification and regression models,
        ``LinearRegressionModel``.
    sample:
        A Spark DataFrame with the input columns: its schema decides the graph inputs; its rows are used
        for the parity check (collected to the driver: keep it small).
    path:
        Where to write the model (atomically) once it passes the parity check.
    check_parity, atol:
        Run Spark's ``transform`` and the graph (onnxruntime) on ``sample``: labels must be identical,
        probabilities / predictions within ``atol``, and the rows Spark drops exactly the ``skipped`` ones.

    Returns
    -------
    onnx.ModelProto
        Inputs ``[N]`` per column; outputs ``label`` ``[N]`` (the classes' type) and ``probabilities``
        ``[N, n_classes]`` double, or ``prediction`` ``[N]`` double; ``skipped`` ``[N]`` bool when a stage
        skips rows. Opsets ai.onnx 21, ai.onnx.ml 5.

    Raises
    ------
    ExportError
        for a stage or predictor that cannot be converted (naming it and its position).
    MissingColumnError
        when ``sample`` lacks a column the pipeline reads.
    ParityError
        when the graph's outputs differ from Spark's on ``sample`` (naming the output and the row).
    """
    stages = list(getattr(pipeline, "stages", [pipeline]))
    model = stages[-1]
    emit_model = model_emitter(model)
    if emit_model is None:
        raise ExportError(f"the last stage ({type(model).__name__}) is not a supported Spark ML predictor",
                          hint=f"end the pipeline with one of {', '.join(supported_models())}")
    needed = _needed_stages(stages[:-1], model.getFeaturesCol())
    reads = _external_columns(needed, model.getFeaturesCol())
    fields = {f.name: f for f in sample.schema.fields}
    for column in reads:
        if column not in fields:
            raise MissingColumnError(column, list(fields))
    specs = [_spec(fields[c]) for c in reads]

    g = GraphBuilder(name)
    columns: dict[str, Any] = {c.name: c for c in assemble.graph_inputs(g, specs)}
    skips = Skips()
    for position, obj in needed:
        with g.scope(f"stage{position}", obj):
            columns.update(stage_emitter(obj)(obj, g, columns, skips))
    features = columns[model.getFeaturesCol()]
    features = features if isinstance(features, list) else [g.as_double(features)]
    if len(features) != model.numFeatures:
        raise ExportError(f"{type(model).__name__} takes {model.numFeatures} features but the pipeline "
                          f"assembles {len(features)} into {model.getFeaturesCol()!r}")
    classes = _classes(stages, model)
    with g.scope("model", model):
        result = emit_model(model, g, g.matrix(features, DOUBLE), classes)
    outputs = assemble.declare_outputs(g, result, {s.name for s in specs})
    if skips.value is not None:
        g.output(skips.value, SKIPPED, BOOL)
        outputs.append({"name": SKIPPED, "column": SKIPPED, "role": "feature", "kind": "bool"})

    def verify(proto: onnx.ModelProto) -> None:
        from onegraph.spark.parity import spark_parity

        kept = {i.name for i in proto.graph.input}
        problems = spark_parity(pipeline, proto, sample.select(*[c for c in reads if c in kept]), atol=atol)
        if problems:
            raise ParityError("the graph diverges from Spark's transform: " + "; ".join(problems[:5]))

    def trained(used: list[str]) -> dict[str, Any]:
        return _training_metadata(model, [c for c in reads if c in used])

    return assemble.finish(g, specs, outputs, trained, given=metadata, verify=verify if check_parity else None,
                           path=path)


def _needed_stages(stages: list, features: str) -> list[tuple[int, Any]]:
    """The feature stages ``features`` depends on, in pipeline order (unsupported ones refused)."""
    wanted = {features}
    needed = []
    for position in range(len(stages) - 1, -1, -1):
        obj = stages[position]
        ins, outs = columns_io(obj) if hasattr(obj, "hasParam") else ([], [])
        if not wanted & set(outs):
            continue
        if stage_emitter(obj) is None:
            raise ExportError(f"stage {position} ({type(obj).__name__}) of the pipeline cannot be converted",
                              hint=f"supported feature stages: {', '.join(supported_stages())}")
        needed.append((position, obj))
        wanted |= set(ins)
    return needed[::-1]


def _external_columns(needed: list[tuple[int, Any]], features: str) -> list[str]:
    """Columns read from the input DataFrame (not written by an earlier stage), in first-read order."""
    written: set[str] = set()
    reads: list[str] = []
    for _, obj in needed:
        ins, outs = columns_io(obj)
        reads += [c for c in ins if c not in written and c not in reads]
        written |= set(outs)
    if not needed:
        reads = [features]
    return reads


def _spec(field: Any) -> ColumnSpec:
    """The :class:`ColumnSpec` of a Spark column, through its Arrow type (the one dtype table)."""
    from pyspark.sql.pandas.types import to_arrow_type

    try:
        arrow_type = to_arrow_type(field.dataType)
    except Exception:  # noqa: BLE001 - pyspark raises its own unsupported-type errors
        arrow_type = None
    if arrow_type is None or str(field.dataType).startswith(("Array", "Map", "Struct", "VectorUDT")):
        raise ExportError(f"column {field.name!r} has Spark type {field.dataType}, which is not a table column "
                          "onegraph can feed", hint="start the pipeline from number, string or timestamp columns")
    return spec_for(field.name, pd.Series([], dtype=pd.ArrowDtype(arrow_type)))


def _classes(stages: list, model: Any) -> list:
    """The label indexer's labels when the model's label column was made by one, else Spark's indices."""
    label = model.getLabelCol() if model.hasParam("labelCol") else None
    for obj in stages[:-1]:
        if type(obj).__name__ == "StringIndexerModel":
            ins, outs = columns_io(obj)
            if label in outs:
                return [str(v) for v in obj.labelsArray[outs.index(label)]]
    n = getattr(model, "numClasses", 0)
    return [float(i) for i in range(n)]


def _training_metadata(model: Any, columns: list[str]) -> dict[str, Any]:
    from onegraph.meta.model import source_library

    params = {}
    for param, value in model.extractParamMap().items():
        if isinstance(value, (bool, int, float, str)) and not (isinstance(value, float) and not np.isfinite(value)):
            params[param.name] = value
    return {"source_library": source_library(model) or "pyspark",
            "training_algorithm": f"{type(model).__module__}.{type(model).__qualname__}",
            "hyperparameters": params, "training_data": {"columns": columns}}
