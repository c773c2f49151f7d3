"""``onegraph.compose``: one preprocessing, several models, an ensemble, post-processing -> one ONNX model.

The preprocessing is emitted once and its feature matrix feeds every model (shared, not duplicated); each
model comes in through its adapter (:mod:`onegraph.export.adapters.contract`), which declares what it
consumes, so every edge is checked before anything is written. Graphs from other converters (onnxmltools,
torch.onnx, ``.onnx`` files) are spliced in with their opsets aligned to onegraph's (ai.onnx 21, ai.onnx.ml
5: old tree operators rewritten), their names prefixed, and identical initializers kept once.

Outputs: with one model, its ``label`` / ``probabilities`` / ``prediction`` (as :func:`onegraph.build`);
with several, ``<model name>.label`` / ``<model name>.probabilities`` / ``<model name>.prediction`` per
model, plus the ensemble's ``label`` / ``probabilities`` / ``prediction``; post-processing rewrites the
answer (``label``) or adds to it (``top_labels``, ``top_probabilities``). Every output's role, model and
classes are in the metadata, so :func:`onegraph.score` names its columns (``rf.probabilities_Adelie``).

With ``sequence=`` the rows are windows of their group (see :class:`onegraph.meta.SequenceSpec`): each row
is preprocessed once, then the graph gathers each row's window ``[N, window, width]`` for the sequence
model, and :func:`onegraph.score` sorts and indexes the rows (:mod:`onegraph.runtime.windows`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
import pandas as pd

from onegraph.contract.columns import spec_for
from onegraph.contract.metadata import SequenceSpec
from onegraph.contract.tables import as_pandas
from onegraph.emit import DOUBLE, INT64, Col, GraphBuilder
from onegraph.errors import ExportError
from onegraph.export import assemble
from onegraph.export.adapters.choose import adapt
from onegraph.export.adapters.contract import Adapter
from onegraph.export.adapters.models import ModelOutputs
from onegraph.export.combine import (
    combined_answer,
    declare_answers,
    named_models,
    post_processed,
)
from onegraph.export.ensemble import Ensemble
from onegraph.export.members import feature_matrix, table_pipelines
from onegraph.export.postprocess import PostStep
from onegraph.export.sources import column_key, input_columns, model_files
from onegraph.verify.parity import outputs_parity

__all__ = ["compose", "reference_outputs"]


def compose(preprocessing: Any, models: Any, sample: Any, *, ensemble: Ensemble | str | None = None,
            post: Sequence[PostStep] = (), sequence: SequenceSpec | Mapping | None = None,
            path: str | os.PathLike | None = None, check_parity: bool = True, rtol: float | None = None,
            atol: float | None = None, name: str = "onegraph") -> onnx.ModelProto:
    """Build one ONNX model from a fitted preprocessing and several fitted models, verified on ``sample``.

    Parameters
    ----------
    preprocessing:
        A fitted onegraph / scikit-learn transformer or container (as for :func:`onegraph.build`), or None
        when the models take the input columns directly.
    models:
        A dict model name -> model, a list of models (named after their classes), or one model. A model is
        anything :func:`~onegraph.export.adapters.choose.adapt` takes: a fitted scikit-learn predictor,
        an XGBoost / LightGBM model, a :class:`~onegraph.export.TorchModule`, an
        :class:`~onegraph.export.OnnxModel` or a path to a ``.onnx`` file. A fitted scikit-learn
        ``VotingClassifier`` / ``VotingRegressor`` / ``StackingClassifier`` / ``StackingRegressor`` given
        alone is split into its models and its ensemble.
    sample:
        The input rows (any table onegraph reads): their dtypes decide the graph inputs; the parity check
        runs on them.
    ensemble:
        An :class:`~onegraph.export.Ensemble`, or its method name (``"mean"``, ``"weighted"``, ``"vote"``).
    post:
        Post-processing steps applied in order to the answer (one model's or the ensemble's):
        :class:`~onegraph.export.Threshold`, :class:`~onegraph.export.LabelMap`, :class:`~onegraph.export.TopK`.
    sequence:
        A :class:`~onegraph.meta.SequenceSpec` (or its dict) when the model scores windows of rows.
    path:
        Where to write the model (atomically) once it passes the parity check.
    check_parity, rtol, atol:
        Compare every output with the source libraries on ``sample`` (labels identical; numbers within
        ``atol + rtol * |expected|``; default: the loosest of the models' tolerances, 1e-5 for float32
        models).

    Returns
    -------
    onnx.ModelProto
        One input per used column (``[N]``; plus the int64 window input ``[N, window]`` of a sequence
        model); outputs as described in the module docstring. Opsets ai.onnx 21, ai.onnx.ml 5.

    Raises
    ------
    ExportError
        for a model that does not fit what the preprocessing gives (naming both), models an ensemble
        cannot combine, post-processing that does not fit the answer, or an unsupported object.
    ParityError
        when an output differs from the source libraries on ``sample``.
    """
    named, ensemble = named_models(models, ensemble)
    if path is not None:  # before the export's work; a member model's file is never replaced
        from onegraph.io import check_output_path

        check_output_path(path, model=True, inputs=model_files([preprocessing, *named.values()]))
    frame = as_pandas(sample)
    if len(frame) == 0:
        raise ExportError("the sample has no rows", hint="give at least one row (more make a better parity check)")
    adapters = {n: adapt(m) for n, m in named.items()}
    seq = _sequence(sequence)
    first = next(iter(adapters.values()))
    columns = input_columns(preprocessing, None if preprocessing is not None else _sklearn_or_none(first), frame)
    specs = [spec_for(c, frame[column_key(frame, c)]) for c in columns]

    g = GraphBuilder(name)
    cols, producer = _features(g, preprocessing, specs)
    if preprocessing is None and seq is None and table_pipelines([a.model for a in adapters.values()], cols):
        x = feature_matrix(g, cols)  # pipelines encoding the table's columns themselves (a split voting ensemble)
    else:
        kinds = {c.kind for c in cols}
        for model_name, a in adapters.items():
            a.consumes.check(f"model {model_name!r} ({a.source})", producer, len(cols), kinds,
                             steps=seq.window if seq else None)
        x = g.matrix(cols, DOUBLE)
    if seq is not None:
        x = _windows(g, x, len(cols), seq)
    outs: dict[str, ModelOutputs] = {}
    for model_name, a in adapters.items():
        with g.scope(model_name, a.model):
            outs[model_name] = a.emit(g, x)
    answer, classes, task = combined_answer(g, outs, adapters, ensemble)
    if ensemble is not None and ensemble.encoded and classes is not None:
        outs = {n: _decoded(g, o, classes) for n, o in outs.items()}
    answer, classes = post_processed(g, answer, classes, post)
    entries = declare_answers(g, outs, answer, {s.name for s in specs})

    fields: dict[str, Any] = {"models": [{"name": n, "source": a.source, "consumes": str(a.consumes)}
                                         for n, a in adapters.items()]}
    if len(adapters) == 1:
        fields["training_algorithm"] = first.source
    if ensemble is not None:
        fields["ensemble"] = ensemble.to_dict()
    if seq is not None:
        fields["sequence"] = seq.to_dict()

    def verify(proto: onnx.ModelProto) -> Any:
        tol = _tolerance(adapters, ensemble, rtol, atol)
        expected = reference_outputs(frame, preprocessing, adapters, ensemble, post, seq, columns)
        return outputs_parity(proto, frame, expected, rtol=tol[0], atol=tol[1])

    return assemble.finish(g, specs, entries, {}, given=fields, dedupe=True, verify=verify if check_parity else None,
                           what="the composed graph diverges from the source models", path=path)


# -- models -------------------------------------------------------------------------------------
def _sklearn_or_none(a: Adapter) -> Any:
    """The object whose ``feature_names_in_`` name the input columns when there is no preprocessing."""
    return a.model if hasattr(a.model, "n_features_in_") or hasattr(a.model, "feature_names_in_") else None


def _sequence(sequence: Any) -> SequenceSpec | None:
    if sequence is None or isinstance(sequence, SequenceSpec):
        return sequence
    try:
        return SequenceSpec.from_dict(dict(sequence))
    except (TypeError, ValueError) as exc:
        raise ExportError(f"sequence: {exc}", hint="give group=, order=, window= (padding='pre')") from None


# -- graph --------------------------------------------------------------------------------------
def _features(g: GraphBuilder, preprocessing: Any, specs: list) -> tuple[list[Col], str]:
    from onegraph.export.adapters.sklearn import emit_step, step_name

    cols = assemble.graph_inputs(g, specs)
    if preprocessing is None:
        return cols, "the input columns"
    cols = emit_step(preprocessing, g, cols, step_name(preprocessing))
    if not cols:
        raise ExportError("the preprocessing outputs no column", hint="check its column selection")
    return cols, f"the preprocessing ({type(preprocessing).__name__})"


def _windows(g: GraphBuilder, x: ir.Value, width: int, seq: SequenceSpec) -> ir.Value:
    """``[N, width]`` rows -> ``[N, window, width]`` windows: a pad row is appended and gathered where the
    window index is -1 (ONNX ``Gather`` counts negative indices from the end)."""
    index = g.input(seq.input, INT64, rank=2)
    index.shape = ir.Shape(["N", seq.window])
    pad = g.const(np.full((1, width), seq.pad_value, np.float64), "pad_row")
    padded = g.op("Concat", x, pad, axis=0, dtype=DOUBLE)
    windows = g.op("Gather", padded, index, axis=0, dtype=DOUBLE)
    windows.shape = ir.Shape(["N", seq.window, width])
    return windows


def _decoded(g: GraphBuilder, result: ModelOutputs, classes: list) -> ModelOutputs:
    """A model of a scikit-learn ensemble predicts class indices (its estimators are fitted on encoded
    labels): its label becomes the class itself, its probability columns are named by the classes."""
    from onegraph.export.adapters.models import label_from_index

    values = dict(result.values)
    if "label" in values:
        label = values["label"]
        values["label"] = label_from_index(g, classes, label if label.dtype == INT64 else
                                           g.op("Cast", label, to=INT64, dtype=INT64))
    return ModelOutputs(values, classes)


# -- parity -------------------------------------------------------------------------------------
def _tolerance(adapters: dict[str, Adapter], ensemble: Ensemble | None, rtol: float | None,
               atol: float | None) -> tuple[float, float]:
    tols = [a.tolerance for a in adapters.values()]
    if ensemble is not None and ensemble.final_estimator is not None:
        tols.append(adapt(ensemble.final_estimator).tolerance)
    return (rtol if rtol is not None else max(t[0] for t in tols),
            atol if atol is not None else max(t[1] for t in tols))


def reference_outputs(frame: pd.DataFrame, preprocessing: Any, adapters: dict[str, Adapter],
                      ensemble: Ensemble | None, post: Sequence[PostStep], seq: SequenceSpec | None,
                      columns: list[str]) -> dict[str, np.ndarray]:
    """Every output of the composed model computed by the source libraries (and numpy for the ensemble
    and post-processing), keyed by output column."""
    x = preprocessing.transform(frame) if preprocessing is not None else frame[columns]
    perm = None
    if seq is not None:
        from onegraph.runtime.windows import window_index

        rows = np.asarray(x, dtype=np.float64)
        perm, index = window_index(frame[seq.group].to_numpy(), frame[seq.order], seq.window)
        padded = np.vstack([rows[perm], np.full((1, rows.shape[1]), seq.pad_value)])
        x = padded[index]
    per_model = {n: a.expected(x) for n, a in adapters.items()}
    if perm is not None:
        for values in per_model.values():
            for role, v in values.items():
                restored = np.empty_like(v)
                restored[perm] = v
                values[role] = restored
    out: dict[str, np.ndarray] = {}
    if ensemble is None and len(adapters) == 1:
        answer, classes = dict(next(iter(per_model.values()))), next(iter(adapters.values())).classes
    else:
        for n, values in per_model.items():
            out.update({f"{n}.{role}": v for role, v in values.items()})
        answer, classes = None, None
        if ensemble is not None:
            task, classes = ensemble.resolve(adapters)
            answer = ensemble.apply(per_model, task, classes)
            if ensemble.encoded and classes is not None:
                table = np.asarray(classes, dtype=object)
                for n, values in per_model.items():
                    if "label" in values:
                        out[f"{n}.label"] = table[np.asarray(values["label"], np.int64)]
    if answer is not None:
        for step in post:
            answer, classes = step.apply(answer, classes)
        out.update(answer)
    return out
