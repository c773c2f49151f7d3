"""The main job's commands: quickstart, build, score, show."""


import json
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from onegraph.cli.base import KeepNaWords, Trusted, app, err, out, reads_models, writes
from onegraph.errors import OnegraphError

__all__ = ["quickstart", "build", "score", "show"]


# -- quickstart -----------------------------------------------------------------------------------
@app.command()
@writes("model")
def quickstart(
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the model.")] = Path("penguins.onnx"),
) -> None:
    """Build the bundled Palmer penguins pipeline (impute + one-hot + scale + logistic regression) into
    one ONNX file, check it against scikit-learn, and time a single-row prediction both ways."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline

    import onegraph
    from onegraph.datasets import load_penguins, penguins_path
    from onegraph.frame import OneHotEncoder, SimpleImputer, StandardScaler
    from onegraph.runtime import cached_session

    df = load_penguins()
    y = df.pop("species")
    train, test, y_train, _ = train_test_split(df, y, test_size=0.25, random_state=0, stratify=y)
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
    text = ["island", "sex"]
    pipeline = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
            ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), text),
        ]),
        LogisticRegression(max_iter=1000),
    ).fit(train, y_train)
    out.print(f"data      {penguins_path()} ({len(df)} rows; {len(train)} to fit, {len(test)} to check)")
    onegraph.build(pipeline, None, train, path=output)
    model_bytes = output.stat().st_size
    inputs = cached_session(output).input_names
    out.print(f"model     {output} ({model_bytes / 1024:.1f} KiB): inputs {', '.join(inputs)}; "
              "outputs label, probabilities")
    report = onegraph.parity(pipeline, None, test, onnx_model=output)
    out.print(str(report))
    row = test.iloc[[0]]
    sk = _best_time(lambda: pipeline.predict_proba(row))
    og = _best_time(lambda: onegraph.score(output, row))
    out.print(f"latency   one row: scikit-learn {sk * 1e3:.2f} ms, onegraph {og * 1e6:.0f} us ({sk / og:.0f}x faster)")
    scored = onegraph.score(output, test.head(3))
    out.print("score     onegraph.score(model, rows):")
    out.print(scored.round(4).to_string())
    out.print(f"next      onegraph show {output}  |  onegraph score {output} {penguins_path()} -o scores.csv")
    if not report.ok:
        raise typer.Exit(1)


def _note_na_words(data: Path, target: str | None, columns: list[str] | None = None) -> None:
    """A note per CSV column (``columns``, default all) holding words pandas reads as missing (``NA``, ``null``,
    ``nan``...): how many cells became missing values, and for the target that their rows are left out (a class
    spelled ``NA``)."""
    from onegraph.io import na_words

    for column, words in na_words(data, columns).items():
        cells = sum(words.values())
        written = ", ".join(f"{w!r} ({n})" for w, n in words.items())
        effect = "their rows are left out (no target)" if column == target else "they are missing values"
        err.print(f"note: column {column!r}: {cells} cell(s) written {written} read as missing: {effect}; to keep "
                  "such words as text (a category or class 'NA'), pass --keep-na-words", markup=False)


def _note_decimal_comma(data: Path) -> None:
    """A note when a semicolon-separated CSV is read with decimal commas (``39,1`` as 39.1)."""
    from onegraph.io import csv_dialect

    if csv_dialect(data) == (";", ","):
        err.print(f"note: {data} is read as semicolon-separated with decimal commas (39,1 is 39.1; 3.750 is 3750), as "
                  "`onegraph score` reads such a file", markup=False)


def _best_time(fn, seconds: float = 0.3) -> float:
    fn()
    best = float("inf")
    deadline = time.perf_counter() + seconds * 5
    while time.perf_counter() < deadline:
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 5:
            fn()
            n += 1
        best = min(best, (time.perf_counter() - start) / n)
    return best


# -- build ----------------------------------------------------------------------------------------
@app.command()
@writes("model")
def build(
    data: Annotated[Path, typer.Argument(help="Training data: a CSV or Parquet file.")],
    target: Annotated[str, typer.Option("--target", "-t", help="Column to predict.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the model (.onnx).")],
    model: Annotated[Optional[list[str]], typer.Option(
        "--model", "-m", help="logistic, linear, ridge, random_forest, extra_trees, decision_tree, gradient_boosting, "
        "hist_gradient_boosting; repeat for several models in one artifact.")] = None,
    ensemble: Annotated[Optional[str], typer.Option(
        help="Combine several models: mean, weighted, vote (classification) or stacking.")] = None,
    weights: Annotated[Optional[str], typer.Option(help="Weights of --ensemble weighted / vote, e.g. 1,3.")] = None,
    task: Annotated[str, typer.Option(help="classification, regression or auto (from the target).")] = "auto",
    test_size: Annotated[float, typer.Option(help="Fraction of rows held out to check the model.")] = 0.2,
    seed: Annotated[int, typer.Option(help="Random seed for the split and the model.")] = 0,
    keep_na_words: KeepNaWords = False,
) -> None:
    """Fit preprocessing (chosen per column type) and a model on DATA, build one ONNX model, check it."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    import onegraph
    from onegraph.cli.compose import ensemble_options
    from onegraph.export import auto
    from onegraph.io import read_table, read_text_columns

    ensemble_options(ensemble, weights, len([m for m in model or [] if m != "auto"]) or 1)
    if not 0 < test_size < 1:
        raise OnegraphError(f"--test-size {test_size} is not a fraction", hint="give a number between 0 and 1, e.g. 0.2")
    if seed < 0:
        raise OnegraphError(f"--seed {seed} is negative", hint="give a seed between 0 and 2**32 - 1")
    frame = read_table(data, keep_na_words=keep_na_words)
    if target not in frame.columns:
        raise OnegraphError(f"target column {target!r} is not in {data}",
                            hint=f"columns: {', '.join(map(str, frame.columns))}")
    if not keep_na_words:
        _note_na_words(data, target)
    _note_decimal_comma(data)
    numeric = pd.api.types.is_numeric_dtype(frame[target].dtype)
    rows = len(frame)
    frame, y = auto.known_target(frame, target, read_text_columns(data, [target], read=frame)[target])
    if len(frame) < rows:  # an empty cell (or an NA word) is no target: say how many rows that takes out
        err.print(f"note: {rows - len(frame)} of {rows} rows have no {target!r} value and are left out of the fit",
                  markup=False)
    if numeric and not pd.api.types.is_numeric_dtype(y.dtype):  # codes with leading zeros
        code = auto.zero_padded(y)
        err.print(f"note: target {target!r} is written with leading zeros ({code!r}): its classes are the texts "
                  "as written, not the numbers pandas reads", markup=False)
    if len(frame) < 10:
        raise OnegraphError(f"{data} has {len(frame)} rows with a target value; at least 10 are needed")
    task = auto.check_task(y, task)
    frame = auto.prepare(frame)
    names = [m for m in (model or []) if m != "auto"] or ["logistic" if task == "classification" else "ridge"]
    plan = auto.plan(frame)
    frame = frame.drop(columns=plan.unreadable)
    stratify = y if task == "classification" and y.value_counts().min() >= 2 else None
    train, test, y_train, y_test = train_test_split(frame, y, test_size=test_size, random_state=seed,
                                                    stratify=stratify)
    for column, why in plan.skipped.items():
        err.print(f"note: column {column!r} left out: {why}", markup=False)
    for column, what in plan.notes.items():  # values from the data: printed as they are, never as markup
        err.print(f"note: column {column!r} {what}", markup=False)
    if len(names) > 1 or ensemble:
        from onegraph.cli.compose import build_several

        build_several(plan, names, task, seed, (train, test, y_train, y_test), output, ensemble, weights)
        return
    estimator = auto.make_model(names[0], task, seed)
    err.print(f"fitting {type(estimator).__name__} ({task}) on {len(train)} rows: "
              f"{len(plan.numeric)} numeric, {len(plan.text)} categorical, {len(plan.dates)} date columns")
    from sklearn.pipeline import Pipeline

    try:
        pipeline = Pipeline([("preprocess", plan.preprocessing), ("model", estimator)]).fit(train, y_train)
    except (ValueError, TypeError) as exc:  # scikit-learn's own complaints about the data
        raise OnegraphError(f"fitting {type(estimator).__name__} on {data} failed: {exc}") from None
    onegraph.build(pipeline, None, train, path=output, metadata={"training_data": {"name": data.name}})
    report = onegraph.parity(pipeline, None, test, onnx_model=output)
    quality = pipeline.score(test, y_test)
    metric = "accuracy" if task == "classification" else "R^2"
    worst = max((o.max_rel or 0.0) for o in report.outputs)
    agreement = min((o.agreement for o in report.outputs if o.agreement is not None), default=None)
    agree = f", labels agree {agreement:.2%}" if agreement is not None else ""
    out.print(f"wrote {output}: {metric} {quality:.4f} on {len(test)} held-out rows; parity with scikit-learn "
              f"{'ok' if report.ok else 'FAILED'} (max rel diff {worst:.1e}{agree})")
    if not report.ok:
        out.print(str(report))
        raise typer.Exit(1)


