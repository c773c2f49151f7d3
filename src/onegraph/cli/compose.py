"""Several models in one artifact: ``onegraph build ... --model A --model B [--ensemble ...]`` and
``onegraph compose A.onnx B.onnx ... -o OUT`` for models built elsewhere."""


from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import typer

from onegraph.cli.base import app, err, out, reads_models, writes
from onegraph.errors import OnegraphError

__all__ = ["ensemble_options", "build_several", "compose"]


def ensemble_options(ensemble: str | None, weights: str | None, n: int, *, fitted: bool = True) -> list[float] | None:
    """Check ``--ensemble`` / ``--weights`` for ``n`` models before anything is fitted or read; the parsed
    weights. ``fitted``: the command fits the models (``build``: stacking too, models given by ``--model``);
    else it combines model files (``compose``: no stacking, which needs a fitted final estimator).

    Raises
    ------
    OnegraphError
        for weights without an ensemble that uses them, an unknown method, or an ensemble of fewer than two
        models (stacking excepted), each naming the options as the user wrote them.
    """
    from onegraph.export.ensemble import METHODS

    methods = METHODS if fitted else tuple(m for m in METHODS if m != "stacking")
    models = "--model" if fitted else "model file"
    if ensemble is None:
        if weights is not None:
            raise OnegraphError("--weights is given without --ensemble", hint="add --ensemble weighted (or vote)")
        return None
    if ensemble not in methods:
        raise OnegraphError(f"unknown --ensemble {ensemble!r}", hint=f"use {', '.join(methods)}")
    if weights is not None and ensemble not in ("weighted", "vote"):
        raise OnegraphError(f"--weights does not apply to --ensemble {ensemble}",
                            hint="use --ensemble weighted or vote, or leave out --weights")
    if ensemble != "stacking" and n < 2:
        raise OnegraphError(f"--ensemble {ensemble} needs at least two models (got {n})",
                            hint="give two or more models" + (" (repeat --model)" if fitted else ""))
    return _weights(weights, n, models)


def _weights(text: str | None, n: int, models: str) -> list[float] | None:
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise OnegraphError(f"--weights {text!r} is not a list of numbers", hint="write e.g. --weights 1,3") from None
    if len(values) != n:
        raise OnegraphError(f"--weights gives {len(values)} weight(s) for {n} models", hint=f"one weight per {models}")
    from onegraph.export.ensemble import check_weights

    return check_weights(values, "--weights")


def _ensemble(method: str, estimators: list[tuple[str, Any]], task: str, weights: list[float] | None) -> Any:
    """The scikit-learn ensemble that fits (and is the reference for) ``--ensemble method``."""
    from sklearn.ensemble import (
        StackingClassifier,
        StackingRegressor,
        VotingClassifier,
        VotingRegressor,
    )
    from sklearn.linear_model import LogisticRegression, Ridge

    classify = task == "classification"
    if method in ("mean", "weighted"):
        w = weights if method == "weighted" else None
        return VotingClassifier(estimators, voting="soft", weights=w) if classify else VotingRegressor(estimators, weights=w)
    if method == "vote":
        if not classify:
            raise OnegraphError("--ensemble vote needs a classification target", hint="use mean or weighted")
        return VotingClassifier(estimators, voting="hard", weights=weights)
    if method == "stacking":
        if classify:
            return StackingClassifier(estimators, final_estimator=LogisticRegression(max_iter=2000),
                                      stack_method="predict_proba", cv=5)
        return StackingRegressor(estimators, final_estimator=Ridge(), cv=5)
    raise OnegraphError(f"unknown ensemble {method!r}", hint="use mean, weighted, vote or stacking")


