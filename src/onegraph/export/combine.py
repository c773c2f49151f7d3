"""Several models in one graph: naming them, their combined answer, post-processing, their outputs.

Shared by :func:`onegraph.compose` (fitted models) and :func:`~onegraph.export.merge.compose_models` (``.onnx``
files): with one model its outputs are the answer; with several, each model's outputs are declared under its
name (``rf.probabilities``) and the ensemble's are the answer (``probabilities``); post-processing steps rewrite
or extend the answer.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from onegraph.emit import GraphBuilder
from onegraph.errors import ExportError
from onegraph.export import assemble
from onegraph.export.adapters.contract import Adapter
from onegraph.export.adapters.models import ModelOutputs
from onegraph.export.ensemble import Ensemble
from onegraph.export.postprocess import PostStep

__all__ = ["named_models", "combined_answer", "post_processed", "declare_answers"]


def named_models(models: Any, ensemble: Ensemble | str | None) -> tuple[dict[str, Any], Ensemble | None]:
    """Models by name (given, or named after their classes / files, made unique), and the ensemble (an
    :class:`Ensemble`, its method name, or the one a scikit-learn voting / stacking object holds).

    Raises
    ------
    ExportError
        for no model, a name unusable in output names, or an ensemble of fewer than two models.
    """
    if isinstance(ensemble, str):
        ensemble = Ensemble(ensemble)
    if isinstance(models, Mapping):
        named = dict(models)
    elif isinstance(models, (list, tuple)):
        named = {}
        for m in models:
            base = default_name(m)
            label, i = base, 2
            while label in named:
                label, i = f"{base}_{i}", i + 1
            named[label] = m
    elif ensemble is None and type(models).__name__ in ("VotingClassifier", "VotingRegressor", "StackingClassifier",
                                                          "StackingRegressor"):
        named, ensemble = Ensemble.from_sklearn(models)
    else:
        named = {default_name(models): models}
    if not named:
        raise ExportError("no model to compose", hint="give at least one fitted model")
    for model_name in named:
        if not re.fullmatch(r"[A-Za-z0-9_\-]+", str(model_name)):
            raise ExportError(f"model name {model_name!r} is not usable in output names",
                              hint="use letters, digits, '_' and '-'")
    if ensemble is not None and len(named) < 2 and ensemble.method != "stacking":
        raise ExportError(f"an ensemble ({ensemble.method}) needs at least two models")
    return named, ensemble


def default_name(model: Any) -> str:
    """A model's default name: its file's stem, or its class in lower case."""
    if isinstance(model, Adapter):
        model = model.model
    if isinstance(model, (str, os.PathLike)):
        return re.sub(r"[^A-Za-z0-9_\-]", "_", os.path.splitext(os.path.basename(os.fspath(model)))[0])
    return type(model).__name__.lower()


def combined_answer(g: GraphBuilder, outs: dict[str, ModelOutputs], adapters: Mapping[str, Any],
                    ensemble: Ensemble | None) -> tuple[ModelOutputs | None, list | None, str | None]:
    """The answer (one model's outputs, or the ensemble's, emitted in ``g.scope("ensemble")``), its classes
    and task; (None, None, None) for several models without an ensemble."""
    if ensemble is not None:
        task, classes = ensemble.resolve(adapters)
        with g.scope("ensemble", ensemble):
            result = ensemble.emit(g, outs, task, classes, adapters)
        return result, result.classes, task
    if len(outs) == 1:
        only = next(iter(outs.values()))
        return only, only.classes, next(iter(adapters.values())).task
    return None, None, None


def post_processed(g: GraphBuilder, answer: ModelOutputs | None, classes: list | None,
                   post: Sequence[PostStep]) -> tuple[ModelOutputs | None, list | None]:
    """The answer after each post-processing step in order (:mod:`onegraph.export.postprocess`).

    Raises ExportError when there are steps but no answer (several models and no ensemble).
    """
    for step in post:
        if answer is None:
            raise ExportError(f"{type(step).__name__} applies to the answer of one model or an ensemble",
                              hint="give one model, or an ensemble of several")
        values, classes = step.emit(g, dict(answer.values), classes)
        answer = ModelOutputs(values, classes)
    return answer, classes


def declare_answers(g: GraphBuilder, outs: dict[str, ModelOutputs], answer: ModelOutputs | None,
                    taken: set[str]) -> list[dict]:
    """Declare each model's outputs under its name when there are several (or no answer), and the answer's
    under the plain roles; the metadata entries, each naming its ``model`` (``ensemble`` for the answer of
    several)."""
    entries: list[dict] = []
    if answer is None or len(outs) > 1:
        for model_name, result in outs.items():
            entries += assemble.declare_outputs(g, result, taken, prefix=f"{model_name}.", model=model_name)
    if answer is not None:
        entries += assemble.declare_outputs(g, answer, taken, model="ensemble" if len(outs) > 1 else next(iter(outs)))
    return entries