# -- score ----------------------------------------------------------------------------------------
@app.command()
@reads_models
@writes("table")
def score(
    model: Annotated[Path, typer.Argument(help="A model built by onegraph (.onnx).")],
    data: Annotated[Path, typer.Argument(help="Rows to score: a CSV or Parquet file (a folder of images / WAV "
                                             "files, or one such file, for a media model).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the scores (.csv or .parquet).")],
    keep: Annotated[Optional[list[str]], typer.Option(help="Input column to copy into the output (repeatable).")
                    ] = None,
    trusted: Trusted = False,
    spark: Annotated[Optional[str], typer.Option(
        "--spark", metavar="MASTER",
        help="Score on Apache Spark at this master URL (local[2], spark://host:7077, yarn); writes a Parquet "
             "dataset (a folder of part files, in input order).")] = None,
    keep_na_words: KeepNaWords = False,
) -> None:
    """Score DATA with MODEL and write one row of outputs per input row, in order."""
    if spark is not None:
        from onegraph.io import is_parquet_dataset
        from onegraph.media.score import media_input

        files = data.is_dir() and not is_parquet_dataset(data)
        if files or media_input(model, trusted=trusted) is not None:
            why = f"{data} is a folder of files" if files else "MODEL is a media model"
            raise OnegraphError(f"--spark scores tables (CSV or Parquet) with a model of columns; {why}",
                                hint="score images / audio without --spark: onegraph score MODEL FOLDER -o OUT.csv")
        from onegraph.extras import require

        require("spark")
        from onegraph.spark.dataset import score_file

        rows, columns, elapsed = score_file(model, data, output, keep=keep, trusted=trusted, master=spark,
                                            keep_na_words=keep_na_words)
        rate = rows / elapsed if elapsed > 0 else float("inf")
        out.print(f"wrote {output}: {rows} rows, columns {', '.join(columns)} ({rate:,.0f} rows/s on {spark})")
        return
    from onegraph.io import is_parquet_dataset, read_table, read_text_columns, table_format, write_table
    from onegraph.runtime import cached_session

    table_format(output)  # a name no table can be written to is refused before the scoring
    session = cached_session(model, trusted=trusted)
    if (data.is_dir() and not is_parquet_dataset(data)) or not session.inputs:  # images / audio, or a media model
        from onegraph.media.score import score_folder

        if keep:
            raise OnegraphError(f"--keep {keep[0]!r}: a media model scores files, which have no columns to keep",
                                hint="leave --keep out: the 'file' column names each row's file")

        start = time.perf_counter()
        scores = score_folder(model, data, trusted=trusted, session=session, skip=output)
        write_table(scores, output)
        named = list(map(str, scores.columns))
        if len(named) > 12:  # features_0 ... features_4095: the first and last, and how many
            named = [*named[:4], "...", f"{named[-1]} ({len(named)} columns)"]
        out.print(f"wrote {output}: {len(scores)} files, columns {', '.join(named)} "
                  f"({time.perf_counter() - start:.2f} s)")
        return
    start = time.perf_counter()
    frame = read_table(data, specs=session.inputs, keep_na_words=keep_na_words)
    texts = [s.name for s in session.inputs if s.kind == "string" and s.name in frame.columns]
    if texts and not keep_na_words:  # a category the model learned may be spelled NA (a country, a state)
        _note_na_words(data, None, texts)
    read = time.perf_counter()
    scores = session.score(frame)
    elapsed = time.perf_counter() - read
    if keep:
        keep = list(dict.fromkeys(keep))
        missing = [k for k in keep if k not in frame.columns]
        if missing:
            raise OnegraphError(f"--keep column {missing[0]!r} is not in {data}")
        import pandas as pd

        clash = [c for c in keep if c in scores.columns]
        if clash:  # two columns of one name: a reader would take the input's for the model's answer
            raise OnegraphError(f"--keep {clash[0]!r}: the model's scores have a column {clash[0]!r} too",
                                hint="keep other columns, or rename that input column in the data")
        kept = read_text_columns(data, keep, read=frame)  # as written, whatever the model reads them as
        scores = pd.concat([kept.reset_index(drop=True), scores.reset_index(drop=True)], axis=1)
    written = time.perf_counter()
    write_table(scores, output)
    rate = len(frame) / elapsed if elapsed > 0 else float("inf")
    out.print(f"wrote {output}: {len(scores)} rows, columns {', '.join(map(str, scores.columns))} "
              f"({rate:,.0f} rows/s scoring; read {read - start:.2f} s, scored {elapsed:.2f} s, "
              f"written {time.perf_counter() - written:.2f} s)")