def build_several(plan: Any, names: list[str], task: str, seed: int, split: tuple, output: Path,
                  ensemble: str | None, weights: str | None) -> None:
    """Fit the preprocessing and each model (or their ensemble), compose them into ``output``, check the
    artifact on the held-out rows against scikit-learn."""
    import onegraph
    from onegraph.export import auto

    train, test, y_train, y_test = split
    checked_weights = ensemble_options(ensemble, weights, len(names))
    if len(set(names)) != len(names):
        raise OnegraphError(f"--model repeats a model: {', '.join(names)}", hint="give each model once")
    pre = plan.preprocessing.fit(train, y_train)
    x_train, x_test = pre.transform(train), pre.transform(test)
    estimators = [(n, auto.make_model(n, task, seed)) for n in names]
    metric = "accuracy" if task == "classification" else "R^2"
    if ensemble:
        fitted = _ensemble(ensemble, estimators, task, checked_weights)
        err.print(f"fitting {ensemble} ensemble of {', '.join(names)} ({task}) on {len(train)} rows")
        fitted.fit(x_train, y_train)
        models: Any = fitted
        references = {"": fitted}
    else:
        err.print(f"fitting {', '.join(names)} ({task}) on {len(train)} rows")
        models = {n: est.fit(x_train, y_train) for n, est in estimators}
        references = {f"{n}.": est for n, est in models.items()}
    onegraph.compose(pre, models, train, path=output)
    scores = onegraph.score(output, test)
    worst, agree = 0.0, 1.0
    for prefix, ref in references.items():
        if task == "classification":
            agree = min(agree, float((scores[f"{prefix}label"].to_numpy() == ref.predict(x_test)).mean()))
            if hasattr(ref, "predict_proba") and f"{prefix}probabilities_{ref.classes_[0]}" in scores:
                got = scores[[f"{prefix}probabilities_{c}" for c in ref.classes_]].to_numpy()
                worst = max(worst, float(np.abs(got - ref.predict_proba(x_test)).max()))
        else:
            worst = max(worst, float(np.abs(scores[f"{prefix}prediction"].to_numpy() - ref.predict(x_test)).max()))
    ok = agree == 1.0 and worst <= 1e-6
    quality = ", ".join(f"{(p.rstrip('.') or ensemble)} {ref.score(x_test, y_test):.4f}" for p, ref in references.items())
    outputs = ", ".join(o["name"] for o in onegraph.runtime.cached_session(output).outputs)
    agreed = f", labels agree {agree:.2%}" if task == "classification" else ""
    out.print(f"wrote {output}: {metric} {quality} on {len(test)} held-out rows; outputs {outputs}; parity with "
              f"scikit-learn {'ok' if ok else 'FAILED'} (max abs diff {worst:.1e}{agreed})")
    if not ok:
        raise typer.Exit(1)


@app.command()
@reads_models
@writes("model")
def compose(
    models: Annotated[list[Path], typer.Argument(help="ONNX models, in order (a preprocessing before the models it "
                                                      "feeds).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the merged model (.onnx).")],
    name: Annotated[Optional[list[str]], typer.Option("--name", help="Name of each model, in order (default: "
                                                                     "file names).")] = None,
    ensemble: Annotated[Optional[str], typer.Option(help="Combine the models' answers: mean, weighted or vote.")
                        ] = None,
    weights: Annotated[Optional[str], typer.Option(help="Weights of --ensemble weighted / vote, e.g. 1,3.")] = None,
    classes: Annotated[Optional[str], typer.Option(
        help="The ensemble's classes in the order of the models' probability columns, e.g. Adelie,Chinstrap,Gentoo "
             "(integers when every one is): for models that do not name them (no onegraph metadata, no ONNX-ML "
             "classifier node).")] = None,
    check: Annotated[Optional[Path], typer.Option(help="Rows (CSV / Parquet) to check the merged model on against "
                                                       "the same models run one after another.")] = None,
) -> None:
    """Merge ONNX models built elsewhere into one: shared inputs once, a preprocessing chained into the models
    that take its feature matrix, outputs named <model>.<output>, optionally an ensemble."""
    from onegraph.export import Ensemble
    from onegraph.export.merge import compose_models, plan
    from onegraph.io import read_table

    ens = None
    checked = ensemble_options(ensemble, weights, len([p for p in plan(models, name) if not p.internal]),
                               fitted=False)
    if classes is not None and not ensemble:
        raise OnegraphError("--classes is given without --ensemble", hint="add --ensemble mean (or weighted, vote)")
    if ensemble:
        ens = Ensemble(ensemble, weights=checked, classes=None if classes is None else _classes(classes))
    sample = None
    if check is not None:
        specs = {s.name: s for p in plan(models, name) for s in p.specs}
        sample = read_table(check, specs=list(specs.values()))
    merged = compose_models(models, names=name, ensemble=ens, sample=sample, path=output)
    inputs = ", ".join(i.name for i in merged.graph.input)
    outputs = ", ".join(o.name for o in merged.graph.output)
    checked = f"; checked on {len(sample)} rows of {check}: same outputs as the models one after another" \
        if sample is not None else ""
    out.print(f"wrote {output} ({output.stat().st_size / 1024:.1f} KiB, {len(merged.graph.node)} nodes): inputs "
              f"{inputs}; outputs {outputs}{checked}")


def _classes(text: str) -> list:
    """``--classes A,B,C`` as labels: integers when every one is one, else the texts."""
    labels = [c.strip() for c in text.split(",")]
    if not all(labels) or len(set(labels)) != len(labels):
        raise OnegraphError(f"--classes {text!r} needs distinct, non-empty labels", hint="e.g. --classes a,b,c")
    try:
        return [int(c) for c in labels]
    except ValueError:
        return labels