# -- show -----------------------------------------------------------------------------------------
@app.command()
@reads_models
def show(
    model: Annotated[Path, typer.Argument(help="An ONNX model.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    trusted: Trusted = False,
) -> None:
    """Print a model's inputs (with their column types), outputs and metadata."""
    from onegraph.inspect import describe

    info = describe(model, trusted=trusted)
    if as_json:
        out.print_json(json.dumps(info, default=str))
        return
    table = Table(title=f"inputs of {model}", title_justify="left")
    for col in ("column", "kind", "graph type", "shape", "built from", "missing value"):
        table.add_column(col)
    for i in info["inputs"]:
        table.add_row(i["name"], i["kind"], i["onnx_type"], str(i.get("shape", "")), i.get("source_dtype", ""),
                      i["missing"])
    out.print(table)
    table = Table(title="outputs", title_justify="left")
    for col in ("output", "role", "type", "shape", "classes"):
        table.add_column(col)
    for o in info["outputs"]:
        classes = ", ".join(map(str, o.get("classes") or []))
        table.add_row(o["name"], o.get("role", ""), o.get("type", ""), str(o.get("shape", "")), classes)
    out.print(table)
    out.print(f"opsets {info['opsets']}; {info['nodes']} nodes; {info['initializers']} initializers")
    for key, value in info["metadata"].items():
        if key not in ("inputs", "outputs"):
            out.print(f"{key}: {value}")
